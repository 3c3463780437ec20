"""Moment-matching estimators (Upadhyay et al. 2020, as stated in Sec. 3.4 of seed 001).

Solve Σ_j (1 − I_j) = Σ_j e^{−Δτ_j}: the number of visits that saw no change equals its expectation given
the intervals. Consistent for any visit process independent of the future changes (Poisson, periodic,
re-planned periodic). The left side decreases in Δ, so the root is unique. Degenerate histories:

- no visit yet: the prior ``delta0``;
- no visit changed: 0 (root at Δ = 0);
- every visit changed: no finite root; the left side 0 is replaced by 1/2 (half a visit that saw no change),
  so a single changed visit after τ days gives ln 2/τ, the same value as the MLE.

:class:`MomentMatching` re-solves on the whole history (cost grows with k); the binned forms keep interval
slots as :class:`~freshcrawl.estimators.MLEBinned` does (O(n_bins) per update).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from freshcrawl.estimators._likelihood import _Binned, _Exact, exact_path, solve_exact

__all__ = ["MomentMatching", "MomentMatchingBinned", "mm_path", "solve_mm"]


def solve_mm(changed: ArrayLike, tau: ArrayLike, *, delta0: float = 1.0) -> float:
    """Exact moment-matching estimate for one page's whole history: the root of Σ(1 − I_j) = Σ e^{−Δτ_j}.

    Parameters, return value and errors as :func:`~freshcrawl.estimators.solve_mle` (degenerate
    histories: module docstring).

    References
    ----------
    .. [1] Avrachenkov, Patil, Thoppe, seed 001, Sec. 3.4; Upadhyay et al., "Learning to crawl", AAAI 2020,
       Sec. 4.

    Examples
    --------
    >>> round(solve_mm([1, 0], [1.0, 1.0]), 6)      # 2 e^{-Δ} = 1
    0.693147
    """
    return solve_exact(changed, tau, delta0, use_mm=True)


def mm_path(changed: ArrayLike, tau: ArrayLike) -> NDArray[np.float64]:
    """Exact moment-matching estimate after each visit 1..k: shape (k,).

    Raises
    ------
    InvalidObservation
        As :func:`solve_mm`.

    Examples
    --------
    >>> mm_path([0, 1], [1.0, 1.0]).round(6).tolist()
    [0.0, 0.693147]
    """
    return exact_path(changed, tau, use_mm=True)


class MomentMatching(_Exact):
    """Exact moment-matching estimate of the change rates of ``n_pages`` pages (Sec. 3.4 of seed 001).

    Keeps every visit and re-solves Σ(1 − I_j) = Σ e^{−Δτ_j} on a page's whole history when its estimate
    is read after an update. ``tau`` is used; ``p`` is checked when given, not used.

    Parameters
    ----------
    n_pages : int, default=1
        Number of pages, >= 1.
    delta0 : float, default=1.0
        Estimate before the first visit, changes per day.

    Attributes
    ----------
    delta_ : ndarray of float64, shape (n_pages,)
        Estimates, changes per day (degenerate histories: module docstring).
    n_visits_ : ndarray of int64, shape (n_pages,)

    Raises
    ------
    ValueError
        If ``delta0`` is out of range.
    InvalidObservation, TypeError
        In ``learn_one`` / ``learn_many``, for the bad observations listed there.

    Notes
    -----
    Memory and the cost of a solve grow with k; use :class:`MomentMatchingBinned` online.

    References
    ----------
    .. [1] Upadhyay et al., "Learning to crawl", AAAI 2020, Sec. 4 (cited as [22] in seed 001).

    Examples
    --------
    >>> est = MomentMatching()
    >>> est.learn_one(0, False, tau=1.0); est.learn_one(0, True, tau=1.0)
    >>> round(est.predict_one(0), 6)
    0.693147
    """

    _use_mm = True


class MomentMatchingBinned(_Binned):
    """Online moment matching on per-page interval slots, for ``n_pages`` pages: O(n_bins) per visit.

    Parameters
    ----------
    n_pages : int, default=1
        Number of pages, >= 1.
    n_bins : int, default=16
        Interval slots per page.
    bin_ratio : float, default=1.1
        Width of a slot, as a ratio of intervals.
    delta0 : float, default=1.0
        Estimate before the first visit, changes per day.
    half_life : float or None, default=None
        Exponential forgetting in days, as in :class:`~freshcrawl.estimators.MLEBinned` (when less than
        half a weighted unchanged visit remains, the 1/2 pseudo-visit of the module docstring is used);
        None: no forgetting.

    Attributes
    ----------
    delta_ : ndarray of float64, shape (n_pages,)
    n_visits_ : ndarray of int64, shape (n_pages,)
    n_eff_ : ndarray of float64, shape (n_pages,)
        Effective number of visits.

    Raises
    ------
    ValueError, InvalidObservation, TypeError
        As :class:`~freshcrawl.estimators.MLEBinned`.

    References
    ----------
    .. [1] Upadhyay et al., "Learning to crawl", AAAI 2020, Sec. 4.

    Examples
    --------
    >>> est = MomentMatchingBinned()
    >>> est.learn_one(0, True, tau=1.0); est.learn_one(0, False, tau=1.0)
    >>> round(est.predict_one(0), 6)
    0.693147
    """

    _use_mm = True
