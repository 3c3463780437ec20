"""The public contract of :func:`freshcrawl.allocation.allocate`, checked from its result alone.

Every allocation test that checks a solve goes through these functions, so they are the test oracle:
they read nothing of the solver but its public result (rates, multipliers, status, KKT residual) and
the objective's public ``derivative``.

* :func:`check_optimal`: the budget is met, the bounds and host caps hold, and the KKT conditions hold
  from the rates themselves: ``w_i f'(p_i) = λ_i`` strictly inside the bounds (``<=`` at p_min, ``>=``
  at p_max), ``λ_i`` the multiplier of the page's host (``host_lam``) or λ, every host with a multiplier
  above λ at its cap. For a concave objective these conditions are sufficient: the rates are optimal.
* :func:`refusal_is_justified`: for an instance that ``allocate`` refused with ``InfeasibleAllocation``,
  an independent proof that no rates meet the constraints. The sums Σ p that the constraints
  ``{lo <= p <= hi, Σ_{i∈h} p_i <= c_h}`` allow form the interval [Σ lo, Σ_h min(c_h, Σ_{i∈h} hi)]
  (empty when a host's cap is below its pages' Σ lo), computed here exactly rounded (``math.fsum``);
  where B lies outside it by a clear margin, the linear program of :func:`prove_infeasible` (scipy's
  HiGHS) must agree. A solver that wrongly refused a feasible instance fails the test. The one refusal
  allowed of a feasible instance is at the edge: B within 1e-12 relative of an end of the interval (all
  pages at their lower bounds, or every host at its cap), where the solver's sums, in another order, may
  differ from B by an ulp (documented in ``allocate``'s errors).
* :func:`random_instance`: instances of a crawl's size that mix every objective, per-page and scalar
  bounds, pages observed completely, pages of no value, hosts even or heavy-tailed, caps from loose to
  tight and some uncapped.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from freshcrawl.allocation import OBJECTIVE_NAMES, allocate, get_objective
from freshcrawl.errors import InfeasibleAllocation

#: objectives that accept pages observed completely
COMPLETE_OK = ("harmonic", "freshness-poisson", "freshness-periodic")


def effective_bounds(kw):
    """(lo, hi) per page as ``allocate`` applies them: a page observed completely has ``p <= Δ``."""
    delta = np.asarray(kw["delta"], dtype=float)
    n = delta.size
    lo = np.broadcast_to(np.asarray(kw.get("p_min", 0.0), dtype=float), (n,)).copy()
    hi = np.broadcast_to(np.asarray(kw.get("p_max", np.inf), dtype=float), (n,)).copy()
    complete = kw.get("observed_completely")
    if complete is not None:
        complete = np.asarray(complete, dtype=bool)
        lo = np.where(complete, np.minimum(lo, delta), lo)
        hi = np.where(complete, np.minimum(hi, delta), hi)
    return lo, hi


def prove_infeasible(budget, lo, hi, hosts=None, caps=None):
    """True when no rates meet ``lo <= p <= hi``, ``Σ p = budget`` and the host caps (an LP proof).

    The constraint set is a polytope; HiGHS decides its emptiness exactly up to its feasibility
    tolerance (1e-7 absolute by default, far above the ulps by which a sum in another order may differ).
    Returns False when HiGHS finds a feasible point, which a caller treats as "the refusal was wrong".
    """
    lo = np.asarray(lo, dtype=float)
    hi = np.asarray(hi, dtype=float)
    n = lo.size
    a_ub = b_ub = None
    if hosts is not None:
        hosts = np.asarray(hosts)
        caps = np.asarray(caps, dtype=float)
        on = (hosts >= 0) & np.isfinite(caps[np.maximum(hosts, 0)])
        rows = hosts[on]
        used = np.unique(rows)
        if used.size:
            remap = np.full(caps.size, -1)
            remap[used] = np.arange(used.size)
            a_ub = sparse.csr_matrix((np.ones(on.sum()), (remap[rows], np.flatnonzero(on))), shape=(used.size, n))
            b_ub = caps[used]
    bounds = np.column_stack([lo, np.where(np.isfinite(hi), hi, np.nan)])
    bounds = [(a, None if np.isnan(b) else b) for a, b in bounds]
    res = linprog(np.zeros(n), A_ub=a_ub, b_ub=b_ub, A_eq=np.ones((1, n)), b_eq=[budget], bounds=bounds,
                  method="highs")
    assert res.status in (0, 2), res.message  # 0: a feasible point, 2: infeasible (anything else: undecided)
    return res.status == 2


#: how close to an end of the feasible interval of Σ p a budget may be refused (rounding of the sums)
EDGE_RTOL = 1e-12


def feasible_sums(lo, hi, hosts=None, caps=None):
    """(least, most, crowded): the feasible interval of Σ p and whether some host's cap is below Σ lo.

    ``crowded`` is +1 when a capped host's Σ lo exceeds its cap by more than EDGE_RTOL (no rates at all),
    0 when none is within EDGE_RTOL of it, and -1 when one is on that edge within rounding.
    """
    lo = np.asarray(lo, dtype=float)
    hi = np.asarray(hi, dtype=float)
    least = math.fsum(lo)
    if hosts is None:
        return least, math.fsum(hi), 0
    hosts, caps = np.asarray(hosts), np.asarray(caps, dtype=float)
    crowded = 0
    most = math.fsum(hi[hosts < 0])
    for h in range(caps.size):
        on = hosts == h
        low_h, up_h = math.fsum(lo[on]), math.fsum(hi[on])
        if low_h > caps[h] * (1 + EDGE_RTOL):
            crowded = 1
        elif low_h > caps[h] * (1 - EDGE_RTOL) and crowded == 0 and on.any():
            crowded = -1
        most += min(caps[h], up_h)
    return least, most, crowded


def refusal_is_justified(budget, lo, hi, hosts=None, caps=None):
    """True when refusing the instance as infeasible is right (see the module docstring)."""
    least, most, crowded = feasible_sums(lo, hi, hosts, caps)
    outside = crowded == 1 or budget < least * (1 - EDGE_RTOL) or budget > most * (1 + EDGE_RTOL)
    if outside:
        clear = crowded == 1 or budget < least * (1 - 1e-6) or budget > most * (1 + 1e-6)
        if clear:  # an independent check by linear programming, outside HiGHS's feasibility tolerance
            assert prove_infeasible(budget, lo, hi, hosts, caps)
        return True
    on_edge = crowded == -1 or abs(budget - least) <= EDGE_RTOL * budget or abs(budget - most) <= EDGE_RTOL * budget
    return on_edge


def check_optimal(res, kw, *, kkt=1e-9, stat=1e-9):
    """Budget, bounds, caps and the KKT conditions, from the rates and the reported multipliers.

    ``kw`` holds the keyword arguments of the solve (``delta`` and ``budget`` included). ``kkt`` bounds
    the reported ``kkt_residual``; ``stat`` the relative stationarity error recomputed here.
    """
    delta, budget, p = np.asarray(kw["delta"], dtype=float), kw["budget"], res.p
    n = delta.size
    w = kw.get("weights")
    w = np.broadcast_to(np.asarray(1.0 if w is None else w, dtype=float), (n,))
    lo, hi = effective_bounds(kw)
    complete = kw.get("observed_completely")
    assert res.success, (res.status, res.message)
    assert res.kkt_residual <= kkt, res.kkt_residual
    assert abs(p.sum() - budget) <= 1e-9 * budget
    assert np.all(p >= lo) and np.all(p <= hi)
    hosts, caps = kw.get("hosts"), kw.get("host_caps")
    lam_i = np.full(n, res.lam)
    if hosts is not None:
        hosts, caps = np.asarray(hosts), np.asarray(caps, dtype=float)
        on = hosts >= 0
        sums = np.bincount(hosts[on], weights=p[on], minlength=caps.size)
        assert np.all(sums <= caps * (1 + 1e-9))
        assert np.all(res.host_lam >= res.lam * (1 - 1e-12))
        own = res.host_lam > res.lam * (1 + 1e-9)  # complementarity: a host with its own multiplier is at its cap
        np.testing.assert_allclose(sums[own], caps[own], rtol=1e-9)
        lam_i[on] = res.host_lam[hosts[on]]
    # stationarity, w f'(p) = λ_i inside the bounds, through the objective's public derivative
    name = kw.get("objective", "freshness-poisson")
    with np.errstate(all="ignore"):
        m = w * get_objective(name).derivative(p, delta)
        if complete is not None:  # log ρ under harmonic (w/p), ρ = p/Δ under freshness (w/Δ)
            m = np.where(complete, w / p if name == "harmonic" else w / delta, m)
    m = np.where((w > 0) & (delta > 0), m, 0.0)
    pinned = ~np.isfinite(lam_i)  # a host whose cap is the sum of its pages' p_min
    assert np.all(np.abs(p[pinned] - lo[pinned]) <= 1e-15 * max(budget, 1.0))
    free = (hi > lo) & np.isfinite(lam_i) & (lam_i > 0)
    tol = stat * lam_i
    at_lo, at_hi = free & (p <= lo), free & (p >= hi)
    inside = free & (p > lo) & (p < hi)
    assert np.all(m[at_lo] <= lam_i[at_lo] + tol[at_lo])
    assert np.all(m[at_hi] >= lam_i[at_hi] - tol[at_hi])
    close = np.abs(m[inside] - lam_i[inside]) <= tol[inside] + 1e-12 * lam_i[inside]
    assert np.all(close), np.flatnonzero(inside)[~close][:5]


def solve_checked(kw, *, kkt=1e-9, stat=1e-9):
    """``allocate(**kw)`` with warnings as errors, then the contract: optimal, or provably infeasible.

    Returns the result, or None when the instance was refused (after proving it infeasible).
    """
    kw = dict(kw)
    delta, budget = kw.pop("delta"), kw.pop("budget")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a ConvergenceWarning or a numpy warning fails the test
            res = allocate(delta, budget, **kw)
    except InfeasibleAllocation as err:
        lo, hi = effective_bounds({"delta": delta, **kw})
        assert refusal_is_justified(budget, lo, hi, kw.get("hosts"), kw.get("host_caps")), (
            f"allocate refused a feasible instance: {err}")
        return None
    check_optimal(res, {"delta": delta, "budget": budget, **kw}, kkt=kkt, stat=stat)
    return res


def random_instance(seed, sizes=(50, 300, 2000, 20000)):
    """Keyword arguments of :func:`allocate` for one random instance (delta and budget included)."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice(sizes))
    name = str(rng.choice(OBJECTIVE_NAMES))
    delta = rng.lognormal(0.0, rng.uniform(0.3, 3.0), n)
    if name == "detection-discrete":  # a change probability per step; some pages change every step
        delta = delta / (1.0 + delta)
        if rng.random() < 0.2:
            delta[rng.random(n) < 0.05] = 1.0
    if rng.random() < 0.2:
        delta[rng.random(n) < 0.1] = 0.0
    w = 0.1 + rng.pareto(rng.uniform(0.8, 3.0), n)
    if rng.random() < 0.2:
        w[rng.random(n) < 0.1] = 0.0
    lo, hi = 0.0, np.inf
    if rng.random() < 0.4:
        lo = rng.uniform(0.0, 0.05, n) if rng.random() < 0.5 else float(rng.uniform(0.0, 0.05))
    if rng.random() < 0.4:
        hi = lo + rng.uniform(0.1, 5.0, n) if rng.random() < 0.5 else float(np.max(lo) + rng.uniform(0.2, 5.0))
    complete = None
    if name in COMPLETE_OK and rng.random() < 0.3:
        complete = rng.random(n) < rng.uniform(0.01, 0.5)
    hosts = caps = None
    if rng.random() < 0.7:
        n_hosts = int(rng.choice([1, 10, 100, 1000, 10000]))
        hosts = rng.integers(-1 if rng.random() < 0.3 else 0, n_hosts, n)
        if rng.random() < 0.3:  # a heavy tail: a few hosts hold most pages
            hosts = np.minimum((rng.pareto(1.0, n) * 3).astype(np.int64), n_hosts - 1)
        share = np.bincount(hosts[hosts >= 0], minlength=n_hosts) / n
    budget = rng.uniform(0.05, 2.0) * n * 0.5
    if hosts is not None:
        caps = rng.uniform(0.3, 2.0) * budget * share * rng.uniform(0.5, 1.5, n_hosts)
        if rng.random() < 0.2:
            caps[rng.random(n_hosts) < 0.2] = np.inf
    return dict(delta=delta, budget=budget, weights=w, objective=name, p_min=lo, p_max=hi, hosts=hosts,
                host_caps=caps, observed_completely=complete)
