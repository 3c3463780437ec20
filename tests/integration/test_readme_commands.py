"""The README's commands run as printed.

Every fenced ``bash`` block of README.md is run, in order, as one bash script in a temporary
directory that holds a link to the shipped ``data/`` (later blocks use the files earlier ones wrote:
the crawl's visit log feeds ``estimate``, its estimates feed ``allocate``). Lines are treated so:

- ``freshcrawl ...`` runs as printed, against the shipped histories and the test web the README
  starts on loopback (``freshcrawl test-web``), except commands that serve or crawl until a signal or
  for an hour (``serve``, ``crawl run`` without ``--for`` or with ``--frontier``, ``--scheduler tcp://``):
  those are parsed by the command line itself (every option checked and converted) and not run, since
  they need a live server or an operator to stop them;
- ``pip install``, ``bash scripts/test.sh`` and ``uv lock`` are not run (they install, run this very
  suite, or change the lock); the test checks instead that the README installs every extra its
  commands need;
- everything else (``until``, ``kill``) runs as printed.

``pages.parquet``, the input of the partition example, is the one file the test writes itself (a
PAGES table with text host names); the README's ``text`` block after the simulate command must match
the numbers the command prints.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

#: extra each command needs beyond the core install (see pyproject.toml)
EXTRA_OF_COMMAND = {"crawl": "crawl", "test-web": "crawl", "serve": "serve", "partition": "dask"}

PARSE_ONLY = """
import sys
import click
from freshcrawl.cli import main

args = sys.argv[1:]
ctx = click.Context(main, info_name="freshcrawl")
command, i = main, 0
while isinstance(command, click.Group):
    command, i = command.get_command(ctx, args[i]), i + 1
command.callback = lambda **params: print("parsed:", " ".join(args[:i]), sorted(params))
main.main(args, prog_name="freshcrawl", standalone_mode=False)
"""


def bash_blocks(text: str) -> list[str]:
    return re.findall(r"^```bash\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)


def logical_lines(block: str) -> list[str]:
    """The block's lines with backslash continuations joined."""
    return block.replace("\\\n", " ").splitlines()


def words(line: str) -> list[str]:
    return shlex.split(line, comments=True)


def is_parse_only(argv: list[str]) -> bool:
    sub = argv[1:3]
    return (
        sub[:1] == ["serve"]
        or (sub == ["crawl", "run"] and ("--for" not in argv or "--frontier" in argv))
        or any(a.startswith("tcp://") for a in argv)
    )


def script_of(blocks: list[str]) -> tuple[str, list[list[str]], list[list[str]]]:
    """The bash script to run, the commands it runs and the ones it only parses."""
    out, ran, parsed = ["set -euo pipefail"], [], []
    for block in blocks:
        for line in logical_lines(block):
            argv = words(line)
            if not argv:
                continue
            if argv[:2] == ["pip", "install"] or argv[:2] == ["bash", "scripts/test.sh"]:
                continue
            if argv[:2] == ["uv", "lock"]:
                continue
            if argv[0] == "freshcrawl" and is_parse_only(argv):
                parsed.append(argv)
                args = [a for a in argv[1:] if a != "&"]
                out.append(f'"$PYTHON" "$PARSE_ONLY" {shlex.join(args)}')
                continue
            if argv[0] == "freshcrawl":
                ran.append(argv)
            out.append(line)
    return "\n".join(out) + "\n", ran, parsed


def test_readme_installs_what_its_commands_need():
    text = README.read_text()
    installs = [words(line) for b in bash_blocks(text) for line in logical_lines(b)]
    installs = [w[2] for w in installs if w[:2] == ["pip", "install"]]
    assert "freshcrawl" in installs
    commands = [
        w
        for b in bash_blocks(text)
        for w in map(words, logical_lines(b))
        if w[:1] == ["freshcrawl"]
    ]
    needed = {EXTRA_OF_COMMAND[w[1]] for w in commands if w[1] in EXTRA_OF_COMMAND}
    needed |= {"dask" for w in commands if "--engine" in w and w[w.index("--engine") + 1] == "dask"}
    for extra in needed:
        assert f"freshcrawl[{extra}]" in installs, (
            f"the README runs commands of [{extra}] without installing it"
        )
    assert len(text.splitlines()) <= 300


def test_readme_commands_run_as_printed(tmp_path):
    text = README.read_text()
    script, ran, parsed = script_of(bash_blocks(text))
    ran_subcommands = {tuple(w[1:3]) if w[1] == "crawl" else (w[1],) for w in ran}
    # every command of the README is exercised, and the long-running ones are the only ones parsed
    assert {
        ("simulate",),
        ("test-web",),
        ("crawl", "add"),
        ("crawl", "run"),
        ("crawl", "export"),
        ("estimate",),
        ("allocate",),
        ("partition",),
    } <= ran_subcommands, ran_subcommands
    assert {w[1] for w in parsed} == {"serve", "crawl"}, parsed

    (tmp_path / "data").symlink_to(ROOT / "data")
    rng = np.random.default_rng(0)
    n = 2000
    pd.DataFrame(
        {
            "page": np.arange(n),
            "delta": rng.lognormal(0.0, 1.5, n),
            "weight": 1.0,
            "host": [f"host{k}.example" for k in rng.integers(0, 50, n)],
        }
    ).to_parquet(tmp_path / "pages.parquet")
    (tmp_path / "parse_only.py").write_text(PARSE_ONLY)
    (tmp_path / "readme.sh").write_text(script)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHON": sys.executable,
        "PARSE_ONLY": str(tmp_path / "parse_only.py"),
        "COLUMNS": "120",
    }
    proc = subprocess.Popen(
        ["bash", "readme.sh"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        else:  # the test web the README starts in the background, if the script failed before its kill
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    assert proc.returncode == 0, out

    # what the commands wrote
    assert (tmp_path / "results" / "results.csv").is_file()
    visits = pd.read_csv(tmp_path / "visits.csv")
    assert list(visits.columns) == ["page", "time", "changed"] and len(visits) > 0
    estimates = pd.read_csv(tmp_path / "estimates.csv")  # the pages visited in the 10 s crawl
    assert 0 < len(estimates) <= 40 and (estimates["delta"] >= 0).all()
    plan = pd.read_csv(tmp_path / "plan.csv")
    assert plan["rate"].sum() == pytest.approx(500.0)
    rates = pd.read_parquet(tmp_path / "rates")
    assert len(rates) == n and rates["rate"].sum() == pytest.approx(1000.0)
    assert out.count("parsed: ") == len(parsed)

    # the simulate output shown in the README is what the command prints
    shown = re.search(r"--out results\n```\n\n```text\n(.*?)```", text, flags=re.DOTALL)
    assert shown is not None
    for number in re.findall(r"\d+\.\d{3,4}|\d{2},\d{3}", shown.group(1)):
        assert number in out, f"the README shows {number}, the command did not print it"
