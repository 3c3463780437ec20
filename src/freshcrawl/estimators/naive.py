"""Naive estimators (seed 001, Sec. 3.4): changes seen divided by time or by visits.

Both are biased: missed changes (two or more in one interval) are never counted. Under Poisson visits of
rate p the paper form converges to pΔ/(Δ + p); the interval form converges to E[I]/E[τ].
"""

from __future__ import annotations

import numpy as np

from freshcrawl.estimators import _kernels as K
from freshcrawl.estimators.base import _Base

__all__ = ["Naive", "NaiveInterval"]


class Naive(_Base):
    """Naive estimate of the change rates of ``n_pages`` pages, w_k = p·Î_k/k (Sec. 3.4 of seed 001).

    ``p`` is used; ``tau`` is checked when given, not used.

    Parameters
    ----------
    n_pages : int, default=1
        Number of pages, >= 1.
    delta0 : float, default=1.0
        Estimate before the first visit, changes per day; finite and >= 0.

    Attributes
    ----------
    delta_ : ndarray of float64, shape (n_pages,)
        Estimates, changes per day: ``p`` of the page's latest visit times the fraction of its visits
        that saw a change.
    n_visits_, n_changed_ : ndarray of int64, shape (n_pages,)
        Visits used (k) and visits that saw a change (Î_k), per page (state: 24 bytes per page).

    Raises
    ------
    ValueError
        If ``delta0`` is out of range.
    InvalidObservation, TypeError
        In ``learn_one`` / ``learn_many``, for the bad observations listed there.

    Notes
    -----
    Biased and inconsistent by design: it tends to pΔ/(Δ + p) under Poisson visits of rate p. Every visit
    changed: p; no visit changed: 0.

    References
    ----------
    .. [1] Avrachenkov, Patil, Thoppe, "Online Algorithms for Estimating Change Rates of Web Pages",
       Sec. 3.4 (seed 001).

    Examples
    --------
    >>> est = Naive()
    >>> for changed in (1, 0, 1, 1):
    ...     est.learn_one(0, changed, p=2.0)
    >>> est.predict_one(0)
    1.5
    >>> est = Naive(3)
    >>> est.learn_many([0, 2], [True, False], tau=[1.0, 1.0], p=[2.0, 2.0])
    >>> est.delta_.tolist()
    [2.0, 1.0, 0.0]
    """

    def __init__(self, n_pages: int = 1, *, delta0: float = 1.0) -> None:
        super().__init__(n_pages, delta0=delta0)
        self.n_changed_ = np.zeros(self.n_pages, dtype=np.int64)

    def _apply(self, pages, changed, tau, p) -> None:
        K.naive_batch(pages, changed, p, self.n_visits_, self.n_changed_, self.delta_)


class NaiveInterval(_Base):
    """Naive estimate with observed intervals, for ``n_pages`` pages: Î_k / Σ_j τ_j (changes seen per day).

    ``tau`` is used; ``p`` is checked when given, not used.

    Parameters
    ----------
    n_pages : int, default=1
        Number of pages, >= 1.
    delta0 : float, default=1.0
        Estimate before the first visit, changes per day.

    Attributes
    ----------
    delta_ : ndarray of float64, shape (n_pages,)
        Changes seen per day observed.
    n_visits_, n_changed_ : ndarray of int64, shape (n_pages,)
        Visits used, visits that saw a change.
    sum_tau_ : ndarray of float64, shape (n_pages,)
        Days observed per page.

    Raises
    ------
    ValueError, InvalidObservation, TypeError
        As :class:`Naive`.

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
    >>> est.learn_one(0, True, tau=0.5); est.learn_one(0, False, tau=1.5)
    >>> est.predict_one(0)
    0.5
    """

    _needs_tau = True
    _needs_p = False

    def __init__(self, n_pages: int = 1, *, delta0: float = 1.0) -> None:
        super().__init__(n_pages, delta0=delta0)
        self.n_changed_ = np.zeros(self.n_pages, dtype=np.int64)
        self.sum_tau_ = np.zeros(self.n_pages)

    def _apply(self, pages, changed, tau, p) -> None:
        K.naive_interval_batch(
            pages, changed, tau, self.n_visits_, self.n_changed_, self.sum_tau_, self.delta_
        )
