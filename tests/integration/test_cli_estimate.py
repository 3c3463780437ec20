"""``freshcrawl estimate`` end to end through click's runner."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from freshcrawl.cli import main
from freshcrawl.estimators import solve_mle
from freshcrawl.experiments.estimators import changed_between_visits, load_change_times
from freshcrawl.traces.visit_log import write_visit_log


@pytest.fixture(scope="module")
def pge_log(tmp_path_factory, data_dir):
    """A visit log made from the shipped pge-outages history: Poisson visits at 2 per day for 200 days."""
    times, _ = load_change_times(data_dir / "pge-outages.changes.csv.gz")
    rng = np.random.default_rng(0)
    visits = times[0] + np.cumsum(rng.exponential(0.5, 400))
    changed = np.concatenate([[False], changed_between_visits(times, visits)])
    f = tmp_path_factory.mktemp("logs") / "pge.csv.gz"
    write_visit_log(f, np.repeat("outages.json", visits.size), visits * 86400.0, changed)
    return f, changed[1:], np.diff(visits)


@pytest.mark.parametrize("method", ["naive", "lln", "sa", "sam", "mle", "mm", "sa-interval", "mle-binned"])
def test_estimate_writes_one_row_per_page(tmp_path, pge_log, method):
    log, changed, tau = pge_log
    out = tmp_path / "rates.csv"
    res = CliRunner().invoke(main, ["estimate", str(log), "--method", method, "--out", str(out)])
    assert res.exit_code == 0, res.output
    df = pd.read_csv(out)
    assert list(df.columns) == ["page", "delta", "n_visits", "n_changed", "days_observed", "p"]
    assert df.shape[0] == 1 and df["n_visits"].iloc[0] == 399 and df["n_changed"].iloc[0] == changed.sum()
    assert np.isfinite(df["delta"]).all() and (df["delta"] >= 0).all()
    assert df["days_observed"].iloc[0] == pytest.approx(tau.sum(), rel=1e-9)
    if method == "mle":
        assert df["delta"].iloc[0] == pytest.approx(solve_mle(changed, tau), rel=1e-9)
    if method == "naive":
        assert df["delta"].iloc[0] == pytest.approx(changed.sum() / tau.sum(), rel=1e-9)  # p = n / days


def test_estimate_json_summary_and_stdout_table(pge_log):
    log, changed, tau = pge_log
    res = CliRunner().invoke(main, ["estimate", str(log), "--method", "mle", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert summary["n_pages"] == 1 and summary["n_observations"] == 399 and summary["method"] == "mle"
    assert summary["delta_per_day"]["mean"] == pytest.approx(solve_mle(changed, tau), rel=1e-9)
    res = CliRunner().invoke(main, ["estimate", str(log), "--method", "lln"])
    assert res.exit_code == 0 and res.output.splitlines()[0] == "page,delta,n_visits,n_changed,days_observed,p"


def test_estimate_many_pages_and_single_visit_pages(tmp_path):
    f = tmp_path / "log.csv"
    f.write_text("page,time,changed\na,0,0\nb,0,0\na,86400,1\nc,5,1\na,172800,0\nb,43200,0\n")
    out = tmp_path / "o.csv"
    res = CliRunner().invoke(main, ["estimate", str(f), "--method", "mle", "--out", str(out), "--delta0", "0.25"])
    assert res.exit_code == 0, res.output
    df = pd.read_csv(out).set_index("page")
    assert df.loc["a", "delta"] == pytest.approx(np.log(2.0))  # one changed and one unchanged day
    assert df.loc["b", "delta"] == 0.0  # no change seen
    assert df.loc["c", "delta"] == 0.25 and df.loc["c", "n_visits"] == 0  # prior


def test_malformed_log_reports_line_and_writes_nothing(tmp_path):
    f = tmp_path / "log.csv"
    f.write_text("page,time,changed\na,0,0\na,100,1\na,200,7\n")
    out = tmp_path / "o.csv"
    res = CliRunner().invoke(main, ["estimate", str(f), "--out", str(out)])
    assert res.exit_code != 0
    assert "line 4: changed must be 0 or 1; got '7'" in res.output
    assert not out.exists() and list(tmp_path.iterdir()) == [f]


def test_unknown_method_and_missing_file(tmp_path):
    res = CliRunner().invoke(main, ["estimate", str(tmp_path / "x.csv"), "--method", "mle"])
    assert res.exit_code == 2 and "does not exist" in res.output
    f = tmp_path / "log.csv"
    f.write_text("page,time,changed\na,0,0\n")
    res = CliRunner().invoke(main, ["estimate", str(f), "--method", "bogus"])
    assert res.exit_code == 2 and "bogus" in res.output
