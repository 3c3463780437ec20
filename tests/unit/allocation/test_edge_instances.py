"""Instances built to reach the solver's edge cases, checked through the public result only.

Each instance targets a hard part of the allocation: pages on every branch of the Lambert-W inverse (on
its table, on its tail a hair from leaving p_min, at p_min, at p_max, of no value, never changing,
pinned), hosts of one page, hosts of many thousand pages, a host whose root sits on a jump of its sum,
and pages whose breakpoint lies a hair from the optimal λ. Whatever the solver does inside, its rates
must meet the contract of :func:`tests.allocation_oracle.check_optimal`: budget, bounds and caps, and
w f'(p) = λ_i from the objective's public derivative, with a KKT residual of at most 1e-12.
"""

from __future__ import annotations

import numpy as np
import pytest

from freshcrawl.allocation import allocate, get_objective
from tests.allocation_oracle import check_optimal

NAMES = ["freshness-poisson", "freshness-periodic", "harmonic", "detection", "detection-discrete"]
KKT = 1e-12


def lambert_pages(name, n, seed, *, scalar_bounds=False):
    """Pages whose y = λ / (w f'(0)) at the optimum λ = 1 spreads over every branch of the inverse.

    y is drawn on (0, 1.2): below 0.99 the inverse's table, from 0.99 to 1 its tail (a tenth of the pages
    within 10^-2.5 to 10^-15 of 1), from 1 on p_min. Some pages have no value, never change or are pinned
    (p_min = p_max). The budget is the sum of the rates at λ = 1 (each page's public ``inverse_marginal``,
    clipped to its bounds), so that λ = 1 is the optimum. Returns the keyword arguments of ``allocate``
    (``delta`` and ``budget`` included) and y.
    """
    rng = np.random.default_rng(seed)
    y = rng.uniform(1e-6, 1.2, n)
    tail = rng.choice(n, n // 10, replace=False)
    y[tail] = 1.0 - 10.0 ** -rng.uniform(2.5, 15.0, tail.size)
    y[rng.choice(n, 16, replace=False)] = 0.99  # the table's end
    if name == "freshness-periodic":  # w f'(0) = w / Δ
        w = 0.1 + rng.pareto(1.5, n)
        delta = w * y
    else:  # detection: w f'(0) = w
        w = 1.0 / y
        delta = rng.lognormal(0.0, 1.5, n)
    if scalar_bounds:
        lo, hi = 0.01, 2.0
        lo_i, hi_i = np.full(n, lo), np.full(n, hi)
    else:
        lo = lo_i = np.where(rng.random(n) < 0.2, rng.uniform(0.0, 0.05, n), 0.0)
        hi = hi_i = np.where(rng.random(n) < 0.2, rng.uniform(0.5, 5.0, n), np.inf)
    special = rng.choice(n, 48, replace=False)
    w[special[:16]] = 0.0  # no value
    delta[special[16:32]] = 0.0  # never changes
    if not scalar_bounds:
        hi_i[special[32:]] = lo_i[special[32:]]  # pinned
    valued = (w > 0) & (delta > 0)
    p = np.zeros(n)
    p[valued] = get_objective(name).inverse_marginal(1.0 / w[valued], delta[valued])
    budget = float(np.clip(p, lo_i, hi_i).sum())
    return dict(delta=delta, budget=budget, weights=w, objective=name, p_min=lo, p_max=hi), y


@pytest.mark.parametrize("name", ["freshness-periodic", "detection"])
@pytest.mark.parametrize("n", [64, 255, 256, 1000, 20_000])
def test_pages_on_every_branch_of_the_lambert_w_inverse(name, n):
    kw, y = lambert_pages(name, n, seed=n)
    res = allocate(**kw)
    check_optimal(res, kw, kkt=KKT, stat=1e-12)
    if n >= 1000:
        assert res.lam == pytest.approx(1.0, rel=1e-12)
        p, lo, hi = res.p, np.broadcast_to(kw["p_min"], y.shape), np.broadcast_to(kw["p_max"], y.shape)
        valued = (kw["weights"] > 0) & (kw["delta"] > 0)
        assert np.any(valued & (y < 0.99) & (p > lo) & (p < hi))  # on the table
        assert np.any(valued & (y >= 0.99) & (y < 1.0) & (p > lo))  # on the tail, off p_min
        assert np.any(valued & (y >= 1.0) & (p == lo))  # at p_min
        assert np.any(p == hi)  # at p_max


@pytest.mark.parametrize("name", ["freshness-periodic", "detection"])
def test_pages_on_every_branch_with_scalar_bounds_and_with_host_caps(name):
    kw, _ = lambert_pages(name, 3000, seed=11, scalar_bounds=True)
    free = allocate(**kw)
    check_optimal(free, kw, kkt=KKT, stat=1e-12)
    # the same pages on 40 hosts, half of them capped below what they take at λ = 1
    rng = np.random.default_rng(12)
    hosts = rng.integers(-1, 40, 3000)
    sums = np.bincount(hosts[hosts >= 0], weights=free.p[hosts >= 0], minlength=40)
    caps = np.where(np.arange(40) % 2 == 0, 0.7 * sums, np.inf)
    kw.update(hosts=hosts, host_caps=caps)
    res = allocate(**kw)
    check_optimal(res, kw, kkt=KKT, stat=1e-12)
    assert np.sum(res.host_lam > res.lam) >= 15 and res.lam < 1.0


def capped_instance(seed, n=2000, n_hosts=200, discrete=False):
    rng = np.random.default_rng(seed)
    delta = rng.uniform(0.01, 0.99, n) if discrete else rng.lognormal(0.0, 1.5, n)
    w = 0.1 + rng.pareto(1.5, n)
    hosts = rng.integers(-1, n_hosts, n)  # -1: pages without a host
    budget = 0.5 * n
    share = np.bincount(hosts[hosts >= 0], minlength=n_hosts) / n
    caps = 1.1 * budget * share
    caps[::7] = np.inf  # some hosts uncapped
    return dict(delta=delta, budget=budget, weights=w, p_min=1e-3, hosts=hosts, host_caps=caps)


@pytest.mark.parametrize("name", NAMES)
def test_many_binding_hosts(name):
    kw = capped_instance(1, discrete=name == "detection-discrete")
    kw["objective"] = name
    res = allocate(**kw)
    assert np.sum(res.host_lam > res.lam) > 20  # the instance has many hosts at their caps
    check_optimal(res, kw, kkt=KKT)


@pytest.mark.parametrize("name", ["freshness-periodic", "detection", "freshness-poisson"])
def test_hosts_of_one_to_nine_thousand_pages_meet_their_caps(name):
    # hosts of 1, 300, 40, 9000 and 9000 pages (more than 2^14 pages bind in all), each capped at 60% of what
    # it takes without caps, and 4000 pages without a host to take the rest of the budget
    rng = np.random.default_rng(5)
    sizes = [1, 300, 40, 9000, 9000]
    hosts = rng.permutation(np.concatenate([np.repeat(np.arange(len(sizes)), sizes), np.full(4000, -1)]))
    n = hosts.size
    kw = dict(delta=rng.lognormal(0.0, 1.5, n), budget=0.3 * n, weights=0.1 + rng.pareto(1.5, n), objective=name)
    free = allocate(**kw)
    caps = 0.6 * np.bincount(hosts[hosts >= 0], weights=free.p[hosts >= 0])
    kw.update(hosts=hosts, host_caps=caps)
    res = allocate(**kw)
    check_optimal(res, kw, kkt=KKT)
    assert np.all(res.host_lam > res.lam)


@pytest.mark.parametrize("name", ["freshness-poisson", "detection"])
def test_single_page_hosts_sit_at_their_cap_with_the_marginal_as_multiplier(name):
    # one page per host: the host's multiplier is that page's marginal value at p = c_h exactly
    rng = np.random.default_rng(2)
    n = 400
    delta = rng.lognormal(0.0, 1.0, n)
    w = 0.5 + rng.random(n)
    budget = 0.5 * n
    free = allocate(delta, budget, weights=w, objective=name)
    sel = np.flatnonzero(free.p > 0.1)[:100]  # capping lowers λ, so these still want more than 0.05
    assert sel.size == 100
    caps = np.full(n, np.inf)
    caps[sel] = 0.05
    kw = dict(delta=delta, budget=budget, weights=w, objective=name, hosts=np.arange(n), host_caps=caps)
    res = allocate(**kw)
    check_optimal(res, kw, kkt=KKT)
    np.testing.assert_allclose(res.p[sel], 0.05, rtol=1e-12)
    marginal = w[sel] * get_objective(name).derivative(np.full(100, 0.05), delta[sel])
    np.testing.assert_allclose(res.host_lam[sel], marginal, rtol=1e-10)
    assert np.all(res.host_lam[sel] > res.lam)


def test_host_root_on_a_jump_of_its_sum():
    # pages 0 and 1 observed completely (constant marginals w/Δ = 1 and 0.5, p <= Δ): their host's sum
    # jumps from 1 to 3 at λ = 0.5, so its cap 1.5 is met by page 1 taking a quarter of that jump
    delta = np.array([1.0, 2.0, 1.0])
    kw = dict(objective="freshness-poisson", hosts=np.array([0, 0, -1]), host_caps=[1.5],
              observed_completely=np.array([True, True, False]))
    res = allocate(delta, 4.5, **kw)
    check_optimal(res, dict(delta=delta, budget=4.5, **kw), kkt=KKT)
    # page 2: sqrt(Δ/λ) - Δ = 3 at λ = 1/16
    np.testing.assert_allclose(res.p, [1.0, 0.5, 3.0], rtol=1e-12)
    assert res.lam == pytest.approx(1.0 / 16.0, rel=1e-12)
    assert res.host_lam[0] == pytest.approx(0.5, rel=1e-12)


@pytest.mark.parametrize("hosts", [False, True])
def test_breakpoints_a_hair_from_the_optimal_lambda(hosts):
    # detection with p_min = 0: page i leaves p_min where λ = w_i. Put 20 pages' breakpoints within 1e-9 of
    # the optimum λ of the instance, and solve again, three times: the rates meet the conditions each time.
    # (A page a hair below its breakpoint still takes Δ/x with φ(x) = 1 - 1e-9, x about 21, so λ moves a
    # little from one round to the next.)
    rng = np.random.default_rng(8)
    n = 700
    kw = dict(delta=rng.lognormal(0.0, 1.0, n), budget=0.2 * n, weights=rng.uniform(0.2, 3.0, n),
              objective="detection")
    if hosts:
        kw["hosts"] = rng.integers(-1, 3, n)
        kw["host_caps"] = np.array([np.inf, 0.02 * n, np.inf])
    near = rng.choice(n, 20, replace=False)
    res = allocate(**kw)
    for _ in range(3):
        lam = res.lam
        kw["weights"] = kw["weights"].copy()
        kw["weights"][near] = lam * (1.0 + np.array([1e-9, -1e-9, 1e-12, -1e-12, 0.0] * 4))
        res = allocate(**kw)
        check_optimal(res, kw, kkt=KKT)
    assert res.lam == pytest.approx(lam, rel=2e-3)  # the breakpoints stay near the optimum
