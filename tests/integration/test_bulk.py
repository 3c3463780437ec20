"""Planning and estimation over Parquet partitions: out of core and on a 2-worker Dask LocalCluster.

The oracle is the in-memory solver: on instances that fit in memory the partitioned rates equal
:func:`freshcrawl.allocation.allocate` on all the pages to 1e-12 relative (with an absolute floor of
1e-12 of the mean rate, for pages whose optimal rate is within rounding of zero), the budget is met to
1e-12 and every host stays within its cap.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from freshcrawl.allocation import OBJECTIVE_NAMES, allocate
from freshcrawl.bulk import DaskEngine, StreamEngine, allocate_partitioned, estimate_partitioned
from freshcrawl.cli import main
from freshcrawl.traces import read_visit_log
from freshcrawl.traces.visit_log import estimate_visit_log

#: Pages per partition: very different sizes and one empty partition (the pages without a host are spread
#: over them).
HOSTS_PER_PARTITION = (1, 0, 40, 3, 16)


@pytest.fixture(scope="module")
def dask_engine():
    engine = DaskEngine("local", n_workers=2)
    yield engine
    engine.close()


@pytest.fixture(scope="module", params=["stream", "dask"])
def engine(request, dask_engine):
    if request.param == "dask":
        yield dask_engine
        return
    eng = StreamEngine(2)
    yield eng
    eng.close()


def make_pages(tmp_path, objective, *, caps=True, complete=False, seed=0):
    """Pages in 5 partitions by host; returns (directory, page order, in-memory arguments, caps by name)."""
    rng = np.random.default_rng(seed)
    n_hosts = sum(HOSTS_PER_PARTITION)
    sizes = rng.integers(1, 80, n_hosts)
    sizes[0] = 600  # one large host alone in the first partition
    n_free = 150
    n = int(sizes.sum()) + n_free
    host = np.concatenate([np.repeat(np.arange(n_hosts), sizes), np.full(n_free, -1)])
    if objective == "detection-discrete":
        delta = rng.uniform(0.0, 0.9, n)
    else:
        delta = rng.lognormal(0.0, 1.5, n)
    delta[rng.random(n) < 0.02] = 0.0  # a few pages that never change
    weight = rng.uniform(0.2, 3.0, n)
    comp = (rng.random(n) < 0.2) if complete else np.zeros(n, dtype=bool)
    names = np.array([f"h{j:03d}.example" for j in range(n_hosts)])
    cap_of = {}
    if caps:
        for j in range(n_hosts):
            if j % 2 == 0:
                cap_of[names[j]] = float(0.05 * sizes[j] * rng.uniform(0.5, 4.0))
    part_of_host = np.repeat(np.arange(len(HOSTS_PER_PARTITION)), HOSTS_PER_PARTITION)
    free_part = rng.choice([0, 2, 3, 4], n_free)
    part = np.where(host >= 0, part_of_host[np.maximum(host, 0)], -1)
    part[host < 0] = free_part
    directory = tmp_path / f"pages-{objective}"
    directory.mkdir()
    order = []
    for k in range(len(HOSTS_PER_PARTITION)):
        idx = np.flatnonzero(part == k)
        order.append(idx)
        cols = {
            "page": pa.array([f"p{i}" for i in idx], pa.string()),
            "delta": delta[idx],
            "weight": weight[idx],
            "host": pa.array([names[h] if h >= 0 else None for h in host[idx]], pa.string()),
        }
        if complete:
            cols["complete"] = comp[idx]
        pq.write_table(pa.table(cols), directory / f"part-{k}.parquet")
    host_caps = np.array([cap_of.get(nm, np.inf) for nm in names])
    kwargs = dict(weights=weight, objective=objective, hosts=host, host_caps=host_caps,
                  observed_completely=comp if complete else None)
    if not caps:
        kwargs.update(hosts=None, host_caps=None)
    return directory, np.concatenate(order), delta, kwargs, cap_of


def check_equal(res, ref, order, budget, kwargs):
    n = order.size
    p_ref = ref.p[order]
    np.testing.assert_allclose(res.p, p_ref, rtol=1e-12, atol=1e-12 * budget / n)
    assert res.success, res.message
    assert abs(res.p.sum() - budget) <= 1e-12 * budget
    assert res.lam == pytest.approx(ref.lam, rel=1e-9)
    if kwargs["hosts"] is not None:
        sums = np.bincount(kwargs["hosts"][order][kwargs["hosts"][order] >= 0],
                           weights=res.p[kwargs["hosts"][order] >= 0], minlength=kwargs["host_caps"].size)
        assert np.all(sums <= kwargs["host_caps"] * (1 + 1e-12))
        assert np.any(np.isclose(sums, kwargs["host_caps"], rtol=1e-9))  # some cap binds: the caps are tested


@pytest.mark.parametrize("objective", OBJECTIVE_NAMES)
def test_partitioned_optimum_equals_the_in_memory_one_with_host_caps(tmp_path, engine, objective):
    complete = objective in ("freshness-poisson", "freshness-periodic", "harmonic")
    directory, order, delta, kwargs, cap_of = make_pages(tmp_path, objective, complete=complete)
    budget = 0.4 * order.size
    ref = allocate(delta, budget, **kwargs)
    res = allocate_partitioned(str(directory), budget, objective=objective, host_caps=cap_of, engine=engine)
    assert res.n_partitions == len(HOSTS_PER_PARTITION) and res.n_pages == order.size
    check_equal(res, ref, order, budget, kwargs)


@pytest.mark.parametrize("objective", ["freshness-poisson", "detection"])
def test_partitioned_optimum_without_caps_with_rate_bounds(tmp_path, engine, objective):
    directory, order, delta, kwargs, _ = make_pages(tmp_path, objective, caps=False, seed=3)
    budget = 0.7 * order.size
    kwargs.update(p_min=0.01, p_max=5.0)
    ref = allocate(delta, budget, **kwargs)
    res = allocate_partitioned(str(directory), budget, objective=objective, p_min=0.01, p_max=5.0, engine=engine)
    check_equal(res, ref, order, budget, kwargs)


def test_rates_written_as_one_partition_per_input_partition(tmp_path, engine):
    directory, order, delta, kwargs, cap_of = make_pages(tmp_path, "freshness-poisson")
    budget = 0.4 * order.size
    out = tmp_path / "rates"
    res = allocate_partitioned(str(directory), budget, host_caps=cap_of, engine=engine, out=str(out))
    assert res.p is None and res.out == str(out)
    files = sorted(p.name for p in out.iterdir())
    assert files == [f"part-{k:05d}.parquet" for k in range(len(HOSTS_PER_PARTITION))]
    table = pq.read_table(out).to_pandas()
    assert table["page"].tolist() == [f"p{i}" for i in order]
    ref = allocate(delta, budget, **kwargs)
    np.testing.assert_allclose(table["rate"].to_numpy(), ref.p[order], rtol=1e-12, atol=1e-12 * budget / order.size)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary left


def test_a_malformed_partition_is_named_and_nothing_is_written(tmp_path, engine):
    directory, order, delta, kwargs, cap_of = make_pages(tmp_path, "harmonic")
    bad = pq.read_table(directory / "part-3.parquet").to_pandas()
    bad.loc[5, "delta"] = -1.0
    bad.to_parquet(directory / "part-3.parquet", index=False)
    out = tmp_path / "rates"
    with pytest.raises(ValueError, match=r"part-3\.parquet: column 'delta' must be a finite number >= 0.*row 6"):
        allocate_partitioned(str(directory), 100.0, objective="harmonic", host_caps=cap_of, engine=engine,
                             out=str(out))
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_file_that_is_not_parquet_is_named(tmp_path, engine):
    directory, *_ = make_pages(tmp_path, "harmonic", caps=False)
    (directory / "part-9.parquet").write_bytes(b"page,delta\na,1\n")
    with pytest.raises(ValueError, match=r"part-9\.parquet: not a valid Parquet file"):
        allocate_partitioned(str(directory), 100.0, objective="harmonic", engine=engine)


def test_a_host_split_over_two_partitions_is_refused(tmp_path):
    directory = tmp_path / "pages"
    directory.mkdir()
    for k in range(2):
        pq.write_table(pa.table({"page": [f"a{k}", f"b{k}"], "delta": [1.0, 2.0], "host": ["x.org", f"y{k}.org"]}),
                       directory / f"part-{k}.parquet")
    with pytest.raises(ValueError, match=r"host 'x.org' has pages in two partitions, .*part-0\.parquet and "
                                         r".*part-1\.parquet"):
        allocate_partitioned(str(directory), 2.0, host_caps={"x.org": 1.0})


def test_infeasible_budget_is_refused_as_in_memory(tmp_path):
    directory, order, delta, kwargs, cap_of = make_pages(tmp_path, "freshness-poisson", caps=False)
    with pytest.raises(ValueError, match="exceeds the most the pages can take"):
        allocate_partitioned(str(directory), 10.0 * order.size, p_max=1.0)
    with pytest.raises(ValueError, match="below the sum of the lower bounds"):
        allocate_partitioned(str(directory), 0.5 * order.size, p_min=1.0)


def make_log(tmp_path, seed=0):
    """A visit log of 240 pages with Poisson changes and random visits, in 3 partitions by page + 1 empty."""
    rng = np.random.default_rng(seed)
    rows = []
    t0 = 1.7e9
    for i in range(240):
        delta = rng.lognormal(-1.0, 1.0)  # changes/day
        times = t0 + np.cumsum(rng.exponential(86400.0 / rng.uniform(0.5, 3.0), rng.integers(1, 40)))
        prev = None
        for t in times:
            changed = prev is not None and rng.random() < 1.0 - np.exp(-delta * (t - prev) / 86400.0)
            rows.append((f"page-{i}", float(t), bool(changed)))
            prev = t
    df = pd.DataFrame(rows, columns=["page", "time", "changed"])
    directory = tmp_path / "log"
    directory.mkdir()
    part = np.array([int(p.split("-")[1]) % 3 for p in df["page"]])
    for k in range(3):
        df[part == k].to_parquet(directory / f"part-{k}.parquet", index=False)
    df.iloc[:0].to_parquet(directory / "part-3.parquet", index=False)
    return directory, df


@pytest.mark.parametrize("method", ["mle", "sam-interval"])
def test_partitioned_estimates_equal_the_whole_log(tmp_path, engine, method):
    directory, df = make_log(tmp_path)
    whole = estimate_visit_log(read_visit_log(directory), method).set_index("page").sort_index()
    res = estimate_partitioned(str(directory), method, engine=engine)
    got = res.table.set_index("page").sort_index()
    assert res.n_pages == 240 and res.n_partitions == 4
    assert res.n_observations == len(df) - 240
    pd.testing.assert_frame_equal(got, whole, check_exact=False, rtol=1e-12, check_index_type=False)


def test_cli_allocate_and_estimate_on_dask_match_memory(tmp_path):
    directory, order, delta, kwargs, cap_of = make_pages(tmp_path, "freshness-poisson")
    caps = tmp_path / "caps.csv"
    pd.DataFrame({"host": list(cap_of), "max_rate": list(cap_of.values())}).to_csv(caps, index=False)
    runner = CliRunner()
    res = runner.invoke(main, ["allocate", str(directory), "--budget", "500/day", "--host-caps", str(caps),
                               "--engine", "dask", "--scheduler", "local", "--out", str(tmp_path / "rates"),
                               "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["status"] == "converged" and summary["n_partitions"] == len(HOSTS_PER_PARTITION)
    mem = runner.invoke(main, ["allocate", str(directory), "--budget", "500/day", "--host-caps", str(caps),
                               "--out", str(tmp_path / "rates.csv")], catch_exceptions=False)
    assert mem.exit_code == 0, mem.output
    got = pq.read_table(tmp_path / "rates").to_pandas().set_index("page")["rate"]
    want = pd.read_csv(tmp_path / "rates.csv").set_index("page")["rate"]
    np.testing.assert_allclose(got.loc[want.index].to_numpy(), want.to_numpy(), rtol=1e-12, atol=1e-12)

    log_dir, _ = make_log(tmp_path)
    est = runner.invoke(main, ["estimate", str(log_dir), "--engine", "stream", "--out", str(tmp_path / "est")],
                        catch_exceptions=False)
    assert est.exit_code == 0, est.output
    whole = runner.invoke(main, ["estimate", str(log_dir), "--out", str(tmp_path / "est.csv")],
                          catch_exceptions=False)
    assert whole.exit_code == 0, whole.output
    got = pq.read_table(tmp_path / "est").to_pandas().set_index("page").sort_index()
    want = pd.read_csv(tmp_path / "est.csv").set_index("page").sort_index()
    np.testing.assert_allclose(got["delta"].to_numpy(), want["delta"].to_numpy(), rtol=1e-12)


def test_cli_bulk_engine_needs_an_output_directory(tmp_path):
    directory, *_ = make_pages(tmp_path, "harmonic", caps=False)
    res = CliRunner().invoke(main, ["allocate", str(directory), "--budget", "10/day", "--engine", "stream"])
    assert res.exit_code == 2 and "--out DIR" in res.output


def test_pages_without_a_host_may_lie_in_every_partition(tmp_path):
    directory = tmp_path / "pages"
    directory.mkdir()
    delta = np.array([0.5, 1.0, 2.0, 4.0, 8.0, 0.25])
    for k in range(2):
        pq.write_table(pa.table({"page": [f"a{k}", f"b{k}", f"c{k}"], "delta": delta[3 * k: 3 * k + 3],
                                 "host": ["", None, f"x{k}.org"]}), directory / f"part-{k}.parquet")
    res = allocate_partitioned(str(directory), 3.0, host_caps={"x0.org": 0.1})
    hosts = np.array([-1, -1, 0, -1, -1, 1])
    ref = allocate(delta, 3.0, hosts=hosts, host_caps=[0.1, np.inf])
    np.testing.assert_allclose(res.p, ref.p, rtol=1e-12, atol=1e-12)
    assert res.p[2] == pytest.approx(0.1, rel=1e-12)


def test_a_missing_output_directory_is_reported_before_any_pass(tmp_path):
    directory, *_ = make_pages(tmp_path, "harmonic", caps=False)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        allocate_partitioned(str(directory), 100.0, objective="harmonic", out=str(tmp_path / "no" / "rates"))
    res = CliRunner().invoke(main, ["allocate", str(directory), "--budget", "100/day", "--engine", "stream",
                                    "--out", str(tmp_path / "no" / "rates")])
    assert res.exit_code == 2 and "does not exist" in res.output


def test_pages_repartitioned_by_host_then_solved(tmp_path, dask_engine):
    """Pages written in another order (a host over two files) go through `freshcrawl partition` first."""
    rng = np.random.default_rng(5)
    n = 900
    host = rng.integers(0, 30, n)
    delta = rng.lognormal(0.0, 1.0, n)
    names = np.array([f"h{h}.org" for h in host])
    directory = tmp_path / "pages"
    directory.mkdir()
    for k in range(3):  # by row, not by host
        sl = slice(300 * k, 300 * (k + 1))
        pq.write_table(pa.table({"page": [f"p{i}" for i in range(n)][sl], "delta": delta[sl], "host": names[sl]}),
                       directory / f"part-{k}.parquet")
    caps = {f"h{h}.org": 2.0 for h in range(0, 30, 3)}
    with pytest.raises(ValueError, match="freshcrawl partition PAGES --by host"):
        allocate_partitioned(str(directory), 300.0, host_caps=caps)
    out = tmp_path / "by-host"
    res = CliRunner().invoke(main, ["partition", str(directory), "--by", "host", "--partitions", "4", "--out",
                                    str(out)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["rows"] == n
    got = allocate_partitioned(str(out), 300.0, host_caps=caps, engine=dask_engine, out=str(tmp_path / "rates"))
    rates = pq.read_table(tmp_path / "rates").to_pandas().set_index("page")["rate"]
    uniq = sorted(set(names))
    hosts = np.array([uniq.index(h) for h in names])
    ref = allocate(delta, 300.0, hosts=hosts, host_caps=[caps.get(h, np.inf) for h in uniq])
    np.testing.assert_allclose(rates.loc[[f"p{i}" for i in range(n)]].to_numpy(), ref.p, rtol=1e-12,
                               atol=1e-12 * 300.0 / n)
    assert got.success
