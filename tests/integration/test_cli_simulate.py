"""``freshcrawl simulate`` end to end on the shipped histories (short windows to stay fast)."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from freshcrawl.cli import main

TRACE = "data/ota-pga-versions"
BASE = ["simulate", "--trace", TRACE, "--budget", "20/day", "--start", "2024-01-01", "--days", "30"]


def run(args):
    return CliRunner().invoke(main, args, catch_exceptions=False)


def test_json_lists_every_policy_with_ratios(data_dir):
    res = run(
        [
            *BASE,
            "--trace",
            str(data_dir / "ota-pga-versions"),
            "--policy",
            "learned:mle-binned,nutch",
            "--json",
        ]
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    names = [p["policy"] for p in out["policies"]]
    assert names == ["learned:mle-binned", "nutch", "oracle", "uniform"]
    by = {p["policy"]: p for p in out["policies"]}
    assert by["oracle"]["ratio_to_oracle"] == 1.0 and by["uniform"]["ratio_to_uniform"] == 1.0
    for p in out["policies"]:
        assert set(p) == {
            "policy",
            "freshness",
            "age_days",
            "harmonic_staleness",
            "visits",
            "ratio_to_oracle",
            "ratio_to_uniform",
        }
        assert 0.0 <= p["freshness"] <= 1.0 and p["age_days"] >= 0 and p["harmonic_staleness"] >= 0
        # 30 days at 20/day, at most one extra visit per page (133 pages)
        assert p["visits"] <= 20 * 30 + 133
        assert p["ratio_to_oracle"] == pytest.approx(p["freshness"] / by["oracle"]["freshness"])


def test_same_seed_same_output_and_files(tmp_path):
    a = run([*BASE, "--policy", "heritrix", "--json", "--seed", "3", "--out", str(tmp_path / "a")])
    b = run([*BASE, "--policy", "heritrix", "--json", "--seed", "3"])
    assert a.exit_code == 0 and a.stdout == b.stdout
    files = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert files == ["delta.png", "freshness.png", "results.csv", "timeseries.csv"] or files == [
        "freshness.png",
        "results.csv",
        "timeseries.csv",
    ]
    results = pd.read_csv(tmp_path / "a" / "results.csv")
    assert results["policy"].tolist() == ["heritrix", "oracle", "uniform"]
    ts = pd.read_csv(tmp_path / "a" / "timeseries.csv")
    assert len(ts) == 3 * 30 and set(ts["policy"]) == {"heritrix", "oracle", "uniform"}


def test_table_output():
    res = run([*BASE, "--policy", "uniform"])
    assert res.exit_code == 0
    assert "÷ oracle" in res.stdout and "uniform" in res.stdout and "oracle" in res.stdout


def write_trace(tmp_path, changes, pages="page,born,died,n_changes\na,0,,2\n"):
    with gzip.open(tmp_path / "t.changes.csv.gz", "wt") as f:
        f.write(changes)
    (tmp_path / "t.pages.csv").write_text(pages)
    return str(tmp_path / "t")


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--trace", "data/nothing"], "does not exist"),
        (["--policy", "learned,bogus"], "unknown policy 'bogus'"),
        (["--policy", "learned:bogus"], "unknown estimator 'bogus'"),
        (["--budget", "0/day"], "must be > 0"),
        (["--budget", "-5/day"], "budget"),
        (["--budget", "5/fortnight"], "unknown unit"),
        (["--start", "1990-01-01"], "must lie inside the data"),
        (["--days", "100000"], "must lie inside the data"),
        (["--days", "-3"], "must be finite and > 0"),
        (["--start", "not a date"], "ISO date"),
        (["--objective", "speed"], "Invalid value for '--objective'"),
    ],
)
def test_bad_input_clear_error_and_no_output(tmp_path, args, match):
    out = tmp_path / "out"
    res = CliRunner().invoke(main, [*BASE, *args, "--out", str(out)])
    assert res.exit_code != 0
    assert match in res.output
    assert not out.exists()


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ("page,time\na,200000\na,100000\n", "line 3: rows must be sorted"),
        ("page,time\na,100000\na,abc\n", "line 3: time must be an integer"),
    ],
)
def test_bad_history_names_the_line(tmp_path, changes, match):
    trace = write_trace(tmp_path, changes)
    out = tmp_path / "out"
    res = CliRunner().invoke(
        main, ["simulate", "--trace", trace, "--budget", "1/day", "--out", str(out)]
    )
    assert res.exit_code != 0 and match in res.output
    assert not out.exists()


def test_any_history_in_the_format_works(tmp_path):
    trace = write_trace(
        tmp_path, "page,time\na,86400\na,172800\n", "page,born,died,n_changes\na,0,,2\nb,0,,0\n"
    )
    res = run(
        [
            "simulate",
            "--trace",
            trace,
            "--budget",
            "1/day",
            "--days",
            "2",
            "--json",
            "--policy",
            "uniform",
        ]
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["policies"][0]["visits"] <= 2 + 2


def test_policy_all_runs_every_registered_policy():
    from freshcrawl.policies import policy_names
    from freshcrawl.policies.learned import DEFAULT_ESTIMATOR

    res = run(
        [
            "simulate",
            "--trace",
            TRACE,
            "--budget",
            "20/day",
            "--start",
            "2024-01-01",
            "--days",
            "10",
            "--policy",
            "all",
            "--json",
        ]
    )
    assert res.exit_code == 0, res.output
    names = [p["policy"] for p in json.loads(res.stdout)["policies"]]
    expected = [f"learned:{DEFAULT_ESTIMATOR}" if n == "learned" else n for n in policy_names()]
    assert names == expected


@pytest.mark.slow
@pytest.mark.parametrize("budget", ["5/day", "20/day"])
def test_learned_close_to_the_oracle_on_the_whole_ota_history(budget):
    # the goal stated for the shipped histories: learned within 10% of the oracle, ahead of uniform
    res = run(
        [
            "simulate",
            "--trace",
            TRACE,
            "--budget",
            budget,
            "--policy",
            "learned,nutch,stormcrawler,heritrix",
            "--json",
        ]
    )
    assert res.exit_code == 0, res.output
    by = {p["policy"]: p for p in json.loads(res.stdout)["policies"]}
    learned = next(v for k, v in by.items() if k.startswith("learned:"))
    assert learned["ratio_to_oracle"] >= 0.9
    assert learned["ratio_to_uniform"] >= 1.0
    for crawler in ("nutch", "stormcrawler", "heritrix"):
        assert learned["freshness"] >= by[crawler]["freshness"]


def test_poisson_visits_and_replan_period():
    res = run([*BASE, "--policy", "learned", "--visits", "poisson", "--replan-every", "2.5", "--json"])
    assert res.exit_code == 0, res.output
    out = {p["policy"]: p for p in json.loads(res.stdout)["policies"]}
    assert set(out) == {"learned:mle-binned", "oracle", "uniform"}
    # Poisson visits spend the budget on average: 600 expected, Poisson sd about 25
    assert abs(out["uniform"]["visits"] - 600) < 5 * np.sqrt(600)


def test_estimator_half_life_option(tmp_path):
    res = run([*BASE, "--policy", "learned,learned:mle-binned@inf,learned:sa-interval", "--estimator-half-life", "90", "--json"])
    assert res.exit_code == 0, res.output
    names = [p["policy"] for p in json.loads(res.stdout)["policies"]]
    assert names == ["learned:mle-binned@90d", "learned:mle-binned", "learned:sa-interval@90d", "oracle", "uniform"]
    out = tmp_path / "out"
    for value, match in (("-1", "must be > 0 days"), ("nan", "must be > 0 days"), ("x", "is not a valid float")):
        bad = CliRunner().invoke(main, [*BASE, "--estimator-half-life", value, "--out", str(out)])
        assert bad.exit_code != 0 and match in bad.output
        assert not out.exists()
    bad = CliRunner().invoke(main, [*BASE, "--policy", "learned:lln@30d", "--out", str(out)])
    assert bad.exit_code != 0 and "needs an estimator in mle-binned, mm-binned, sa-interval" in bad.output
    assert not out.exists()


def test_announcements_run_the_learned_policy_again_with_them(data_dir):
    trace = str(data_dir / "ota-pga-versions")
    res = run([*BASE, "--trace", trace, "--policy", "learned,nutch", "--json",
               "--announce-share", "1", "--announce-delay", "0.01", "--announce-miss", "0.1"])
    assert res.exit_code == 0, res.output
    by = {p["policy"]: p for p in json.loads(res.stdout)["policies"]}
    assert set(by) == {"learned:mle-binned", "nutch", "oracle", "uniform",
                       "learned:mle-binned +announced"}
    assert by["learned:mle-binned +announced"]["visits"] <= 20 * 30 + 20
    lone = run([*BASE, "--policy", "learned", "--announce-miss", "0.1"])
    assert lone.exit_code == 2 and "need --announce-share" in lone.output
