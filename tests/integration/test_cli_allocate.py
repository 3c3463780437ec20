"""``freshcrawl allocate``: CSV in, rates out, JSON summary, errors without partial output."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from freshcrawl.allocation import allocate as solve
from freshcrawl.cli import main


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
