"""The exact allocation solver: closed forms, agreement with scipy.optimize, edge cases and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize

from freshcrawl.allocation import (
    AllocationResult,
    Objective,
    Status,
    SyncCost,
    allocate,
    get_objective,
)
from freshcrawl.errors import ConvergenceWarning, InfeasibleAllocation, UnknownNameError

NAMES = ["freshness-poisson", "freshness-periodic", "harmonic", "detection", "detection-discrete"]


def scipy_reference(obj, delta, budget, w, lo, hi, hosts=None, caps=None):
    """SLSQP on the same problem: the general-purpose solver the exact one is checked against."""
    n = len(delta)
    cons = [{"type": "eq", "fun": lambda p: p.sum() - budget, "jac": lambda p: np.ones_like(p)}]
    if hosts is not None:
        for h, c in enumerate(caps):
            if np.isfinite(c):
                m = (hosts == h).astype(float)
                cons.append({"type": "ineq", "fun": lambda p, m=m, c=c: c - m @ p, "jac": lambda p, m=m: -m})
    res = minimize(
        lambda p: -np.sum(w * obj.value(p, delta)),
        np.clip(np.full(n, budget / n), lo, hi),
        jac=lambda p: -w * obj.derivative(p, delta),
        bounds=[(a, b if np.isfinite(b) else None) for a, b in zip(lo, hi)],
        constraints=cons,
        method="SLSQP",
        options={"ftol": 1e-15, "maxiter": 3000},
    )
    return res.x, -res.fun


def check_feasible(res, budget, lo, hi, hosts=None, caps=None):
    p = res.p
    assert p.sum() == pytest.approx(budget, rel=1e-9)
    assert np.all(p >= lo) and np.all(p <= hi)
    if hosts is not None:
        sums = np.bincount(hosts[hosts >= 0], weights=p[hosts >= 0], minlength=len(caps))
        assert np.all(sums <= caps * (1 + 1e-12))


# ---------------------------------------------------------------------------------------------------
# exact values
# ---------------------------------------------------------------------------------------------------
def test_poisson_freshness_closed_form():
    # unbounded: p_i = sqrt(w_i Δ_i / λ) - Δ_i with 1/sqrt(λ) = (B + ΣΔ) / Σ sqrt(w Δ)  (all pages visited)
    delta = np.array([0.5, 1.0, 2.0, 0.25])
    w = np.array([1.0, 2.0, 3.0, 0.5])
    budget = 10.0
    mu = (budget + delta.sum()) / np.sqrt(w * delta).sum()
    res = allocate(delta, budget, weights=w)
    np.testing.assert_allclose(res.p, np.sqrt(w * delta) * mu - delta, rtol=1e-13)
    assert res.lam == pytest.approx(1 / mu**2, rel=1e-13)
    assert res.objective == pytest.approx(np.sum(w * res.p / (res.p + delta)), rel=1e-14)
    assert res.success and res.status == Status.CONVERGED
    assert res.kkt_residual < 1e-12


def test_harmonic_closed_form():
    # p_i = (-Δ + sqrt(Δ² + 4 w Δ / λ)) / 2; λ solved independently by scipy's brentq
    from scipy.optimize import brentq

    delta = np.array([0.5, 1.0, 2.0])
    w = np.array([1.0, 1.0, 4.0])
    budget = 3.0
    lam = brentq(lambda l: np.sum((-delta + np.sqrt(delta**2 + 4 * w * delta / l)) / 2) - budget, 1e-6, 1e6,
                 xtol=1e-300, rtol=1e-15)
    res = allocate(delta, budget, weights=w, objective="harmonic")
    np.testing.assert_allclose(res.p, (-delta + np.sqrt(delta**2 + 4 * w * delta / lam)) / 2, rtol=1e-12)
    assert res.lam == pytest.approx(lam, rel=1e-12)


def test_slow_page_not_visited_under_poisson_freshness():
    # page 2 has marginal value 1/Δ = 0.05 at p = 0, below λ: it gets nothing
    res = allocate([1.0, 20.0], 1.0)
    assert res.p[1] == 0.0
    assert res.p[0] == pytest.approx(1.0, rel=1e-15)


def test_result_is_frozen():
    res = allocate([1.0, 2.0], 1.0)
    assert isinstance(res, AllocationResult)
    with pytest.raises(AttributeError):
        res.lam = 3.0


# ---------------------------------------------------------------------------------------------------
# agreement with scipy.optimize
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("seed", [0, 1])
def test_agrees_with_scipy_with_bounds_and_host_caps(name, seed):
    rng = np.random.default_rng(seed)
    n = 12
    delta = rng.uniform(0.05, 0.9, n) if name == "detection-discrete" else rng.uniform(0.1, 3.0, n)
    w = rng.uniform(0.2, 2.0, n)
    lo = np.full(n, 0.05)  # > 0 keeps SLSQP away from log(0) in the harmonic objective
    hi = np.full(n, 2.0)
    hosts = rng.integers(-1, 3, n)
    caps = np.array([2.0, np.inf, 2.5])
    budget = 8.0
    res = allocate(delta, budget, weights=w, objective=name, p_min=lo, p_max=hi, hosts=hosts, host_caps=caps)
    p_ref, f_ref = scipy_reference(get_objective(name), delta, budget, w, lo, hi, hosts, caps)
    check_feasible(res, budget, lo, hi, hosts, caps)
    assert res.kkt_residual < 1e-9
    # the exact optimum is at least as good as SLSQP's, and both are the same point
    assert res.objective >= f_ref - 1e-12 * abs(f_ref)
    np.testing.assert_allclose(res.p, p_ref, atol=1e-6)
    assert np.all(res.host_lam >= res.lam)


@pytest.mark.parametrize("cost", ["polynomial", "poisson"])
def test_sync_cost_agrees_with_scipy(cost):
    rng = np.random.default_rng(7)
    k = 10
    if cost == "polynomial":  # seed 003, App. B: a ~ U[0,1], p = sigmoid(5 U[0,1]); r in [0.025, 3], B = 0.4 K
        obj = SyncCost.polynomial(rng.uniform(0, 1, k), 1 / (1 + np.exp(-5 * rng.uniform(0, 1, k))))
        lo, hi = 0.025, 3.0
    else:  # App. C: λ ~ U[0.005, 5], r in [0.025, 6]
        obj = SyncCost.poisson(rng.uniform(0.005, 5.0, k))
        lo, hi = 0.025, 6.0
    budget = 0.4 * k
    res = allocate(None, budget, objective=obj, p_min=lo, p_max=hi)
    lo_a, hi_a = np.full(k, lo), np.full(k, hi)
    p_ref, f_ref = scipy_reference(obj, np.zeros(k), budget, np.ones(k), lo_a, hi_a)
    check_feasible(res, budget, lo_a, hi_a)
    np.testing.assert_allclose(res.p, p_ref, atol=1e-6)
    # J* = -objective / K (seed 003, eq. (7))
    assert obj.policy_cost(res.p) == pytest.approx(-res.objective / k, rel=1e-12)
    assert obj.policy_cost(res.p) <= obj.policy_cost(p_ref) + 1e-12


class SqrtObjective(Objective):
    """Σ sqrt(p Δ), through value and derivative only (numpy path): the optimum is p ∝ Δ."""

    name = "sqrt"

    def value(self, p, delta):
        return np.sqrt(p * delta)

    def derivative(self, p, delta):
        return 0.5 * np.sqrt(delta / p)


def test_custom_objective_through_value_and_derivative_only():
    # maximise Σ sqrt(p Δ): p ∝ Δ
    delta = np.array([1.0, 2.0, 5.0])
    res = allocate(delta, 4.0, objective=SqrtObjective())
    np.testing.assert_allclose(res.p, 4.0 * delta / delta.sum(), rtol=1e-9)
    assert res.kkt_residual < 1e-9


def test_custom_objective_with_a_page_of_no_value_raises_no_numpy_warning():
    # a page of weight 0 at p = 0, where sqrt's derivative is infinite: 0 * inf inside the KKT check once
    # raised "invalid value encountered in multiply" (the warnings filter turns it into an error here)
    delta = np.array([1.0, 2.0, 5.0])
    with np.errstate(all="raise"):
        res = allocate(delta, 4.0, weights=[0.0, 1.0, 1.0], objective=SqrtObjective())
    np.testing.assert_allclose(res.p, [0.0, 4.0 * 2.0 / 7.0, 4.0 * 5.0 / 7.0], rtol=1e-9)
    assert res.success and res.kkt_residual < 1e-9


def test_custom_objective_with_inverse_marginal_and_bounds():
    class Log1p(Objective):
        def value(self, p, delta):
            return delta * np.log1p(p)

        def derivative(self, p, delta):
            return delta / (1 + p)

        def inverse_marginal(self, lam_over_w, delta):
            return np.maximum(delta / lam_over_w - 1, 0.0)

    delta = np.array([1.0, 2.0, 3.0, 0.1])
    obj = Log1p()
    res = allocate(delta, 5.0, objective=obj, p_max=2.0)
    p_ref, _ = scipy_reference(obj, delta, 5.0, np.ones(4), np.zeros(4), np.full(4, 2.0))
    np.testing.assert_allclose(res.p, p_ref, atol=1e-6)
    assert res.p.sum() == pytest.approx(5.0, rel=1e-12)


# ---------------------------------------------------------------------------------------------------
# completely observed pages (LambdaCrawl mixed problem)
# ---------------------------------------------------------------------------------------------------
def test_mixed_observations_harmonic_is_exact():
    rng = np.random.default_rng(3)
    n = 14
    delta = rng.uniform(0.2, 3.0, n)
    w = rng.uniform(0.5, 2.0, n)
    complete = np.zeros(n, dtype=bool)
    complete[[1, 4, 9]] = True
    budget = 6.0
    res = allocate(delta, budget, weights=w, objective="harmonic", observed_completely=complete)

    class Mixed(Objective):
        def value(self, p, d):
            return np.where(complete, np.log(p / d), np.log(p / (p + d)))

        def derivative(self, p, d):
            return np.where(complete, 1 / p, d / (p * (p + d)))

    lo = np.full(n, 1e-3)
    hi = np.where(complete, delta, np.inf)  # at most one visit per announced change
    p_ref, f_ref = scipy_reference(Mixed(), delta, budget, w, lo, hi)
    np.testing.assert_allclose(res.p, p_ref, atol=1e-6)
    assert res.objective >= f_ref - 1e-12 * abs(f_ref)
    # one λ for both kinds: complete pages below their cap sit at p = w/λ
    inner = complete & (res.p < delta)
    np.testing.assert_allclose(res.p[inner], w[inner] / res.lam, rtol=1e-12)
    assert np.all(res.p[complete] <= delta[complete])
    assert res.kkt_residual < 1e-9


def test_mixed_observations_freshness_visits_fully_when_worth_it():
    # complete page: freshness ρ = p/Δ, marginal w/Δ = 1/0.5 = 2, above any λ here: visited at every change
    res = allocate([0.5, 1.0, 1.0], 3.0, observed_completely=np.array([True, False, False]))
    assert res.p[0] == pytest.approx(0.5)
    assert res.p.sum() == pytest.approx(3.0, rel=1e-12)
    assert res.p[1] == pytest.approx(res.p[2], rel=1e-12)


def test_mixed_observations_rejected_for_detection():
    with pytest.raises(ValueError, match="observed_completely is supported with the harmonic and freshness"):
        allocate([1.0, 2.0], 1.0, objective="detection", observed_completely=np.array([True, False]))


# ---------------------------------------------------------------------------------------------------
# edge cases with defined answers
# ---------------------------------------------------------------------------------------------------
def test_one_page_gets_the_whole_budget():
    for name in NAMES:
        d = 0.3 if name == "detection-discrete" else 2.0
        res = allocate([d], 5.0, objective=name)
        assert res.p[0] == pytest.approx(5.0, rel=1e-15)


def test_zero_change_rate_and_zero_weight_pages_stay_at_p_min():
    res = allocate([1.0, 0.0, 2.0, 1.5], 4.0, weights=[1.0, 1.0, 0.0, 2.0], p_min=0.1)
    assert res.p[1] == 0.1 and res.p[2] == 0.1
    assert res.p.sum() == pytest.approx(4.0, rel=1e-12)


def test_leftover_budget_is_spread_evenly_over_zero_value_pages():
    # valued pages capped at 1/day take 2 of 5; the 3 left go evenly to the never-changing pages
    res = allocate([1.0, 2.0, 0.0, 0.0, 0.0], 5.0, p_max=[1.0, 1.0, 3.0, 3.0, 0.5])
    np.testing.assert_allclose(res.p, [1.0, 1.0, 1.25, 1.25, 0.5], rtol=1e-12)
    assert res.lam == 0.0
    # all pages never change: the uniform allocation
    res = allocate(np.zeros(4), 2.0, objective="harmonic")
    np.testing.assert_allclose(res.p, 0.5, rtol=1e-12)


def test_huge_change_rate():
    # Poisson freshness: a page changing 1e12 times a day is worth nothing at this budget
    res = allocate([1.0, 1e12], 2.0)
    assert res.p[1] == 0.0 and res.p[0] == pytest.approx(2.0)
    # detection: a page that always has a change to find takes the whole budget at marginal value w = 1
    res = allocate([1.0, 1e12], 2.0, objective="detection")
    assert res.p.sum() == pytest.approx(2.0, rel=1e-12)
    assert res.p[1] > res.p[0]
    assert res.kkt_residual < 1e-9
    # harmonic: every page visited, the fast one almost at its own 1/λ share
    res = allocate([1.0, 1e12], 2.0, objective="harmonic")
    assert np.all(res.p > 0) and res.kkt_residual < 1e-9


def test_budget_too_small_for_float64_is_refused_by_name():
    # λ ~ w/p under harmonic staleness (and in the even spread over pages of no value, max Σ log p): rates
    # near 1e-309 visits/day would need λ above the largest float64 (found by the property test)
    one = np.array([1.0] + [0.0] * 7)
    for delta, w, name in [(one, one, "harmonic"), (np.zeros(8), np.zeros(8), "freshness-poisson")]:
        for kw in ({}, {"hosts": np.zeros(8, dtype=int), "host_caps": [2.22507386e-311]}):
            with pytest.raises(ValueError, match=r"budget 1\.11254e-311 visits/day is too small to solve in float64"):
                allocate(delta, 1.1125369292535e-311, weights=w, objective=name, p_max=1.0, **kw)
    # 1e-300 visits/day is still solved: λ = 1e300
    res = allocate(one, 1e-300, weights=one, objective="harmonic", p_max=1.0)
    assert res.success and res.lam == pytest.approx(1e300, rel=1e-9) and res.p[0] == pytest.approx(1e-300)


def test_budget_at_the_bounds():
    res = allocate([1.0, 2.0], 2.0, p_min=1.0)
    np.testing.assert_array_equal(res.p, [1.0, 1.0])
    res = allocate([1.0, 2.0], 4.0, p_max=2.0)
    np.testing.assert_array_equal(res.p, [2.0, 2.0])


def test_binding_host_cap_gets_its_own_multiplier():
    delta = np.array([1.0, 1.0, 1.0, 1.0])
    hosts = np.array([0, 0, 1, -1])
    res = allocate(delta, 6.0, hosts=hosts, host_caps=[1.0, np.inf])
    assert res.p[0] + res.p[1] == pytest.approx(1.0, rel=1e-12)
    np.testing.assert_allclose(res.p[[0, 1]], 0.5, rtol=1e-12)
    np.testing.assert_allclose(res.p[[2, 3]], 2.5, rtol=1e-12)
    assert res.host_lam[0] > res.lam and res.host_lam[1] == res.lam
    # λ_h for host 0: marginal value of its pages at p = 0.5
    assert res.host_lam[0] == pytest.approx(1.0 / 1.5**2, rel=1e-12)


def test_host_cap_equal_to_lower_bounds_pins_the_host():
    res = allocate([1.0, 1.0, 1.0], 3.0, p_min=0.5, hosts=[0, 0, -1], host_caps=[1.0])
    np.testing.assert_allclose(res.p, [0.5, 0.5, 2.0], rtol=1e-12)


def test_max_iter_reports_status_and_warns():
    with pytest.warns(ConvergenceWarning, match="stopped at max_iter=1"):
        res = allocate(np.linspace(0.1, 5, 50), 20.0, objective="freshness-periodic", max_iter=1)
    assert res.status == Status.MAX_ITER and not res.success
    assert np.all(res.p >= 0)


class InconsistentSqrt(SqrtObjective):
    """Σ sqrt(p Δ) with an inverse marginal that is not the inverse of its derivative: p ∝ sqrt(Δ)
    instead of p ∝ Δ. The solver trusts the inverse; the rates then miss the KKT conditions."""

    name = "inconsistent-sqrt"

    def inverse_marginal(self, lam_over_w, delta):
        return np.sqrt(delta) / lam_over_w


def test_rates_that_miss_the_kkt_conditions_are_reported_not_optimal():
    # a converged solve whose rates are off must not claim success: the KKT residual is measured on the
    # returned rates, from the objective's derivative
    delta = np.array([1.0, 4.0, 9.0])
    with pytest.warns(ConvergenceWarning, match="miss the optimality conditions"):
        res = allocate(delta, 6.0, objective=InconsistentSqrt())
    np.testing.assert_allclose(res.p, 6.0 * np.sqrt(delta) / np.sqrt(delta).sum(), rtol=1e-9)  # budget met
    assert res.status == Status.NOT_OPTIMAL and not res.success
    assert res.kkt_residual > 1e-6


# ---------------------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------------------
def test_infeasible_budgets_name_the_numbers():
    with pytest.raises(InfeasibleAllocation, match=r"budget 1 visits/day is below the sum of the lower bounds p_min, 2"):
        allocate([1.0, 1.0], 1.0, p_min=1.0)
    with pytest.raises(InfeasibleAllocation, match=r"budget 5 visits/day exceeds the most the pages can take, 4"):
        allocate([1.0, 1.0], 5.0, p_max=2.0)
    with pytest.raises(InfeasibleAllocation, match=r"exceeds the most the pages can take, 3 visits/day"):
        allocate([1.0, 1.0, 1.0], 5.0, p_max=2.0, hosts=[0, 0, -1], host_caps=[1.0])
    with pytest.raises(InfeasibleAllocation, match=r"first host 1 \(cap 0.5 visits/day < 1 visits/day\)"):
        allocate([1.0, 1.0, 1.0], 5.0, p_min=0.5, hosts=[0, 1, 1], host_caps=[1.0, 0.5])


def test_bad_inputs_name_the_argument_and_the_first_page():
    with pytest.raises(ValueError, match=r"delta must be finite changes/day; 1 of 3 entries are not, first at index 1"):
        allocate([1.0, np.nan, 2.0], 1.0)
    with pytest.raises(ValueError, match=r"delta must be >= 0.0 changes/day; 1 of 3 entries are not, first at index 2"):
        allocate([1.0, 1.0, -2.0], 1.0)
    with pytest.raises(ValueError, match=r"weights must be >= 0.0; 1 of 2 entries are not, first at index 0"):
        allocate([1.0, 1.0], 1.0, weights=[-1.0, 1.0])
    with pytest.raises(ValueError, match=r"weights must be finite; 1 of 2 entries are not, first at index 1"):
        allocate([1.0, 1.0], 1.0, weights=[1.0, np.inf])
    with pytest.raises(ValueError, match=r"budget must not be NaN"):
        allocate([1.0], float("nan"))
    with pytest.raises(ValueError, match=r"budget must be finite and > 0 visits/day; got -1"):
        allocate([1.0], -1)
    with pytest.raises(ValueError, match=r"p_min must be <= p_max for every page; 1 of 2 pages are not, first at index 1"):
        allocate([1.0, 1.0], 1.0, p_min=[0.0, 2.0], p_max=1.0)
    with pytest.raises(ValueError, match=r"p_max must not be NaN visits/day"):
        allocate([1.0, 1.0], 1.0, p_max=[1.0, np.nan])
    with pytest.raises(ValueError, match=r"hosts must be in \[-1, 0\] \(index into host_caps, -1 for none\); 1 of 2 pages are not, first at index 1 \(3\)"):
        allocate([1.0, 1.0], 1.0, hosts=[0, 3], host_caps=[1.0])
    with pytest.raises(ValueError, match=r"host_caps must not be NaN"):
        allocate([1.0, 1.0], 1.0, hosts=[0, 0], host_caps=[np.nan])
    with pytest.raises(ValueError, match=r"host_caps was given without hosts"):
        allocate([1.0, 1.0], 1.0, host_caps=[1.0])
    with pytest.raises(ValueError, match=r"delta must have shape \(n_pages,\) with n_pages >= 1; got shape \(0,\)"):
        allocate([], 1.0)
    with pytest.raises(ValueError, match=r"weights must have shape \(2,\); got \(3,\)"):
        allocate([1.0, 1.0], 1.0, weights=[1.0, 1.0, 1.0])
    with pytest.raises(UnknownNameError, match="objective must be one of"):
        allocate([1.0], 1.0, objective="freshness")
    with pytest.raises(ValueError, match=r"observed_completely must be a bool array of shape \(2,\)"):
        allocate([1.0, 1.0], 1.0, objective="harmonic", observed_completely=[1, 0])
    with pytest.raises(ValueError, match=r"delta has 2 pages but the objective"):
        allocate([1.0, 1.0], 1.0, objective=SyncCost.poisson([1.0, 2.0, 3.0]))


def test_no_warnings_on_regular_input():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        allocate([0.0, 1.0, 2.0], 2.0, weights=[1.0, 0.0, 1.0], objective="freshness-periodic",
                 hosts=[0, 0, -1], host_caps=[np.inf])


def test_constant_marginal_pages_share_what_is_left():
    # detection-discrete with a change every step (q = 0): f = x, marginal w; the two such pages split the
    # budget evenly (any split is optimal; the solver's is the even one)
    res = allocate([0.0, 1.0, 1.0], 6.0, objective="detection-discrete")
    np.testing.assert_allclose(res.p, [0.0, 3.0, 3.0], rtol=1e-12)

    class Linear(Objective):
        def value(self, p, delta):
            return delta * p

        def derivative(self, p, delta):
            return delta + 0.0 * p

    res = allocate([1.0, 2.0, 2.0], 3.0, objective=Linear())
    np.testing.assert_allclose(res.p, [0.0, 1.5, 1.5], rtol=1e-12)
    res = allocate([1.0, 2.0, 2.0], 3.0, objective=Linear(), p_max=1.0)
    np.testing.assert_array_equal(res.p, [1.0, 1.0, 1.0])


def test_constant_marginal_pages_on_capped_hosts():
    # detection-discrete with pages that change every step (a constant marginal w and no p_max: an
    # infinite jump of Σp at λ = w) on capped hosts; each case once returned wrong rates with a warning
    # (found by random instances)
    def solve(delta, budget, w, hosts, caps, **kw):
        res = allocate(delta, budget, weights=w, objective="detection-discrete", hosts=hosts, host_caps=caps, **kw)
        assert res.success and res.kkt_residual < 1e-12 and res.p.sum() == pytest.approx(budget, rel=1e-12)
        return res

    # the cap does not bind: the page takes the budget at λ = w_0. The host's own root-find started at λ,
    # where the host is under its cap, rather than below the jump (rates [0, 0])
    res = solve([1.0, 0.39786152565341126], 13.127049884521384, [2.883300022655741, 2.2047254033801864], [0, 0],
                [15.4])
    np.testing.assert_allclose(res.p, [13.127049884521384, 0.0], rtol=1e-12)
    assert res.lam == 2.883300022655741
    # the cap binds on the jump of page 0: it takes the cap less page 2's p_min. The compiled host loop took
    # the jump for a finite one (its sums hold an infinite rate as 1e308), and page 0's rate was inf
    lo = np.array([0.04388470226718161, 0.03322111081943618, 0.04452306937719561])
    caps = np.array([1.1028114822601962, 1.1192286501737947])
    res = solve([1.0, 0.12457774269471399, 1.0], 2.2083630429307286, [0.8179546963780057, 1.2105707193508475,
                0.18550263431240405], [0, 1, 0], caps, p_min=lo)
    np.testing.assert_allclose(res.p[[0, 2]], [caps[0] - lo[2], lo[2]], rtol=1e-12)
    assert res.p[1] == pytest.approx(2.2083630429307286 - caps[0], rel=1e-12)
    assert res.host_lam[0] == 0.8179546963780057
    # λ on page 0's jump; page 1 on a capped host is infinite at λ too but held to its cap, so it takes
    # none of the gap, which went half to each page
    res = solve([1.0, 1.0, 0.20594646748545797], 272.0603851806937, [25.954840262035727, 234.63004574631336,
                1.0546095969343394], [0, 1, 1], [np.inf, 7.463358222990576])
    np.testing.assert_allclose(res.p, [272.0603851806937 - 7.463358222990576, 7.463358222990576, 0.0], rtol=1e-12)
    assert res.lam == 25.954840262035727 and res.host_lam[1] == 234.63004574631336
