"""``allocate(warm_start=...)``: a previous solution starts the root-finds; the optimum is the same.

A crawler re-plans every period on updated change rates, so the last plan's λ (and, with host caps,
each host's multiplier) is a start close to the new root. The start changes the path, never the
point: every warm solve here is checked against the optimality conditions and against a cold solve
of the same problem with the helpers of test_host_caps (same tolerances, explained there).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from freshcrawl.allocation import AllocationResult, allocate

from .test_host_caps import FLAT, KINDS, check_optimal, check_same, make_instance
from .test_solve import SqrtObjective


def next_period(inst, seed):
    """The previous period's problem: a tenth of the pages with Δ off by a lognormal factor (sigma 0.3),
    and 3% less budget (SyncCost has no Δ: the budget only)."""
    rng = np.random.default_rng(seed)
    delta = inst["delta"]
    if delta is not None:
        n = delta.size
        delta = delta * np.where(rng.random(n) < 0.1, np.exp(rng.normal(0.0, 0.3, n)), 1.0)
    return delta, 0.97 * inst["budget"]


# with "freshness-mixed" (completely observed pages under freshness: Σp jumps, so the hosts' starts are used)
@pytest.mark.parametrize("kind", [*KINDS, "freshness-mixed"])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("capped", [True, False])
def test_warm_start_reaches_the_same_optimum(kind, seed, capped):
    inst = make_instance(kind, seed, 3000, 150)
    if not capped:
        inst = without_hosts(inst)
    kw = inst["kw"]
    prev = allocate(*next_period(inst, seed), **kw)
    cold = allocate(inst["delta"], inst["budget"], **kw)
    warm = allocate(inst["delta"], inst["budget"], warm_start=prev, **kw)
    check_optimal(fill_host_lam(warm, capped), inst)
    check_same(fill_host_lam(warm, capped), fill_host_lam(cold, capped), inst)


def without_hosts(inst):
    """The instance without hosts; for the checks, one uncapped host without pages (see fill_host_lam)."""
    kw = dict(inst["kw"])
    kw.pop("hosts"), kw.pop("host_caps")
    n = inst["hosts"].size
    return dict(inst, hosts=np.full(n, -1), caps=np.array([np.inf]), kw=kw)


def fill_host_lam(res, capped):
    """Without hosts, host_lam as the checks read it: the one host of without_hosts, at λ."""
    return res if capped else dataclasses.replace(res, host_lam=np.array([res.lam]))


def bench_like(n, n_hosts, seed=0):
    """The benchmark's instance (benchmarks/bench_allocation.py) at a test's size."""
    rng = np.random.default_rng(seed)
    delta = rng.lognormal(0.0, 1.5, n)
    w = 0.1 + rng.pareto(1.5, n)
    hosts = rng.integers(0, n_hosts, n)
    budget = 0.5 * n
    caps = 1.1 * budget * np.bincount(hosts, minlength=n_hosts) / n
    return delta, w, hosts, caps, budget


@pytest.mark.parametrize("objective", ["freshness-poisson", "harmonic", "freshness-periodic", "detection"])
@pytest.mark.parametrize("capped", [True, False])
def test_the_solution_itself_as_start_saves_passes(objective, capped):
    # started at its own optimum, a solve certifies it in fewer passes than from the sample's λ
    delta, w, hosts, caps, budget = bench_like(20_000, 500)
    kw = dict(weights=w, objective=objective)
    if capped:
        kw.update(hosts=hosts, host_caps=caps)
    cold = allocate(delta, budget, **kw)
    warm = allocate(delta, budget, warm_start=cold, **kw)
    assert warm.success and warm.kkt_residual <= 1e-9
    if capped and objective not in FLAT:
        # not used with caps where Σp is smooth (the first pass places the hosts): the cold solve, exactly
        np.testing.assert_array_equal(warm.p, cold.p)
        assert warm.n_iter == cold.n_iter
    else:
        assert warm.n_iter < cold.n_iter
    np.testing.assert_allclose(warm.p, cold.p, rtol=1e-9, atol=1e-9 * budget / delta.size)


@pytest.mark.parametrize("kind", ["freshness-poisson", "harmonic", *FLAT, "freshness-mixed"])
@pytest.mark.parametrize("capped", [True, False])
def test_a_start_far_off_costs_passes_not_exactness(kind, capped):
    inst = make_instance(kind, 3, 2000, 100)
    with_hosts = allocate(inst["delta"], inst["budget"], **inst["kw"])
    if not capped:
        inst = without_hosts(inst)
    cold = allocate(inst["delta"], inst["budget"], **inst["kw"])
    rng = np.random.default_rng(4)
    for factor in (1e-3, 1e3):
        host_lam = with_hosts.host_lam * rng.uniform(0.01, 100.0, with_hosts.host_lam.size)
        start = dataclasses.replace(cold, lam=cold.lam * factor, host_lam=host_lam)
        warm = allocate(inst["delta"], inst["budget"], warm_start=start, **inst["kw"])
        check_optimal(fill_host_lam(warm, capped), inst)
        check_same(fill_host_lam(warm, capped), fill_host_lam(cold, capped), inst)


def test_a_start_without_information_is_a_cold_solve():
    # λ = 0 (a solve whose budget exceeded what the valued pages take) or not finite gives no start;
    # host multipliers are ignored without hosts, and inf or values at or below λ start at λ0
    inst = make_instance("detection", 5, 1500, 60)
    cold = allocate(inst["delta"], inst["budget"], **inst["kw"])
    for start in (dataclasses.replace(cold, lam=0.0), dataclasses.replace(cold, lam=np.inf),
                  dataclasses.replace(cold, lam=np.nan)):
        warm = allocate(inst["delta"], inst["budget"], warm_start=start, **inst["kw"])
        np.testing.assert_array_equal(warm.p, cold.p)
        assert warm.n_iter == cold.n_iter
    pinned = dataclasses.replace(cold, host_lam=np.full(cold.host_lam.size, np.inf))
    check_optimal(allocate(inst["delta"], inst["budget"], warm_start=pinned, **inst["kw"]), inst)
    plain = allocate(inst["delta"], inst["budget"], weights=inst["kw"]["weights"], objective="detection")
    again = allocate(inst["delta"], inst["budget"], weights=inst["kw"]["weights"], objective="detection",
                     warm_start=cold)  # host_lam of 60 hosts, no hosts here: only λ is used
    np.testing.assert_allclose(again.p, plain.p, rtol=1e-9, atol=1e-12)


def test_bad_warm_starts_are_refused_by_name():
    inst = make_instance("harmonic", 6, 500, 20)
    res = allocate(inst["delta"], inst["budget"], **inst["kw"])
    with pytest.raises(TypeError, match="warm_start must be an AllocationResult.*got dict"):
        allocate(inst["delta"], inst["budget"], warm_start={"lam": res.lam}, **inst["kw"])
    short = dataclasses.replace(res, host_lam=res.host_lam[:-1])
    with pytest.raises(ValueError, match=r"warm_start.host_lam must have one entry a host, shape \(20,\).*\(19,\)"):
        allocate(inst["delta"], inst["budget"], warm_start=short, **inst["kw"])
    bad = res.host_lam.copy()
    bad[7] = np.nan
    with pytest.raises(ValueError, match="host 7"):
        allocate(inst["delta"], inst["budget"], warm_start=dataclasses.replace(res, host_lam=bad), **inst["kw"])
    assert isinstance(res, AllocationResult)


def test_host_multipliers_of_another_problem_are_refused_whatever_its_lambda():
    inst = make_instance("detection", 7, 400, 12)
    res = allocate(inst["delta"], inst["budget"], **inst["kw"])
    other = dataclasses.replace(res, lam=0.0, host_lam=np.ones(5))
    with pytest.raises(ValueError, match=r"shape \(12,\)"):
        allocate(inst["delta"], inst["budget"], warm_start=other, **inst["kw"])


def test_warm_start_of_a_user_defined_objective():
    # solved through numpy (Objective.value and .derivative only): λ0 replaces the marginal value at B/n
    Sqrt = SqrtObjective
    delta = np.random.default_rng(8).lognormal(0.0, 1.0, 200)
    cold = allocate(delta, 50.0, objective=Sqrt())
    warm = allocate(delta, 50.0, objective=Sqrt(), warm_start=dataclasses.replace(cold, lam=3.0 * cold.lam))
    np.testing.assert_allclose(warm.p, 50.0 * delta / delta.sum(), rtol=1e-9)  # p ∝ Δ
    assert warm.success and warm.kkt_residual < 1e-9
    again = allocate(delta, 50.0, objective=Sqrt(), warm_start=cold)
    assert again.n_iter < cold.n_iter
