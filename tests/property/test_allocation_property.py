"""Invariants of the allocation solver on random instances (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from freshcrawl.allocation import OBJECTIVE_NAMES, allocate, get_objective



def magnitudes(high):
    """0 or a value in [1e-6, high]: the products w Δ and the multiplier λ stay far inside float64."""
    return st.one_of(st.just(0.0), st.floats(1e-6, high))


@st.composite
def instances(draw, *, with_bounds=True, with_hosts=True):
    n = draw(st.integers(1, 12))
    name = draw(st.sampled_from(OBJECTIVE_NAMES))
    hi_delta = 1.0 if name == "detection-discrete" else 20.0
    delta = np.array(draw(st.lists(magnitudes(hi_delta), min_size=n, max_size=n)))
    w = np.array(draw(st.lists(magnitudes(5.0), min_size=n, max_size=n)))
    lo = np.zeros(n)
    hi = np.full(n, np.inf)
    if with_bounds:
        lo = np.array(draw(st.lists(magnitudes(1.0), min_size=n, max_size=n)))
        hi = lo + np.array(draw(st.lists(st.floats(0.1, 5.0), min_size=n, max_size=n)))
    hosts = caps = None
    top = hi.copy()
    if with_hosts and draw(st.booleans()):
        n_hosts = draw(st.integers(1, 3))
        hosts = np.array(draw(st.lists(st.integers(-1, n_hosts - 1), min_size=n, max_size=n)))
        low_h = np.bincount(hosts[hosts >= 0], weights=lo[hosts >= 0], minlength=n_hosts)
        # caps above Σ p_min by 0 (pinned) or 1e-6 to 4: a cap such as 5e-241 puts a page's rate far below
        # what its response to a float64 λ resolves (p/Δ < 1e-16), which allocate reports as NOT_OPTIMAL
        # (see its Notes) rather than solves
        caps = low_h + np.array(draw(st.lists(magnitudes(4.0), min_size=n_hosts, max_size=n_hosts)))
        # the most each host can take: its cap, or the sum of its pages' p_max
        up_h = np.bincount(hosts[hosts >= 0], weights=hi[hosts >= 0], minlength=n_hosts)
        most = np.sum(np.minimum(caps, up_h)) + hi[hosts < 0].sum()
    else:
        most = top.sum()
    least = lo.sum()
    if np.isfinite(most) and most - least <= 1e-9 * most:
        # every host pinned at its lower bounds: B = Σ p_min, which sums in another order inside allocate
        # may call infeasible by an ulp (the exact edge is a unit test)
        return name, delta, w, lo, hi, hosts, caps, None
    frac = draw(st.floats(0.01, 0.99))
    budget = least + frac * (min(most, least + 50.0) - least) if np.isfinite(most) else least + 1.0 + 10 * frac
    if budget <= 0:
        budget = 1.0 if not np.isfinite(most) else None
    return name, delta, w, lo, hi, hosts, caps, budget


@given(instances())
def test_budget_bounds_and_caps_are_met(inst):
    name, delta, w, lo, hi, hosts, caps, budget = inst
    if budget is None or budget <= 0:
        return
    res = allocate(delta, budget, weights=w, objective=name, p_min=lo, p_max=hi, hosts=hosts, host_caps=caps)
    p = res.p
    assert abs(p.sum() - budget) <= 1e-9 * budget
    assert np.all(p >= lo) and np.all(p <= hi)
    if hosts is not None:
        sums = np.bincount(hosts[hosts >= 0], weights=p[hosts >= 0], minlength=caps.size)
        assert np.all(sums <= caps * (1 + 1e-12) + 1e-300)
    assert res.success
    assert res.kkt_residual < 1e-9


@given(instances(with_bounds=False, with_hosts=False))
def test_objective_not_below_the_uniform_allocation(inst):
    name, delta, w, lo, hi, hosts, caps, budget = inst
    res = allocate(delta, budget, weights=w, objective=name)
    obj = get_objective(name)
    uniform = np.full(delta.size, budget / delta.size)
    f_uniform = float(np.sum(np.where(w > 0, w * obj.value(uniform, delta), 0.0)))
    # the optimum is at least the uniform allocation's value, up to rounding in the sums
    assert res.objective >= f_uniform - 1e-12 * max(1.0, abs(f_uniform))


@given(instances(with_hosts=False), st.integers(0, 11), st.floats(0.01, 10.0))
def test_raising_a_weight_never_lowers_that_page_rate(inst, j, extra):
    name, delta, w, lo, hi, hosts, caps, budget = inst
    j = j % delta.size
    before = allocate(delta, budget, weights=w, objective=name, p_min=lo, p_max=hi).p[j]
    w2 = w.copy()
    w2[j] += extra
    after = allocate(delta, budget, weights=w2, objective=name, p_min=lo, p_max=hi).p[j]
    assert after >= before - 1e-9 * budget
