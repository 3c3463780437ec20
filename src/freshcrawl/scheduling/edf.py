"""Earliest Deadline First (EDF) dispatch of polls with given frequencies (seed 004, Sec. 3.1.1).

The scheduler of seed 004 turns an allocation x (polls per unit time) into a deterministic sequence of
polls in which every page is polled with a constant period, so that its polling frequency is
proportional to x_i (not random, which matters for web polling). Each page has a deadline, the time of
its previous poll plus its period ``1/x_i``; the next poll goes to the page with the earliest deadline.

Two forms:

- :func:`edf_schedule`: a flat EDF over n pages with fixed frequencies, on a binary heap, O(log n) per
  poll. Polls are ``1/Σx`` apart, so Σx polls happen per unit time.
- :func:`edf2_choose`: EDF between two subtrees with shares f and 1 − f, counted in polls routed
  through the node; the hierarchy of :mod:`freshcrawl.learning.htraa` applies it at every node on the
  path of a poll. A deadline advances by the period in force when the child is polled, so a change of
  share acts from the child's next poll on, without a burst of catch-up polls.

In both, a page's next deadline is its previous *deadline* plus its period (not its previous poll time plus
its period, which rounds every period up to whole polls and biases the frequencies).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import NDArray

from freshcrawl._validation import check_array, check_int
from freshcrawl.scheduling.periodic import visit_periods

__all__ = ["edf2_choose", "edf_schedule", "EDFSchedule"]


@numba.njit(cache=True, inline="always")
def edf2_choose(deadline, f_left):  # pragma: no cover - compiled
    """EDF between two children with shares ``f_left`` and ``1 − f_left`` (0 < f_left < 1).

    ``deadline`` is a float array of shape (2,) (or a view of two slots) holding the deadline of the
    next poll of each child, in polls routed through the node. The child with the earlier deadline is
    polled (ties go left) and its deadline advances by its current period ``1/share``. Returns 0 for
    left, 1 for right. With fixed shares this is exactly EDF over the two periodic children: after m
    polls the left child has been polled ``m·f_left`` times up to an error in (−1, 2·f_left).
    """
    if deadline[0] <= deadline[1]:
        deadline[0] += 1.0 / f_left
        return 0
    deadline[1] += 1.0 / (1.0 - f_left)
    return 1


@dataclass(frozen=True, slots=True)
class EDFSchedule:
    """Polls produced by :func:`edf_schedule`.

    Attributes
    ----------
    pages : ndarray of int64, shape (m,)
        Page of each poll.
    times : ndarray of float, shape (m,)
        Time of each poll, in the unit of ``1/rates``; ``start + k / Σ rates``.
    next_deadline : ndarray of float, shape (n,)
        Deadline of every page after the last poll (pass back as `deadlines` to continue); inf for a
        page with rate 0.
    """

    pages: NDArray[np.int64]
    times: NDArray[np.float64]
    next_deadline: NDArray[np.float64]


@numba.njit(cache=True)
def _sift_down(heap_d, heap_p, size, pos):  # pragma: no cover - compiled
    while True:
        left = 2 * pos + 1
        if left >= size:
            return
        best = left
        right = left + 1
        if right < size and (
            heap_d[right] < heap_d[left] or (heap_d[right] == heap_d[left] and heap_p[right] < heap_p[left])
        ):
            best = right
        if heap_d[best] < heap_d[pos] or (heap_d[best] == heap_d[pos] and heap_p[best] < heap_p[pos]):
            heap_d[best], heap_d[pos] = heap_d[pos], heap_d[best]
            heap_p[best], heap_p[pos] = heap_p[pos], heap_p[best]
            pos = best
        else:
            return


@numba.njit(cache=True)
def _edf_run(rates, deadlines, m, start):  # pragma: no cover - compiled
    n = rates.shape[0]
    heap_d = np.empty(n)
    heap_p = np.empty(n, dtype=np.int64)
    size = 0
    total = 0.0
    for i in range(n):
        if rates[i] > 0.0:
            heap_d[size] = deadlines[i]
            heap_p[size] = i
            size += 1
            total += rates[i]
    for pos in range(size // 2 - 1, -1, -1):
        _sift_down(heap_d, heap_p, size, pos)
    pages = np.empty(m, dtype=np.int64)
    times = np.empty(m)
    for k in range(m):
        i = heap_p[0]
        pages[k] = i
        times[k] = start + k / total
        heap_d[0] = heap_d[0] + 1.0 / rates[i]
        _sift_down(heap_d, heap_p, size, 0)
    out = np.full(n, np.inf)
    for pos in range(size):
        out[heap_p[pos]] = heap_d[pos]
    return pages, times, out


def edf_schedule(
    rates: NDArray[np.float64],
    n_polls: int,
    *,
    start: float = 0.0,
    deadlines: NDArray[np.float64] | None = None,
) -> EDFSchedule:
    """Dispatch `n_polls` polls by Earliest Deadline First over pages with fixed frequencies.

    Parameters
    ----------
    rates : ndarray of float, shape (n,)
        Polling frequency x_i of each page (polls per unit time, e.g. visits/day); >= 0, positive sum.
    n_polls : int
        Number of polls m >= 0.
    start : float, default=0.0
        Time of the first poll; polls are ``1/Σ rates`` apart.
    deadlines : ndarray of float, shape (n,), optional
        Current deadline of each page (``next_deadline`` of a previous call, with the new rates this
        keeps each page's phase); by default page i's first deadline is ``start + 1/x_i``.

    Returns
    -------
    EDFSchedule
        The polls, their times and the deadlines after them.

    Raises
    ------
    ValueError
        If `rates` has a negative, NaN or infinite entry, sums to 0 while polls are requested, or
        `n_polls` < 0, or `deadlines` has the wrong shape or NaN.

    References
    ----------
    .. [1] Granmo, Oommen, seed 004 Sec. 3.1.1 (the EDF scheduler of the TRAA and H-TRAA).

    Examples
    --------
    >>> s = edf_schedule(np.array([0.5, 0.25, 0.25]), 8)
    >>> s.pages.tolist()
    [0, 0, 1, 2, 0, 0, 1, 2]
    >>> s.times.tolist()[:3]
    [0.0, 1.0, 2.0]
    """
    x = check_array("rates", rates, low=0.0, unit="polls per unit time")
    if x.ndim != 1:
        raise ValueError(f"rates must be 1-d (one frequency per page); got shape {x.shape}")
    n_polls = check_int("n_polls", n_polls)
    if n_polls and not x.sum() > 0:
        raise ValueError(f"rates must have a positive sum to dispatch polls; got sum {float(x.sum())!r}")
    is_real = isinstance(start, (int, float, np.integer, np.floating)) and not isinstance(start, bool)
    if not is_real or not math.isfinite(start):
        raise ValueError(f"start must be a finite time; got {start!r}")
    start = float(start)
    if deadlines is None:
        d = start + visit_periods(x)  # inf for a page with rate 0
    else:
        d = check_array("deadlines", deadlines, shape=x.shape, allow_inf=True)
    if int(n_polls) == 0:
        return EDFSchedule(np.empty(0, np.int64), np.empty(0), d.copy())
    pages, times, nd = _edf_run(x, d, int(n_polls), start)
    return EDFSchedule(pages, times, nd)
