"""Host caps: the public result of :func:`allocate` with politeness caps, from its rates alone.

Each test solves an instance through the public ``allocate`` and checks the optimality conditions from
the returned rates and multipliers (``check_optimal``), against closed forms where there are some, and
against the solve without caps where the caps do not bind. The conditions:

* budget Σ p_i = B, bounds p_min <= p_i <= p_max, caps Σ_{i∈h} p_i <= c_h;
* stationarity: w_i f'(p_i) = λ_i inside the bounds, with λ_i = host_lam[h] for a page on host h and
  λ for a page without a host (<= at p_min, >= at p_max), with the marginal values written out here
  from the objectives' formulas (``marginal_fn``), independently of the solver;
* complementarity: a host whose multiplier exceeds λ meets its cap.

The objectives are strictly concave in each p_i, so these conditions single out the optimum. An instance
refused as infeasible is proved so by a linear program (``tests.allocation_oracle.prove_infeasible``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshcrawl.allocation import SyncCost, allocate
from freshcrawl.errors import InfeasibleAllocation
from tests.allocation_oracle import prove_infeasible, refusal_is_justified

# Kinds of instance. "harmonic-mixed" is "harmonic" with a third of the pages observed completely
# (objective log(p/Δ), p <= Δ), so the pages have different kinds; "freshness-mixed" is
# "freshness-poisson" with a third observed completely (f = p/Δ: a constant marginal value w/Δ up to
# p = Δ, so Σp jumps where λ crosses w/Δ); "sync-polynomial" is SyncCost.polynomial (seed 003's
# polynomial costs); "freshness-periodic" and "detection" have Lambert-W responses and a marginal value
# that is flat where a page leaves p_min (FLAT).
KINDS = ["freshness-poisson", "harmonic", "harmonic-mixed", "sync-polynomial", "freshness-periodic", "detection"]
FLAT = ("freshness-periodic", "detection")


# Tolerances of check_same, which compares two solves of problems with the same optimum (with caps that
# do not bind, and without caps). Each returns rates whose multipliers agree with w f'(p) to a few ulps
# (kkt_residual ~1e-15 on these instances; asserted <= 1e-9 below). Two KKT points of a strictly
# concave problem whose multipliers differ by a relative δ have rates differing by |p'(λ)| λ δ, which
# is <= p δ for the harmonic, log and polynomial objectives and <= (p + Δ) δ / 2 for Poisson freshness
# (p = sqrt(wΔ/λ) - Δ, p' λ = -(p + Δ)/2); evaluating p = sqrt(wΔ/λ) - Δ or (sqrt(Δ² + 4wΔ/λ) - Δ)/2
# cancels digits when p << Δ, an absolute error of a few ulps of Δ. Hence rates are compared as
# |p_a - p_b| <= RTOL (|p_b| + Δ_i), with RTOL = 1e-9 a factor 1e6 above δ ~ 1e-15: a wrong
# multiplier on one host (the failure this guards against) moves its rates by far more.
#
# Periodic freshness and detection are flatter: with x = Δ/p, f' = g(x)/Δ resp. g(x), g(x) =
# 1 - (1 + x) e^{-x}, and f'' = -x² e^{-x} / (pΔ) resp. -x² e^{-x} / p, so in both cases
# λ |p'(λ)| = f'/|f''| = p g(x) e^x / x². That is ~p/2 for p >> Δ (x -> 0, g ~ x²/2), but grows like
# p e^x / x² as p -> 0: a page that has just left p_min (marginal value w g(∞) barely above λ) moves
# by e^x/x² times more than the multipliers (1e10 p at x = 30), and without bound at p -> 0. So for
# these two objectives a rate may differ by up to RTOL λ|p'(λ)|, i.e. by what a relative change RTOL of
# its multiplier moves it. That is checked without evaluating p' where it blows up: w f' decreases
# strictly in p, so p_a and p_b are the responses to the multipliers w f'(p_a), w f'(p_b),
# and these must agree to RTOL (mean value theorem: |Δp| <= RTOL λ max |p'| over the interval). A
# rate passes if it is within RTOL (|p| + Δ) or (FLAT only) its marginal value is within RTOL of the
# other solve's. The objective, multipliers and stationarity keep their tolerances.
RTOL = 1e-9
# The objective is stationary at the optimum and both rate vectors meet the same constraints, so the
# values differ at second order in the rate differences (~1e-30) plus rounding of the sum over the
# pages (a few ulps of Σ|w f|): 1e-12 relative to Σ|w_i f_i(p_i)|.
OBJ_RTOL = 1e-12


# ---------------------------------------------------------------------------------------------------
# instances
# ---------------------------------------------------------------------------------------------------
def one_minus_1px_emx(x):
    """g(x) = 1 - (1 + x) e^{-x} for x >= 0 (inf allowed), without cancellation for small x.

    The series Σ_{k>=2} (-1)^k (k - 1) x^k / k! = x²/2 - x³/3 + x⁴/8 - ... for x < 1 (30 terms: the
    remainder is below 1e-30 of the sum); 1 - (1 + x) e^{-x} directly above (g(1) = 0.26: at most a
    few ulps lost), and 1 for x = inf (p = 0).
    """
    x = np.asarray(x, dtype=float)
    xs = np.where(x < 1.0, x, 0.0)
    series = np.zeros_like(xs)
    term = xs.copy()  # x^k / k!, from k = 1
    for k in range(2, 32):
        term = term * xs / k
        series += (-1) ** k * (k - 1) * term
    with np.errstate(over="ignore", invalid="ignore"):
        direct = np.where(np.isinf(x), 1.0, 1.0 - (1.0 + x) * np.exp(-x))
    return np.where(x < 1.0, series, direct)


def marginal_fn(kind, delta, w, complete=None, sync=None):
    """w_i f_i'(p) written out from the objectives' formulas (independent of the solver's kernels)."""

    def fn(p):
        with np.errstate(divide="ignore", invalid="ignore"):
            if kind in FLAT:  # f = (p/Δ)(1 - e^{-Δ/p}) resp. p (1 - e^{-Δ/p}); f' = g(Δ/p)/Δ resp. g(Δ/p)
                m = one_minus_1px_emx(np.where(p > 0, delta / p, np.inf))
                if kind == "freshness-periodic":
                    m = m / delta
            elif kind in ("freshness-poisson", "freshness-mixed"):  # f = p / (p + Δ)
                m = delta / (p + delta) ** 2
                if complete is not None:  # observed completely: f = p / Δ
                    m = np.where(complete, 1.0 / delta, m)
            elif kind == "sync-polynomial":  # f = -a p^-b / (b + 1)
                a, b = sync
                m = a * b * p ** (-b - 1.0) / (b + 1.0)
            else:  # harmonic f = log(p / (p + Δ)); observed completely f = log(p / Δ)
                m = delta / (p * (p + delta))
                if complete is not None:
                    m = np.where(complete, 1.0 / p, m)
            if delta is not None:  # Δ = 0: no marginal value at any rate
                m = np.where(delta > 0, m, 0.0)
            return np.where(w > 0, w * m, 0.0)

    return fn


def make_instance(kind, seed, n, n_hosts, *, cap_range=(0.3, 3.0), bounds=False, free_frac=0.1,
                  uncapped_frac=0.0, zero_pages=0.0):
    """A random instance: lognormal Δ, Pareto weights, caps a random multiple of each host's share.

    Returns a dict with the allocate arguments and what the checks need (bounds as arrays, the
    marginal value function, and the per-page scale of the rate tolerance).
    """
    rng = np.random.default_rng(seed)
    delta = rng.lognormal(0.0, 1.5, n)
    w = 0.1 + rng.pareto(1.5, n)
    hosts = rng.integers(0, n_hosts, n)
    hosts[rng.random(n) < free_frac] = -1  # pages without a host
    if zero_pages:  # zero marginal value: w = 0, or Δ = 0 (SyncCost has no Δ: w = 0 only)
        z = rng.random(n) < zero_pages
        w[z & ((rng.random(n) < 0.5) | (kind == "sync-polynomial"))] = 0.0
        delta[z & (w > 0)] = 0.0
    budget = 0.5 * n
    share = np.bincount(hosts[hosts >= 0], minlength=n_hosts) / n
    caps = rng.uniform(*cap_range, n_hosts) * budget * share
    caps[rng.random(n_hosts) < uncapped_frac] = np.inf
    lo, hi = np.zeros(n), np.full(n, np.inf)
    if bounds:
        lo = np.where(rng.random(n) < 0.5, rng.uniform(0.0, 0.2, n), 0.0)
        hi = np.where(rng.random(n) < 0.5, lo + rng.uniform(0.05, 2.0, n), np.inf)
        low_h = np.bincount(hosts[hosts >= 0], weights=lo[hosts >= 0], minlength=n_hosts)
        caps = np.maximum(caps, 1.05 * low_h)
    # keep the instance feasible: what the pages can take exceeds the budget, which exceeds Σ p_min
    up_h = np.bincount(hosts[hosts >= 0], weights=hi[hosts >= 0], minlength=n_hosts)
    most = np.sum(np.minimum(caps, up_h)) + np.sum(hi[hosts < 0])
    budget = min(budget, 0.8 * most)
    budget = max(budget, 1.2 * lo.sum() + 1e-3)
    kw = dict(weights=w, hosts=hosts, host_caps=caps, p_min=lo if bounds else 0.0, p_max=hi if bounds else np.inf)
    complete = sync = None
    if kind in ("harmonic-mixed", "freshness-mixed"):
        complete = rng.random(n) < 0.3
        kw.update(objective="harmonic" if kind == "harmonic-mixed" else "freshness-poisson", observed_completely=complete)
        hi = np.where(complete, np.minimum(hi, delta), hi)
        lo = np.where(complete, np.minimum(lo, delta), lo)
    elif kind == "sync-polynomial":  # seed 003, App. B: a ~ U[0, 1], exponent sigmoid(5 U[0, 1])
        sync = (rng.uniform(0.05, 1.0, n), 1.0 / (1.0 + np.exp(-5.0 * rng.uniform(0.0, 1.0, n))))
        kw.update(objective=SyncCost.polynomial(*sync))
    else:
        kw.update(objective=kind)
    return dict(
        delta=None if kind == "sync-polynomial" else delta,
        budget=budget,
        kw=kw,
        hosts=hosts,
        caps=caps,
        lo=lo,
        hi=hi,
        w=w,
        marginal=marginal_fn(kind, None if kind == "sync-polynomial" else delta, w, complete, sync),
        scale=np.zeros(n) if kind == "sync-polynomial" else delta,
        flat=kind in FLAT,
    )


# ---------------------------------------------------------------------------------------------------
# solving, and the checks
# ---------------------------------------------------------------------------------------------------
def solve(inst, **extra):
    """allocate on the instance through the public interface."""
    return allocate(inst["delta"], inst["budget"], **{**inst["kw"], **extra})


def host_sums(p, hosts, n_hosts):
    on = hosts >= 0
    return np.bincount(hosts[on], weights=p[on], minlength=n_hosts)


def check_optimal(res, inst, *, kkt_tol=1e-9, stat_tol=1e-9):
    """The rates meet the budget, bounds and caps, and the KKT conditions with the reported multipliers."""
    p, hosts, caps, budget = res.p, inst["hosts"], inst["caps"], inst["budget"]
    lo, hi = inst["lo"], inst["hi"]
    assert res.success
    assert res.kkt_residual <= kkt_tol
    assert abs(p.sum() - budget) <= 1e-9 * budget
    assert np.all(p >= lo) and np.all(p <= hi)
    sums = host_sums(p, hosts, caps.size)
    fin = np.isfinite(caps)
    assert np.all(sums[fin] <= caps[fin] * (1 + 1e-9))
    # complementarity: a host with its own multiplier above λ meets its cap
    own = np.isfinite(res.host_lam) & (res.host_lam > res.lam * (1 + 1e-9))
    assert np.all(np.isfinite(caps[own]))
    np.testing.assert_allclose(sums[own], caps[own], rtol=1e-9)
    assert np.all(res.host_lam >= res.lam * (1 - 1e-12))
    # stationarity, from the rates: w f'(p) = λ_i strictly inside the bounds, with the sign conditions
    # at the bounds; pages of hosts pinned at their lower bounds (host_lam = inf) are at p_min
    lam_i = np.where(hosts >= 0, res.host_lam[np.maximum(hosts, 0)], res.lam)
    m = inst["marginal"](p)
    pinned = ~np.isfinite(lam_i)
    # (exactly, except that with λ = 0 the leftover spread may hand such a page the rounding residue
    # of c_h - Σ p, below an ulp of c_h)
    assert np.all(np.abs(p[pinned] - lo[pinned]) <= 1e-15 * max(budget, caps[np.isfinite(caps)].max(initial=0)))
    ok = ~pinned & (inst["w"] > 0) & (hi > lo)
    inside = ok & (p > lo) & (p < hi)
    np.testing.assert_allclose(m[inside], lam_i[inside], rtol=stat_tol)
    at_lo = ok & (p == lo)
    assert np.all(m[at_lo] <= lam_i[at_lo] * (1 + stat_tol))
    at_hi = ok & (p == hi) & (p > lo)
    assert np.all(m[at_hi] >= lam_i[at_hi] * (1 - stat_tol))


def check_same(fast, ref, inst):  # fast: one solve, ref: the other
    """Two solves give the same optimum (see RTOL, OBJ_RTOL)."""
    close = np.abs(fast.p - ref.p) <= RTOL * (np.abs(ref.p) + inst["scale"])
    if inst.get("flat"):  # a rate may move by RTOL λ|p'(λ)| (see RTOL): compare the marginal values
        m_fast, m_ref = inst["marginal"](fast.p), inst["marginal"](ref.p)
        close |= np.abs(m_fast - m_ref) <= RTOL * np.maximum(m_fast, m_ref)
    assert np.all(close), np.flatnonzero(~close)[:10]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.abs(inst["w"]) * np.abs(np.log(np.where(ref.p > 0, ref.p, 1.0)))
    magnitude = max(abs(ref.objective), float(np.sum(terms)), float(np.sum(inst["w"])))
    # (-inf on both when a valued page gets p = 0 under a log objective: a host capped at 0)
    assert fast.objective == ref.objective or abs(fast.objective - ref.objective) <= OBJ_RTOL * magnitude
    # the multipliers: λ, and each host's max(λ, λ_h), are unique where a page at that multiplier sits strictly
    # inside its bounds; where every such page is at a bound, any value between the neighbouring breakpoints
    # is a multiplier of the same rates (check_optimal checks each path's against its rates)
    hosts = inst["kw"].get("hosts")
    hosts = np.full(ref.p.size, -1) if hosts is None else np.asarray(hosts)
    inside = (ref.p > inst["lo"]) & (ref.p < inst["hi"])
    on_lam = (hosts < 0) | (ref.host_lam[np.maximum(hosts, 0)] <= ref.lam * (1 + 1e-9))
    lam_determined = bool(np.any(inside & on_lam))
    if lam_determined:
        assert fast.lam == pytest.approx(ref.lam, rel=RTOL)
    # host multipliers: inf (pinned) on the same hosts, else equal to RTOL where determined
    assert np.array_equal(np.isfinite(fast.host_lam), np.isfinite(ref.host_lam))
    n_hosts = ref.host_lam.size
    determined = np.bincount(hosts[inside & (hosts >= 0)], minlength=n_hosts)[:n_hosts] > 0
    determined |= lam_determined & (ref.host_lam <= ref.lam * (1 + 1e-9))
    fin = np.isfinite(ref.host_lam) & determined
    np.testing.assert_allclose(fast.host_lam[fin], ref.host_lam[fin], rtol=RTOL)



# ---------------------------------------------------------------------------------------------------
# 1. random instances
# ---------------------------------------------------------------------------------------------------
SIZES = [(1, 1), (2, 1), (9, 3), (60, 10), (500, 40), (2000, 150), (5000, 300), (3000, 1), (400, 300)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_instances_meet_the_optimality_conditions(kind, seed):
    n_binding = 0
    for j, (n, n_hosts) in enumerate(SIZES):
        inst = make_instance(kind, 100 * seed + j, n, n_hosts, free_frac=0.1 if j % 3 else 0.0,
                             uncapped_frac=0.1 if j % 2 else 0.0)
        res = solve(inst)
        check_optimal(res, inst)
        n_binding += int(np.sum(res.host_lam > res.lam * (1 + 1e-9)))
    assert n_binding > 100  # the caps bind on many hosts: the host multipliers are exercised


@pytest.mark.parametrize("kind", KINDS)
def test_bounds_and_zero_value_pages(kind):
    inst = make_instance(kind, 11, 3000, 200, bounds=True, zero_pages=0.1, uncapped_frac=0.1)
    res = solve(inst)
    p, lo, hi = res.p, inst["lo"], inst["hi"]
    # the bounds are exercised: pages at p_min > 0, at a finite p_max, and strictly inside
    assert np.sum((p == lo) & (lo > 0)) > 10
    assert np.sum((p == hi) & np.isfinite(hi)) > 10
    # (under detection w f'(p) <= w f'(0) = w, so the pages with w < λ stay at p_min: fewer inside)
    assert np.sum((p > lo) & (p < hi)) > (500 if kind == "detection" else 1000)
    # zero-value pages (w = 0 or Δ = 0) stay at p_min when λ > 0
    if inst["delta"] is not None:
        zero = (inst["w"] == 0) | (inst["delta"] == 0)
        assert zero.sum() > 100
        assert res.lam > 0
        np.testing.assert_array_equal(p[zero], lo[zero])
    check_optimal(res, inst)


SMOOTH_KINDS = ["freshness-poisson", "harmonic", "harmonic-mixed", "sync-polynomial"] * 3


@pytest.mark.parametrize("j, kind", list(enumerate(SMOOTH_KINDS)))
def test_smooth_objectives_reach_a_kkt_residual_of_1e_12(j, kind):
    inst = make_instance(kind, 100 + j, 300 * (1 + j % 3), 10 * (1 + j), bounds=j % 2 == 0,
                         uncapped_frac=0.3 * (j % 2), zero_pages=0.1 * (j % 3 == 0))
    check_optimal(solve(inst), inst, kkt_tol=1e-12)


# instances of up to 50,000 pages where Σp jumps (pages observed completely under freshness) or is
# nearly singular (Lambert-W objectives), and where many hosts end on such a jump
LARGE = [("detection", 4, 5000, 300), ("freshness-mixed", 6, 5000, 300), ("freshness-periodic", 9, 5000, 300),
         ("detection", 0, 20000, 2000), ("detection", 2, 50000, 1000), ("freshness-periodic", 2, 20000, 2000),
         ("freshness-periodic", 3, 20000, 2000)]


@pytest.mark.parametrize("kind, seed, n, n_hosts", LARGE)
def test_large_instances_with_jumps(kind, seed, n, n_hosts):
    inst = make_instance(kind, seed, n, n_hosts)
    check_optimal(solve(inst), inst)


@pytest.mark.parametrize("seed, n, n_hosts, bounds", [(0, 20000, 100, False), (1, 20000, 400, True),
                                                      (3, 30000, 1000, False), (5, 20000, 200, True)])
def test_large_poisson_freshness_instances(seed, n, n_hosts, bounds):
    inst = make_instance("freshness-poisson", seed, n, n_hosts, bounds=bounds, uncapped_frac=0.1, zero_pages=0.05)
    check_optimal(solve(inst), inst, kkt_tol=1e-12)


# ---------------------------------------------------------------------------------------------------
# 2. λ on a jump of Σp (regression instances)
# ---------------------------------------------------------------------------------------------------
JUMP_ROOT = dict(objective="freshness-poisson", observed_completely=np.array([True, False]), hosts=[0, -1],
                 host_caps=[10.0])


def test_root_on_a_jump():
    # page 0 observed completely: constant marginal value w/Δ = 1/2 for p in [0, Δ = 2]; page 1 (Δ = 1)
    # has p = 1/sqrt(λ) - 1. With B = 1.5 the root is λ = 1/2 exactly, on the jump of Σp, page 1 at
    # sqrt(2) - 1 and page 0 taking the rest. The cap (10) does not bind.
    res = allocate([2.0, 1.0], 1.5, **JUMP_ROOT)
    assert res.success and res.kkt_residual <= 1e-12
    assert res.lam == pytest.approx(0.5, rel=1e-12)
    np.testing.assert_allclose(res.p, [2.5 - np.sqrt(2.0), np.sqrt(2.0) - 1.0], rtol=1e-12)
    assert res.n_iter <= 30


def test_root_on_a_jump_for_a_page_on_a_host():
    # one page, observed completely, Δ = 2: f = p/2, a constant marginal value 1/2 up to p = 2; the
    # cap (1) does not bind, so the page takes the budget, λ = 1/2 on the jump. An earlier solver
    # returned p = 0 with status CONVERGED and KKT residual 1.
    kw = dict(objective="freshness-poisson", observed_completely=np.array([True]), hosts=[0], host_caps=[1.0])
    res = allocate([2.0], 0.5, **kw)
    assert res.success
    assert res.p[0] == pytest.approx(0.5, rel=1e-15)
    assert res.kkt_residual <= 1e-15
    assert res.lam == pytest.approx(0.5, rel=1e-12)


def test_jump_with_the_cap_near_the_budget():
    # one completely observed page (Δ = 1, w = 7: marginal value 7 up to p = 1), B = 0.3, host cap 0.4:
    # λ = 7 on the page's jump, and the host binds just below it (its own root on the same jump), so the
    # page takes the budget, 0.3. An earlier solver returned 0.75 (the host treated as free).
    kw = dict(weights=[7.0], objective="freshness-poisson", observed_completely=np.array([True]), hosts=[0],
              host_caps=[0.4])
    res = allocate([1.0], 0.3, **kw)
    assert res.p[0] == pytest.approx(0.3, rel=1e-14)
    assert res.kkt_residual <= 1e-12 and res.success


TWO_COMPLETE = dict(weights=np.array([2.4349470975753547, 0.15682345364095082]), objective="freshness-poisson",
                    observed_completely=np.array([True, True]), hosts=[0, 0], host_caps=[2.3189650541735403])
TWO_COMPLETE_DELTA = np.array([0.7608947306172095, 14.312122259035336])


def test_two_complete_pages():
    # page 0: marginal value w/Δ = 3.2 up to p = Δ; page 1: 0.011 up to Δ = 14.3. With B = 1 page 0
    # takes Δ_0 and page 1 the rest, λ = w_1/Δ_1 (on page 1's jump); the cap does not bind. Page 0 sits
    # at its bound on both sides of the jump: an interpolation across the jump once moved it an ulp
    # below, where its marginal value 3.2 >> λ read as a KKT residual of 291.
    res = allocate(TWO_COMPLETE_DELTA, 1.0, **TWO_COMPLETE)
    np.testing.assert_allclose(res.p, [TWO_COMPLETE_DELTA[0], 1.0 - TWO_COMPLETE_DELTA[0]], rtol=1e-15)
    assert res.lam == pytest.approx(TWO_COMPLETE["weights"][1] / TWO_COMPLETE_DELTA[1], rel=1e-12)
    assert res.p[0] == TWO_COMPLETE_DELTA[0]
    assert res.kkt_residual <= 1e-12


@pytest.mark.parametrize("args", [(4, 500, 40), (108, 400, 300)])
def test_freshness_mixed_random_instance(args):
    # these once failed the KKT conditions (kkt_residual 1.8 and 68, status CONVERGED)
    inst = make_instance("freshness-mixed", *args, free_frac=0.1)
    check_optimal(solve(inst), inst)


def test_detection_root_on_a_near_jump():
    # page 0 has Δ = 18 >> p, so its marginal value is w_0 up to rounding: Σp jumps at λ = w_0, where
    # the host also leaves its cap
    kw = dict(weights=np.array([0.4388660551673138, 0.8198221798261303]), objective="detection", hosts=[0, 0],
              host_caps=[0.7087472671797485])
    delta = np.array([18.055237050500942, 0.401911337634575])
    res = allocate(delta, 0.5669978137437988, **kw)
    assert res.success and res.n_iter <= 30
    assert res.lam == pytest.approx(kw["weights"][0], rel=1e-14) and res.kkt_residual <= 1e-12
    assert res.p.sum() == pytest.approx(0.5669978137437988, rel=1e-14)


def test_budget_root_is_not_stopped_next_to_a_singular_page():
    delta = np.array([2.2825018366807015, 2.7413959458580464, 0.9177312281153084])
    w = np.array([0.2055044860962286, 0.3673809356857636, 0.8648673891731419])
    caps = np.array([np.inf, 0.07464876238806473, 0.17289684799845195])
    budget = 0.25176720303415034
    res = allocate(delta, budget, weights=w, objective="freshness-periodic", hosts=[0, 1, 2], host_caps=caps)
    assert res.success and res.kkt_residual <= 1e-12
    np.testing.assert_allclose(res.p[1:], caps[1:], rtol=1e-14)
    assert res.p[0] == pytest.approx(budget - caps[1] - caps[2], rel=1e-12)
    assert res.lam == pytest.approx(w[0] / delta[0], rel=1e-12)


def _regression_instance(kind, delta, w, lo, hi, hosts, caps, budget):
    n = delta.size
    return dict(hosts=np.asarray(hosts), caps=np.asarray(caps, dtype=float), budget=budget, w=w,
                lo=np.broadcast_to(lo, (n,)), hi=np.broadcast_to(hi, (n,)), marginal=marginal_fn(kind, delta, w))


def test_host_root_is_not_stopped_where_a_page_reaches_p_max_an_ulp_away():
    # detection: page 4 (Δ/p_max = 40) reaches p_max an ulp below its breakpoint; an earlier solver
    # stopped the host there, 3% under its cap, with the breakpoint as its multiplier (the root is 6% lower)
    delta = np.array([0.091102724783561198, 40.587212502299138, 36.601446775628219, 0.51856688815941054,
                      121.09435984367757, 1.5777169473638533, 2.2456012615198033, 0.15633470792748311, 1.0])
    w = np.array([0.2935240725176915, 0.22028167357496498, 0.3655928519052055, 0.4691128472198284,
                  1.9781649013543847, 0.39531714184855093, 2.1445263738952307, 2.0066494419787677, 1.0])
    lo = np.array([0.031899482321490404, 0.02000359701664152, 0.03513672527875677, 0.009386000566099362,
                   0.03094890052217021, 0.04462946577427128, 0.0010304132063174765, 0.007013704350613831, 0.0])
    hi, cap, budget = 2.999991014971442, 3.815493411212567, 6.0
    hosts = np.array([0] * 8 + [-1])
    inst = _regression_instance("detection", delta, w, lo, hi, hosts, [cap], budget)
    res = allocate(delta, budget, weights=w, objective="detection", p_min=lo, p_max=hi, hosts=hosts,
                   host_caps=[cap])
    check_optimal(res, inst)
    assert res.p[:8].sum() == pytest.approx(cap, rel=1e-12) and res.p[4] == hi
    assert res.host_lam[0] == pytest.approx(1.857843041017987, rel=1e-9)


def test_host_over_its_cap_on_the_jump_under_lambda_is_not_stopped_there():
    # detection, a host over its cap by 7e-4 at the lower end of λ's jump was once taken to bind at λ
    delta = np.array([59.361803240737736, 10.399366716264508, 43.7921899232405, 3.994726949095174,
                      12.79916798514719, 98.97279598884862, 2.0438000913831584, 1.0728840711911012])
    w = np.array([3.166295459956047, 2.6025722415564525, 0.7734323656770877, 5.059973576149206,
                  1.0212134159758515, 0.9532106740532635, 14.082774831769116, 0.10076868636205691])
    caps = np.array([17.774161132666226, 14.145321535288375, 5.254741694791026, 1.204614303199337,
                     1.0743536149038928, 1.6197394215991092])
    hosts = np.array([1, 2, 3, 0, 0, 4, 5, 3])
    lo, budget = 0.03946222872097757, 33.37181351179271
    inst = _regression_instance("detection", delta, w, lo, np.inf, hosts, caps, budget)
    res = allocate(delta, budget, weights=w, objective="detection", p_min=lo, hosts=hosts, host_caps=caps)
    check_optimal(res, inst)
    assert res.lam == w[2] and lo < res.p[2] < 1.0
    assert res.p[2] + res.p[7] < caps[3] and res.host_lam[3] == res.lam


def test_jump_fraction_matches_the_rates_written():
    delta, w, budget = np.array([9.708281660715029]), np.array([0.17232648178752297]), 0.22335861388672368
    for kw in (dict(hosts=[0], host_caps=[0.6053667849376145]), {}):
        res = allocate(delta, budget, weights=w, objective="detection", **kw)
        assert res.p[0] == pytest.approx(budget, rel=1e-14) and res.kkt_residual <= 1e-12 and res.success


def test_jump_found_by_one_pass_and_written_by_another():
    kw = dict(weights=[0.0, 0.75], objective="freshness-periodic", p_min=[0.0, 0.0], p_max=[1.0, 1.0])
    for res in (allocate([0.0, 1.0], 0.015625, hosts=[0, 0], host_caps=[1.0], **kw),
                allocate([0.0, 1.0], 0.015625, **kw)):
        assert res.p[1] == pytest.approx(0.015625, rel=1e-14) and res.p[0] == 0.0
        assert res.success and res.kkt_residual <= 1e-12


def test_rates_at_their_bounds_leave_the_multiplier_free_between_breakpoints():
    # every page with a value at a bound: λ may be anything between the neighbouring breakpoints
    delta = np.array([0.0, 0, 0, 0, 0, 2, 0, 3, 10, 0, 0, 0])
    w = np.array([0.0, 0, 0, 0, 0, 0.25, 0, 0.5, 3, 0, 0, 0])
    hi = np.full(12, np.inf)
    hi[8] = 2.5
    kw = dict(weights=w, p_min=np.zeros(12), p_max=hi, hosts=np.zeros(12, dtype=int), host_caps=np.array([np.inf]),
              objective="freshness-poisson")
    data = dict(delta=delta, budget=2.5, kw=kw, hosts=kw["hosts"], caps=kw["host_caps"], lo=np.zeros(12), hi=hi,
                w=w, marginal=marginal_fn("freshness-poisson", delta, w), scale=delta, flat=False)
    res = allocate(delta, 2.5, **kw)
    check_optimal(res, data)
    assert 1.0 / 6.0 * (1 - 1e-12) <= res.lam <= 30.0 / 12.5**2 * (1 + 1e-12)
    np.testing.assert_allclose(res.p, np.where(np.arange(12) == 8, 2.5, 0.0), rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------------------------------
# 3. closed forms and edge cases
# ---------------------------------------------------------------------------------------------------
def log_instance(w, hosts, caps, budget, delta=None):
    """Every page observed completely with "harmonic": f = log(p/Δ), so p_i = w_i / λ_i exactly
    (Δ large enough that p <= Δ never binds)."""
    w = np.asarray(w, dtype=float)
    n = w.size
    delta = np.full(n, 1e6) if delta is None else np.asarray(delta, dtype=float)
    complete = np.ones(n, dtype=bool)
    hosts = np.asarray(hosts)
    caps = np.asarray(caps, dtype=float)
    kw = dict(weights=w, objective="harmonic", observed_completely=complete, hosts=hosts, host_caps=caps)
    return dict(delta=delta, budget=budget, kw=kw, hosts=hosts, caps=caps, lo=np.zeros(n),
                hi=np.minimum(np.inf, delta), w=w, marginal=marginal_fn("harmonic", delta, w, complete),
                scale=np.zeros(n))


def expected_log_rates(w, hosts, caps, budget, binding):
    """p_i = w_i/λ_i: a binding host splits its cap in proportion to w, the rest share one λ."""
    w = np.asarray(w, dtype=float)
    p = np.empty(w.size)
    rest = np.ones(w.size, dtype=bool)
    left = budget
    for h in binding:
        on = hosts == h
        p[on] = caps[h] * w[on] / w[on].sum()
        rest &= ~on
        left -= caps[h]
    lam = w[rest].sum() / left
    p[rest] = w[rest] / lam
    return p, lam


def test_hostless_uncapped_and_capped_hosts_closed_form():
    rng = np.random.default_rng(3)
    n = 40
    w = rng.uniform(0.5, 2.0, n)
    hosts = np.repeat([-1, 0, 1, 2, 3], 8)
    caps = np.array([1.0, np.inf, 2.0, 100.0])  # 0, 2 bind; 1 uncapped; 3 far from its cap
    budget = 20.0
    inst = log_instance(w, hosts, caps, budget)
    res = solve(inst)
    p, lam = expected_log_rates(w, hosts, caps, budget, binding=[0, 2])
    check_optimal(res, inst)
    np.testing.assert_allclose(res.p, p, rtol=1e-12)
    assert res.lam == pytest.approx(lam, rel=1e-12)
    # λ_h of a binding host: the common marginal value w_i/p_i = W_h/c_h
    for h in (0, 2):
        assert res.host_lam[h] == pytest.approx(w[hosts == h].sum() / caps[h], rel=1e-12)
    np.testing.assert_allclose(res.host_lam[[1, 3]], lam, rtol=1e-12)


def test_sync_cost_closed_form_with_caps():
    # c(τ) = a τ (exponent 1): f(r) = -a/(2r), so r_i = sqrt(w_i a_i / (2 λ_i)); a binding host splits
    # its cap in proportion to sqrt(w a)
    rng = np.random.default_rng(4)
    n = 30
    a = rng.uniform(0.2, 1.0, n)
    w = rng.uniform(0.5, 2.0, n)
    hosts = np.repeat([-1, 0, 1], 10)
    caps = np.array([1.0, np.inf])
    budget = 12.0
    obj = SyncCost.polynomial(a, 1.0)
    s = np.sqrt(w * a)
    on0 = hosts == 0
    p = np.where(on0, caps[0] * s / s[on0].sum(), 0.0)
    p[~on0] = (budget - caps[0]) * s[~on0] / s[~on0].sum()
    inst = dict(delta=None, budget=budget, hosts=hosts, caps=caps, lo=np.zeros(n), hi=np.full(n, np.inf), w=w,
                kw=dict(weights=w, objective=obj, hosts=hosts, host_caps=caps),
                marginal=marginal_fn("sync-polynomial", None, w, sync=(a, np.ones(n))), scale=np.zeros(n))
    res = solve(inst)
    check_optimal(res, inst)
    np.testing.assert_allclose(res.p, p, rtol=1e-12)


@pytest.mark.parametrize("kind", ["freshness-poisson", "harmonic"])
def test_pinned_host_stays_at_its_lower_bounds(kind):
    # host 1's cap equals the sum of its pages' p_min: they stay there, host_lam = inf (p_min a power
    # of 2, so that the sum is exact in any order)
    inst = make_instance(kind, 8, 300, 5, free_frac=0.2)
    lo = np.full(300, 2.0**-7)
    on1 = inst["hosts"] == 1
    inst["caps"][1] = lo[on1].sum()
    inst["lo"] = lo
    inst["kw"]["p_min"] = lo
    inst["kw"]["host_caps"] = inst["caps"]
    res = solve(inst)
    assert res.host_lam[1] == np.inf
    np.testing.assert_array_equal(res.p[on1], lo[on1])
    check_optimal(res, inst)


def test_zero_value_pages_on_capped_hosts_stay_at_p_min():
    rng = np.random.default_rng(9)
    n = 200
    delta = rng.lognormal(0.0, 1.0, n)
    w = rng.uniform(0.5, 2.0, n)
    hosts = rng.integers(-1, 4, n)
    zero_w = np.flatnonzero(hosts == 0)[:5]
    zero_d = np.flatnonzero(hosts == 1)[:5]
    w[zero_w] = 0.0
    delta[zero_d] = 0.0
    lo = np.full(n, 0.02)
    budget = 0.5 * n
    share = np.bincount(hosts[hosts >= 0], minlength=4) / n
    caps = 0.5 * budget * share  # every host binds
    for name in ("freshness-poisson", "harmonic"):
        kw = dict(weights=w, objective=name, p_min=lo, hosts=hosts, host_caps=caps)
        inst = dict(delta=delta, budget=budget, kw=kw, hosts=hosts, caps=caps, lo=lo, hi=np.full(n, np.inf), w=w,
                    marginal=marginal_fn(name, delta, w), scale=delta)
        res = solve(inst)
        assert np.all(res.host_lam > res.lam)
        np.testing.assert_array_equal(res.p[zero_w], 0.02)
        np.testing.assert_array_equal(res.p[zero_d], 0.02)
        check_optimal(res, inst)


@pytest.mark.parametrize("kind", KINDS)
def test_single_page(kind):
    # one page on a capped host: it takes the whole budget (the cap is above it)
    inst = make_instance(kind, 1, 1, 1)
    inst["caps"][:] = 2.0 * inst["budget"]
    res = solve(inst)
    assert res.p[0] == pytest.approx(inst["budget"], rel=1e-15)
    assert res.host_lam[0] == res.lam
    check_optimal(res, inst)


@pytest.mark.parametrize("kind", KINDS)
def test_one_page_hosts_sit_at_their_cap(kind):
    # 100 hosts of one page each plus pages without a host; the caps of the busiest hosts bind, and
    # then the page's rate is the cap and the host's multiplier its marginal value there
    n_hosts = 100
    inst = make_instance(kind, 12, 400, n_hosts, free_frac=0.0)
    hosts = np.full(400, -1)
    hosts[:n_hosts] = np.arange(n_hosts)
    free = solve(inst, hosts=None, host_caps=None)
    # even hosts capped at half their uncapped rate (when that is not 0: a cap of 0 pins the host)
    caps = np.where((np.arange(n_hosts) % 2 == 0) & (free.p[:n_hosts] > 1e-3), 0.5 * free.p[:n_hosts], np.inf)
    inst["hosts"], inst["caps"] = hosts, caps
    inst["kw"].update(hosts=hosts, host_caps=caps)
    res = solve(inst)
    bind = np.flatnonzero(np.isfinite(caps))
    check_optimal(res, inst)
    assert np.all(res.host_lam[bind] > res.lam)
    # a host is finished with p + p' dλ_h after its Newton steps stop at |S - c| <= 1e-12 c:
    # what remains is second order in that step ((1e-12)² relative) plus the rounding of p and of the
    # correction, a few ulps times the condition of the response (p'λ/p <= 1 here, and the periodic/
    # detection responses are evaluated through Lambert W to ~1e-15): 1e-13 relative leaves a margin
    # of ~10 over the 1e-14 observed and is 1e4 inside the 1e-9
    np.testing.assert_allclose(res.p[bind], caps[bind], rtol=1e-13)
    np.testing.assert_allclose(res.host_lam[bind], inst["marginal"](caps_on_pages(caps, bind, 400))[bind],
                               rtol=1e-12)


def caps_on_pages(caps, bind, n):
    x = np.ones(n)
    x[bind] = caps[bind]
    return x


@pytest.mark.parametrize("kind", KINDS)
def test_loose_caps_give_the_uncapped_allocation(kind):
    inst = make_instance(kind, 13, 2000, 100, cap_range=(1e3, 1e4))
    res = solve(inst)
    free = allocate(inst["delta"], inst["budget"], **{**inst["kw"], "hosts": None, "host_caps": None})
    check_optimal(res, inst)
    np.testing.assert_array_equal(res.host_lam, res.lam)
    np.testing.assert_allclose(res.p, free.p, rtol=1e-12, atol=1e-12 * inst["scale"].max(initial=0.0))
    assert res.lam == pytest.approx(free.lam, rel=1e-12)
    assert res.objective == pytest.approx(free.objective, rel=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_tight_caps_bind_on_every_host(kind):
    inst = make_instance(kind, 14, 3000, 200, cap_range=(0.05, 0.2), free_frac=0.3)
    res = solve(inst)
    hosts, caps = inst["hosts"], inst["caps"]
    used = np.bincount(hosts[hosts >= 0], minlength=caps.size) > 0  # a host without pages cannot bind
    assert used.sum() >= 190
    check_optimal(res, inst)
    # every used host binds, except under detection, where w f'(p) <= w makes many pages take little
    # or nothing at λ, so that some hosts stay below even these caps (check_optimal has checked
    # their complementarity); most still bind
    bind = used & (res.host_lam > res.lam)
    if kind == "detection":
        assert bind.sum() >= 100
    else:
        assert np.array_equal(bind, used)
    np.testing.assert_allclose(host_sums(res.p, hosts, caps.size)[bind], caps[bind], rtol=1e-9)


# ---------------------------------------------------------------------------------------------------
# 4. property: small random instances
# ---------------------------------------------------------------------------------------------------
@st.composite
def small_instances(draw):
    kind = draw(st.sampled_from(KINDS))
    n = draw(st.integers(1, 12))
    n_hosts = draw(st.integers(1, 4))
    pos = st.floats(1e-3, 20.0)
    delta = np.array(draw(st.lists(st.one_of(st.just(0.0), pos), min_size=n, max_size=n)))
    w = np.array(draw(st.lists(st.one_of(st.just(0.0), st.floats(1e-3, 5.0)), min_size=n, max_size=n)))
    hosts = np.array(draw(st.lists(st.integers(-1, n_hosts - 1), min_size=n, max_size=n)))
    lo = np.array(draw(st.lists(st.one_of(st.just(0.0), st.floats(1e-3, 0.5)), min_size=n, max_size=n)))
    hi = lo + np.array(draw(st.lists(st.one_of(st.just(np.inf), st.floats(0.05, 5.0)), min_size=n, max_size=n)))
    low_h = np.bincount(hosts[hosts >= 0], weights=lo[hosts >= 0], minlength=n_hosts)
    extra = draw(st.lists(st.one_of(st.just(np.inf), st.just(0.0), st.floats(1e-3, 5.0)),
                          min_size=n_hosts, max_size=n_hosts))
    caps = low_h + np.array(extra)
    sync = None
    complete = None
    if kind == "sync-polynomial":
        sync = (np.array(draw(st.lists(st.floats(1e-3, 2.0), min_size=n, max_size=n))),
                np.array(draw(st.lists(st.floats(0.2, 3.0), min_size=n, max_size=n))))
        delta = np.ones(n)  # every page has a positive marginal value; delta is not passed
    if kind in ("harmonic-mixed", "freshness-mixed"):
        complete = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    up_h = np.bincount(hosts[hosts >= 0], weights=hi[hosts >= 0], minlength=n_hosts)
    most = np.sum(np.minimum(caps, up_h)) + hi[hosts < 0].sum()
    least = lo.sum()
    frac = draw(st.floats(0.05, 0.95))
    budget = least + frac * (min(most, least + 50.0) - least)
    if not budget > 0:
        budget = None
    return kind, delta, w, lo, hi, hosts, caps, budget, sync, complete


@given(small_instances())
def test_property_small_instances_are_optimal_or_provably_infeasible(inst):
    kind, delta, w, lo, hi, hosts, caps, budget, sync, complete = inst
    if budget is None:
        return
    n = delta.size
    kw = dict(weights=w, p_min=lo, p_max=hi, hosts=hosts, host_caps=caps)
    if kind == "sync-polynomial":
        kw["objective"] = SyncCost.polynomial(*sync)
    elif complete is not None:
        kw.update(objective="harmonic" if kind == "harmonic-mixed" else "freshness-poisson", observed_completely=complete)
    else:
        kw["objective"] = kind
    lo_eff, hi_eff = lo, hi
    if complete is not None:
        lo_eff, hi_eff = np.where(complete, np.minimum(lo, delta), lo), np.where(complete, np.minimum(hi, delta), hi)
    data = dict(delta=None if kind == "sync-polynomial" else delta, budget=budget, kw=kw, hosts=hosts, caps=caps,
                lo=lo_eff, hi=hi_eff, w=w, marginal=marginal_fn(kind, delta, w, complete, sync),
                scale=np.zeros(n) if kind == "sync-polynomial" else delta, flat=kind in FLAT)
    try:
        res = solve(data)
    except InfeasibleAllocation:
        assert refusal_is_justified(budget, lo_eff, hi_eff, hosts, caps)
        return
    check_optimal(res, data)


# ---------------------------------------------------------------------------------------------------
# 5. hosts that need no multiplier of their own: without pages, uncapped, with one page, pinned
# ---------------------------------------------------------------------------------------------------
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
def test_many_small_and_pinned_hosts(kind, seed):
    # 400 pages on 300 hosts: about a quarter of the hosts without pages, a third with one page
    inst = make_instance(kind, 50 + seed, 400, 300, bounds=True, zero_pages=0.05, uncapped_frac=0.1,
                         free_frac=0.1)
    pin = with_pinned_hosts(inst, 0.2, seed)
    hosts, caps = inst["hosts"], inst["caps"]
    count = np.bincount(hosts[hosts >= 0], minlength=caps.size)
    assert np.sum(count == 0) > 30 and np.sum(count == 1) > 60 and pin.sum() > 5
    res = solve(inst)
    check_optimal(res, inst)
    # pinned hosts report inf, and one-page hosts bind
    assert np.all(np.isinf(res.host_lam[pin]))
    single = (count == 1) & np.isfinite(caps) & ~pin
    assert np.sum(res.host_lam[single] > res.lam * (1 + 1e-9)) > 5


@pytest.mark.parametrize("kind", ["freshness-poisson", "harmonic", "freshness-periodic", "detection"])
def test_one_page_host_multiplier_is_the_marginal_value_at_its_cap(kind):
    inst = make_instance(kind, 7, 300, 400, free_frac=0.0)
    res = solve(inst)
    check_optimal(res, inst)
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


def test_infeasible_cap_on_a_one_page_host_is_reported_by_host():
    hosts = np.array([0, 1, 1, 2, -1])
    caps = np.array([0.05, 5.0, 1.0])
    with pytest.raises(InfeasibleAllocation, match=r"first host 0 \(cap 0.05 visits/day < 0.1 visits/day\)"):
        allocate(np.ones(5), 2.0, p_min=0.1, hosts=hosts, host_caps=caps)
    assert prove_infeasible(2.0, np.full(5, 0.1), np.full(5, np.inf), hosts, caps)


@pytest.mark.parametrize("objective", ["freshness-poisson", "harmonic", "freshness-periodic", "detection"])
def test_one_page_hosts_with_unit_weights_and_scalar_bounds(objective):
    rng = np.random.default_rng(3)
    delta = rng.lognormal(0.0, 1.0, 300)
    hosts = rng.integers(0, 400, 300)
    caps = np.full(400, 1.0)
    res = allocate(delta, 100.0, objective=objective, hosts=hosts, host_caps=caps, p_min=0.01)
    assert np.sum(res.host_lam > res.lam) > 10
    inst = dict(hosts=hosts, caps=caps, budget=100.0, w=np.ones(300), lo=np.full(300, 0.01), hi=np.full(300, np.inf),
                marginal=marginal_fn(objective, delta, np.ones(300)))
    check_optimal(res, inst, kkt_tol=1e-12)


def test_refusals_at_the_edge_of_the_feasible_sums():
    # hypothesis found these: every page on one host pinned at Σ p_min (cap = Σ p_min = B), so that B sits on
    # both ends of the feasible interval; the solver's sums in another order put B an ulp outside, and it
    # refuses. The oracle accepts a refusal there only (within 1e-12 of an end), and not inside the interval.
    lo = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.47941526, 0.30858162, 0.001])
    cap = lo.sum()
    hosts = np.zeros(8, dtype=int)
    assert refusal_is_justified(cap, lo, np.full(8, np.inf), hosts, np.array([cap]))
    assert refusal_is_justified(cap * (1 + 1e-14), lo, np.full(8, np.inf), hosts, np.array([cap]))
    assert refusal_is_justified(cap, lo, np.full(8, np.inf), hosts, np.array([2 * cap]))  # B = Σ p_min: an end
    assert refusal_is_justified(cap * 0.5, lo, np.full(8, np.inf), hosts, np.array([2 * cap]))  # below Σ p_min
    assert not refusal_is_justified(1.5 * cap, lo, np.full(8, np.inf), hosts, np.array([2 * cap]))  # inside
