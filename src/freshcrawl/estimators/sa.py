"""SA estimators: eq. (2) of seed 001, and its interval-aware form.

``SA`` is the paper's y_{k+1} = y_k + η_k [I_{k+1}(y_k + p) − y_k], η_k = (k + 1)^−η. Its mean drift
p(Δ − y)/(Δ + p) vanishes at Δ only when visits are Poisson of rate p.

``SAInterval`` replaces the residual I − y/(y + p) by I − (1 − e^{−yτ}), the change probability of the
interval actually observed: y ← max(0, y + η_k (y + p̂)(I − (1 − e^{−yτ}))), p̂ the visit rate in force
before the visit. Given τ its drift is (y + p̂)(e^{−yτ} − e^{−Δτ}), zero exactly at y = Δ for every τ; with
exponential τ of rate p its mean equals eq. (2)'s drift.
"""

from __future__ import annotations

import math

from freshcrawl.estimators import _kernels as K
from freshcrawl.estimators._checks import check_exponent, check_half_life
from freshcrawl.estimators.base import _Base

__all__ = ["SA", "SAInterval"]


class _Stochastic(_Base):
    """The update shared by SA, SAM and their interval forms: :func:`~freshcrawl.estimators._kernels.sa_batch`.

    Subclasses set ``_interval`` (the residual of the observed interval) and may hold ``half_life``
    (the step floor) and ``_prev`` with ``beta`` and ``omega`` (the momentum of eq. (3)).
    """

    _interval = False
    half_life: float | None = None

    def _apply(self, pages, changed, tau, p) -> None:
        prev = getattr(self, "_prev", None)
        K.sa_batch(
            pages,
            changed,
            tau,
            p,
            self.n_visits_,
            self.delta_,
            self.eta,
            interval=self._interval,
            decay_per_day=None if self.half_life is None else math.log(2.0) / self.half_life,
            prev=prev,
            momentum=None if prev is None else (self.beta, self.omega),
        )


class SA(_Stochastic):
    """Stochastic-approximation estimate of the change rates Δ of ``n_pages`` pages, eq. (2) of seed 001.

    ``p`` is used; ``tau`` is checked when given, not used.

    Parameters
    ----------
    n_pages : int, default=1
        Number of pages, >= 1.
    eta : float, default=0.75
        Stepsize exponent, η_k = (k + 1)^−η; in (0, 1]. Almost-sure convergence (Theorem 2.1) needs
        η > 1/2; Fig. 5(b) of the paper also uses η = 0.5. Default: Figs. 1-2 setting.
    delta0 : float, default=1.0
        y_0, the estimate before the first visit, changes per day; finite and >= 0.

    Attributes
    ----------
    delta_ : ndarray of float64, shape (n_pages,)
        Estimates y_k, changes per day.
    n_visits_ : ndarray of int64, shape (n_pages,)
        Visits used (k) per page (state: 16 bytes per page).

    Raises
    ------
    ValueError
        If ``eta`` or ``delta0`` is out of range.
    InvalidObservation, TypeError
        In ``learn_one`` / ``learn_many``, for the bad observations listed there.

    Notes
    -----
    Consistent under Poisson visits of rate ``p`` (Theorem 2); biased under periodic visits, where it
    tends to (e^{Δτ} − 1)/τ like :class:`~freshcrawl.estimators.LLN`. Never negative: η_k <= 1.
    A page that changes far faster than it is visited (Δ ≫ p) converges slowly: the drift is scaled by
    p/(Δ + p) (Sec. 4.2.2).

    References
    ----------
    .. [1] Avrachenkov, Patil, Thoppe, "Online Algorithms for Estimating Change Rates of Web Pages",
       eq. (2) and Theorem 2 (seed 001).

    Examples
    --------
    >>> est = SA(eta=0.75)
    >>> est.learn_one(0, changed=True, p=1.0)
    >>> est.predict_one(0)       # y_0 + 1 * (1 * (1 + 1) - 1)
    2.0
    >>> est = SA(2)
    >>> est.learn_many([0, 1], [True, False], tau=[1.0, 1.0], p=[1.0, 1.0])
    >>> est.delta_.tolist()
    [2.0, 0.0]
    """

    def __init__(self, n_pages: int = 1, *, eta: float = 0.75, delta0: float = 1.0) -> None:
        super().__init__(n_pages, delta0=delta0)
        self.eta = check_exponent("eta", eta)


class SAInterval(SA):
    """Interval-aware SA estimate of the change rates of ``n_pages`` pages, consistent for any visit process.

    y ← max(0, y + η_k (y + p̂)(I − (1 − e^{−yτ}))), η_k = (k + 1)^−η. ``tau`` is used; ``p`` is the
    visit rate in force before the visit, 1/τ when omitted.

    Parameters
    ----------
    n_pages : int, default=1
        Number of pages, >= 1.
    eta : float, default=0.75
        Stepsize exponent in (0, 1]; convergence needs η > 1/2.
    delta0 : float, default=1.0
        Estimate before the first visit, changes per day.
    half_life : float or None, default=None
        Constant-step tracking, in days: the step is max(η_k, 1 − 2^{−τ/half_life}), the weight the
        newest visit gets in an average whose weights halve every ``half_life`` days. Once η_k falls below
        that floor the estimate forgets at that pace and tracks a drifting Δ, with a stationary variance
        of about γ (Δ + p̂)(1 − e^{−Δτ})/(2τ), γ the floor (linearised recursion). None: the decreasing
        steps of eq. (2), consistent for a constant Δ.

    Attributes
    ----------
    delta_ : ndarray of float64, shape (n_pages,)
        Estimates, changes per day.
    n_visits_ : ndarray of int64, shape (n_pages,)
        Visits used (state: 16 bytes per page).

    Raises
    ------
    ValueError
        If ``eta``, ``delta0`` or ``half_life`` is out of range.
    InvalidObservation, TypeError
        In ``learn_one`` / ``learn_many``, for the bad observations listed there.

    Notes
    -----
    p̂ only scales the step, so any positive p̂ keeps the root at Δ. The step is not divided by τ of the
    same visit: with exponential intervals E[1/τ²] is infinite. Checked by simulation under Poisson
    visits, periodic visits with Δτ ∈ {0.1, 1, 3}, and periodic visits whose τ changes every few visits.
    Projected on [0, ∞), so never negative.

    References
    ----------
    .. [1] Avrachenkov, Patil, Thoppe, "Online Algorithms for Estimating Change Rates of Web Pages",
       eq. (2) (seed 001); the residual uses E[I | τ] = 1 − e^{−Δτ} (Sec. 3.1).

    Examples
    --------
    >>> est = SAInterval(delta0=1.0)
    >>> est.learn_one(0, True, tau=1.0, p=1.0)
    >>> round(est.predict_one(0), 6)    # 1 + 1 * 2 * e^-1
    1.735759
    """

    _needs_tau = True
    _p_from_tau = True
    _interval = True

    def __init__(
        self,
        n_pages: int = 1,
        *,
        eta: float = 0.75,
        delta0: float = 1.0,
        half_life: float | None = None,
    ) -> None:
        super().__init__(n_pages, eta=eta, delta0=delta0)
        self.half_life = check_half_life(half_life)
