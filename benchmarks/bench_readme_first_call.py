"""First call against second call of every command the README runs, on an empty numba cache.

The README's ``bash`` blocks are run in order, as a newcomer would type them, in a temporary directory
that links the shipped ``data/``: twice, first with an empty numba cache of their own
(``NUMBA_CACHE_DIR``: what a fresh install meets), then again on the cache the first run left. The
commands that serve or crawl until stopped (``serve``, ``crawl run`` without ``--for`` or with
``--frontier``) and the installs are left out; ``freshcrawl test-web ... &`` runs in the background as
printed. ``pages.parquet``, the partition example's input, is written first (1,000 pages, 20 hosts).

    python benchmarks/bench_readme_first_call.py

Prints one row per command: seconds of the first call, of the second, and the seconds numba spent
compiling in the first (from numba's compile events). Bytecode is written as usual (as ``pip install``
does), so the difference is the compile. Nothing leaves this machine: the test web is on loopback.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]

#: runs one ``freshcrawl`` command, timing it and the compiles numba makes; appends a JSON line to $LOG
TIMED = r"""
import json, os, sys, time
from numba.core import event

compiled = [0.0]


class Compiles(event.Listener):
    def on_start(self, e):
        self.t0 = time.perf_counter()

    def on_end(self, e):
        compiled[0] += time.perf_counter() - self.t0


event.register("numba:compile", Compiles())
t0 = time.perf_counter()
from freshcrawl.cli import main

try:
    main(sys.argv[1:], prog_name="freshcrawl")
except SystemExit as exit:
    code = exit.code or 0
else:
    code = 0
with open(os.environ["LOG"], "a") as log:
    log.write(json.dumps({"cmd": sys.argv[1:], "s": time.perf_counter() - t0, "compile": compiled[0],
                          "code": code}) + "\n")
sys.exit(code)
"""


def readme_script() -> str:
    """The README's bash blocks as one script, each ``freshcrawl`` command run through ``$TIMED``."""
    text = (ROOT / "README.md").read_text()
    out = ["set -euo pipefail"]
    for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE):
        for line in block.replace("\\\n", " ").splitlines():
            argv = shlex.split(line, comments=True)
            if not argv or argv[0] in {"pip", "uv"} or argv[:2] == ["bash", "scripts/test.sh"]:
                continue
            if argv[0] == "freshcrawl":
                sub = argv[1:3]
                if sub[:1] == ["serve"] or (
                    sub == ["crawl", "run"] and ("--for" not in argv or "--frontier" in argv)
                ):
                    continue
                if argv[-1] == "&":  # the test web: started, not timed
                    out.append(f'"$PYTHON" -m freshcrawl {shlex.join(argv[1:-1])} &')
                    continue
                out.append(f'"$PYTHON" "$TIMED" {shlex.join(argv[1:])}')
                continue
            out.append(line)
    return "\n".join(out) + "\n"


def run_once(folder: Path, cache: Path) -> list[dict]:
    folder.mkdir()
    (folder / "data").symlink_to(ROOT / "data")
    rng = np.random.default_rng(0)
    pd.DataFrame(
        {
            "page": [f"p{i}" for i in range(1000)],
            "host": [f"h{h}" for h in rng.integers(0, 20, 1000)],
            "delta": rng.gamma(0.7, 1.0, 1000),
        }
    ).to_parquet(folder / "pages.parquet")
    timed = folder / "timed.py"
    timed.write_text(TIMED)
    (folder / "readme.sh").write_text(readme_script())
    log = folder / "log.jsonl"
    env = dict(
        os.environ,
        NUMBA_CACHE_DIR=str(cache),
        PYTHON=sys.executable,
        TIMED=str(timed),
        LOG=str(log),
    )
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run(
        ["bash", "readme.sh"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    if done.returncode:
        raise SystemExit(f"the README's commands failed:\n{done.stdout}\n{done.stderr}")
    return [json.loads(line) for line in log.read_text().splitlines()]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        first = run_once(tmp / "first", tmp / "numba-cache")
        second = run_once(tmp / "second", tmp / "numba-cache")
    print("| command | first call (s) | second call (s) | numba compile in the first (s) |")
    print("|---|---:|---:|---:|")
    for a, b in zip(first, second, strict=True):
        cmd = "freshcrawl " + " ".join(a["cmd"])
        print(f"| `{cmd}` | {a['s']:.2f} | {b['s']:.2f} | {a['compile']:.2f} |")
    print(
        f"| all | {sum(r['s'] for r in first):.2f} | {sum(r['s'] for r in second):.2f} | "
        f"{sum(r['compile'] for r in first):.2f} |"
    )


if __name__ == "__main__":
    main()
