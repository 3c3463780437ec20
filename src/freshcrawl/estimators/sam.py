"""SAM estimators: eq. (3) of seed 001 with the stepsizes of eq. (10), and the interval-aware form.

z_{k+1} = z_k + η_k [I_{k+1}(z_k + p) − z_k] + ζ_k (z_k − z_{k−1}), ζ_k = (β_k − ωη_k)/β_{k−1},
η_k = (k + 1)^−η, β_k = (k + 1)^−β. ``SAMInterval`` uses the residual of
:class:`~freshcrawl.estimators.SAInterval` in place of the bracket. Both are projected on [0, ∞).
"""

from __future__ import annotations

import numpy as np

from freshcrawl.estimators._checks import check_exponent, check_omega
from freshcrawl.estimators.sa import _Stochastic

__all__ = ["SAM", "SAMInterval"]


class SAM(_Stochastic):
    """SA-with-momentum estimate of the change rates of ``n_pages`` pages, eq. (3) and (10) of seed 001.

    ``p`` is used; ``tau`` is checked when given, not used.

    Parameters
    ----------
    n_pages : int, default=1
        Number of pages, >= 1.
    eta : float, default=0.75
        Exponent of the main stepsize η_k = (k + 1)^−η, in (0, 1].
    beta : float, default=0.6
        Exponent of β_k = (k + 1)^−β in ζ_k of eq. (10), in (0, 1]. Theorem 3 covers β ∈ (1/2, 1] with
        β < η <= 2β; the paper also runs β = 0.5 and 0.4 (Figs. 3-5).
    omega : float, default=1.0
        ω > 0 of eq. (10). Defaults (0.75, 0.6, 1): the paper's Figs. 1-2 setting.
    delta0 : float, default=1.0
        z_0 = z_{−1}, the estimate before the first visit, changes per day.

    Attributes
    ----------
    delta_ : ndarray of float64, shape (n_pages,)
        Estimates z_k, changes per day.
    n_visits_ : ndarray of int64, shape (n_pages,)
        Visits used (k) per page (state, with z_{k−1}: 24 bytes per page).

    Raises
    ------
    ValueError
        If a stepsize parameter or ``delta0`` is out of range.
    InvalidObservation, TypeError
        In ``learn_one`` / ``learn_many``, for the bad observations listed there.

    Notes
    -----
    ζ_0 = 0 (β_{−1} is infinite). The iterate is projected on [0, ∞) so the momentum cannot drive it
    negative; the projected value is the one remembered as z_k. Consistent under Poisson visits
    (Theorem 3), biased under periodic visits like eq. (2).

    References
    ----------
    .. [1] Avrachenkov, Patil, Thoppe, "Online Algorithms for Estimating Change Rates of Web Pages",
       eq. (3), eq. (10) and Theorem 3 (seed 001).

    Examples
    --------
    >>> est = SAM()
    >>> est.learn_one(0, True, p=1.0)
    >>> est.predict_one(0)           # first step has no momentum: same as SA
    2.0
    >>> est = SAM(2)
    >>> est.learn_many([0, 1], [True, False], tau=[1.0, 1.0], p=[1.0, 1.0])
    >>> est.delta_.tolist()
    [2.0, 0.0]
    """

    def __init__(
        self,
        n_pages: int = 1,
        *,
        eta: float = 0.75,
        beta: float = 0.6,
        omega: float = 1.0,
        delta0: float = 1.0,
    ) -> None:
        super().__init__(n_pages, delta0=delta0)
        self.eta = check_exponent("eta", eta)
        self.beta = check_exponent("beta", beta)
        self.omega = check_omega(omega)
        self._prev = np.full(self.n_pages, self.delta0)


class SAMInterval(SAM):
    """Interval-aware SAM estimate of the change rates of ``n_pages`` pages, consistent for any visit process.

    z_{k+1} = max(0, z_k + η_k (z_k + p̂)(I − (1 − e^{−z_k τ})) + ζ_k (z_k − z_{k−1})). ``tau`` is used;
    ``p`` is the visit rate in force before the visit, 1/τ when omitted.

    Parameters
    ----------
    n_pages : int, default=1
        Number of pages, >= 1.
    eta, beta, omega : float, default=0.75, 0.6, 1.0
        Stepsizes of eq. (10), as in :class:`SAM`.
    delta0 : float, default=1.0
        Estimate before the first visit, changes per day.

    Attributes
    ----------
    delta_ : ndarray of float64, shape (n_pages,)
        Estimates, changes per day.
    n_visits_ : ndarray of int64, shape (n_pages,)
        Visits used (state: 24 bytes per page).

    Raises
    ------
    ValueError, InvalidObservation, TypeError
        As :class:`SAM`.

    Notes
    -----
    The gradient part is :class:`~freshcrawl.estimators.SAInterval`'s, whose root is Δ for any interval
    distribution; the momentum term of eq. (3) is unchanged. Checked by simulation under Poisson visits,
    periodic visits with Δτ ∈ {0.1, 1, 3}, and periodic visits whose τ changes every few visits.

    References
    ----------
    .. [1] Avrachenkov, Patil, Thoppe, "Online Algorithms for Estimating Change Rates of Web Pages",
       eq. (3) and eq. (10) (seed 001).

    Examples
    --------
    >>> est = SAMInterval()
    >>> est.learn_one(0, True, tau=1.0, p=1.0)
    >>> round(est.predict_one(0), 6)
    1.735759
    """

    _needs_tau = True
    _p_from_tau = True
    _interval = True
