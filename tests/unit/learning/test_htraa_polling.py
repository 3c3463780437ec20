"""The classical polling policies H-TRAA is compared with (seed 004, Sec. 4.3.1)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshcrawl.environments.zipf import (
    ZipfEnvironment,
    detection_probability,
    expected_detections_per_poll,
    zipf_update_probabilities,
)
from freshcrawl.experiments.polling import simulate_estimator
from freshcrawl.learning.polling_policies import (
    estimate_update_prob,
    estimator_polling,
    optimal_polling,
    proportional_polling,
    uniform_polling,
)


def test_uniform_and_proportional():
    np.testing.assert_allclose(uniform_polling(4, 2.0), [0.5] * 4)
    np.testing.assert_allclose(proportional_polling(np.array([0.3, 0.1, 0.0])), [0.75, 0.25, 0.0])
    np.testing.assert_allclose(proportional_polling(np.zeros(2), 3.0), [1.5, 1.5])


def test_estimate_inverts_the_detection_probability():
    # A page polled every T steps shows a change with probability 1 - (1 - u)^T; with k = (m+1) d - 1/2
    # changes in m polls the add-one-half fraction is exactly d and the estimate exactly u.
    u, T, m = 0.1, 8.0, 1000
    d = 1 - (1 - u) ** T
    assert estimate_update_prob(np.array([(m + 1) * d - 0.5]), np.array([m]), T)[0] == pytest.approx(u, rel=1e-12)


def test_saturated_pages_stay_below_one_and_grow_with_evidence():
    # Changed at every poll: the raw fraction would give u = 1; the estimate grows like ln(2(m+1))/T.
    est = estimate_update_prob(np.array([10, 100, 1000]), np.array([10, 100, 1000]), 512.0)
    assert np.all(np.diff(est) > 0) and np.all(est < 0.02)
    np.testing.assert_allclose(est, -np.expm1(np.log(0.5 / np.array([11, 101, 1001])) / 512.0), rtol=1e-12)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: uniform_polling(0), r"n_pages must be >= 1; got 0"),
        (lambda: proportional_polling(np.array([0.1, np.nan])), r"update_prob must be finite"),
        (lambda: proportional_polling(np.array([0.1, 1.5])), r"update_prob must be <= 1.0"),
        (lambda: proportional_polling(np.array([0.1]), capacity=0.0), r"capacity must be finite and > 0"),
        (lambda: estimate_update_prob(np.array([3]), np.array([2]), 1.0), r"changes must not exceed polls"),
        (lambda: estimate_update_prob(np.array([1]), np.array([2]), 0.0), r"period must be finite and > 0"),
        (lambda: optimal_polling(np.array([-0.1, 0.2])), r"update_prob must be >= 0.0"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize(("alpha", "beta"), [(0.3, 1.5), (0.3, 1.0), (0.9, 1.5)])
def test_optimal_equalises_the_detection_probabilities(alpha, beta):
    # Sec. 4.2: the Lagrange conditions reduce to d_1(x_1) = ... = d_n(x_n) with Σ x = c, whose
    # solution is x_i ∝ -ln(1 - u_i).
    u = zipf_update_probabilities(512, alpha, beta)
    x = optimal_polling(u)
    assert x.sum() == pytest.approx(1.0, rel=1e-9)
    d = detection_probability(x, u)
    np.testing.assert_allclose(d, d[0], rtol=1e-8)
    delta = -np.log1p(-u)
    np.testing.assert_allclose(x, delta / delta.sum(), rtol=1e-8)


@given(st.integers(2, 200), st.floats(0.01, 1.0), st.floats(0.0, 3.0), st.floats(0.1, 10.0))
def test_optimal_is_at_least_as_good_as_the_others(n, alpha, beta, c):
    u = zipf_update_probabilities(n, alpha, beta)
    best = expected_detections_per_poll(optimal_polling(u, c), u, c)
    for x in (uniform_polling(n, c), proportional_polling(u, c)):
        assert expected_detections_per_poll(x, u, c) <= best + 1e-12


def test_proportional_boundary_in_the_hard_environment():
    # Sec. 4.3.3: (0.9, 1.5) separates optimal from proportional; (0.3, 1.5) hardly does.
    def gap(alpha, beta):
        u = zipf_update_probabilities(512, alpha, beta)
        return expected_detections_per_poll(optimal_polling(u), u) - expected_detections_per_poll(u, u)

    assert gap(0.9, 1.5) > 0.03
    assert gap(0.3, 1.5) < 0.005


def test_estimator_improves_with_the_length_of_its_estimation_phase():
    env = ZipfEnvironment(64, 0.3, 1.5, rng=0)
    u = env.update_prob_.copy()
    run = simulate_estimator(env, 200_000, checkpoints=[64, 2_000, 200_000], seed=2)
    assert run.value[0] < run.value[1] < run.value[2]
    # Never better than the proportional policy on the true frequencies: the rank-1 page changes in
    # almost every 64-step interval, so its estimate saturates at 1 and it is over-polled.
    assert run.value[2] < expected_detections_per_poll(u, u)


def test_estimator_with_equal_evidence_is_uniform():
    np.testing.assert_allclose(estimator_polling(np.zeros(4), np.ones(4), 4.0), [0.25] * 4)
    np.testing.assert_allclose(estimator_polling(np.zeros(3), np.zeros(3), 4.0, capacity=3.0), [1.0] * 3)
