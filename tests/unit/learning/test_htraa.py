"""H-TRAA (seed 004, Sec. 3.2): flat-array hierarchy, padding, feedback on the path, per-node EDF."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshcrawl.environments.zipf import ZipfEnvironment, expected_detections_per_poll
from freshcrawl.experiments.polling import simulate_htraa
from freshcrawl.errors import UnknownNameError
from freshcrawl.learning.htraa import HTRAA, n_leaves_for


def test_padding_to_a_power_of_two():
    assert [n_leaves_for(n) for n in (1, 2, 3, 4, 5, 512, 513, 32768)] == [2, 2, 4, 4, 8, 512, 1024, 32768]
    h = HTRAA(5, n_states=10)
    assert (h.n_leaves, h.depth) == (8, 3)
    assert h.allocation().shape == (5,)
    assert h.allocation(padded=True).shape == (8,)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"n_materials": 0}, ValueError, r"n_materials must be >= 1 \(pages\); got 0"),
        ({"n_materials": 4, "n_states": 1}, ValueError, r"n_states must be >= 2.*got 1"),
        ({"n_materials": 4, "capacity": 0.0}, ValueError, r"capacity must be finite and > 0.*got 0.0"),
        ({"n_materials": 4, "capacity": -1.0}, ValueError, r"capacity must be finite and > 0.*got -1.0"),
        ({"n_materials": 4, "capacity": float("inf")}, ValueError, r"capacity must be finite and > 0.*got inf"),
        ({"n_materials": 4, "mode": "sometimes"}, UnknownNameError, r"unknown update mode 'sometimes'"),
        ({"n_materials": 2.5}, TypeError, r"n_materials must be an int"),
    ],
)
def test_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        HTRAA(**kwargs)


def test_bad_feedback():
    h = HTRAA(3, n_states=10)
    with pytest.raises(ValueError, match=r"materials must be in 0..3; first offender at index 0 \(4\)"):
        h.update([4], [True])
    with pytest.raises(ValueError, match="same shape"):
        h.update([0, 1], [True])


@given(st.integers(1, 70), st.integers(2, 700), st.floats(0.01, 100.0), st.integers(0, 2**32 - 1))
def test_allocation_fills_the_capacity(n, n_states, capacity, seed):
    h = HTRAA(n, n_states=n_states, capacity=capacity)
    h.state_[:] = np.random.default_rng(seed).integers(1, n_states + 1, size=h.n_leaves)
    x = h.allocation(padded=True)
    assert np.all(x > 0)
    assert x.sum() == pytest.approx(capacity, rel=1e-12)


def test_allocation_is_the_product_of_the_splits():
    h = HTRAA(4, n_states=9)
    h.state_[1:] = [2, 7, 4]  # root gives 0.2 left; node 2 gives 0.7 to page 0; node 3 gives 0.4 to page 2
    np.testing.assert_allclose(h.allocation(), [0.2 * 0.7, 0.2 * 0.3, 0.8 * 0.4, 0.8 * 0.6])


def test_feedback_reaches_exactly_the_automata_on_the_path():
    # Rewards of page 5 of 8 only move nodes 1 (root), 3 and 6; page 5 is a right child of node 6,
    # node 6 the left child of node 3, node 3 the right child of the root (Example I).
    h = HTRAA(8, n_states=501, mode="reward-inaction", rng=0)
    h.update([5] * 3000, [True] * 3000)
    moved = np.flatnonzero(h.state_ != 251)
    assert moved.tolist() == [1, 3, 6]
    assert h.state_[1] < 251 and h.state_[3] > 251 and h.state_[6] < 251


def test_padding_materials_are_worth_zero_and_lose_their_share():
    # Three real pages and one zero-value padding leaf: under reward-penalty the padding leaf only ever
    # reports 0 and its share goes to its sibling.
    env = ZipfEnvironment(3, 0.5, 0.0, rng=0)
    h = HTRAA(3, n_states=50, rng=0)
    simulate_htraa(env, h, 50_000, checkpoints=[50_000])
    x = h.allocation(padded=True)
    assert x[3] < x[2] / 10


@given(st.integers(1, 40), st.integers(2, 600), st.integers(1, 3000), st.integers(0, 2**32 - 1))
def test_edf_polls_every_page_in_proportion_to_its_share(n, n_states, m, seed):
    # Per-node EDF with fixed splits: each level adds an error in (-1, 2) polls, so a page's count after
    # m polls is within 2 * depth of m * x_i.
    h = HTRAA(n, n_states=n_states)
    h.state_[:] = np.random.default_rng(seed).integers(1, n_states + 1, size=h.n_leaves)
    x = h.allocation(padded=True)
    counts = np.bincount(h.next_polls(m), minlength=h.n_leaves)
    assert counts.sum() == m
    assert np.all(np.abs(counts - m * x) < 2 * h.depth)


def test_edf_is_deterministic_and_periodic():
    h = HTRAA(4, n_states=9)
    assert h.next_polls(8).tolist() == [0, 2, 1, 3, 0, 2, 1, 3]
    h.state_[1:] = [5, 3, 5]  # page shares 0.15, 0.35, 0.25, 0.25
    seq = h.next_polls(200)
    gaps = np.diff(np.flatnonzero(seq == 2))
    assert set(gaps.tolist()) == {4}  # page 2 (share 1/4) every 4th poll


def test_same_seed_same_run():
    runs = []
    for _ in range(2):
        env = ZipfEnvironment(32, 0.9, 1.5, rng=5)
        h = HTRAA(32, rng=9)
        runs.append((simulate_htraa(env, h, 20_000).value, h.state_.copy()))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


@pytest.mark.parametrize("seed", range(3))
def test_breaches_the_proportional_boundary(seed):
    # Seed 004 Fig. 8: in the (0.9, 1.5) environment the learned allocation beats the proportional
    # policy and, being an allocation, cannot beat the optimal one (x_i ∝ -ln(1 - u_i), Sec. 4.2).
    env = ZipfEnvironment(64, 0.9, 1.5, rng=0)
    u = env.update_prob_.copy()
    h = HTRAA(64, rng=seed)
    start = expected_detections_per_poll(h.allocation(), u)  # middle states (N+1)//2: near uniform
    run = simulate_htraa(env, h, 200_000, checkpoints=[0, 200_000])
    prop = expected_detections_per_poll(u, u)
    opt = expected_detections_per_poll(-np.log1p(-u), u)
    assert run.value[0] == pytest.approx(start, rel=1e-12)
    assert prop < run.value[-1] <= opt


@pytest.mark.parametrize("mode", ["reward-inaction", "inaction-penalty", "reward-penalty"])
def test_every_update_mode_learns(mode):
    # (0.3, 1.5) environment: each mode closes most of the gap between uniform and optimal.
    env = ZipfEnvironment(64, 0.3, 1.5, rng=0)
    u = env.update_prob_.copy()
    run = simulate_htraa(env, HTRAA(64, mode=mode, rng=1), 300_000, checkpoints=[0, 300_000])
    uni = expected_detections_per_poll(np.ones(64), u)
    opt = expected_detections_per_poll(-np.log1p(-u), u)
    assert run.value[-1] > uni + 0.8 * (opt - uni)


def test_memory_is_linear_in_the_number_of_pages():
    small, large = HTRAA(1024), HTRAA(32768)
    assert large.nbytes() - large.share.nbytes == 32 * (small.nbytes() - small.share.nbytes)
