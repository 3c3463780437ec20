"""Light installs: the core commands run without the optional extras, and a command whose extra is
missing exits with one line naming it.

Each case runs the ``freshcrawl`` command in a fresh Python process whose import system refuses the
top-level modules of the extras (a meta-path finder raising ``ModuleNotFoundError``, as a real missing
package does), so the extras installed for the tests cannot leak in.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from freshcrawl.cli import EXTRA_OF_MODULE, missing_extra

ROOT = Path(__file__).resolve().parents[2]

CRAWL = [
    "aiohttp",
    "protego",
    "trafilatura",
    "lxml",
    "lxml_html_clean",
    "yarl",
    "sqlalchemy",
    "alembic",
    "psycopg",
    "usp",
    "feedparser",
]
SERVE = ["fastapi", "starlette", "pydantic", "uvicorn", "prometheus_client", "grpc", "google"]
DASK = ["dask", "distributed"]

RUNNER = """
import importlib.abc, json, sys
blocked = set(sys.argv[1].split(","))
class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Missing())
from click.testing import CliRunner
from freshcrawl.cli import main
results = []
for args in json.loads(sys.argv[2]):
    res = CliRunner().invoke(main, args)
    results.append({"code": res.exit_code, "stdout": res.stdout, "stderr": res.stderr,
                    "exception": repr(res.exception) if res.exit_code not in (0, 1) else None})
print(json.dumps(results))
"""


def run_without(blocked: list[str], commands: list[list[str]], cwd: Path) -> list[dict]:
    """Run each command (in one fresh process, one after the other) with `blocked` refused."""
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, ",".join(blocked), json.dumps(commands)],
        check=False,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


MISSING = {
    # every extra refused
    ",".join(CRAWL + SERVE + DASK): [
        (["crawl", "add", "--db", "c.db", "urls.txt"], "crawl"),
        (["crawl", "run", "--db", "c.db", "--budget", "1/day"], "crawl"),
        (["crawl", "status", "--db", "c.db"], "crawl"),
        (["test-web", "--pages", "3"], "crawl"),
        (["serve", "--db", "c.db", "--budget", "1/day"], "serve"),
    ],
    # crawl installed, serve not: a fetcher working for a served frontier speaks gRPC
    ",".join(SERVE): [
        (["crawl", "run", "--frontier", "grpc://127.0.0.1:9", "--for", "1s"], "serve")
    ],
    # everything but dask
    ",".join(DASK): [
        (["partition", "pages.csv", "--by", "host", "--partitions", "2", "--out", "p"], "dask"),
        (
            [
                "allocate",
                "pages.csv",
                "--budget",
                "2/day",
                "--engine",
                "dask",
                "--scheduler",
                "local",
                "--out",
                "r",
            ],
            "dask",
        ),
    ],
}


@pytest.mark.parametrize("blocked", list(MISSING), ids=["core-only", "no-serve", "no-dask"])
def test_missing_extra_is_one_line_naming_it(tmp_path, blocked):
    (tmp_path / "urls.txt").write_text("http://127.0.0.1:9/a\n")
    (tmp_path / "pages.csv").write_text("page,delta,host\na,1.0,h\nb,0.5,g\n")
    cases = MISSING[blocked]
    results = run_without(blocked.split(","), [args for args, _ in cases], tmp_path)
    for (args, extra), res in zip(cases, results, strict=True):
        assert res["code"] == 1, (args, res)
        lines = res["stderr"].strip().splitlines()
        assert len(lines) == 1, (args, res["stderr"])
        assert lines[0].startswith(f"Error: freshcrawl {args[0]} needs the '{extra}' extra"), lines
        assert lines[0].endswith(f'pip install "freshcrawl[{extra}]"'), lines
    assert not (tmp_path / "c.db").exists()  # nothing was created before the refusal


def test_core_commands_run_without_any_extra(tmp_path, data_dir):
    """--help of every command, estimate, allocate (in memory and streamed over partitions) and
    simulate with every extra refused."""
    (tmp_path / "visits.csv").write_text(
        "page,time,changed\na,2024-01-01,0\na,2024-01-02,1\na,2024-01-04,0\n"
    )
    (tmp_path / "pages.csv").write_text("page,delta,host\na,1.0,h\nb,0.5,h\nc,2,g\n")
    (tmp_path / "pages").mkdir()  # partitioned by host, as --engine stream needs
    for k, host in enumerate(("h", "g")):
        pd.DataFrame(
            {"page": [f"{host}{i}" for i in range(3)], "delta": [0.5, 1.0, 2.0], "host": host}
        ).to_parquet(tmp_path / "pages" / f"part-{k}.parquet")
    helps = [[], ["crawl"], ["serve"], ["test-web"], ["partition"], ["simulate"]]
    commands = [[*h, "--help"] for h in helps] + [
        ["estimate", "visits.csv", "--method", "mle", "--json"],
        ["allocate", "pages.csv", "--budget", "2/day", "--json"],
        ["allocate", "pages", "--budget", "3/day", "--engine", "stream", "--out", "rates"],
        [
            "simulate",
            "--trace",
            str(data_dir / "ota-pga-versions"),
            "--budget",
            "5/day",
            "--start",
            "2024-01-01",
            "--days",
            "20",
            "--policy",
            "nutch",
            "--json",
        ],
    ]
    results = run_without(CRAWL + SERVE + DASK, commands, tmp_path)
    for args, res in zip(commands, results, strict=True):
        assert res["code"] == 0, (args, res)
    assert "simulate" in results[0]["stdout"]
    assert json.loads(results[-4]["stdout"])["n_observations"] == 2
    assert json.loads(results[-3]["stdout"])["budget_used"] == pytest.approx(2.0)
    assert pd.read_parquet(tmp_path / "rates")["rate"].sum() == pytest.approx(3.0)
    names = [p["policy"] for p in json.loads(results[-1]["stdout"])["policies"]]
    assert names == ["nutch", "oracle", "uniform"]


def test_every_extras_module_is_mapped():
    """Each package of the crawl, serve and dask extras has its import name in EXTRA_OF_MODULE."""
    import_name = {
        "lxml_html_clean": "lxml_html_clean",
        "psycopg[binary]": "psycopg",
        "uvicorn[standard]": "uvicorn",
        "prometheus-client": "prometheus_client",
        "grpcio": "grpc",
        "protobuf": "google",
        "ultimate-sitemap-parser": "usp",
    }
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for extra in ("crawl", "serve", "dask"):
        for requirement in extras[extra]:
            package = requirement.split(">")[0].split("<")[0].split(";")[0].strip()
            if package.startswith("freshcrawl["):
                continue
            module = import_name.get(package, package)
            assert EXTRA_OF_MODULE.get(module) == extra, (extra, package)


def test_missing_extra_follows_the_cause():
    try:
        try:
            raise ModuleNotFoundError("No module named 'distributed'", name="distributed")
        except ImportError as err:
            raise ImportError("the dask engine needs dask") from err
    except ImportError as outer:
        assert missing_extra(outer) == ("dask", "distributed")
    assert missing_extra(ImportError("no name")) is None


def test_crawl_commands_run_with_only_the_crawl_extra(tmp_path):
    """crawl add, run (the writer lock included), status and export without serve's or dask's modules."""
    (tmp_path / "urls.txt").write_text("http://127.0.0.1:9/a\nhttp://127.0.0.1:9/b\n")
    commands = [
        ["crawl", "add", "--db", "c.db", "urls.txt"],
        ["crawl", "run", "--db", "c.db", "--budget", "10/day", "--for", "1s"],
        ["crawl", "status", "--db", "c.db", "--json"],
        ["crawl", "export", "--db", "c.db", "--out", "visits.csv"],
    ]
    results = run_without(SERVE + DASK, commands, tmp_path)
    for args, res in zip(commands, results, strict=True):
        assert res["code"] == 0, (args, res)
    assert json.loads(results[2]["stdout"])["n_pages"] == 2
