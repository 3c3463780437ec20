"""``freshcrawl estimate`` end to end through click's runner: CSV and Parquet logs, CSV and Parquet output."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from freshcrawl.cli import main
from freshcrawl.estimators import solve_mle
from freshcrawl.experiments.estimators import changed_between_visits, load_change_times
from freshcrawl.traces.visit_log import write_visit_log

from ..parquet_partitions import write_files, write_partitions


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


# ---------------------------------------------------------------- Parquet input and output

ESTIMATE_COLUMNS = ["page", "delta", "n_visits", "n_changed", "days_observed", "p"]


@pytest.fixture(scope="module")
def small_log():
    """Five pages visited at random integer seconds over ten days, interleaved in time order."""
    rng = np.random.default_rng(3)
    page = rng.choice(np.array(["a", "b", "c", "d", "e"]), 80)
    time = np.sort(rng.choice(10 * 86400, 80, replace=False)).astype(np.int64) + 1_700_000_000
    return pa.table({"page": page, "time": time, "changed": rng.random(80) < 0.4})


def write_log_csv(path, table):
    df = table.to_pandas()
    df["time"] = df["time"].astype(np.int64)  # integer seconds: the CSV reads exactly the Parquet values
    df.astype({"changed": int}).to_csv(path, index=False)
    return path


def read_estimates_csv(path):
    """The CSV table, floats parsed with float() (exact for the repr that to_csv writes)."""
    return pd.read_csv(path, dtype={"page": str}, converters={"delta": float, "days_observed": float, "p": float})


def assert_same_estimates(got, expected):
    assert list(got.columns) == list(expected.columns) == ESTIMATE_COLUMNS
    assert got["page"].tolist() == expected["page"].tolist()
    for col in ESTIMATE_COLUMNS[1:]:
        np.testing.assert_array_equal(got[col].to_numpy(dtype=float), expected[col].to_numpy(dtype=float))


@pytest.mark.parametrize("method", ["mle", "sa", "naive-interval"])
def test_parquet_file_and_partitions_give_the_csv_estimates(tmp_path, small_log, method):
    csv = write_log_csv(tmp_path / "log.csv", small_log)
    pq.write_table(small_log, tmp_path / "log.parquet")
    parts = write_partitions(tmp_path / "log", small_log, [30, 0, 50])  # pages span partitions; one is empty
    tables = {}
    for name, source in [("csv", csv), ("file", tmp_path / "log.parquet"), ("dir", parts)]:
        out = tmp_path / f"est-{name}.csv"
        res = CliRunner().invoke(main, ["estimate", str(source), "--method", method, "--out", str(out)])
        assert res.exit_code == 0, res.output
        tables[name] = read_estimates_csv(out)
    assert tables["csv"].shape[0] == 5 and tables["csv"]["n_visits"].sum() == 75
    assert_same_estimates(tables["file"], tables["csv"])
    assert_same_estimates(tables["dir"], tables["csv"])


def test_out_parquet_round_trip(tmp_path, small_log):
    csv = write_log_csv(tmp_path / "log.csv", small_log)
    res = CliRunner().invoke(main, ["estimate", str(csv), "--out", str(tmp_path / "est.csv")])
    assert res.exit_code == 0, res.output
    out = tmp_path / "est.parquet"
    res = CliRunner().invoke(main, ["estimate", str(write_partitions(tmp_path / "log", small_log, [40, 40])),
                                    "--out", str(out)])
    assert res.exit_code == 0, res.output
    back = pq.read_table(out)
    assert back.schema.field("page").type == pa.string()
    assert back.schema.field("n_visits").type == pa.int64() and back.schema.field("delta").type == pa.float64()
    assert_same_estimates(back.to_pandas(), read_estimates_csv(tmp_path / "est.csv"))


def test_timestamp_time_column(tmp_path, small_log):
    write_log_csv(tmp_path / "log.csv", small_log)
    secs = small_log.column("time").to_numpy()
    outs = {}
    for unit, scale, tz in [("s", 1, None), ("ns", 10**9, "UTC"), ("ms", 10**3, "Asia/Tokyo")]:
        table = small_log.set_column(1, "time", pa.array(secs * scale, pa.timestamp(unit, tz=tz)))
        pq.write_table(table, tmp_path / f"log-{unit}.parquet")
    for name in ("log.csv", "log-s.parquet", "log-ns.parquet", "log-ms.parquet"):
        out = tmp_path / f"est-{name}.csv"
        res = CliRunner().invoke(main, ["estimate", str(tmp_path / name), "--method", "mle", "--out", str(out)])
        assert res.exit_code == 0, res.output
        outs[name] = read_estimates_csv(out)
    # whole seconds since the epoch, naive: the same days as unix seconds, exactly
    assert_same_estimates(outs["log-s.parquet"], outs["log.csv"])
    for name in ("log-ns.parquet", "log-ms.parquet"):  # the same instants in finer units or another zone
        assert outs[name]["page"].tolist() == outs["log.csv"]["page"].tolist()
        np.testing.assert_array_equal(outs[name]["n_changed"], outs["log.csv"]["n_changed"])
        np.testing.assert_allclose(outs[name]["delta"], outs["log.csv"]["delta"], rtol=1e-9)
        np.testing.assert_allclose(outs[name]["days_observed"], outs["log.csv"]["days_observed"], rtol=1e-9)


@pytest.mark.parametrize(
    ("second", "message"),
    [
        (
            {"page": ["a", "b", "a"], "time": [100.0, 200.0, 300.0], "changed": [0, 1, 7]},
            "part-001.parquet: row 3: changed must be 0 or 1; got 7",
        ),
        (
            {"page": ["b", "a"], "time": [100.0, 20.0], "changed": [0, 1]},  # 'a' was at 50 in part-000
            "part-001.parquet: row 2: time must increase within page 'a'; 20.0 is not after its previous visit",
        ),
        ({"page": ["a"], "when": [100.0], "changed": [0]}, "part-001.parquet: missing column 'time'"),
        (b"\x00\x01 garbage bytes", "part-001.parquet: not a valid Parquet file"),
    ],
)
@pytest.mark.parametrize("existing", [None, b"page,delta\nold,1.0\n"])
def test_bad_log_partition_is_named_and_nothing_is_written(tmp_path, second, message, existing):
    d = write_files(tmp_path / "log", {"part-000.parquet": {"page": ["a", "a"], "time": [0.0, 50.0], "changed": [0, 1]},
                                       "part-001.parquet": second})
    for out in (tmp_path / "est.parquet", tmp_path / "est.csv"):
        if existing is not None:
            out.write_bytes(existing)
        res = CliRunner().invoke(main, ["estimate", str(d), "--out", str(out)])
        assert res.exit_code != 0
        assert message in res.output
        assert str(d / "part-001.parquet") in res.output
        if existing is None:
            assert not out.exists()
        else:
            assert out.read_bytes() == existing
    assert sorted(p.name for p in tmp_path.iterdir()) == (["log"] if existing is None else ["est.csv", "est.parquet", "log"])
