"""Naive estimators (seed 001, Sec. 3.4): changes seen divided by time or by visits.

Both are biased: missed changes (two or more in one interval) are never counted. Under Poisson visits of
rate p the paper form converges to pΔ/(Δ + p); the interval form converges to E[I]/E[τ].
"""

from __future__ import annotations

import numpy as np

from freshcrawl.estimators import _kernels as K
from freshcrawl.estimators.base import _BatchBase, _StreamBase

__all__ = ["Naive", "NaiveBatch", "NaiveInterval", "NaiveIntervalBatch"]


class Naive(_StreamBase):
    """Naive estimate of one page's change rate, w_k = p·Î_k/k (Sec. 3.4 of seed 001).

    Parameters
    ----------
    delta0 : float, default=1.0
        Estimate before the first visit, changes per day; finite and >= 0.

    Attributes
    ----------
    delta_ : float
        Current estimate, changes per day; ``p`` of the latest visit times the fraction of visits that
        saw a change.
    n_visits_ : int
        Visits used (k).
    n_changed_ : int
        Visits that saw a change (Î_k).

    Raises
    ------
    InvalidObservation
        In ``update``, if ``changed`` is not 0/1 or ``p`` (or a given ``tau``) is not finite and > 0.

    Notes
    -----
    Biased and inconsistent by design: it tends to pΔ/(Δ + p) under Poisson visits of rate p. ``tau`` is
    accepted and checked but not used. Every visit changed: p; no visit changed: 0.

    References
    ----------
    .. [1] Avrachenkov, Patil, Thoppe, "Online Algorithms for Estimating Change Rates of Web Pages",
       Sec. 3.4 (seed 001).

    Examples
    --------
    >>> est = Naive()
    >>> for changed in (1, 0, 1, 1):
    ...     est.update(changed, p=2.0)
    >>> est.delta_
    1.5
    """

    def __init__(self, *, delta0: float = 1.0) -> None:
        super().__init__(delta0=delta0)
        self.n_changed_ = 0

    def _step(self, changed: bool, tau: float | None, p: float) -> None:
        """One visit: ``changed`` (0/1), ``p`` the visit rate (visits/day); ``tau`` is ignored."""
        self.n_visits_, self.n_changed_, self.delta_ = K.naive_step(self.n_visits_, self.n_changed_, int(changed), p)


class NaiveBatch(_BatchBase):
    """:class:`Naive` for ``n_pages`` pages at once (state: 24 bytes per page).

    Parameters
    ----------
    n_pages : int
        Number of pages, >= 1.
    delta0 : float, default=1.0
        Estimate before the first visit, changes per day.

    Attributes
    ----------
    delta_ : ndarray of float64, shape (n_pages,)
        Estimates, changes per day.
    n_visits_, n_changed_ : ndarray of int64, shape (n_pages,)
        Visits used and visits that saw a change, per page.

    Raises
    ------
    InvalidObservation
        In ``update``: length mismatch, page out of range, flag not 0/1, tau or p not finite and > 0.
    ValueError
        In ``update``: a page listed twice.

    Examples
    --------
    >>> est = NaiveBatch(3)
    >>> est.update([0, 2], [True, False], tau=[1.0, 1.0], p=[2.0, 2.0])
    >>> est.delta_.tolist()
    [2.0, 1.0, 0.0]
    """

    def __init__(self, n_pages: int, *, delta0: float = 1.0) -> None:
        super().__init__(n_pages, delta0=delta0)
        self.n_changed_ = np.zeros(self.n_pages, dtype=np.int64)

    def _apply(self, pages, changed, tau, p) -> None:
        """One visit of each page in ``pages`` (intp (m,)); ``p`` (m,) visits/day; ``tau`` ignored."""
        K.naive_batch(pages, changed, p, self.n_visits_, self.n_changed_, self.delta_)


class NaiveInterval(_StreamBase):
    """Naive estimate with observed intervals: Î_k / Σ_j τ_j (changes seen per day of observation).

    Parameters
    ----------
    delta0 : float, default=1.0
        Estimate before the first visit, changes per day.

    Attributes
    ----------
    delta_ : float
        Changes seen per day observed.
    n_visits_, n_changed_ : int
        Visits used, visits that saw a change.
    sum_tau_ : float
        Days observed.

    Raises
    ------
    InvalidObservation
        In ``update``, if ``changed`` is not 0/1 or ``tau`` is not finite and > 0.

    Notes
    -----
    Biased like :class:`Naive` (it counts at most one change per interval): it tends to E[I]/E[τ], which
    is (1 - e^{-Δτ})/τ under periodic visits. Offered as the baseline of docs/design.md, not as consistent.

    References
    ----------
    .. [1] Cho, Garcia-Molina, "Estimating frequency of change", ACM TOIT 2003 (cited as [17] in seed 001).

    Examples
    --------
    >>> est = NaiveInterval()
    >>> est.update(True, tau=0.5); est.update(False, tau=1.5)
    >>> est.delta_
    0.5
    """

    _needs_tau = True
    _needs_p = False

    def __init__(self, *, delta0: float = 1.0) -> None:
        super().__init__(delta0=delta0)
        self.n_changed_ = 0
        self.sum_tau_ = 0.0

    def _step(self, changed: bool, tau: float, p: float | None) -> None:
        """One visit: ``changed`` (0/1) after ``tau`` days; ``p`` is ignored (checked if given)."""
        self.n_visits_, self.n_changed_, self.sum_tau_, self.delta_ = K.naive_interval_step(
            self.n_visits_, self.n_changed_, self.sum_tau_, int(changed), tau
        )


class NaiveIntervalBatch(_BatchBase):
    """:class:`NaiveInterval` for ``n_pages`` pages (state: 32 bytes per page).

    Parameters
    ----------
    n_pages : int
        Number of pages, >= 1.
    delta0 : float, default=1.0
        Estimate before the first visit, changes per day.

    Attributes
    ----------
    delta_ : ndarray of float64, shape (n_pages,)
        Estimates, changes per day.
    n_visits_, n_changed_ : ndarray of int64, shape (n_pages,)
    sum_tau_ : ndarray of float64, shape (n_pages,)
        Days observed per page.

    Raises
    ------
    InvalidObservation, ValueError
        As :class:`NaiveBatch`.

    Examples
    --------
    >>> est = NaiveIntervalBatch(2)
    >>> est.update([1], [1], tau=[4.0])
    >>> est.delta_.tolist()
    [1.0, 0.25]
    """

    _needs_tau = True
    _needs_p = False

    def __init__(self, n_pages: int, *, delta0: float = 1.0) -> None:
        super().__init__(n_pages, delta0=delta0)
        self.n_changed_ = np.zeros(self.n_pages, dtype=np.int64)
        self.sum_tau_ = np.zeros(self.n_pages)

    def _apply(self, pages, changed, tau, p) -> None:
        """One visit of each page in ``pages``; ``tau`` (m,) days since its previous visit."""
        K.naive_interval_batch(pages, changed, tau, self.n_visits_, self.n_changed_, self.sum_tau_, self.delta_)
