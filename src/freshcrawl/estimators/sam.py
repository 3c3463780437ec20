"""SAM estimators: eq. (3) of seed 001 with the stepsizes of eq. (10), and the interval-aware form.

z_{k+1} = z_k + η_k [I_{k+1}(z_k + p) − z_k] + ζ_k (z_k − z_{k−1}), ζ_k = (β_k − ωη_k)/β_{k−1},
η_k = (k + 1)^−η, β_k = (k + 1)^−β. ``SAMInterval`` uses the residual of
:class:`~freshcrawl.estimators.SAInterval` in place of the bracket. Both are projected on [0, ∞).
"""

from __future__ import annotations

import numpy as np

from freshcrawl.estimators import _kernels as K
from freshcrawl.estimators._checks import check_exponent, check_omega
from freshcrawl.estimators.base import _BatchBase, _StreamBase

__all__ = ["SAM", "SAMBatch", "SAMInterval", "SAMIntervalBatch"]


class _SAMParams:
    def _set_params(self, eta, beta, omega):
        self.eta = check_exponent("eta", eta)
        self.beta = check_exponent("beta", beta)
        self.omega = check_omega(omega)

    def _tables(self):
        return K.step_table(self.eta), K.zeta_table(self.eta, self.beta, self.omega)


class SAM(_StreamBase, _SAMParams):
    """SA-with-momentum estimate of one page's change rate, eq. (3) and (10) of seed 001.

    Parameters
    ----------
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
    delta_ : float
        Current estimate z_k, changes per day.
    n_visits_ : int
        Visits used (k).

    Raises
    ------
    ValueError
        If a stepsize parameter or ``delta0`` is out of range.
    InvalidObservation
        In ``update``, if ``changed`` is not 0/1 or ``p`` (or a given ``tau``) is not finite and > 0.

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
    >>> est.update(True, p=1.0)
    >>> est.delta_           # first step has no momentum: same as SA
    2.0
    """

    def __init__(self, *, eta: float = 0.75, beta: float = 0.6, omega: float = 1.0, delta0: float = 1.0) -> None:
        super().__init__(delta0=delta0)
        self._set_params(eta, beta, omega)
        self._prev = self.delta0

    def _step(self, changed: bool, tau: float | None, p: float) -> None:
        """One visit: ``changed`` (0/1), ``p`` visits/day; ``tau`` is checked, not used."""
        self.delta_, self._prev, self.n_visits_ = K.sam_step(
            self.delta_, self._prev, self.n_visits_, changed, p, self.eta, self.beta, self.omega, *self._tables()
        )


class SAMBatch(_BatchBase, _SAMParams):
    """:class:`SAM` for ``n_pages`` pages at once (state: 24 bytes per page).

    Parameters
    ----------
    n_pages : int
        Number of pages, >= 1.
    eta, beta, omega : float, default=0.75, 0.6, 1.0
        Stepsizes of eq. (10), as in :class:`SAM`.
    delta0 : float, default=1.0
        Estimate before the first visit, changes per day.

    Attributes
    ----------
    delta_ : ndarray of float64, shape (n_pages,)
        Estimates z_k, changes per day.
    n_visits_ : ndarray of int64, shape (n_pages,)

    Raises
    ------
    InvalidObservation
        In ``update``: length mismatch, page out of range, flag not 0/1, tau or p not finite and > 0.
    ValueError
        Invalid parameters; in ``update``, a page listed twice.

    Examples
    --------
    >>> est = SAMBatch(2)
    >>> est.update([0, 1], [True, False], tau=[1.0, 1.0], p=[1.0, 1.0])
    >>> est.delta_.tolist()
    [2.0, 0.0]
    """

    def __init__(self, n_pages: int, *, eta: float = 0.75, beta: float = 0.6, omega: float = 1.0, delta0: float = 1.0) -> None:
        super().__init__(n_pages, delta0=delta0)
        self._set_params(eta, beta, omega)
        self._prev = np.full(self.n_pages, self.delta0)

    def _apply(self, pages, changed, tau, p) -> None:
        """One visit of each page in ``pages`` (m,), with ``p`` (m,) visits/day."""
        K.sam_batch(pages, changed, p, self.n_visits_, self.delta_, self._prev, self.eta, self.beta, self.omega, *self._tables())


class SAMInterval(_StreamBase, _SAMParams):
    """Interval-aware SAM estimate of one page's change rate, consistent for any visit process.

    z_{k+1} = max(0, z_k + η_k (z_k + p̂)(I − (1 − e^{−z_k τ})) + ζ_k (z_k − z_{k−1})).

    Parameters
    ----------
    eta, beta, omega : float, default=0.75, 0.6, 1.0
        Stepsizes of eq. (10), as in :class:`SAM`.
    delta0 : float, default=1.0
        Estimate before the first visit, changes per day.

    Attributes
    ----------
    delta_ : float
        Current estimate, changes per day.
    n_visits_ : int
        Visits used.

    Raises
    ------
    ValueError
        If a stepsize parameter or ``delta0`` is out of range.
    InvalidObservation
        In ``update``, if ``changed`` is not 0/1 or ``tau``/``p`` is not finite and > 0.

    Notes
    -----
    The gradient part is :class:`~freshcrawl.estimators.SAInterval`'s, whose root is Δ for any interval
    distribution; the momentum term of eq. (3) is unchanged. ``p`` defaults to 1/τ. Checked by
    simulation under Poisson visits, periodic visits with Δτ ∈ {0.1, 1, 3}, and periodic visits whose τ
    changes every few visits.

    References
    ----------
    .. [1] Avrachenkov, Patil, Thoppe, "Online Algorithms for Estimating Change Rates of Web Pages",
       eq. (3) and eq. (10) (seed 001).

    Examples
    --------
    >>> est = SAMInterval()
    >>> est.update(True, tau=1.0, p=1.0)
    >>> round(est.delta_, 6)
    1.735759
    """

    _needs_tau = True
    _p_from_tau = True

    def __init__(self, *, eta: float = 0.75, beta: float = 0.6, omega: float = 1.0, delta0: float = 1.0) -> None:
        super().__init__(delta0=delta0)
        self._set_params(eta, beta, omega)
        self._prev = self.delta0

    def _step(self, changed: bool, tau: float, p: float) -> None:
        """One visit: ``changed`` (0/1) after ``tau`` days, rate ``p`` (default 1/tau) visits/day."""
        self.delta_, self._prev, self.n_visits_ = K.sam_interval_step(
            self.delta_, self._prev, self.n_visits_, changed, tau, p, self.eta, self.beta, self.omega, *self._tables()
        )


class SAMIntervalBatch(_BatchBase, _SAMParams):
    """:class:`SAMInterval` for ``n_pages`` pages at once (state: 24 bytes per page).

    Parameters
    ----------
    n_pages : int
        Number of pages, >= 1.
    eta, beta, omega : float, default=0.75, 0.6, 1.0
        Stepsizes of eq. (10).
    delta0 : float, default=1.0
        Estimate before the first visit, changes per day.

    Attributes
    ----------
    delta_ : ndarray of float64, shape (n_pages,)
    n_visits_ : ndarray of int64, shape (n_pages,)

    Raises
    ------
    InvalidObservation, ValueError
        As :class:`SAMBatch`.

    Examples
    --------
    >>> est = SAMIntervalBatch(1)
    >>> est.update([0], [True], tau=[1.0])
    >>> round(float(est.delta_[0]), 6)
    1.735759
    """

    _needs_tau = True

    def __init__(self, n_pages: int, *, eta: float = 0.75, beta: float = 0.6, omega: float = 1.0, delta0: float = 1.0) -> None:
        super().__init__(n_pages, delta0=delta0)
        self._set_params(eta, beta, omega)
        self._prev = np.full(self.n_pages, self.delta0)

    def _apply(self, pages, changed, tau, p) -> None:
        """One visit of each page: ``tau`` (m,) days, ``p`` (m,) visits/day (default 1/tau)."""
        K.sam_interval_batch(pages, changed, tau, p, self.n_visits_, self.delta_, self._prev, self.eta, self.beta, self.omega, *self._tables())
