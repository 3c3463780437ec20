"""``freshcrawl allocate``: CSV or Parquet in, rates out, JSON summary, errors without partial output."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from freshcrawl.allocation import allocate as solve
from freshcrawl.cli import main

from ..parquet_partitions import write_files, write_partitions


@pytest.fixture()
def pages(tmp_path):
    path = tmp_path / "pages.csv"
    path.write_text("page,delta,weight,host\na,1,1,x.com\nb,4,1,x.com\nc,0.5,2,\nd,0,1,y.org\n")
    return path


@pytest.fixture()
def hosts(tmp_path):
    path = tmp_path / "hosts.csv"
    path.write_text("host,max_rate\nx.com,1/hour\ny.org,inf\n")
    return path


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_rates_match_the_library(pages, tmp_path):
    out = tmp_path / "rates.csv"
    res = run("allocate", pages, "--budget", "5/day", "--out", out)
    assert res.exit_code == 0, res.output
    rates = pd.read_csv(out)
    assert list(rates.columns) == ["page", "rate"]
    expected = solve([1.0, 4.0, 0.5, 0.0], 5.0, weights=[1.0, 1.0, 2.0, 1.0]).p
    np.testing.assert_allclose(rates["rate"], expected, rtol=1e-12)
    assert rates["rate"].sum() == pytest.approx(5.0, rel=1e-12)


def test_rates_to_stdout_in_visits_per_day(pages):
    res = run("allocate", pages, "--budget", "0.25/hour", "--objective", "harmonic")
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    assert lines[0] == "page,rate"
    total = sum(float(line.split(",")[1]) for line in lines[1:])
    assert total == pytest.approx(6.0, rel=1e-12)  # 0.25/hour = 6 visits/day


def test_json_summary_with_host_caps(pages, hosts):
    res = run("allocate", pages, "--budget", "50/day", "--host-caps", hosts, "--max-rate", "30/day", "--json")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert set(summary) >= {"lambda", "objective", "status", "kkt_residual", "budget_used", "solve_seconds"}
    assert summary["status"] == "converged"
    assert summary["budget_used"] == pytest.approx(50.0, rel=1e-12)
    assert summary["kkt_residual"] < 1e-9
    assert summary["solve_seconds"] >= 0


def test_host_cap_is_respected(pages, hosts, tmp_path):
    out = tmp_path / "rates.csv"
    res = run("allocate", pages, "--budget", "50/day", "--host-caps", hosts, "--max-rate", "30/day", "--out", out)
    assert res.exit_code == 0, res.output
    rates = pd.read_csv(out).set_index("page")["rate"]
    assert rates["a"] + rates["b"] <= 24.0 * (1 + 1e-12)  # x.com capped at 1/hour
    assert rates["a"] + rates["b"] == pytest.approx(24.0, rel=1e-12)


def test_min_and_max_rate(pages, tmp_path):
    out = tmp_path / "rates.csv"
    res = run("allocate", pages, "--budget", "4/day", "--min-rate", "0.5/day", "--max-rate", "1.5", "--out", out)
    assert res.exit_code == 0, res.output
    rates = pd.read_csv(out)["rate"].to_numpy()
    assert np.all(rates >= 0.5) and np.all(rates <= 1.5)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--budget", "1/fortnight"], "unknown unit"),
        (["--budget", "0/day"], "must be > 0 visits per day"),
        (["--budget", "5/day", "--min-rate", "2/day"], "below the sum of the lower bounds p_min, 8"),
        (["--budget", "5/day", "--max-rate", "1/day"], "exceeds the most the pages can take, 4"),
        (["--budget", "5/day", "--objective", "freshness"], "Invalid value for '--objective'"),
    ],
)
def test_errors_write_nothing(pages, tmp_path, args, message):
    out = tmp_path / "rates.csv"
    res = CliRunner().invoke(main, ["allocate", str(pages), "--out", str(out), *args])
    assert res.exit_code != 0
    assert message in res.output
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["pages.csv"]


def test_bad_csv_names_the_row(tmp_path):
    path = tmp_path / "pages.csv"
    path.write_text("page,delta\na,1\nb,-2\n")
    res = CliRunner().invoke(main, ["allocate", str(path), "--budget", "1/day"])
    assert res.exit_code != 0
    assert "column 'delta' must be a finite number >= 0 changes/day; row 3 (page 'b') has '-2'" in res.output
    path.write_text("page,rate\na,1\n")
    res = CliRunner().invoke(main, ["allocate", str(path), "--budget", "1/day"])
    assert "missing column 'delta'" in res.output
    hosts = tmp_path / "hosts.csv"
    hosts.write_text("host,max_rate\nx,fast\n")
    path.write_text("page,delta,host\na,1,x\n")
    res = CliRunner().invoke(main, ["allocate", str(path), "--budget", "1/day", "--host-caps", str(hosts)])
    assert "row 2 (host 'x')" in res.output


def test_missing_file(tmp_path):
    res = CliRunner().invoke(main, ["allocate", str(tmp_path / "nope.csv"), "--budget", "1/day"])
    assert res.exit_code != 0
    assert "nope.csv" in res.output


# ---------------------------------------------------------------- Parquet input and output
PAGES_TABLE = pa.table(
    {
        "page": [f"p{k}" for k in range(9)],
        "delta": [1.0, 4.0, 0.5, 0.0, 2.0, 0.25, 3.0, 1.5, 0.75],
        "weight": [1.0, 1.0, 2.0, 1.0, 0.5, 1.0, 3.0, 1.0, 1.0],
        "host": ["x.com", "x.com", None, "y.org", "x.com", "", "y.org", "x.com", None],
        "complete": [False, False, True, False, False, False, True, False, False],
    }
)


def write_pages_csv(path, table=PAGES_TABLE):
    df = table.to_pandas().fillna({"host": ""}).astype({"complete": int})
    df.to_csv(path, index=False)
    return path


def read_rates_csv(path):
    return pd.read_csv(path, dtype={"page": str}, converters={"rate": float})  # float(): exact round trip


@pytest.mark.parametrize("extra", [[], ["--host-caps", "hosts"], ["--objective", "harmonic", "--max-rate", "2/day"]])
def test_parquet_file_and_partitions_give_the_csv_rates(tmp_path, hosts, extra):
    extra = [hosts if a == "hosts" else a for a in extra]
    csv = write_pages_csv(tmp_path / "pages.csv")
    pq.write_table(PAGES_TABLE, tmp_path / "pages.parquet")
    parts = write_partitions(tmp_path / "pages", PAGES_TABLE, [4, 0, 5])  # one partition without rows
    rates = {}
    for name, source in [("csv", csv), ("file", tmp_path / "pages.parquet"), ("dir", parts)]:
        out = tmp_path / f"rates-{name}.csv"
        res = run("allocate", source, "--budget", "12/day", "--out", out, *extra)
        assert res.exit_code == 0, res.output
        rates[name] = read_rates_csv(out)
    assert rates["csv"]["page"].tolist() == PAGES_TABLE.column("page").to_pylist()
    assert rates["csv"]["rate"].sum() == pytest.approx(12.0, rel=1e-12)
    for name in ("file", "dir"):
        assert rates[name]["page"].tolist() == rates["csv"]["page"].tolist()
        np.testing.assert_array_equal(rates[name]["rate"].to_numpy(), rates["csv"]["rate"].to_numpy())


def test_out_parquet_round_trip(tmp_path):
    csv = write_pages_csv(tmp_path / "pages.csv")
    parts = write_partitions(tmp_path / "pages", PAGES_TABLE, [2, 7])
    res = run("allocate", csv, "--budget", "7/day", "--out", tmp_path / "rates.csv")
    assert res.exit_code == 0, res.output
    for source in (csv, parts):
        out = tmp_path / "rates.parquet"
        res = run("allocate", source, "--budget", "7/day", "--out", out)
        assert res.exit_code == 0, res.output
        back = pq.read_table(out)
        expected = read_rates_csv(tmp_path / "rates.csv")
        assert back.column_names == ["page", "rate"] == list(expected.columns)
        assert back.schema.field("page").type == pa.string() and back.schema.field("rate").type == pa.float64()
        assert back.column("page").to_pylist() == expected["page"].tolist()
        np.testing.assert_array_equal(back.column("rate").to_numpy(), expected["rate"].to_numpy())


def test_host_caps_as_parquet(tmp_path, hosts):
    csv = write_pages_csv(tmp_path / "pages.csv")
    pq.write_table(pa.table({"host": ["x.com", "y.org"], "max_rate": [24.0, float("inf")]}), tmp_path / "hosts.parquet")
    outs = []
    for caps in (hosts, tmp_path / "hosts.parquet"):
        out = tmp_path / f"rates-{caps.suffix[1:]}.csv"
        res = run("allocate", csv, "--budget", "50/day", "--max-rate", "30/day", "--host-caps", caps, "--out", out)
        assert res.exit_code == 0, res.output
        outs.append(read_rates_csv(out))
    np.testing.assert_array_equal(outs[0]["rate"].to_numpy(), outs[1]["rate"].to_numpy())
    on_x = outs[1]["page"].isin([f"p{k}" for k in (0, 1, 4, 7)])
    assert outs[1]["rate"][on_x].sum() == pytest.approx(24.0, rel=1e-12)  # x.com capped at 1/hour


@pytest.mark.parametrize(
    ("second", "message"),
    [
        (
            {"page": ["q0", "q1", "q2"], "delta": [1.0, 0.5, -1.0]},
            "part-001.parquet: column 'delta' must be a finite number >= 0 changes/day; row 3 (page 'q2') has -1.0",
        ),
        ({"page": ["q0", "q1"], "rate": [1.0, 0.5]}, "part-001.parquet: missing column 'delta'"),
        (b"garbage bytes, not Parquet", "part-001.parquet: not a valid Parquet file"),
    ],
)
@pytest.mark.parametrize("existing", [None, b"page,rate\nold,1.0\n"])
def test_bad_partition_is_named_and_nothing_is_written(tmp_path, second, message, existing):
    d = write_files(tmp_path / "pages", {"part-000.parquet": {"page": ["a", "b"], "delta": [1.0, 2.0]},
                                         "part-001.parquet": second,
                                         "part-002.parquet": {"page": ["c"], "delta": [3.0]}})
    for out in (tmp_path / "rates.parquet", tmp_path / "rates.csv"):
        if existing is not None:
            out.write_bytes(existing)
        res = CliRunner().invoke(main, ["allocate", str(d), "--budget", "1/day", "--out", str(out)])
        assert res.exit_code != 0
        assert message in res.output
        assert str(d / "part-001.parquet") in res.output  # the partition, by its path
        if existing is None:
            assert not out.exists()
        else:
            assert out.read_bytes() == existing
    assert sorted(p.name for p in tmp_path.iterdir()) == (
        ["pages"] if existing is None else ["pages", "rates.csv", "rates.parquet"]
    )


def test_directory_without_partitions(tmp_path):
    d = tmp_path / "pages"
    d.mkdir()
    (d / "_SUCCESS").write_bytes(b"")
    res = CliRunner().invoke(main, ["allocate", str(d), "--budget", "1/day"])
    assert res.exit_code != 0
    assert "directory holds no Parquet partition files" in res.output


def _allocate_on_a_terminal(pages, cache):
    """``freshcrawl allocate`` in a new process, stderr on a pseudo-terminal, numba's cache in ``cache``:
    (exit code, stdout, what the terminal showed)."""
    import os
    import pty
    import subprocess
    import sys

    master, slave = pty.openpty()
    try:
        done = subprocess.run([sys.executable, "-m", "freshcrawl", "allocate", str(pages), "--budget", "5/day",
                               "--json"], stdout=subprocess.PIPE, stderr=slave, timeout=600,
                              env=dict(os.environ, NUMBA_CACHE_DIR=str(cache)))
    finally:
        os.close(slave)
    shown = []
    while True:  # the child has exited: read what it left on the terminal, then EIO
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        shown.append(chunk)
    os.close(master)
    return done.returncode, done.stdout, b"".join(shown).decode()


def test_a_first_use_on_a_terminal_says_nothing_and_the_next_neither(tmp_path):
    # the allocation has nothing to compile: no notice on a first use either
    pages = tmp_path / "pages.csv"
    pages.write_text("page,delta\na,1\nb,4\nc,0.5\n")
    cache = tmp_path / "numba-cache"  # empty: what a fresh install meets
    code, out, shown = _allocate_on_a_terminal(pages, cache)
    assert code == 0, shown
    assert shown == ""
    assert json.loads(out)["status"] == "converged"  # stdout keeps the JSON alone
    code, out, shown = _allocate_on_a_terminal(pages, cache)
    assert code == 0, shown
    assert shown == ""
    assert json.loads(out)["status"] == "converged"
