"""Deterministic EDF dispatch (seed 004, Sec. 3.1.1)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshcrawl.scheduling.edf import edf_schedule


def test_worked_example():
    s = edf_schedule(np.array([0.5, 0.25, 0.25]), 8, start=10.0)
    assert s.pages.tolist() == [0, 0, 1, 2, 0, 0, 1, 2]
    np.testing.assert_allclose(s.times, 10.0 + np.arange(8))


rates_st = st.lists(st.one_of(st.just(0.0), st.floats(1e-6, 100.0)), min_size=1, max_size=40).filter(lambda r: sum(r) > 0)


@given(rates_st, st.integers(1, 2000))
def test_counts_follow_the_rates(rates, m):
    # EDF over all deadlines j/x_i polls them in deadline order, so after m polls page i has been polled
    # floor(D x_i) times for a common D with m <= D Σx < m + n: count_i - m s_i lies in (-1, n s_i],
    # s_i = x_i / Σx.
    x = np.array(rates)
    s = x / x.sum()
    counts = np.bincount(edf_schedule(x, m).pages, minlength=x.size)
    assert counts.sum() == m
    assert np.all(counts - m * s > -1 - 1e-9)
    assert np.all(counts - m * s <= x.size * s + 1e-9)
    assert np.all(counts[x == 0] == 0)


@given(rates_st, st.integers(0, 300), st.integers(0, 300))
def test_continuing_from_the_deadlines_equals_one_long_run(rates, m1, m2):
    x = np.array(rates)
    whole = edf_schedule(x, m1 + m2)
    first = edf_schedule(x, m1)
    second = edf_schedule(x, m2, start=m1 / x.sum(), deadlines=first.next_deadline)
    np.testing.assert_array_equal(np.concatenate([first.pages, second.pages]), whole.pages)


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((np.array([1.0, -1.0]), 3), {}, r"rates must be >= 0.0 polls per unit time; 1 of 2 entries are not, first at index 1"),
        ((np.array([1.0, np.nan]), 3), {}, r"rates must be finite"),
        ((np.array([0.0, 0.0]), 3), {}, r"rates must have a positive sum"),
        ((np.array([1.0]), -1), {}, r"n_polls must be >= 0; got -1"),
        ((np.array([1.0]), 1), {"start": float("inf")}, r"start must be a finite time; got inf"),
        ((np.array([1.0]), 1), {"deadlines": np.array([1.0, 2.0])}, r"deadlines must have shape \(1,\)"),
    ],
)
def test_bad_input(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        edf_schedule(*args, **kwargs)
