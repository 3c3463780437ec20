"""``freshcrawl experiments sync-bandits`` end to end, and the expected shape of Figures 1-4 (seed 003)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from freshcrawl.cli import main
from freshcrawl.errors import UnknownNameError
from freshcrawl.experiments.sync_bandits import ALGORITHMS, run_family


def test_quick_json_writes_figures_and_tables(tmp_path):
    out = tmp_path / "sb"
    result = CliRunner().invoke(main, ["experiments", "sync-bandits", "--out", str(out), "--quick", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["runs"] == 3 and payload["horizon"] == 20
    for block in (payload, payload["poisson"]):
        assert [a["algorithm"] for a in block["algorithms"]] == list(ALGORITHMS)
        for a in block["algorithms"]:
            # J/J* >= 1 by optimality of J*; learning from the uniform start gets well below 1.25
            assert 1.0 <= a["final_j_over_jstar"] < 1.25
            assert a["seconds_per_run"] > 0
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted([
        "sync_bandits_curves.csv", "sync_bandits_summary.csv",
        "figure1_polynomial_mirrorsync_vs_asyncmirrorsync.png", "figure2_polynomial_asyncmirrorsync_vs_asyncpsgdsync.png",
        "figure3_poisson_mirrorsync_vs_asyncmirrorsync.png", "figure4_poisson_asyncmirrorsync_vs_asyncpsgdsync.png",
    ])
    curves = pd.read_csv(out / "sync_bandits_curves.csv")
    ms = curves[(curves.family == "polynomial") & (curves.algorithm == "mirrorsync")]
    assert ms["round"].tolist() == list(range(21))
    # AsyncMirrorSync updates every 20 time units: 2 updates per MirrorSync round (1/r_min = 40)
    ams = curves[(curves.family == "polynomial") & (curves.algorithm == "asyncmirrorsync")]
    assert len(ams) == 41 and ams["round"].iloc[1] == pytest.approx(0.5)
    assert np.all(curves.j_ci95_low <= curves.j_mean) and np.all(curves.j_mean <= curves.j_ci95_high)
    summary = pd.read_csv(out / "sync_bandits_summary.csv")
    assert len(summary) == 6
    assert np.all(summary.jstar_eps_mean >= summary.jstar_mean)
    for png in out.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_table_output_names_every_algorithm(tmp_path):
    result = CliRunner().invoke(main, ["experiments", "sync-bandits", "--out", str(tmp_path / "o"), "--family",
                                       "poisson", "--runs", "1", "--horizon", "3"])
    assert result.exit_code == 0, result.output
    for name in ALGORITHMS:
        assert name in result.output
    assert "J / J*" in result.output


@pytest.mark.parametrize("args", [["--runs", "0"], ["--horizon", "0"], ["--family", "cubic"]])
def test_bad_arguments_write_nothing(tmp_path, args):
    out = tmp_path / "never"
    result = CliRunner().invoke(main, ["experiments", "sync-bandits", "--out", str(out), "--quick", *args])
    assert result.exit_code == 2
    assert "Invalid value" in result.output
    assert not out.exists()


def test_run_family_errors():
    with pytest.raises(UnknownNameError, match="unknown instance family 'cubic'; known: polynomial, poisson"):
        run_family("cubic")
    with pytest.raises(ValueError, match="runs must be >= 1; got 0"):
        run_family("poisson", runs=0)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["polynomial", "poisson"])
def test_expected_shape_of_the_figures(family):
    # 30 instances, the paper's horizon. Shape claims of Sec. 8 and App. C:
    res = run_family(family, runs=30, horizon=240, rng=2024)
    ms, ams, psgd = (res.curve(a) for a in ALGORITHMS)
    for c in (ms, ams, psgd):  # all three converge towards J*: most of the gap to the K_eps optimum closes
        start_gap = c.ratio_mean[0] - np.mean(res.j_star_eps / res.j_star)
        end_gap = c.ratio_mean[-1] - np.mean(res.j_star_eps / res.j_star)
        assert end_gap < 0.5 * start_gap, (c.algorithm, start_gap, end_gap)
    # AsyncMirrorSync matches MirrorSync: final J/J* within 2 combined 95% half-widths + 1 %
    assert abs(ms.final_ratio - ams.final_ratio) < 2 * (ms.final_ratio_halfwidth + ams.final_ratio_halfwidth) + 0.01
    # mirror descent reaches low cost faster than projected SGD: compare at 1/8 of the horizon
    t = 30.0
    j_ams = np.interp(t, ams.rounds, ams.ratio_mean)
    j_psgd = np.interp(t, psgd.rounds, psgd.ratio_mean)
    assert j_ams < j_psgd


def test_simulate_runs_asyncmirrorsync_on_a_shipped_history(data_dir):
    result = CliRunner().invoke(main, [
        "simulate", "--trace", str(data_dir / "ota-pga-versions"), "--budget", "20/day", "--days", "60",
        "--policy", "asyncmirrorsync,oracle,uniform", "--json",
    ])
    assert result.exit_code == 0, result.output
    rows = {r["policy"]: r for r in json.loads(result.stdout)["policies"]}
    ams = rows["asyncmirrorsync"]
    assert 0.0 < ams["freshness"] <= 1.0
    # the plan spends the budget: 20/day for 60 days, within one period's worth
    assert 1200 - 20 <= ams["visits"] <= 1200
