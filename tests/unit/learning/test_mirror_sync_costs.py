"""Cost-generating processes, the policy cost J (Lemma 1) and the exact optimum J* of seed 003."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.integrate import quad

from freshcrawl.errors import InfeasibleAllocation
from freshcrawl.learning.sync_costs import (
    CustomCost,
    PoissonBinaryCost,
    PolynomialCost,
    SyncCostObjective,
    optimal_policy_cost,
    policy_cost,
    policy_cost_gradient,
)


def test_polynomial_closed_forms():
    cost = PolynomialCost([0.3, 0.8], [0.6, 0.95], noise=0.1)
    r = np.array([0.5, 2.0])
    # J_k(r) = a r^{-p} / (p + 1) (Lemma 1 with C̄(τ) = a τ^{p+1}/(p+1))
    expected = np.mean(cost.a_bar * r ** -cost.p / (cost.p + 1))
    assert policy_cost(cost, r) == pytest.approx(expected, rel=1e-14)
    np.testing.assert_allclose(policy_cost_gradient(cost, r), -cost.p * cost.a_bar * r ** (-cost.p - 1) / (cost.p + 1) / 2,
                               rtol=1e-13)
    for k in range(2):  # C̄ is the integral of c̄
        integral = quad(lambda t: cost.mean_cost(t)[k], 0, 3.0)[0]
        assert cost.cumulative_mean_cost(3.0)[k] == pytest.approx(integral, rel=1e-9)


def test_poisson_cost_is_one_minus_periodic_freshness():
    lam = np.array([1e-7, 0.01, 0.7, 4.9])
    cost = PoissonBinaryCost(lam)
    r = np.array([0.5, 0.025, 1.3, 6.0])
    x = lam / r
    expected = np.mean(1.0 - (1.0 - np.exp(-x)) / x)
    assert policy_cost(cost, r) == pytest.approx(expected, rel=1e-9)
    for k in range(4):
        integral = quad(lambda t: cost.mean_cost(t)[k], 0, 1 / r[k])[0]
        assert cost.cumulative_mean_cost(1 / r)[k] == pytest.approx(integral, rel=1e-7, abs=1e-15)


@pytest.mark.parametrize("cost", [PolynomialCost.generate(6, 1), PoissonBinaryCost.generate(6, 1)], ids=["poly", "poisson"])
def test_gradient_matches_finite_differences(cost):
    r = np.linspace(0.1, 3.0, 6)
    g = policy_cost_gradient(cost, r)
    h = 1e-6
    for k in range(6):
        e = np.zeros(6)
        e[k] = h * r[k]
        fd = (policy_cost(cost, r + e) - policy_cost(cost, r - e)) / (2 * h * r[k])
        assert g[k] == pytest.approx(fd, rel=1e-6, abs=1e-10)
    assert np.all(g <= 0)  # J is decreasing in every rate (Lemma 1)


@given(st.floats(0.02, 5.0), st.floats(0.02, 5.0))
def test_policy_cost_is_convex_along_a_segment(r1, r2):
    # Lemma 1: J_k is convex, so J(midpoint) <= mean of the ends
    for cost in (PolynomialCost([0.7], [0.8]), PoissonBinaryCost([2.0])):
        mid = policy_cost(cost, [(r1 + r2) / 2])
        assert mid <= (policy_cost(cost, [r1]) + policy_cost(cost, [r2])) / 2 + 1e-12


@pytest.mark.parametrize("cost", [PolynomialCost([0.5, 0.9], [0.7, 0.99], noise=0.1), PoissonBinaryCost([0.4, 3.0])],
                         ids=["poly", "poisson"])
def test_samples_are_monotone_and_have_the_right_mean(cost):
    rng = np.random.default_rng(11)
    m = 100_000
    for k in range(2):
        arms = np.full(m, k, dtype=np.intp)
        tau_s = np.full(m, 1.5)
        tau_p = rng.random(m) * 1.5
        c_p, c_s = cost.sample_pair(arms, tau_p, tau_s, rng)
        assert np.all(c_p <= c_s) and np.all(c_p >= 0) and np.all(c_s <= cost.cost_bound)  # Assumptions 1, 3
        mean_s = cost.mean_cost(1.5)[k]
        assert abs(c_s.mean() - mean_s) < 5 * c_s.std(ddof=1) / math.sqrt(m)  # 5 standard errors


def test_generators_follow_the_appendix():
    poly = PolynomialCost.generate(2000, 3)
    assert np.all((poly.a_bar >= 0) & (poly.a_bar < 1))
    # p = sigmoid(5 U[0, 1]) lies in [sigmoid(0), sigmoid(5)] = [0.5, 0.9933]
    assert poly.p.min() >= 0.5 and poly.p.max() <= 1 / (1 + math.exp(-5))
    assert poly.noise == 0.1
    # default U: largest possible sample at tau = 1/r_min = 40
    assert poly.cost_bound == pytest.approx(np.max(1.1 * poly.a_bar * 40.0 ** poly.p))
    lam = PoissonBinaryCost.generate(2000, 3).lam
    assert lam.min() >= 0.005 and lam.max() <= 5.0
    se = (5.0 - 0.005) / math.sqrt(12 * 2000)
    assert abs(lam.mean() - 2.5025) < 5 * se


def test_polynomial_noise_draws_one_coefficient_per_interval():
    cost = PolynomialCost([1.0], [0.5], noise=0.1)
    rng = np.random.default_rng(0)
    c_p, c_s = cost.sample_pair(np.zeros(1000, np.intp), np.full(1000, 1.0), np.full(1000, 4.0), rng)
    np.testing.assert_allclose(c_s / c_p, 2.0)  # same a: (4/1)^0.5
    assert c_p.min() >= 0.9 and c_p.max() <= 1.1


# ---------------------------------------------------------------------------------------------
# Exact optimum J*
# ---------------------------------------------------------------------------------------------


def test_optimum_closed_form_linear_costs():
    # c_k(τ) = a_k τ: J_k(r) = a_k / (2 r); minimising Σ a_k/(2 r_k) with Σ r_k = B gives r_k ∝ sqrt(a_k).
    a = np.array([1.0, 4.0, 9.0])
    opt = optimal_policy_cost(PolynomialCost(a, [1.0, 1.0, 1.0], noise=0.0), 6.0, 0.01, 10.0)
    np.testing.assert_allclose(opt.r, [1.0, 2.0, 3.0], rtol=1e-9)
    assert opt.j_star == pytest.approx(np.mean(a / (2 * np.array([1.0, 2.0, 3.0]))), rel=1e-9)
    assert opt.success


@pytest.mark.parametrize("cost", [PolynomialCost.generate(100, 5), PoissonBinaryCost.generate(100, 5)], ids=["poly", "poisson"])
def test_generic_objective_agrees_with_the_closed_form_kernels(cost):
    r_max = 3.0 if isinstance(cost, PolynomialCost) else 6.0
    exact = optimal_policy_cost(cost, 40.0, 0.025, r_max)
    custom = CustomCost(100, cost.sample_pair, cumulative_mean_cost=cost.cumulative_mean_cost,
                        mean_cost=cost.mean_cost, cost_bound=cost.cost_bound)
    generic = optimal_policy_cost(custom, 40.0, 0.025, r_max)
    assert generic.success and exact.success
    assert generic.j_star == pytest.approx(exact.j_star, rel=1e-9)
    np.testing.assert_allclose(generic.r, exact.r, rtol=1e-6, atol=1e-9)
    # KKT: all free arms share one gradient
    g = policy_cost_gradient(cost, exact.r)
    free = (exact.r > 0.025 * (1 + 1e-9)) & (exact.r < r_max * (1 - 1e-9))
    assert free.sum() > 10
    np.testing.assert_allclose(g[free], g[free][0], rtol=1e-6)


def test_optimum_beats_random_feasible_points():
    cost = PoissonBinaryCost.generate(30, 2)
    opt = optimal_policy_cost(cost, 12.0, 0.025, 6.0)
    rng = np.random.default_rng(0)
    for _ in range(50):
        r = rng.dirichlet(np.ones(30)) * (12.0 - 30 * 0.025) + 0.025
        if r.max() <= 6.0:
            assert opt.j_star <= policy_cost(cost, r) + 1e-12


def test_objective_derivative():
    obj = SyncCostObjective(PoissonBinaryCost([2.0]))
    h = 1e-6
    fd = (obj.value(1.0 + h)[0] - obj.value(1.0 - h)[0]) / (2 * h)
    assert obj.derivative(1.0)[0] == pytest.approx(fd, rel=1e-7)


def test_optimum_errors():
    cost = PoissonBinaryCost([1.0, 2.0])
    with pytest.raises(InfeasibleAllocation, match=r"budget B must be in \[K r_min, K r_max\] = \[0.2, 2.0\].*got 3.0"):
        optimal_policy_cost(cost, 3.0, 0.1, 1.0)
    with pytest.raises(ValueError, match=r"r_min must be < r_max = 1.0 plays per time unit; got r_min=1.0"):
        optimal_policy_cost(cost, 1.0, 1.0, 1.0)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: PoissonBinaryCost([1.0, np.nan]), "lam must be finite"),
        (lambda: PoissonBinaryCost([1.0, 0.0]), "lam must be > 0.0"),
        (lambda: PolynomialCost([1.0], [1.5]), r"p must be <= 1.0"),
        (lambda: PolynomialCost([-1.0], [0.5]), r"a_bar must be >= 0.0"),
        (lambda: PolynomialCost([1.0], [0.5], noise=2.0), r"noise must be in \[0.0, 1.0\]; got 2.0"),
        (lambda: policy_cost(PoissonBinaryCost([1.0]), [0.0]), "r must be > 0.0"),
        (lambda: CustomCost(2, "x", cumulative_mean_cost=len, mean_cost=len, cost_bound=1.0), "sample_pair must be callable"),
        (lambda: PoissonBinaryCost.generate(3, 0, low=2.0, high=1.0), r"high must be >= low = 2.0"),
    ],
)
def test_cost_errors(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


@pytest.mark.parametrize("cost", [PolynomialCost.generate(50, 8), PoissonBinaryCost.generate(50, 8)], ids=["poly", "poisson"])
def test_fast_policy_cost_matches_lemma_1(cost):
    r = np.random.default_rng(1).uniform(0.025, 6.0, 50)
    assert cost._policy_cost_fast(r) == pytest.approx(policy_cost(cost, r), rel=1e-12)
