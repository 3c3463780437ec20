"""The polling environment of seed 004 Sec. 4.3.1 that the H-TRAA is evaluated in (freshcrawl.environments.zipf)."""

from __future__ import annotations

import math

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


@pytest.mark.parametrize(
    ("alpha", "beta", "updates"), [(0.3, 1.5, 0.76), (0.3, 1.0, 2.0), (0.9, 1.5, 2.3)]
)
def test_updates_per_step_match_the_seed(alpha, beta, updates):
    # Sec. 4.3.1: 0.76, 2.0 and 2.3 updates per time step at 512 pages (the seed rounds to 0.1 or 0.01).
    total = ZipfEnvironment(512, alpha, beta).updates_per_step()
    assert abs(total - updates) < (0.005 if updates == 0.76 else 0.05)


def test_rank_k_gets_alpha_over_k_to_the_beta():
    np.testing.assert_allclose(zipf_update_probabilities(4, 0.8, 2.0), [0.8, 0.2, 0.8 / 9, 0.05])


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((0, 0.3, 1.5), {}, r"n_pages must be >= 1 \(pages\); got 0"),
        ((8, 1.5, 1.5), {}, r"alpha must be in \[0.0, 1.0\].*got 1.5"),
        ((8, -0.1, 1.5), {}, r"alpha must be in \[0.0, 1.0\].*got -0.1"),
        ((8, float("nan"), 1.5), {}, r"alpha must not be NaN"),
        ((8, 0.3, -1.0), {}, r"beta must be finite and >= 0.*got -1.0"),
        ((8, 0.3, float("inf")), {}, r"beta must be finite and >= 0.*got inf"),
        ((8, 0.3, 1.5), {"capacity": 0.0}, r"capacity must be finite and > 0 polls per time step; got 0.0"),
        ((8, 0.3, 1.5), {"capacity": -2.0}, r"capacity must be finite and > 0 polls per time step; got -2.0"),
        ((8, 0.3, 1.5), {"perturbations": -1}, r"perturbations must be >= 0.*got -1"),
        ((8, 0.3, 1.5), {"switch_every": 0}, r"switch_every must be >= 1.*got 0"),
    ],
)
def test_bad_arguments(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        ZipfEnvironment(*args, **kwargs)


def test_detection_probability_worked_example():
    # Sec. 1: unchanged with probability 0.5 per step, polled every 3rd / 2nd step.
    np.testing.assert_allclose(detection_probability(np.array([1 / 3, 1 / 2, 0.0]), np.full(3, 0.5)), [0.875, 0.75, 0.0])


def test_expected_detections_rejects_bad_input():
    with pytest.raises(ValueError, match="x must be finite and >= 0"):
        expected_detections_per_poll(np.array([1.0, np.nan]), np.array([0.1, 0.2]))
    with pytest.raises(ValueError, match=r"update_prob must be in \[0, 1\]"):
        expected_detections_per_poll(np.array([1.0, 1.0]), np.array([0.1, 1.2]))
    with pytest.raises(ValueError, match="capacity must be finite and > 0"):
        expected_detections_per_poll(np.array([1.0]), np.array([0.1]), capacity=0.0)


@given(st.integers(2, 300), st.integers(0, 5000), st.integers(0, 2**32 - 1))
def test_perturbations_permute_the_probabilities(n, k, seed):
    env = ZipfEnvironment(n, 0.7, 1.2, perturbations=k, rng=seed)
    np.testing.assert_allclose(np.sort(env.update_prob_), np.sort(zipf_update_probabilities(n, 0.7, 1.2)))
    assert sorted(env.page_at_rank_.tolist()) == list(range(n))
    np.testing.assert_allclose(env.update_prob_[env.page_at_rank_], zipf_update_probabilities(n, 0.7, 1.2))


def test_one_perturbation_swaps_neighbours():
    env = ZipfEnvironment(6, 0.9, 1.0, perturbations=1, rng=3)
    moved = np.flatnonzero(env.page_at_rank_ != np.arange(6))
    assert moved.size == 2 and moved[1] == moved[0] + 1


def test_switch_swaps_a_rank_with_its_successor():
    env = ZipfEnvironment(50, 0.9, 1.5, switch_every=10)
    before = env.update_prob_.copy()
    a, b = env.switch(rng=0)
    assert env.update_prob_[a] == before[b] and env.update_prob_[b] == before[a]
    ranks = np.argsort(env.page_at_rank_)
    assert abs(int(ranks[a]) - int(ranks[b])) == 1


def test_switch_samples_ranks_from_the_zipf_distribution():
    # 4000 switches from fresh environments; the fraction that moves the rank-1 page is α/1^β over the
    # weights of ranks 1..n-1; binomial tolerance of 5 standard errors.
    rng = np.random.default_rng(4)
    n, trials = 20, 4000
    w = zipf_update_probabilities(n, 0.9, 1.5)[:-1]
    p = w[0] / w.sum()
    hits = sum(0 in ZipfEnvironment(n, 0.9, 1.5).switch(rng) for _ in range(trials))
    assert abs(hits / trials - p) < 5 * math.sqrt(p * (1 - p) / trials)


def test_round_robin_polls_detect_changes_at_the_model_rate():
    # Uniform round-robin over 16 pages: page i is polled every 16 steps and shows a change with
    # probability 1 - (1 - u_i)^16. Over all polls the detected fraction is the mean of those; the
    # tolerance is 5 standard errors of a mean of independent Bernoulli polls.
    env = ZipfEnvironment(16, 0.3, 1.0, rng=0)
    u = env.update_prob_.copy()
    n_polls = 160_000
    run = simulate_estimator(env, n_polls, checkpoints=[0, n_polls], seed=3)
    d = 1 - (1 - u) ** 16
    se = math.sqrt(np.mean(d * (1 - d)) / n_polls)
    assert abs(run.detected[-1] - d.mean()) < 5 * se
