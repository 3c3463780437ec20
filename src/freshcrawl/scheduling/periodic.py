"""Periodic visits: rates over pages turned into visit times that keep each page's phase.

Each page keeps the integral of its rate accumulated since its last visit, its phase
``u_i in [0, 1]``, and is visited whenever the integral reaches 1. Between two consecutive visits of
a page its rate integrates to exactly 1, so a window ``[a, b]`` holds at most
``int_a^b p_i(t) dt + 1`` visits of page i, and a rate change continues from the current phase (the
next visit comes when the new rate has made up the missing part of the integral). Periodic visits
maximise freshness at a given rate (Cho & Garcia-Molina 2003); the simulation and the
``learned-bursty`` policy both dispatch through here.

:func:`visit_periods` is the one conversion of rates into the time between two visits: the
periodic dispatch here, the EDF scheduler's first deadlines (:mod:`freshcrawl.scheduling.edf`) and
the live frontier's due times after a plan all use it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["periodic_visits", "visit_periods"]


def visit_periods(
    rates: NDArray[np.float64], *, unit: float = 1.0, longest: float = np.inf
) -> NDArray[np.float64]:
    """Time between two visits of each page at its rate: ``unit / p_i``, at most ``longest``.

    A page visited periodically at rate p_i (visits per day) is visited every 1/p_i days; a page
    whose rate integral since its last visit is u is next visited ``(1 - u)`` periods later.

    Parameters
    ----------
    rates : ndarray of float, shape (n_pages,)
        Visit rates p_i >= 0, visits per day.
    unit : float, default=1.0
        Time units per day of the result (1: days; 86400: seconds).
    longest : float, default=inf
        Longest period given, in the result's unit; also the period of a page whose rate is 0.

    Returns
    -------
    ndarray of float, shape (n_pages,)

    Examples
    --------
    >>> visit_periods(np.array([2.0, 0.0, 0.5])).tolist()
    [0.5, inf, 2.0]
    >>> visit_periods(np.array([24.0, 0.0]), unit=86400.0, longest=7200.0).tolist()
    [3600.0, 7200.0]
    """
    rates = np.asarray(rates, dtype=np.float64)
    period = np.divide(unit, rates, out=np.full(rates.shape, float(longest)), where=rates > 0)
    return np.minimum(period, longest)


def periodic_visits(
    rates: NDArray[np.float64],
    phase: NDArray[np.float64],
    lo: NDArray[np.float64],
    hi: NDArray[np.float64],
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Periodic visits of every page over its own stretch ``[lo_i, hi_i)``, updating ``phase`` in place.

    Page i is visited whenever the integral of its rate since its previous visit reaches 1: at
    ``lo_i + (j - phase_i) / p_i`` for j = 1, 2, ... inside the stretch.

    Parameters
    ----------
    rates : ndarray of float, shape (n_pages,)
        Visit rates p_i >= 0, visits per day.
    phase : ndarray of float, shape (n_pages,)
        Rate integral accumulated since each page's last visit, in [0, 1]; updated in place.
    lo, hi : ndarray of float, shape (n_pages,)
        Stretch of time to fill, days (empty where ``hi <= lo``).

    Returns
    -------
    pages : ndarray of intp, shape (m,)
    times : ndarray of float, shape (m,)
        Visits grouped by page (increasing), in time order within each page; days.

    Examples
    --------
    >>> phase = np.array([0.5, 0.0])
    >>> periodic_visits(np.array([2.0, 1.0]), phase, np.zeros(2), np.full(2, 2.0))
    (array([0, 0, 0, 0, 1]), array([0.25, 0.75, 1.25, 1.75, 1.  ]))
    >>> phase.tolist()
    [0.5, 1.0]
    """
    rates = np.asarray(rates, dtype=np.float64)
    lo = np.asarray(lo, dtype=np.float64)
    mass = rates * (np.asarray(hi, dtype=np.float64) - lo)
    on = np.flatnonzero(mass > 0.0)
    # the integral reaches 1, 2, ... strictly inside the stretch
    counts = np.maximum(np.ceil(phase[on] + mass[on]).astype(np.int64) - 1, 0)
    pages = np.repeat(on, counts)
    j = np.arange(1, pages.shape[0] + 1) - np.repeat(np.cumsum(counts) - counts, counts)
    times = lo[pages] + (j - phase[pages]) * visit_periods(rates[pages])
    phase[on] = phase[on] + mass[on] - counts
    return pages.astype(np.intp), times
