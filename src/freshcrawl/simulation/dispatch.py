"""Turning visit rates into visit times, within the global budget.

Budget guarantee: no window of length W (days) holds more than ``B*W + n_pages`` visits.

* Periodic dispatch keeps, for each page, the rate integral accumulated since its last visit,
  ``u_i in [0, 1)`` (its phase, drawn uniformly at the start: a random phase per page), and visits the
  page whenever ``u_i`` reaches 1. Between two consecutive visits of a page its rate integrates to
  exactly 1, so a window ``[a, b]`` holds at most ``int_a^b p_i(t) dt + 1`` visits of page i; as
  ``sum_i p_i(t) <= B`` at every time (the engine scales down plans that ask for more), the window
  holds at most ``B*W + n_pages`` visits. A rate change at a re-plan continues from the current phase
  (the next visit comes when the new rate has made up the missing part of the integral).
* Poisson dispatch (and explicit visit plans) cannot promise this by construction, so every visit
  sequence also goes through a token bucket of capacity ``n_pages`` refilled at ``B`` per day
  (:class:`TokenBucket`): a visit that finds less than one token is dropped. A bucket that starts full
  admits at most ``n_pages + B*W`` visits in any closed window of length W, and it never drops a visit
  of a periodic sequence, which already satisfies that bound.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray

from freshcrawl._validation import check_nonnegative, check_positive

__all__ = ["TokenBucket", "periodic_visits", "poisson_visits"]

#: relative slack for floating-point rounding in the token bucket
_EPS = 1e-9


def _group_arange(counts: NDArray[np.int64]) -> NDArray[np.int64]:
    """``concatenate([arange(1, c + 1) for c in counts])`` without a Python loop."""
    first = np.cumsum(counts) - counts
    total = int(counts.sum())
    return np.arange(1, total + 1, dtype=np.int64) - np.repeat(first, counts)


def periodic_visits(
    rates: NDArray[np.float64],
    phase: NDArray[np.float64],
    lo: NDArray[np.float64],
    hi: NDArray[np.float64],
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Periodic visits of every page over its own stretch ``[lo_i, hi_i)``, updating ``phase`` in place.

    Parameters
    ----------
    rates : ndarray of float, shape (n_pages,)
        Visit rates p_i >= 0, visits per day.
    phase : ndarray of float, shape (n_pages,)
        Rate integral accumulated since each page's last visit, in [0, 1); updated in place.
    lo, hi : ndarray of float, shape (n_pages,)
        Stretch of time to fill, days (empty where ``hi <= lo``).

    Returns
    -------
    pages : ndarray of intp, shape (m,)
    times : ndarray of float, shape (m,)
        Visit times in days, sorted by time (ties by page).

    Examples
    --------
    >>> phase = np.array([0.5])
    >>> periodic_visits(np.array([2.0]), phase, np.array([0.0]), np.array([2.0]))[1]
    array([0.25, 0.75, 1.25, 1.75])
    >>> float(phase[0])
    0.5
    """
    length = np.maximum(hi - lo, 0.0)
    mass = rates * length  # rate integral over the stretch
    total = phase + mass
    # visits where the integral reaches 1, 2, ... strictly inside the stretch
    counts = np.ceil(total).astype(np.int64) - 1
    counts[(mass <= 0) | (counts < 0)] = 0
    pages = np.repeat(np.arange(rates.shape[0], dtype=np.intp), counts)
    k = _group_arange(counts).astype(np.float64)
    times = lo[pages] + (k - phase[pages]) / rates[pages]
    moving = mass > 0
    phase[moving] = total[moving] - counts[moving]
    order = np.argsort(times, kind="stable")
    return pages[order], times[order]


def poisson_visits(
    rates: NDArray[np.float64],
    lo: NDArray[np.float64],
    hi: NDArray[np.float64],
    rng: np.random.Generator,
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Poisson visits of rate ``rates[i]`` over ``[lo_i, hi_i)``, sorted by time.

    Parameters
    ----------
    rates : ndarray of float, shape (n_pages,)
        Visit rates p_i >= 0, visits per day.
    lo, hi : ndarray of float, shape (n_pages,)
        Stretch of time of each page, days.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    pages : ndarray of intp, shape (m,)
    times : ndarray of float, shape (m,)
        Visit times in days, sorted.
    """
    length = np.maximum(hi - lo, 0.0)
    counts = rng.poisson(rates * length)
    pages = np.repeat(np.arange(rates.shape[0], dtype=np.intp), counts)
    times = lo[pages] + rng.random(pages.shape[0]) * length[pages]
    order = np.argsort(times, kind="stable")
    return pages[order], times[order]


@njit(cache=True)
def _bucket_admit(times, tokens, last, capacity, rate, admit):
    for k in range(times.shape[0]):
        t = times[k]
        tokens = tokens + rate * (t - last)
        if tokens > capacity:
            tokens = capacity
        last = t
        if tokens >= 1.0 - _EPS * (1.0 + capacity):
            tokens -= 1.0
            admit[k] = True
        else:
            admit[k] = False
    return tokens, last


class TokenBucket:
    """Global rate limiter: at most ``capacity + rate*W`` visits in any closed window of W days.

    Parameters
    ----------
    capacity : float
        Bucket size (burst), visits; the engine uses ``n_pages``. Must be >= 1.
    rate : float
        Refill rate, visits per day (the budget B); must be > 0.
    start : float
        Time the bucket starts, full, days.

    Raises
    ------
    ValueError
        If ``capacity < 1`` or ``rate <= 0``.

    Examples
    --------
    >>> bucket = TokenBucket(capacity=2, rate=1.0, start=0.0)
    >>> bucket.admit(np.array([0.0, 0.0, 0.0, 0.5, 1.0])).tolist()
    [True, True, False, False, True]
    """

    def __init__(self, capacity: float, rate: float, start: float) -> None:
        self.capacity = check_nonnegative("capacity", capacity, unit="visits")
        if self.capacity < 1:
            raise ValueError(f"capacity must be >= 1 visit; got {capacity!r}")
        self.rate = check_positive("rate", rate, unit="visits per day")
        self.tokens_ = self.capacity
        self.last_ = float(start)

    def admit(self, times: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Which of the visits at ``times`` (days, sorted, not before the last call's) may go ahead."""
        admit = np.empty(times.shape[0], dtype=np.bool_)
        self.tokens_, self.last_ = _bucket_admit(
            np.ascontiguousarray(times, dtype=np.float64), self.tokens_, self.last_, self.capacity,
            self.rate, admit,
        )
        return admit
