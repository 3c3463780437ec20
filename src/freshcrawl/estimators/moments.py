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

from freshcrawl.estimators import _kernels as K
from freshcrawl.estimators._likelihood import (
    _BinnedBatchBase,
    _BinnedStream,
    _ExactBatchBase,
    _ExactStream,
    _history,
)

__all__ = [
    "MomentMatching",
    "MomentMatchingBatch",
    "MomentMatchingBinned",
    "MomentMatchingBinnedBatch",
    "solve_mm",
    "mm_path",
]


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
    ch, ta = _history(changed, tau)
    if ta.size == 0:
        return float(delta0)
    return float(K.mm_exact(ch, ta))


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
    ch, ta = _history(changed, tau)
    return K.mm_exact_path(ch, ta)


class MomentMatching(_ExactStream):
    """Exact moment-matching estimate of one page's change rate (Sec. 3.4 of seed 001).

    Parameters
    ----------
    delta0 : float, default=1.0
        Estimate before the first visit, changes per day.

    Attributes
    ----------
    delta_ : float
        Current estimate, changes per day.
    n_visits_ : int

    Raises
    ------
    InvalidObservation
        In ``update``, if ``changed`` is not 0/1 or ``tau`` (or a given ``p``) is not finite and > 0.

    Notes
    -----
    Keeps the whole history; cost per update grows with k. Use :class:`MomentMatchingBinned` online.

    References
    ----------
    .. [1] Upadhyay et al., "Learning to crawl", AAAI 2020, Sec. 4 (cited as [22] in seed 001).

    Examples
    --------
    >>> est = MomentMatching()
    >>> est.update(False, tau=1.0); est.update(True, tau=1.0)
    >>> round(est.delta_, 6)
    0.693147
    """

    _use_mm = True


class MomentMatchingBatch(_ExactBatchBase):
    """Exact moment matching for ``n_pages`` pages; keeps every visit (memory and time grow with k).

    Parameters
    ----------
    n_pages : int
        Number of pages, >= 1.
    delta0 : float, default=1.0
        Estimate before the first visit, changes per day.

    Attributes
    ----------
    delta_ : ndarray of float64, shape (n_pages,)
        Estimates, solved on read for the pages updated since the previous read.
    n_visits_ : ndarray of int64, shape (n_pages,)

    Raises
    ------
    InvalidObservation
        In ``update``: length mismatch, page out of range, flag not 0/1, tau not finite and > 0.
    ValueError
        In ``update``: a page listed twice.

    Examples
    --------
    >>> est = MomentMatchingBatch(1)
    >>> est.update([0], [1], tau=[1.0]); est.update([0], [0], tau=[1.0])
    >>> est.delta_.round(6).tolist()
    [0.693147]
    """

    _use_mm = True


class MomentMatchingBinnedBatch(_BinnedBatchBase):
    """Online moment matching on interval slots for ``n_pages`` pages (O(n_bins) per update).

    Parameters
    ----------
    n_pages : int
        Number of pages, >= 1.
    n_bins : int, default=16
        Interval slots per page.
    bin_ratio : float, default=1.1
        Width of a slot, as a ratio of intervals.
    delta0 : float, default=1.0
        Estimate before the first visit, changes per day.
    half_life : float or None, default=None
        Exponential forgetting in days, as in :class:`~freshcrawl.estimators.MLEBinnedBatch` (when less
        than half a weighted unchanged visit remains, the 1/2 pseudo-visit of the module docstring is
        used); None: no forgetting.

    Attributes
    ----------
    delta_ : ndarray of float64, shape (n_pages,)
    n_visits_ : ndarray of int64, shape (n_pages,)
    n_eff_ : ndarray of float64, shape (n_pages,)
        Effective number of visits.

    Raises
    ------
    ValueError, InvalidObservation
        As :class:`~freshcrawl.estimators.MLEBinnedBatch`.

    Examples
    --------
    >>> est = MomentMatchingBinnedBatch(1)
    >>> est.update([0], [1], tau=[1.0]); est.update([0], [0], tau=[1.0])
    >>> est.delta_.round(6).tolist()
    [0.693147]
    """

    _use_mm = True


class MomentMatchingBinned(_BinnedStream):
    """Online moment matching for one page, on interval slots: O(n_bins) per update.

    Parameters
    ----------
    n_bins : int, default=16
        Interval slots.
    bin_ratio : float, default=1.1
        Width of a slot, as a ratio of intervals.
    delta0 : float, default=1.0
        Estimate before the first visit, changes per day.
    half_life : float or None, default=None
        Exponential forgetting in days; None: no forgetting.

    Attributes
    ----------
    delta_ : float
    n_visits_ : int
    n_eff_ : float
        Effective number of visits.

    Raises
    ------
    ValueError, InvalidObservation
        As :class:`~freshcrawl.estimators.MLEBinned`.

    References
    ----------
    .. [1] Upadhyay et al., "Learning to crawl", AAAI 2020, Sec. 4.

    Examples
    --------
    >>> est = MomentMatchingBinned()
    >>> est.update(True, tau=1.0); est.update(False, tau=1.0)
    >>> round(est.delta_, 6)
    0.693147
    """

    _use_mm = True
