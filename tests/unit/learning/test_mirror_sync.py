"""Synchronization bandits of seed 003: projections, Lemma 2, ScheduleArmPlays and the three learners."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize

from freshcrawl.errors import InfeasibleAllocation, InvalidObservation
from freshcrawl.learning.mirror_sync import (
    AsyncMirrorSync,
    AsyncPSGDSync,
    MirrorSync,
    SyncProblem,
    gradient_sample,
    mirror_descent_step,
    projected_sgd_step,
    schedule_arm_plays,
)
from freshcrawl.learning.sync_costs import CustomCost, PoissonBinaryCost, PolynomialCost, policy_cost_gradient

# ---------------------------------------------------------------------------------------------
# Projections
# ---------------------------------------------------------------------------------------------


def _bregman_objective(x, r, g, eta):
    return eta * np.dot(x, g) + np.sum(-np.log(x / r) + x / r - 1.0)


def test_mirror_step_matches_a_general_solver():
    rng = np.random.default_rng(0)
    n, lo, hi, total, eta = 8, 0.05, 2.0, 4.0, 1.3
    r = rng.uniform(0.2, 0.8, n)
    r *= total / r.sum()
    g = rng.normal(0.0, 1.0, n)
    x = mirror_descent_step(r, g, eta, total=total, r_lo=lo, r_hi=hi)
    ref = minimize(
        _bregman_objective, r, args=(r, g, eta), method="SLSQP", bounds=[(lo, hi)] * n,
        constraints={"type": "eq", "fun": lambda v: v.sum() - total}, options={"ftol": 1e-14, "maxiter": 500},
    )
    assert ref.success
    np.testing.assert_allclose(x, ref.x, atol=1e-6)
    assert _bregman_objective(x, r, g, eta) <= _bregman_objective(ref.x, r, g, eta) + 1e-12


def test_mirror_step_closed_form_without_active_bounds():
    # x_k = 1/(1/r_k + eta g_k + nu) with r = (1, 1), g = (-1, 0), eta = 1/2, total 2:
    # 1/(0.5 + nu) + 1/(1 + nu) = 2  <=>  2 nu^2 + nu - 0.5 = 0  <=>  nu = (-1 + sqrt(5)) / 4.
    x = mirror_descent_step([1.0, 1.0], [-1.0, 0.0], 0.5, total=2.0, r_lo=0.1, r_hi=5.0)
    nu = 1.0 / x[1] - 1.0
    assert 1.0 / (0.5 + nu) == pytest.approx(x[0], rel=1e-12)
    assert nu == pytest.approx((-1.0 + math.sqrt(5.0)) / 4.0, rel=1e-12)


def test_mirror_step_zero_gradient_keeps_a_feasible_point():
    r = np.array([0.1, 0.5, 1.4])
    np.testing.assert_allclose(mirror_descent_step(r, np.zeros(3), 2.0, total=2.0, r_lo=0.1, r_hi=1.5), r, rtol=1e-12)


@given(
    st.integers(1, 40).flatmap(
        lambda n: st.tuples(
            st.lists(st.floats(0.06, 1.9), min_size=n, max_size=n),
            st.lists(st.floats(-50.0, 50.0), min_size=n, max_size=n),
            st.floats(0.0, 1.0),
            st.floats(0.01, 10.0),
        )
    )
)
def test_mirror_step_kkt(args):
    r, g, frac, eta = (np.array(args[0]), np.array(args[1]), args[2], args[3])
    n, lo, hi = r.size, 0.05, 2.0
    total = n * lo + frac * n * (hi - lo)
    x = mirror_descent_step(r, g, eta, total=total, r_lo=lo, r_hi=hi)
    assert x.sum() == pytest.approx(total, rel=1e-9)
    assert np.all(x >= lo) and np.all(x <= hi)
    d = 1.0 / r + eta * g
    free = (x > lo * (1 + 1e-9)) & (x < hi * (1 - 1e-9))
    if free.any():
        nu = 1.0 / x[free] - d[free]
        np.testing.assert_allclose(nu, nu[0], atol=1e-6 * max(1.0, abs(nu[0])))
        # at a bound, the unconstrained minimiser lies beyond it
        at_lo, at_hi = x <= lo * (1 + 1e-9), x >= hi * (1 - 1e-9)
        assert np.all(d[at_lo] + nu[0] >= 1.0 / lo - 1e-6 * (1 + abs(nu[0])))
        assert np.all(d[at_hi] + nu[0] <= 1.0 / hi + 1e-6 * (1 + abs(nu[0])))


@given(
    st.integers(1, 40).flatmap(
        lambda n: st.tuples(
            st.lists(st.floats(-3.0, 5.0), min_size=n, max_size=n),
            st.floats(0.0, 1.0),
        )
    )
)
def test_euclidean_projection_kkt(args):
    y, frac = np.array(args[0]), args[1]
    n, lo, hi = y.size, 0.05, 2.0
    total = n * lo + frac * n * (hi - lo)
    x = projected_sgd_step(np.ones(n), 1.0 - y, 1.0, total=total, r_lo=lo, r_hi=hi)  # r - g = y
    assert x.sum() == pytest.approx(total, rel=1e-9, abs=1e-12)
    assert np.all(x >= lo) and np.all(x <= hi)
    free = (x > lo) & (x < hi)
    if free.any():
        nu = y[free] - x[free]
        np.testing.assert_allclose(nu, nu[0], atol=1e-9)
        assert np.all(y[x <= lo] - nu[0] <= lo + 1e-9)
        assert np.all(y[x >= hi] - nu[0] >= hi - 1e-9)


def test_euclidean_projection_example():
    x = projected_sgd_step([1.0, 1.0, 1.0], [3.0, 0.0, -3.0], 1.0, total=3.0, r_lo=0.1, r_hi=2.5)
    # y = (-2, 1, 4): arm 0 at r_lo, arm 2 at r_hi, arm 1 takes the rest: 3 - 0.1 - 2.5 = 0.4
    np.testing.assert_allclose(x, [0.1, 0.4, 2.5], rtol=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(total=10.0, r_lo=0.1, r_hi=2.0), "total must be in"),
        (dict(total=0.1, r_lo=0.1, r_hi=2.0), "total must be in"),
        (dict(total=1.0, r_lo=2.0, r_hi=1.0), "0 < r_lo < r_hi"),
    ],
)
def test_step_rejects_bad_constraints(kwargs, match):
    with pytest.raises(ValueError, match=match):
        mirror_descent_step([0.5, 0.5], [0.0, 0.0], 1.0, **kwargs)


def test_step_rejects_bad_learning_rate_and_gradient():
    with pytest.raises(ValueError, match=r"eta must be finite and > 0; got 0"):
        mirror_descent_step([0.5, 0.5], [0.0, 0.0], 0.0, total=1.0, r_lo=0.1, r_hi=2.0)
    with pytest.raises(ValueError, match="g must be finite"):
        projected_sgd_step([0.5, 0.5], [np.nan, 0.0], 1.0, total=1.0, r_lo=0.1, r_hi=2.0)


# ---------------------------------------------------------------------------------------------
# Lemma 2: unbiased gradient from probe plays
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "process",
    [PoissonBinaryCost([0.3, 2.0, 4.5]), PolynomialCost([0.2, 0.9, 0.5], [0.55, 0.9, 0.99], noise=0.1)],
    ids=["poisson", "polynomial"],
)
def test_lemma2_estimator_is_unbiased(process):
    rng = np.random.default_rng(7)
    eps, m = 0.05, 200_000
    r = np.array([0.4, 1.1, 2.5])
    exact = policy_cost_gradient(process, r) * process.n_arms  # ∂J_k/∂r_k
    for k in range(3):
        arms = np.full(m, k, dtype=np.intp)
        probe = rng.random(m) < eps
        period = np.full(m, 1.0 / r[k])
        c_p, c_s = process.sample_pair(arms, rng.random(m) * period, period, rng)
        g = np.where(probe, gradient_sample(c_p, c_s, r[k], eps), 0.0)
        se = g.std(ddof=1) / math.sqrt(m)
        assert abs(g.mean() - exact[k]) < 5 * se, (k, g.mean(), exact[k], se)  # 5 standard errors


def test_gradient_sample_formula():
    np.testing.assert_allclose(gradient_sample([0.2, 1.0], [1.0, 1.0], [0.5, 2.0], 0.1), [-16.0, 0.0])


# ---------------------------------------------------------------------------------------------
# ScheduleArmPlays
# ---------------------------------------------------------------------------------------------


def test_schedule_counts_and_times_are_exact():
    r = np.array([0.025, 0.4, 3.0])
    s = schedule_arm_plays(np.zeros(3), r, 40.0, 0.3, rng=1)
    assert np.bincount(s.arm, minlength=3).tolist() == [1, 16, 120]
    np.testing.assert_allclose(s.t_prev, [40.0, 40.0, 40.0])
    np.testing.assert_allclose(s.sync_time - s.start, 1.0 / r[s.arm])
    p = s.probe
    assert np.all((s.probe_time[p] >= s.start[p]) & (s.probe_time[p] < s.sync_time[p]))
    assert np.all(np.isnan(s.probe_time[~p]))
    arm, time, is_probe = s.plays()
    assert arm.size == s.arm.size + p.sum() and is_probe.sum() == p.sum()
    for k in range(3):
        assert np.all(np.diff(time[arm == k]) > 0)


def test_schedule_probe_frequency_and_uniform_position():
    eps, n = 0.2, 20_000
    s = schedule_arm_plays(np.zeros(1), np.array([1.0]), float(n), eps, rng=3)
    assert s.arm.size == n
    se = math.sqrt(eps * (1 - eps) / n)
    assert abs(s.probe.mean() - eps) < 5 * se  # 5 binomial standard errors
    u = (s.probe_time - s.start)[s.probe]  # uniform on [0, 1): mean 1/2, sd 1/sqrt(12)
    assert abs(u.mean() - 0.5) < 5 / math.sqrt(12 * u.size)


def test_schedule_continues_from_t_prev():
    s = schedule_arm_plays([3.0, 3.5], [1.0, 2.0], 5.0, 0.5, rng=0)
    assert s.sync_time.tolist() == [4.0, 5.0, 4.0, 4.5, 5.0]
    assert s.t_prev.tolist() == [5.0, 5.0]


# ---------------------------------------------------------------------------------------------
# The three algorithms
# ---------------------------------------------------------------------------------------------

POLY = dict(budget=8.0, r_min=0.025, r_max=3.0, epsilon=0.05)


def _instance(seed=0, k=20):
    return PolynomialCost.generate(k, seed)


@pytest.mark.parametrize(
    "algo",
    [
        MirrorSync(eta=2.7, samples="mean", **POLY),
        AsyncMirrorSync(eta=1.6, update_interval=20.0, **POLY),
        AsyncPSGDSync(eta=0.08, update_interval=20.0, **POLY),
    ],
    ids=lambda a: a.algorithm,
)
def test_rates_stay_on_k_epsilon_and_reruns_are_identical(algo):
    inst = _instance()
    a = algo.run(inst, 20, rng=5)
    b = algo.run(inst, 20, rng=5)
    np.testing.assert_array_equal(a.j, b.j)
    prob = algo.problem(inst.n_arms)
    assert a.rates.sum() == pytest.approx(prob.sync_budget, rel=1e-9)
    assert a.rates.min() >= prob.r_min * (1 - 1e-12) and a.rates.max() <= prob.r_hi * (1 + 1e-12)
    assert a.j[0] == pytest.approx(inst.a_bar @ (prob.initial_rates() ** -inst.p / (inst.p + 1)) / inst.n_arms)


def test_mirrorsync_first_sample_mode_draws_one_interval_per_arm_and_round():
    inst = _instance()
    res = MirrorSync(eta=0.05, **POLY).run(inst, 30, rng=2)
    assert res.n_sync_plays == 30 * inst.n_arms
    # probes ~ Binomial(30 K, eps)
    n, eps = 30 * inst.n_arms, 0.05
    assert abs(res.n_probe_plays - n * eps) < 5 * math.sqrt(n * eps * (1 - eps))
    assert res.rounds.tolist() == list(range(31))


def test_async_updates_on_schedule_and_spends_the_budget():
    inst = _instance(k=50)
    budget = 20.0
    algo = AsyncMirrorSync(budget=budget, r_min=0.025, r_max=3.0, eta=1.6, update_interval=20.0)
    res = algo.run(inst, 10, rng=4)
    assert res.n_updates == 20  # 10 rounds of 1/r_min = 40 time units, one update every 20
    np.testing.assert_allclose(res.rounds, np.arange(21) * 0.5)
    # Sync plays: the sync budget B/(1+eps) over the horizon, up to one running interval per arm,
    # plus the "sync now" plays of lines 36-38 (at most one per updated arm and update).
    sync_rate = res.n_sync_plays / res.horizon
    sb = budget / 1.05
    assert sb - inst.n_arms / res.horizon <= sync_rate <= sb + (inst.n_arms + 0.05 * 50 * 20 + 5 * math.sqrt(50)) / res.horizon
    # Probes: at most eps of the sample intervals; the total stays within the budget B.
    assert (res.n_sync_plays + res.n_probe_plays) / res.horizon <= budget * 1.02


def test_learning_lowers_the_cost_on_average():
    # Table 1 setting (K = 100, B = 0.4 K) and App. B learning rates, 60 rounds, 4 instances. The learning
    # rates act on gradients normalised by 1/K (1/|A_i|), so they hold for K = 100 only.
    table1 = dict(budget=40.0, r_min=0.025, r_max=3.0, epsilon=0.05)
    for algo in (MirrorSync(eta=2.7, samples="mean", **table1), AsyncMirrorSync(eta=1.6, **table1),
                 AsyncPSGDSync(eta=0.08, **table1)):
        gains = []
        for seed in range(4):
            res = algo.run(_instance(seed, k=100), 60, rng=seed + 100)
            gains.append((res.j[0] - res.j[-1]) / res.j[0])
        # every run improves J by several percent (about 5-8 % after 60 rounds)
        assert min(gains) > 0.02, (algo.algorithm, gains)


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        (dict(epsilon=0.0), ValueError, r"epsilon must be in \(0.0, 1.0\); got 0.0"),
        (dict(epsilon=1.0), ValueError, r"epsilon must be in \(0.0, 1.0\); got 1.0"),
        (dict(epsilon=float("nan")), ValueError, "epsilon must not be NaN"),
        (dict(r_min=3.0, r_max=3.0), ValueError, r"r_min must be < r_max = 3.0 plays per time unit; got r_min=3.0"),
        (dict(r_min=-0.1), ValueError, r"r_min must be finite and > 0 plays per time unit; got -0.1"),
        (dict(eta=0.0), ValueError, r"eta must be finite and > 0; got 0.0"),
        (dict(eta=-1.0), ValueError, r"eta must be finite and > 0; got -1.0"),
        (dict(budget=float("inf")), ValueError, "budget must be finite and > 0"),
    ],
)
def test_hyperparameter_errors(kwargs, exc, match):
    settings = dict(budget=8.0, r_min=0.025, r_max=3.0, epsilon=0.05, eta=1.0) | kwargs
    for cls in (MirrorSync, AsyncMirrorSync, AsyncPSGDSync):
        with pytest.raises(exc, match=match):
            cls(**settings)


@pytest.mark.parametrize(
    ("budget", "match"),
    [
        (100.0, r"budget B must be in \[K r_min, K r_max\] = \[0.5, 60.0\] plays per time unit for K=20; got 100.0"),
        (0.4, r"budget B must be in \[K r_min, K r_max\] = \[0.5, 60.0\].*got 0.4"),
        (0.51, r"budget B must be >= \(1 \+ epsilon\) K r_min"),
    ],
)
def test_budget_outside_the_feasible_range(budget, match):
    algo = AsyncMirrorSync(budget=budget, r_min=0.025, r_max=3.0, eta=1.0)
    with pytest.raises(InfeasibleAllocation, match=match):
        algo.run(_instance(), 5, rng=0)


def test_zero_arms():
    with pytest.raises(ValueError, match=r"n_arms must be >= 1 \(K, the number of arms\); got 0"):
        SyncProblem(0, 1.0, 0.025, 3.0, 0.05)
    with pytest.raises(ValueError, match="n_arms must be >= 1"):
        PoissonBinaryCost.generate(0)
    with pytest.raises(ValueError, match="a_bar must be a non-empty 1-d array"):
        PolynomialCost([], [])


def _bad_cost(bad_value, bad_arm):
    def sample_pair(arms, tp, ts, rng):
        c_s = np.minimum(ts, 5.0)
        c_s = np.where(arms == bad_arm, bad_value, c_s)
        return np.minimum(tp, 5.0), c_s

    return CustomCost(4, sample_pair, cumulative_mean_cost=lambda tau: np.ones(4) * np.asarray(tau) ** 2 / 2,
                      mean_cost=lambda tau: np.ones(4) * np.asarray(tau), cost_bound=5.0)


@pytest.mark.parametrize("bad", [float("nan"), -0.5, 7.0])
@pytest.mark.parametrize(
    "algo",
    [MirrorSync(budget=2.0, r_min=0.1, r_max=2.0, epsilon=0.5, eta=0.1),
     AsyncMirrorSync(budget=2.0, r_min=0.1, r_max=2.0, epsilon=0.5, eta=0.1, update_interval=5.0)],
    ids=lambda a: a.algorithm,
)
def test_bad_cost_sample_names_arm_and_round(bad, algo):
    # the round is the first one in which arm 2 had a probe (random)
    with pytest.raises(InvalidObservation, match=r"sync cost sample of arm 2 in round \d+ must be in \[0, U=5.0\]"):
        algo.run(_bad_cost(bad, 2), 3, rng=0)
