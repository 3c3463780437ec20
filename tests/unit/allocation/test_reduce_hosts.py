"""Hosts that need no multiplier of their own are taken out before the capped solve (``solve._reduce_hosts``).

Hosts without pages, without a cap, with one page (the cap folded into that page's p_max) or pinned at
their lower bounds (cap = Σ p_min) leave the problem; the rest are renumbered. The reduced problem has
the same optimum, so the rates, λ and every host multiplier must agree with the solve on the hosts as
given (``solve._REDUCE_SHARE = inf`` turns the reduction off), to the tolerances of test_joint_caps.
"""

from __future__ import annotations

import numpy as np
import pytest

from freshcrawl.allocation import allocate, solve
from freshcrawl.allocation import _kernels as K
from freshcrawl.errors import InfeasibleAllocation

from .test_joint_caps import KINDS, check_optimal, check_same, make_instance


def run(inst, *, reduce):
    """allocate with the reduction forced on or off, and whether it ran."""
    ran = []
    orig = solve._solve_reduced

    def counted(*args):
        ran.append(1)
        return orig(*args)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(solve, "_REDUCE_SHARE", 0.0 if reduce else np.inf)
        mp.setattr(solve, "_solve_reduced", counted)
        res = allocate(inst["delta"], inst["budget"], **inst["kw"])
    return res, bool(ran)


def with_pinned_hosts(inst, share, seed):
    """Set the caps of a share of the hosts with two or more pages to their Σ p_min (pinned there)."""
    rng = np.random.default_rng(seed)
    hosts, caps, lo = inst["hosts"], inst["caps"].copy(), inst["lo"]
    on = hosts >= 0
    count = np.bincount(hosts[on], minlength=caps.size)
    low = np.bincount(hosts[on], weights=lo[on], minlength=caps.size)
    pin = (count > 1) & (rng.random(caps.size) < share)
    caps[pin] = low[pin]
    inst["caps"] = caps
    inst["kw"]["host_caps"] = caps
    return pin


@pytest.mark.parametrize("kind", KINDS + ["freshness-mixed"])
@pytest.mark.parametrize("seed", [0, 1])
def test_reduced_problem_has_the_same_optimum(kind, seed):
    # 400 pages on 300 hosts: about a quarter of the hosts without pages, a third with one page
    inst = make_instance(kind, 50 + seed, 400, 300, bounds=True, zero_pages=0.05, uncapped_frac=0.1,
                         free_frac=0.1)
    pin = with_pinned_hosts(inst, 0.2, seed)
    hosts, caps = inst["hosts"], inst["caps"]
    count = np.bincount(hosts[hosts >= 0], minlength=caps.size)
    assert np.sum(count == 0) > 30 and np.sum(count == 1) > 60 and pin.sum() > 5
    red, ran = run(inst, reduce=True)
    full, ran_full = run(inst, reduce=False)
    assert ran and not ran_full
    check_optimal(red, inst)
    check_optimal(full, inst)
    check_same(red, full, inst)
    # the kinds of hosts taken out are all exercised: pinned ones report inf, one-page hosts bind
    assert np.all(np.isinf(red.host_lam[pin]))
    single = (count == 1) & np.isfinite(caps) & ~pin
    assert np.sum(red.host_lam[single] > red.lam * (1 + 1e-9)) > 5


@pytest.mark.parametrize("kind", ["freshness-poisson", "harmonic", "freshness-periodic", "detection"])
def test_one_page_host_multiplier_is_the_marginal_value_at_its_cap(kind):
    inst = make_instance(kind, 7, 300, 400, free_frac=0.0)
    res, ran = run(inst, reduce=True)
    assert ran
    hosts, caps = inst["hosts"], inst["caps"]
    count = np.bincount(hosts, minlength=caps.size)
    single = np.flatnonzero(count == 1)
    page = np.array([np.flatnonzero(hosts == h)[0] for h in single])
    binds = res.host_lam[single] > res.lam
    assert binds.sum() > 20 and (~binds).sum() > 20
    # a binding one-page host: its page sits at the cap and its multiplier is w f'(c_h) there
    np.testing.assert_array_equal(res.p[page[binds]], caps[single[binds]])
    np.testing.assert_allclose(res.host_lam[single[binds]], inst["marginal"](res.p)[page[binds]], rtol=1e-12)
    # one that does not bind: its page is under the cap and the host multiplier is λ
    assert np.all(res.p[page[~binds]] <= caps[single[~binds]])
    np.testing.assert_array_equal(res.host_lam[single[~binds]], res.lam)


def test_infeasible_cap_on_a_one_page_host_is_reported_as_without_the_reduction():
    hosts = np.array([0, 1, 1, 2, -1])
    caps = np.array([0.05, 5.0, 1.0])
    with pytest.raises(InfeasibleAllocation, match=r"first host 0 \(cap 0.05 visits/day < 0.1 visits/day\)"):
        allocate(np.ones(5), 2.0, p_min=0.1, hosts=hosts, host_caps=caps)


def test_reduction_only_where_it_pays():
    rng = np.random.default_rng(0)
    delta = rng.lognormal(0.0, 1.0, 2000)
    ten = rng.integers(0, 10, 2000)  # 10 hosts of about 200 pages: nothing to take out
    assert solve._reduce_hosts(solve._KernelProblem(2000, K.POISSON, 1.0, delta, 0.0, 0.0, np.inf), ten,
                               np.full(10, 50.0)) is None
    many = rng.integers(0, 4000, 2000)  # 4000 hosts: most without pages or with one
    out = solve._reduce_hosts(solve._KernelProblem(2000, K.POISSON, 1.0, delta, 0.0, 0.0, np.inf), many,
                              np.full(4000, 0.4))
    assert out is not None
    red, hosts_r, kept, pinned, singles, pages, low = out
    count = np.bincount(many, minlength=4000)
    np.testing.assert_array_equal(kept, np.flatnonzero(count > 1))
    np.testing.assert_array_equal(singles, np.flatnonzero(count == 1))
    np.testing.assert_array_equal(many[pages], singles)
    # the one-page hosts' pages take their cap as p_max and join the pages without a host
    np.testing.assert_array_equal(red.hi[pages], 0.4)
    np.testing.assert_array_equal(hosts_r[pages], -1)
    np.testing.assert_array_equal(kept[hosts_r[hosts_r >= 0]], many[hosts_r >= 0])


def test_host_census_and_remap_exact():
    hosts = np.array([2, -1, 0, 2, 2, 3], dtype=np.intp)
    lo = np.array([0.1, 9.0, 0.2, 0.3, 0.4, 0.0])
    # pages per host: [1, 0, 3, 1, 0]; only host 2 has more than one, and counts when capped
    assert K.capped_multi_page_hosts(hosts, np.array([1.0, 1.0, 1.0, 1.0, 1.0])) == 1
    assert K.capped_multi_page_hosts(hosts, np.array([1.0, 1.0, np.inf, 1.0, 1.0])) == 0
    count, low, page = K.host_census(hosts, 5, lo)
    np.testing.assert_array_equal(count, [1, 0, 3, 1, 0])
    np.testing.assert_allclose(low, [0.2, 0.0, 0.1 + 0.3 + 0.4, 0.0, 0.0], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(page, [2, -1, 4, 5, -1])
    # host 2 kept as 0; host 0 folded at cap 0.5; host 3 pinned at p_min
    new_id = np.array([-1, -1, 0, -1, -1], dtype=np.intp)
    fold = np.array([0.5, np.inf, np.inf, -np.inf, np.inf])
    hi = np.array([1.0, 1.0, 0.3, 1.0, 1.0, 2.0])
    out = K.remap_hosts(hosts, new_id, fold, lo, hi)
    np.testing.assert_array_equal(out, [0, -1, -1, 0, 0, -1])
    np.testing.assert_array_equal(hi, [1.0, 1.0, 0.3, 1.0, 1.0, 0.0])  # 0.5 > page 2's p_max 0.3: kept
    # nothing folded: hi is not touched (an empty array)
    out = K.remap_hosts(hosts, new_id, fold, 0.0, np.zeros(0))
    np.testing.assert_array_equal(out, [0, -1, -1, 0, 0, -1])


def test_reduction_plan_and_mapping_back_exact():
    count = np.array([1, 0, 3, 1, 0, 2, 2])
    low = np.array([0.2, 0.0, 0.8, 0.0, 0.0, 0.5, 0.1])
    caps = np.array([0.5, 1.0, 2.0, 0.0, np.inf, 0.5, np.inf])
    new_id, fold, kept, singles, pinned, infeasible, folds = K.reduction_plan(count, low, caps,
                                                                                np.zeros(0, dtype=np.intp))
    # host 0: one page, folded; 1: no page; 2: kept; 3: pinned (cap 0 <= Σ p_min); 4, 6: uncapped;
    # 5: pinned with its pages (cap = Σ p_min)
    np.testing.assert_array_equal(new_id, [-1, -1, 0, -1, -1, -1, -1])
    assert new_id.dtype == np.intp
    np.testing.assert_array_equal(fold, [0.5, np.inf, np.inf, -np.inf, np.inf, -np.inf, np.inf])
    np.testing.assert_array_equal(kept, [2])
    np.testing.assert_array_equal(singles, [0])
    np.testing.assert_array_equal(pinned, [False, False, False, True, False, True, False])
    assert not infeasible and folds
    assert K.reduction_plan(count, low, np.where(np.arange(7) == 2, 0.7, caps), new_id)[5]  # 0.7 < 0.8
    # mapping back: page 4 is host 0's; at its cap 0.5 (below p_max 1), so host 0 takes w f'(0.5)
    p = np.array([0.3, 0.2, 0.1, 0.6, 0.5])
    lamhat = K.reduced_multipliers(K.TOKENS[K.POISSON], p, 0.1, np.array([0.7]), kept, pinned, singles,
                                   np.array([4]), caps, K.POISSON, 2.0, np.full(5, 1.0), 0.0, 1.0)
    np.testing.assert_allclose(lamhat, [2.0 / 1.5**2, 0.0, 0.7, np.inf, 0.0, np.inf, 0.0], rtol=1e-15)
    # the same page below its cap: host 0 does not bind
    lamhat = K.reduced_multipliers(K.TOKENS[K.POISSON], p * 0.5, 0.1, np.array([0.7]), kept, pinned, singles,
                                   np.array([4]), caps, K.POISSON, 2.0, np.full(5, 1.0), 0.0, 1.0)
    assert lamhat[0] == 0.0
    sums = K.reduced_sums(np.array([1.5, 4.0]), p, kept, singles, np.array([4]), pinned, low)
    np.testing.assert_allclose(sums, [0.5, 0.0, 1.5, 0.0, 0.0, 0.5, 0.0, 4.0 - 0.5 - 0.0 - 0.5], rtol=0,
                               atol=1e-15)


@pytest.mark.parametrize("objective", ["freshness-poisson", "harmonic", "freshness-periodic", "detection"])
def test_reduction_with_unit_weights_and_scalar_bounds(objective, monkeypatch):
    # weights and bounds shared by every page (scalars in the kernels) become per-page p_max arrays
    rng = np.random.default_rng(3)
    delta = rng.lognormal(0.0, 1.0, 300)
    hosts = rng.integers(0, 400, 300)
    caps = np.full(400, 1.0)
    red = allocate(delta, 100.0, objective=objective, hosts=hosts, host_caps=caps, p_min=0.01)
    monkeypatch.setattr(solve, "_REDUCE_SHARE", np.inf)
    full = allocate(delta, 100.0, objective=objective, hosts=hosts, host_caps=caps, p_min=0.01)
    assert red.success and red.kkt_residual <= 1e-12
    assert np.sum(red.host_lam > red.lam) > 10
    np.testing.assert_allclose(red.p, full.p, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(red.host_lam, full.host_lam, rtol=1e-9)
    assert red.lam == pytest.approx(full.lam, rel=1e-9)
