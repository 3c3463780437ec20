"""``freshcrawl experiments automata --quick``: the seed 004 reproduction end to end."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from freshcrawl.cli import main


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("automata") / "out"
    result = CliRunner().invoke(main, ["experiments", "automata", "--out", str(out), "--quick", "--json"])
    assert result.exit_code == 0, result.output
    return out, json.loads(result.stdout)


def test_json_summary_has_every_static_environment(quick_run):
    _, summary = quick_run
    assert set(summary) == {"environments", "polls_per_second"}
    settings = {(e["alpha"], e["beta"], e["perturbations"]) for e in summary["environments"]}
    assert settings == {(a, b, k) for a, b in [(0.3, 1.5), (0.3, 1.0), (0.9, 1.5)] for k in (0, 1000)}
    for env in summary["environments"]:
        assert set(env["policies"]) == {"htraa", "optimal", "uniform", "proportional", "estimator", "lakg"}
        assert env["policies"]["lakg"] is None
    assert summary["polls_per_second"]["512"] > 0 and summary["polls_per_second"]["32768"] > 0


def test_shape_of_the_results_follows_the_seed(quick_run):
    _, summary = quick_run
    for env in summary["environments"]:
        p = env["policies"]
        assert p["uniform"] < p["estimator"] < p["htraa"] <= p["optimal"]
        if (env["alpha"], env["beta"]) == (0.9, 1.5):
            assert p["htraa"] > p["proportional"]  # Fig. 8: breaching the proportional boundary


def test_files_are_written(quick_run):
    out, _ = quick_run
    names = {p.name for p in out.iterdir()}
    for stem in ("fig5_update_modes", "fig6_8_static", "fig9_10_switching", "fig11_12_scaling"):
        assert f"{stem}.csv" in names
    pngs = [n for n in names if n.endswith(".png")]
    assert len(pngs) == 7
    assert all((out / n).stat().st_size > 1000 for n in pngs)
    static = pd.read_csv(out / "fig6_8_static.csv")
    assert set(static.policy) == {"htraa", "optimal", "uniform", "proportional", "estimator"}
    scaling = pd.read_csv(out / "fig11_12_scaling.csv")
    assert sorted(scaling.n_pages.unique()) == [2, 8, 32, 128]
    modes = pd.read_csv(out / "fig5_update_modes.csv")
    assert {"htraa:reward-inaction", "htraa:inaction-penalty", "htraa:reward-penalty"} <= set(modes.policy)


def test_out_must_be_a_directory(tmp_path):
    target = tmp_path / "a-file"
    target.write_text("x")
    result = CliRunner().invoke(main, ["experiments", "automata", "--out", str(target), "--quick"])
    assert result.exit_code != 0
    assert "a-file" in result.output
    assert target.read_text() == "x"


def test_bad_runs_is_rejected_before_any_output(tmp_path):
    out = tmp_path / "never"
    result = CliRunner().invoke(main, ["experiments", "automata", "--out", str(out), "--quick", "--runs", "0"])
    assert result.exit_code == 2
    assert "--runs" in result.output
    assert not out.exists()


def test_htraa_runs_as_a_recrawl_policy_of_the_engine(data_dir):
    # freshcrawl simulate --policy htraa on the shipped ota-pga-versions history: the budget of 20
    # visits per day over 10 days is spent (200 visits, up to the engine's rounding at the window edges).
    result = CliRunner().invoke(
        main,
        ["simulate", "--trace", str(data_dir / "ota-pga-versions"), "--budget", "20/day", "--days", "10",
         "--policy", "htraa", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = {r["policy"]: r for r in json.loads(result.stdout)["policies"]}
    assert {"htraa", "oracle", "uniform"} <= set(rows)
    assert abs(rows["htraa"]["visits"] - 200) <= 2
    assert 0.0 <= rows["htraa"]["freshness"] <= 1.0
