"""The per-page objectives: values, derivatives, inverse marginals against closed forms and references."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.special import lambertw

from freshcrawl.allocation import (
    OBJECTIVE_NAMES,
    Detection,
    DetectionDiscrete,
    FreshnessPeriodic,
    FreshnessPoisson,
    Harmonic,
    Objective,
    SyncCost,
    get_objective,
)
from freshcrawl.errors import UnknownNameError

P = np.array([0.01, 0.3, 1.0, 2.5, 40.0])
DELTA = np.array([2.0, 0.7, 1.0, 3.0, 0.05])


def test_names_cover_the_builtin_objectives():
    assert OBJECTIVE_NAMES == (
        "freshness-poisson",
        "freshness-periodic",
        "harmonic",
        "detection",
        "detection-discrete",
    )
    for name in OBJECTIVE_NAMES:
        assert get_objective(name).name == name


def test_unknown_name_and_wrong_type():
    with pytest.raises(UnknownNameError, match="objective must be one of .*got 'fresh'"):
        get_objective("fresh")
    with pytest.raises(TypeError, match="objective must be a name or an Objective; got int"):
        get_objective(3)


@pytest.mark.parametrize(
    ("obj", "formula"),
    [
        (FreshnessPoisson(), lambda p, d: p / (p + d)),
        (FreshnessPeriodic(), lambda p, d: (p / d) * (1 - np.exp(-d / p))),
        (Harmonic(), lambda p, d: np.log(p / (p + d))),
        (Detection(), lambda p, d: p * (1 - np.exp(-d / p))),
    ],
)
def test_values_match_the_design_formulas(obj, formula):
    np.testing.assert_allclose(obj.value(P, DELTA), formula(P, DELTA), rtol=1e-13)


@pytest.mark.parametrize("name", ["freshness-poisson", "freshness-periodic", "harmonic", "detection"])
def test_derivative_matches_central_differences(name):
    obj = get_objective(name)
    h = 1e-6 * P
    fd = (obj.value(P + h, DELTA) - obj.value(P - h, DELTA)) / (2 * h)
    # central differences: truncation O(h^2 f''') and rounding O(eps |f| / h), both far below 1e-6 here
    np.testing.assert_allclose(obj.derivative(P, DELTA), fd, rtol=1e-6)


@pytest.mark.parametrize("name", ["freshness-poisson", "freshness-periodic", "harmonic", "detection"])
def test_inverse_marginal_inverts_the_derivative(name):
    obj = get_objective(name)
    # leave out p = 0.01 at Δ = 2: Δ/p = 200 puts f' within rounding of f'(0) (e^-200), where it cannot be
    # inverted in floating point
    p, d = P[1:], DELTA[1:]
    m = obj.derivative(p, d)
    np.testing.assert_allclose(obj.inverse_marginal(m, d), p, rtol=1e-12)


def test_closed_form_inverse_marginals():
    lam = np.array([0.1, 0.5, 0.9])
    d = np.array([1.0, 0.5, 0.2])
    np.testing.assert_allclose(FreshnessPoisson().inverse_marginal(lam, d), np.sqrt(d / lam) - d, rtol=1e-14)
    np.testing.assert_allclose(
        Harmonic().inverse_marginal(lam, d), (-d + np.sqrt(d**2 + 4 * d / lam)) / 2, rtol=1e-14
    )
    # a page whose marginal value at p = 0 (1/Δ) is below λ is not visited
    assert FreshnessPoisson().inverse_marginal(3.0, 0.5) == 0.0


def test_periodic_inverse_is_the_lambert_w_form_and_skips_hopeless_pages():
    d = np.array([0.5, 1.0, 2.0, 4.0])
    lam = np.array([0.3, 0.5, 0.45, 0.2])
    y = lam * d  # w = 1
    x = -1 - lambertw(-(1 - y) / np.e, -1).real
    np.testing.assert_allclose(FreshnessPeriodic().inverse_marginal(lam, d), d / x, rtol=1e-10)
    # λΔ/w >= 1: the page changes too fast to be worth a visit
    assert FreshnessPeriodic().inverse_marginal(0.6, 2.0) == 0.0
    assert Detection().inverse_marginal(1.0, 5.0) == 0.0


def _phi_exact(x: float) -> float:
    """φ(x) = 1 - (1 + x) e^{-x} for 0 <= x < 0.5, by its series in exact rational arithmetic."""
    q = Fraction(x)
    term, total = Fraction(1), Fraction(0)
    for k in range(1, 40):
        term = term * q / k  # x^k / k!
        if k >= 2:
            total += (-1) ** k * (k - 1) * term
    return float(total)


def _ulps(got, ref):
    return np.abs(got - ref) / np.spacing(np.abs(ref))


@pytest.mark.parametrize("x", [1e-300, 1e-8, 1e-3, 0.01, 0.1, 0.25, 0.3333, 0.49, 0.4999999, 0.5, 0.75, 3.0, 30.0])
def test_detection_marginal_is_correct_to_two_ulps(x):
    # f'(p) = φ(Δ/p) for detection (w = 1); at p = 1, Δ = x it is φ(x) with no rounding of the argument.
    # Below 1/2 against the exact series (1 - (1 + x) e^{-x} cancels there), above against the closed form
    # (to an ulp: the compiler may fuse its multiply-add)
    got = np.float64(Detection().derivative(1.0, x))
    if x < 0.5:
        assert _ulps(got, np.float64(_phi_exact(x))) <= 2.0
    else:
        assert _ulps(got, np.float64(1.0 - (1.0 + x) * math.exp(-x))) <= 1.0


@pytest.mark.parametrize("obj", [Detection(), FreshnessPeriodic()])
def test_lambert_w_inverse_over_the_whole_range(obj):
    # y = λ/(w f'(0)) from 1e-12 to 1 - 1e-15: on the inverse's table, at its end and on its tail. At Δ = 1
    # the inverse gives p = 1/x with φ(x) = y; the residual φ(x) - y, relative to y, from the public
    # derivative at p = 1, Δ = x (x = 1/p rounds by half an ulp, which moves φ by at most about an ulp)
    y = np.concatenate([np.logspace(-12, -1, 200), np.linspace(0.1, 0.99, 300), 1 - np.logspace(-2, -15, 200)])
    x = 1.0 / obj.inverse_marginal(y, 1.0)  # at Δ = 1 both have f'(p) = φ(1/p), so f'(0) = 1
    phi = Detection().derivative(1.0, x)
    assert np.max(np.abs(phi - y) / y) < 1e-13


def test_zero_change_rate_has_zero_marginal_value():
    for name in ["freshness-poisson", "freshness-periodic", "harmonic", "detection"]:
        obj = get_objective(name)
        assert obj.derivative(1.0, 0.0) == 0.0
    assert FreshnessPoisson().value(1.0, 0.0) == 1.0  # never changes: always fresh
    assert Harmonic().value(2.0, 0.0) == 0.0


def test_detection_discrete_is_seed_004_example():
    # seed 004, Sec. 4.1: unchanged with probability 0.5 per step, polled every 3rd step: 1 - 0.5^3
    obj = DetectionDiscrete()
    assert obj.value(1 / 3, 0.5) * 3 == pytest.approx(0.875, rel=1e-14)
    assert obj.value(1 / 2, 0.5) * 2 == pytest.approx(0.75, rel=1e-14)
    # per-page q held by the object; delta is then ignored
    held = DetectionDiscrete(q=[0.5, 0.25])
    np.testing.assert_allclose(held.value(np.array([1.0, 1.0]), np.zeros(2)), [0.5, 0.75], rtol=1e-14)
    # a change every step (q = 0): every poll detects one
    assert DetectionDiscrete().value(0.4, 1.0) == pytest.approx(0.4)


def test_detection_discrete_rejects_probabilities_outside_0_1():
    with pytest.raises(ValueError, match="delta must be <= 1.0"):
        DetectionDiscrete().value(1.0, 1.5)
    with pytest.raises(ValueError, match="q must be >= 0.0"):
        DetectionDiscrete(q=[-0.1])


def test_sync_cost_polynomial_closed_forms():
    a = np.array([1.0, 0.5, 2.0])
    p = np.array([0.5, 0.8, 0.3])
    cost = SyncCost.polynomial(a, p)
    r = np.array([0.7, 1.5, 3.0])
    # J_k(r) = r C̄(1/r) with C̄(τ) = a τ^{p+1} / (p+1)  (seed 003, Lemma 1)
    jk = r * a * (1 / r) ** (p + 1) / (p + 1)
    np.testing.assert_allclose(cost.value(r), -jk, rtol=1e-14)
    assert cost.policy_cost(r) == pytest.approx(jk.mean(), rel=1e-14)
    # derivative -C̄(1/r) + c̄(1/r)/r of seed 003's proof of Lemma 1
    d = -a * (1 / r) ** (p + 1) / (p + 1) + a * (1 / r) ** p / r
    np.testing.assert_allclose(cost.derivative(r), d, rtol=1e-13)


def test_sync_cost_poisson_is_one_minus_periodic_freshness():
    lam = np.array([0.005, 0.7, 5.0])
    r = np.array([0.025, 1.0, 6.0])
    cost = SyncCost.poisson(lam)
    np.testing.assert_allclose(cost.value(r), FreshnessPeriodic().value(r, lam) - 1.0, rtol=1e-13, atol=1e-15)
    # against the generic form built from the cost integral
    generic = SyncCost(lambda tau: tau + np.expm1(-lam * tau) / lam, lambda tau: -np.expm1(-lam * tau), n_pages=3)
    np.testing.assert_allclose(generic.value(r), cost.value(r), rtol=1e-12)
    np.testing.assert_allclose(generic.derivative(r), cost.derivative(r), rtol=1e-9)


def test_sync_cost_rejects_bad_parameters():
    with pytest.raises(ValueError, match="p must be > 0.0"):
        SyncCost.polynomial([1.0], [0.0])
    with pytest.raises(ValueError, match="a must be >= 0.0"):
        SyncCost.polynomial([-1.0], [0.5])
    with pytest.raises(ValueError, match="lam must be finite"):
        SyncCost.poisson([np.nan])
    with pytest.raises(ValueError, match="n_pages must be >= 1; got 0"):
        SyncCost(lambda t: t, lambda t: t, n_pages=0)


def test_custom_objective_without_methods_raises():
    class Empty(Objective):
        pass

    with pytest.raises(NotImplementedError, match="must define value"):
        Empty().value(1.0, 1.0)
