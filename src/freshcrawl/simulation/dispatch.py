"""Turning visit rates into visit times, within the global budget.

Budget guarantee: no window of length W (days) holds more than ``B*W + n_pages`` visits.

* Periodic dispatch (:func:`~freshcrawl.scheduling.periodic.periodic_visits`) keeps, for each page,
  the rate integral accumulated since its last visit, ``u_i in [0, 1)`` (its phase, drawn uniformly
  at the start: a random phase per page), and visits the page whenever ``u_i`` reaches 1. Between
  two consecutive visits of a page its rate integrates to
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
from freshcrawl.scheduling.periodic import periodic_visits

__all__ = ["TokenBucket", "periodic_visits", "poisson_visits"]

#: relative slack for floating-point rounding in the token bucket
_EPS = 1e-9


@njit(cache=True)
def _poisson_fill(counts, lo, hi, rng):
    total = counts.sum()
    pages = np.empty(total, dtype=np.intp)
    times = np.empty(total, dtype=np.float64)
    k = 0
    for i in range(counts.shape[0]):
        c = counts[i]
        if c == 0:
            continue
        # sorted uniforms on [lo, hi) from normalised exponential spacings
        acc = 0.0
        for j in range(c):
            acc += rng.exponential(1.0)
            times[k + j] = acc
        acc += rng.exponential(1.0)
        length = hi[i] - lo[i]
        for j in range(c):
            pages[k + j] = i
            times[k + j] = lo[i] + length * (times[k + j] / acc)
        k += c
    return pages, times


def poisson_visits(
    rates: NDArray[np.float64],
    lo: NDArray[np.float64],
    hi: NDArray[np.float64],
    rng: np.random.Generator,
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Poisson visits of rate ``rates[i]`` over ``[lo_i, hi_i)``.

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
        Visits grouped by page (increasing), in time order within each page; days.
    """
    length = np.maximum(hi - lo, 0.0)
    counts = rng.poisson(rates * length).astype(np.int64)
    return _poisson_fill(
        counts,
        np.ascontiguousarray(lo, dtype=np.float64),
        np.ascontiguousarray(hi, dtype=np.float64),
        rng,
    )


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
            np.ascontiguousarray(times, dtype=np.float64),
            self.tokens_,
            self.last_,
            self.capacity,
            self.rate,
            admit,
        )
        return admit
