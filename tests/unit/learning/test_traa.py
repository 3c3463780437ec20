"""TRAA (seed 004, Sec. 3.1): rules (1)-(3), the update modes of Sec. 4.3.2, the chain of eqs. (4)-(13)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshcrawl.errors import UnknownNameError
from freshcrawl.learning.traa import (
    TRAA,
    parse_update_mode,
    share_table,
    traa_stationary,
    traa_transition_matrix,
)


def test_share_table_is_s_over_n_plus_one():
    assert share_table(4).tolist() == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    np.testing.assert_allclose(share_table(4, lam=2.0), (np.arange(6) / 5.0) ** 2)


def test_initial_state_and_allocation():
    a = TRAA(n_states=500)
    assert a.state_ == 250
    np.testing.assert_allclose(a.allocation(2.0), [2 * 250 / 501, 2 * 251 / 501])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_states": 1}, r"n_states must be >= 2.*got 1"),
        ({"n_states": 0}, r"n_states must be >= 2.*got 0"),
        ({"mode": "reward-everything"}, r"unknown update mode 'reward-everything'"),
        ({"lam": 0.0}, r"lam must be finite and > 0.*got 0.0"),
        ({"lam": float("nan")}, r"lam must not be NaN"),
        ({"n_states": 5, "state0": 6}, r"state0 must be in 1..5; got 6"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TRAA(**kwargs)


def test_unknown_mode_is_unknown_name_error():
    with pytest.raises(UnknownNameError, match="known: reward-inaction, inaction-penalty, reward-penalty"):
        parse_update_mode("penalty-only")
    assert [parse_update_mode(m) for m in ("ri", "IP", "reward-penalty")] == [0, 1, 2]


def test_bad_feedback():
    a = TRAA(n_states=5)
    with pytest.raises(ValueError, match=r"materials must be 1 or 2; first offender at index 1 \(3\)"):
        a.update_many([1, 3], [True, True])
    with pytest.raises(ValueError, match="values must be 0/1"):
        a.update_many([1], [2])


@pytest.mark.parametrize("mode", ["reward-inaction", "inaction-penalty", "reward-penalty"])
def test_boundaries_are_never_crossed(mode):
    # Rule (1) needs s < N, rule (2) needs s > 1 (and so do their inversions): from the end states
    # the feedback that would push outward leaves the state where it is, whatever the random draw.
    # Upward feedback is a reward of material 1 or a penalty of material 2; downward the converse.
    top = TRAA(n_states=3, state0=3, mode=mode, rng=0)
    top.update_many([1] * 200 + [2] * 200, [True] * 200 + [False] * 200)
    assert top.state_ == 3
    bottom = TRAA(n_states=3, state0=1, mode=mode, rng=0)
    bottom.update_many([2] * 200 + [1] * 200, [True] * 200 + [False] * 200)
    assert bottom.state_ == 1


def test_inaction_modes_ignore_the_other_feedback():
    ri = TRAA(n_states=9, state0=5, mode="reward-inaction", rng=1)
    ri.update_many([1, 2] * 500, [False] * 1000)
    assert ri.state_ == 5
    ip = TRAA(n_states=9, state0=5, mode="inaction-penalty", rng=1)
    ip.update_many([1, 2] * 500, [True] * 1000)
    assert ip.state_ == 5


@pytest.mark.parametrize(
    ("mode", "material", "value", "direction", "prob"),
    [
        ("reward-inaction", 1, True, +1, lambda q: 1 - q),  # rule (1): up with probability r_s
        ("reward-inaction", 2, True, -1, lambda q: q),  # rule (2): down with probability q_s
        ("inaction-penalty", 1, False, -1, lambda q: 1 - q),  # inverted rule (1)
        ("inaction-penalty", 2, False, +1, lambda q: q),  # inverted rule (2)
    ],
)
def test_one_step_transition_probabilities(mode, material, value, direction, prob):
    # 4000 independent one-step trials from state 3 of N = 9 (q_3 = 0.3); binomial count of moves,
    # tolerance 5 standard errors of a proportion with 4000 trials.
    n_states, s0, trials = 9, 3, 4000
    moved = 0
    rng = np.random.default_rng(7)
    for seed in rng.integers(0, 2**31 - 1, size=trials):
        a = TRAA(n_states=n_states, state0=s0, mode=mode, rng=int(seed))
        a.update(material, value)
        assert a.state_ in (s0, s0 + direction)
        moved += a.state_ != s0
    p = prob(s0 / (n_states + 1))
    se = math.sqrt(p * (1 - p) / trials)
    assert abs(moved / trials - p) < 5 * se


@pytest.mark.parametrize("mode", ["reward-inaction", "inaction-penalty", "reward-penalty"])
def test_stationary_distribution_solves_the_chain(mode):
    # Π from the product form eq. (13) is the left eigenvector of H for eigenvalue 1, eq. (9).
    def p1(x):
        return 1 - 0.7 ** (1 / x)

    def p2(x):
        return 1 - 0.95 ** (1 / x)

    H = traa_transition_matrix(30, p1, p2, mode=mode)
    pi = traa_stationary(30, p1, p2, mode=mode)
    np.testing.assert_allclose(H.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(pi @ H, pi, atol=1e-12)
    assert pi.sum() == pytest.approx(1.0)


def test_asymptotic_optimality_theorem_1():
    # Two web pages with update probabilities 0.3 and 0.05 per step share one poll per step. The
    # optimum equalises d_1(x_1) = d_2(x_2), i.e. x_1* = Δ_1 / (Δ_1 + Δ_2) with Δ = -ln(1 - u).
    # Theorem 1: E_Π[x_1] -> x_1* as N grows.
    u1, u2 = 0.3, 0.05
    d1, d2 = -math.log1p(-u1), -math.log1p(-u2)
    x_star = d1 / (d1 + d2)

    def p1(x):
        return 1 - (1 - u1) ** (1 / x)

    def p2(x):
        return 1 - (1 - u2) ** (1 / x)

    errors = []
    for n in (10, 100, 1000):
        pi = traa_stationary(n, p1, p2, mode="reward-penalty")
        mean_share = float(pi @ share_table(n)[1:-1])
        errors.append(abs(mean_share - x_star))
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 2.0 / 1001  # within two grid steps at N = 1000


@given(st.integers(2, 60), st.floats(0.01, 0.99), st.floats(0.01, 0.99))
def test_stationary_is_a_distribution(n, a, b):
    pi = traa_stationary(n, lambda x: 1 - (1 - a) ** (1 / x), lambda x: 1 - (1 - b) ** (1 / x), mode="rp")
    assert pi.shape == (n,)
    assert np.all(pi >= 0)
    assert pi.sum() == pytest.approx(1.0)


def test_same_seed_same_trajectory():
    feedback = np.random.default_rng(3)
    mats = feedback.integers(1, 3, size=5000)
    vals = feedback.random(5000) < 0.4
    a, b = TRAA(n_states=50, rng=11), TRAA(n_states=50, rng=11)
    a.update_many(mats, vals)
    b.update_many(mats, vals)
    assert a.state_ == b.state_


@given(
    st.integers(2, 30),
    st.sampled_from(["reward-inaction", "inaction-penalty", "reward-penalty"]),
    st.lists(st.tuples(st.integers(1, 2), st.booleans()), max_size=300),
    st.integers(0, 2**31 - 1),
)
def test_state_stays_in_one_to_n(n, mode, feedback, seed):
    a = TRAA(n_states=n, mode=mode, rng=seed)
    for material, value in feedback:
        a.update(material, value)
        assert 1 <= a.state_ <= n
    share = a.allocation()
    assert share.sum() == pytest.approx(1.0) and 0 < share[0] < 1


def test_discretization_exponent():
    a = TRAA(n_states=9, lam=2.0, state0=3)
    np.testing.assert_allclose(a.allocation(), [0.09, 0.91])
