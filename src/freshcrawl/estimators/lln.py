"""LLN estimators: eq. (1) of seed 001, and its interval-aware form.

``LLN`` is the paper's x_k = p·Î_k/(k + α_k − Î_k). It inverts E[I] = Δ/(Δ + p), which holds only when
visits form a Poisson process of rate p. Under periodic visits every τ, E[I] = 1 − e^{−Δτ} and ``LLN`` with
p = 1/τ converges to (e^{Δτ} − 1)/τ instead of Δ (72% too high at Δτ = 1).

``LLNInterval`` keeps the law-of-large-numbers form, a ratio of two running sums, but takes the sums from
the MLE equation (15): Δ = Σ_j I_j g(Δτ_j) / Σ_j (1 − I_j) τ_j with g(u) = u/(e^u − 1), evaluating g at the
estimate in force before each visit. Its fixed point is the root of eq. (15) whatever the visit process.
"""

from __future__ import annotations

import numpy as np

from freshcrawl.estimators import _kernels as K
from freshcrawl.estimators._checks import parse_alpha
from freshcrawl.estimators.base import _Base

__all__ = ["LLN", "LLNInterval"]


class _Alpha(_Base):
    """The regulariser α_k of eq. (1), shared by both LLN forms."""

    def __init__(self, n_pages: int = 1, *, alpha: str | float = "1", delta0: float = 1.0) -> None:
        super().__init__(n_pages, delta0=delta0)
        self.alpha = alpha
        self._kind, self._power = parse_alpha(alpha)


class LLN(_Alpha):
    """Law-of-large-numbers estimate of the change rates of ``n_pages`` pages, eq. (1) of seed 001.

    x_k = p·Î_k / (k + α_k − Î_k), with Î_k the number of visits that saw a change. ``p`` is used;
    ``tau`` is checked when given, not used.

    Parameters
    ----------
    n_pages : int, default=1
        Number of pages, >= 1.
    alpha : {"1", "log", "sqrt"} or float, default="1"
        Regulariser α_k of eq. (1): 1, log(k + 1), √k, or k**alpha for a float power in [0, 1).
        The paper's example log k is 0 at k = 1, which Theorem 1's positivity excludes; log(k + 1)
        has the same growth. Consistency needs α_k/k → 0, which all of these satisfy.
    delta0 : float, default=1.0
        Estimate before the first visit, changes per day; finite and >= 0.

    Attributes
    ----------
    delta_ : ndarray of float64, shape (n_pages,)
        Estimates x_k, changes per day.
    n_visits_, n_changed_ : ndarray of int64, shape (n_pages,)
        k and Î_k per page (state: 24 bytes per page).

    Raises
    ------
    ValueError
        If ``alpha`` or ``delta0`` is invalid.
    InvalidObservation, TypeError
        In ``learn_one`` / ``learn_many``, for the bad observations listed there.

    Notes
    -----
    Consistent (Theorem 1) when visits are Poisson with rate ``p``; biased under periodic visits (see the
    module docstring). ``p`` of the page's latest visit is used. No change seen: 0. Every visit changed:
    p·k/α_k, finite.

    References
    ----------
    .. [1] Avrachenkov, Patil, Thoppe, "Online Algorithms for Estimating Change Rates of Web Pages",
       eq. (1) and Theorem 1 (seed 001).

    Examples
    --------
    >>> est = LLN()
    >>> for changed in (1, 0, 1):
    ...     est.learn_one(0, changed, p=3.0)
    >>> est.predict_one(0)      # 3 * 2 / (3 + 1 - 2)
    3.0
    >>> est = LLN(2)
    >>> est.learn_many([0, 1], [1, 0], tau=[0.5, 0.5], p=[2.0, 2.0])
    >>> est.delta_.tolist()
    [2.0, 0.0]
    """

    def __init__(self, n_pages: int = 1, *, alpha: str | float = "1", delta0: float = 1.0) -> None:
        super().__init__(n_pages, alpha=alpha, delta0=delta0)
        self.n_changed_ = np.zeros(self.n_pages, dtype=np.int64)

    def _apply(self, pages, changed, tau, p) -> None:
        K.lln_batch(
            pages, changed, p, self.n_visits_, self.n_changed_, self.delta_, self._kind, self._power
        )


class LLNInterval(_Alpha):
    """Interval-aware LLN estimate of the change rates of ``n_pages`` pages, consistent for any visit process.

    x_k = Σ_j I_j g(x_{j−1} τ_j) / (T₀ + α_k (T₀ + τ̄_k)/(n₀ + 1)), with g(u) = u/(e^u − 1), T₀ = Σ_j (1 − I_j) τ_j
    the days of the n₀ intervals that saw no change, and τ̄_k the mean interval. Numerator and T₀ are the two
    sides of the MLE equation (15) multiplied by Δ, so Δ is the only fixed point. The α_k term is eq. (1)'s
    regulariser counted in days: α_k pseudo-intervals without change, each as long as the mean unchanged
    interval shrunk towards τ̄_k (so a single very short unchanged interval cannot blow the estimate up).
    ``tau`` is used; ``p`` is checked when given, not used.

    Parameters
    ----------
    n_pages : int, default=1
        Number of pages, >= 1.
    alpha : {"1", "log", "sqrt"} or float, default="1"
        Regulariser α_k, as in :class:`LLN`.
    delta0 : float, default=1.0
        Estimate before the first visit (and the point at which the first g is taken), changes per day.

    Attributes
    ----------
    delta_ : ndarray of float64, shape (n_pages,)
        Estimates, changes per day (state: 48 bytes per page).
    n_visits_ : ndarray of int64, shape (n_pages,)
        Visits used.

    Raises
    ------
    ValueError, InvalidObservation, TypeError
        As :class:`LLN`.

    Notes
    -----
    The g of early visits is taken at early estimates and is only averaged out like 1/k: when Δ ≫ p
    (e.g. Δ = 500, p = 3) convergence takes ~10⁴ visits, as eq. (2) does there; prefer ``mle-binned``
    for such pages. Under periodic visits every τ it is Σ I g(x τ) / ((n₀ + α_k) τ), and when x τ is
    small (g ≈ 1) that is eq. (1) with p = 1/τ. It is an averaged fixed-point iteration of eq. (15) with
    stepsize 1/k whose limit map is decreasing, so it converges to the root; checked by simulation (tests)
    under Poisson visits, periodic visits with Δτ ∈ {0.1, 1, 3}, and periodic visits whose τ changes every
    few visits. No change seen: 0. Every visit changed: finite (the α_k term).

    References
    ----------
    .. [1] Avrachenkov, Patil, Thoppe, "Online Algorithms for Estimating Change Rates of Web Pages",
       eq. (1) and eq. (15) (seed 001).

    Examples
    --------
    >>> est = LLNInterval()
    >>> est.learn_one(0, False, tau=1.0)
    >>> est.predict_one(0)
    0.0
    >>> est.learn_one(0, True, tau=1.0)
    >>> round(est.predict_one(0), 4)   # g(0) = 1 at the estimate 0, over T0 + (T0 + mean tau)/(n0 + 1) = 2 days
    0.5
    """

    _needs_tau = True
    _needs_p = False

    def __init__(self, n_pages: int = 1, *, alpha: str | float = "1", delta0: float = 1.0) -> None:
        super().__init__(n_pages, alpha=alpha, delta0=delta0)
        self._n_changed = np.zeros(self.n_pages, dtype=np.int64)
        self._num = np.zeros(self.n_pages)
        self._den0 = np.zeros(self.n_pages)
        self._sum_tau = np.zeros(self.n_pages)

    def _apply(self, pages, changed, tau, p) -> None:
        K.lln_interval_batch(
            pages,
            changed,
            tau,
            self.n_visits_,
            self._n_changed,
            self._num,
            self._den0,
            self._sum_tau,
            self.delta_,
            self._kind,
            self._power,
        )
