"""``freshcrawl experiments estimators --quick`` end to end, with very few runs."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from click.testing import CliRunner

from freshcrawl.cli import main
from freshcrawl.experiments.estimators import SYNTHETIC_SETTINGS, EstimatorSpec, run_synthetic, summarise_runs


def test_quick_experiment_writes_plots_and_tables(tmp_path, data_dir):
    out = tmp_path / "exp"
    res = CliRunner().invoke(
        main,
        ["experiments", "estimators", "--out", str(out), "--quick", "--runs", "3", "--visits", "40",
         "--trace", str(data_dir / "pge-outages.changes.csv.gz")],
    )
    assert res.exit_code == 0, res.output
    names = {f.name for f in out.iterdir()}
    assert {"synthetic.csv", "stepsizes.csv", "real_trace.csv", "summary.json", "fig1_real_trace.png",
            "fig2_delta5_p3.png", "fig3_delta500_p3.png", "fig4_delta500_p50.png", "fig5_stepsizes.png"} <= names
    for png in out.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    synth = pd.read_csv(out / "synthetic.csv")
    assert set(synth["figure"]) == {"fig2", "fig3", "fig4"}
    assert {"estimator", "k", "mean", "rmse", "q025", "q975", "n_runs"} <= set(synth.columns)
    assert (synth["n_runs"] == 3).all() and synth["k"].max() == 40
    assert (synth["q025"] <= synth["q975"]).all()
    real = pd.read_csv(out / "real_trace.csv")
    assert set(real["p_factor"]) == {0.5, 0.1}
    dbar = real["delta_bar"].iloc[0]
    assert 10 < dbar < 25  # pge-outages: about 17 changes per day (data/README.md)
    np.testing.assert_allclose(sorted(set(real["p"])), sorted({0.1 * dbar, 0.5 * dbar}))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["runs"] == 3 and summary["quick"] is True


def test_missing_trace_fails_without_output(tmp_path):
    out = tmp_path / "exp"
    res = CliRunner().invoke(main, ["experiments", "estimators", "--out", str(out), "--quick", "--trace", str(tmp_path / "none.csv.gz")])
    assert res.exit_code == 2 and "does not exist" in res.output
    assert not out.exists()


def test_summary_statistics_match_their_definitions():
    ks, est = run_synthetic(5.0, 3.0, [EstimatorSpec("LLN", "lln")], n_visits=30, n_runs=8, checkpoints=[10, 30], rng=1)
    df = summarise_runs(ks, est, 5.0, figure="t")
    x = est["LLN"][1]
    row = df[df["k"] == 30].iloc[0]
    assert row["mean"] == x.mean() and row["rmse"] == np.sqrt(np.mean((x - 5.0) ** 2))
    assert row["q025"] == np.quantile(x, 0.025)


def test_paper_settings_are_those_of_sec_4_2():
    assert [(f, d, p) for f, d, p, _ in SYNTHETIC_SETTINGS] == [("fig2", 5.0, 3.0), ("fig3", 500.0, 3.0), ("fig4", 500.0, 50.0)]
    sam2 = next(s for s in SYNTHETIC_SETTINGS[0][3] if s.name == "sam")
    sam3 = next(s for s in SYNTHETIC_SETTINGS[1][3] if s.name == "sam")
    assert sam2.params == {"eta": 0.75, "beta": 0.6, "omega": 1.0} and sam3.params["eta"] == 0.8 and sam3.params["beta"] == 0.5
