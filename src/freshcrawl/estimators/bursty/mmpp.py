"""A two-state Markov-modulated Poisson process (MMPP) of a page's changes.

Its exact forward filter over visits that see only "changed / not changed", its expected rate
ahead, and its pooled maximum-likelihood fit. A page is *active* (changes at rate λ_A) or *dormant*
(rate λ_D < λ_A) and switches A→D at rate s_AD, D→A at rate s_DA. Units: days, changes per day.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "MMPPFit",
    "MMPPParams",
    "fit_mmpp",
    "mmpp_mean_rate",
    "mmpp_propagate",
    "mmpp_step",
    "sample_mmpp_visits",
]


@dataclass(frozen=True, slots=True)
class MMPPParams:
    """Rates of a two-state MMPP, per day (scalars or arrays of shape (n_pages,)).

    Attributes
    ----------
    lam_a, lam_d : float or ndarray
        Change rates in the active and the dormant state, changes per day (λ_A >= λ_D >= 0).
    s_ad, s_da : float or ndarray
        Switching rates active→dormant and dormant→active, per day (> 0).
    """

    lam_a: float | NDArray[np.float64]
    lam_d: float | NDArray[np.float64]
    s_ad: float | NDArray[np.float64]
    s_da: float | NDArray[np.float64]

    @property
    def active_share(self):
        """Stationary probability of the active state, s_DA / (s_AD + s_DA)."""
        return self.s_da / (self.s_ad + self.s_da)

    @property
    def mean_rate(self):
        """Long-run change rate φ λ_A + (1 - φ) λ_D, changes per day."""
        phi = self.active_share
        return phi * self.lam_a + (1.0 - phi) * self.lam_d

    @classmethod
    def relative(
        cls, base: ArrayLike, *, burst: float, active_share: float, changes_per_burst: float
    ):
        """Scale-free parameters around a long-run rate ``base`` (changes per day).

        λ_A = ``burst`` · base; λ_D such that the long-run rate is ``base``
        (λ_D = base (1 - φ κ)/(1 - φ), 0 when φ κ >= 1); an active spell lasts
        ``changes_per_burst / λ_A`` days on average and the active state has stationary share φ.

        Examples
        --------
        >>> p = MMPPParams.relative(0.1, burst=5.0, active_share=0.1, changes_per_burst=4.0)
        >>> round(float(p.mean_rate), 6), round(float(p.lam_a), 6)
        (0.1, 0.5)
        """
        base = np.maximum(np.asarray(base, dtype=np.float64), 1e-12)
        phi = float(active_share)
        kappa = float(burst)
        if not (0.0 < phi < 1.0 and kappa >= 1.0 and changes_per_burst > 0):
            raise ValueError(
                "relative MMPP needs 0 < active_share < 1, burst >= 1, changes_per_burst > 0; got "
                f"{active_share!r}, {burst!r}, {changes_per_burst!r}"
            )
        kappa = min(kappa, 1.0 / phi)
        lam_a = kappa * base
        lam_d = base * max(1.0 - phi * kappa, 0.0) / (1.0 - phi)
        s_ad = lam_a / float(changes_per_burst)
        s_da = s_ad * phi / (1.0 - phi)
        return cls(lam_a, lam_d, s_ad, s_da)


def _expm2(a, b, c, d, t):
    """exp(M t) for M = [[a, b], [c, d]] with b, c >= 0 (real eigenvalues), elementwise over arrays."""
    s = 0.5 * (a + d)
    q = np.sqrt(np.maximum(0.25 * (a - d) ** 2 + b * c, 0.0))
    e1 = np.exp((s + q) * t)
    e2 = np.exp((s - q) * t)
    ch = 0.5 * (e1 + e2)
    qt = q * t
    with np.errstate(divide="ignore", invalid="ignore"):
        sh = np.where(
            qt > 1e-6,
            (e1 - e2) / (2.0 * np.where(q > 0, q, 1.0)),
            t * np.exp(s * t) * (1.0 + qt * qt / 6.0),
        )
    return ch + sh * (a - s), sh * b, sh * c, ch + sh * (d - s)


def mmpp_step(pi_a, params: MMPPParams, changed, tau):
    """One visit of the exact MMPP forward filter, vectorised over pages.

    Parameters
    ----------
    pi_a : ndarray of float, shape (m,)
        P(active) just after the previous visit (given everything seen up to it).
    params : MMPPParams
        Rates (scalars or arrays of shape (m,)).
    changed : ndarray of bool, shape (m,)
        I: changed since the previous visit.
    tau : ndarray of float, shape (m,)
        Days since the previous visit (> 0).

    Returns
    -------
    pi_a_new : ndarray of float, shape (m,)
        P(active) just after this visit.
    loglik : ndarray of float, shape (m,)
        log P(I | history), the visit's contribution to the log-likelihood.
    p_change : ndarray of float, shape (m,)
        P(I = 1 | history): the change probability predicted before the visit.

    Notes
    -----
    With N(τ) = exp((Q - Λ)τ) (no change and the end state) and T(τ) = exp(Qτ) (the end state),
    P(no change, end j) = Σ_i π_i N_ij and P(change, end j) = Σ_i π_i (T_ij - N_ij). With λ_A = λ_D = Δ
    it is the Poisson model: P(I = 1) = 1 - e^{-Δτ}.

    Examples
    --------
    >>> p = MMPPParams(1.0, 1.0, 0.5, 0.5)
    >>> _, _, pc = mmpp_step(np.array([0.3]), p, np.array([True]), np.array([2.0]))
    >>> bool(abs(pc[0] - (1 - np.exp(-2.0))) < 1e-12)
    True
    """
    pi_a = np.asarray(pi_a, dtype=np.float64)
    tau = np.asarray(tau, dtype=np.float64)
    changed = np.asarray(changed, dtype=bool)
    la, ld, sad, sda = params.lam_a, params.lam_d, params.s_ad, params.s_da
    n_aa, n_ad, n_da, n_dd = _expm2(-sad - la, sad, sda, -sda - ld, tau)
    t_aa, t_ad, t_da, t_dd = _expm2(-sad, sad, sda, -sda, tau)
    pi_d = 1.0 - pi_a
    stay_a = pi_a * n_aa + pi_d * n_da  # no change, end active
    stay_d = pi_a * n_ad + pi_d * n_dd
    end_a = pi_a * t_aa + pi_d * t_da
    end_d = pi_a * t_ad + pi_d * t_dd
    chg_a = np.maximum(end_a - stay_a, 0.0)
    chg_d = np.maximum(end_d - stay_d, 0.0)
    p_stay = stay_a + stay_d
    p_chg = chg_a + chg_d
    tiny = 1e-300
    num = np.where(changed, chg_a, stay_a)
    den = np.where(changed, p_chg, p_stay)
    new = np.where(den > tiny, num / np.maximum(den, tiny), pi_a)
    loglik = np.log(np.maximum(den, tiny))
    return np.clip(new, 0.0, 1.0), loglik, np.clip(p_chg, 0.0, 1.0)


def mmpp_propagate(pi_a, params: MMPPParams, t):
    """P(active) ``t`` days after the last visit, with nothing seen since (shape of ``pi_a``).

    π_A(t) = φ + (π_A - φ) e^{-(s_AD + s_DA) t}, φ the stationary active share.
    """
    phi = params.active_share
    return phi + (np.asarray(pi_a) - phi) * np.exp(-(params.s_ad + params.s_da) * np.asarray(t))


def mmpp_mean_rate(pi_a, params: MMPPParams, horizon: float):
    """Expected change rate averaged over the next ``horizon`` days from state probability ``pi_a``.

    λ_D + (λ_A - λ_D) · (mean of π_A(u) over u in [0, H]), changes per day.
    """
    phi = params.active_share
    r = params.s_ad + params.s_da
    x = r * horizon
    with np.errstate(divide="ignore", invalid="ignore"):
        avg = np.where(x > 1e-9, (1.0 - np.exp(-x)) / np.where(x > 0, x, 1.0), 1.0 - 0.5 * x)
    mean_pi = phi + (np.asarray(pi_a) - phi) * avg
    return params.lam_d + (params.lam_a - params.lam_d) * mean_pi


def sample_mmpp_visits(
    params: MMPPParams,
    n_pages: int,
    tau: float,
    n_visits: int,
    rng: np.random.Generator | int | None = None,
) -> NDArray[np.bool_]:
    """Simulate pages following ``params`` (scalars) visited every ``tau`` days; shape (n_pages, n_visits).

    Entry [i, k] is I_k of page i: whether it changed between visits k-1 and k. The state starts from
    its stationary law. Exact: the state path is drawn sojourn by sojourn and changes inside each
    piece are Poisson.
    """
    rng = np.random.default_rng(rng)
    la, ld = float(params.lam_a), float(params.lam_d)
    sad, sda = float(params.s_ad), float(params.s_da)
    phi = sda / (sad + sda)
    end = tau * n_visits
    out = np.zeros((n_pages, n_visits), dtype=bool)
    for i in range(n_pages):
        t = 0.0
        active = rng.random() < phi
        while t < end:
            dur = rng.exponential(1.0 / (sad if active else sda))
            t1 = min(t + dur, end)
            lam = la if active else ld
            n = rng.poisson(lam * (t1 - t))
            if n:
                times = rng.uniform(t, t1, n)
                k = np.minimum((times // tau).astype(np.intp), n_visits - 1)
                out[i, k] = True
            t = t1
            active = not active
    return out


@dataclass(frozen=True, slots=True)
class MMPPFit:
    """Pooled maximum-likelihood fit of an MMPP (see :func:`fit_mmpp`).

    Attributes
    ----------
    params : MMPPParams
        The estimate (absolute rates, per day).
    se : ndarray of float, shape (4,)
        Standard errors of (λ_A, λ_D, s_AD, s_DA), per day (delta method on the log scale).
    loglik : float
        Maximised log-likelihood.
    n_obs : int
        Visits used.
    success : bool
        Whether the optimiser reported convergence.
    """

    params: MMPPParams
    se: NDArray[np.float64]
    loglik: float
    n_obs: int
    success: bool


def _loglik(theta, changed, tau):
    la, ld, sad, sda = np.exp(theta)
    params = MMPPParams(la + ld, ld, sad, sda)  # λ_A = λ_D + excess keeps λ_A >= λ_D
    pi = np.full(changed.shape[0], params.active_share)
    total = 0.0
    for k in range(changed.shape[1]):
        pi, ll, _ = mmpp_step(pi, params, changed[:, k], tau[:, k])
        total += float(ll.sum())
    return total


def fit_mmpp(changed: ArrayLike, tau: ArrayLike, *, start: MMPPParams | None = None) -> MMPPFit:
    """Fit one MMPP to many pages' visit sequences by maximum likelihood.

    Parameters
    ----------
    changed : array_like of bool, shape (n_pages, k)
        I of each page's k visits, in order.
    tau : float or array_like of float, shape (n_pages, k)
        Days since the previous visit.
    start : MMPPParams, optional
        Starting point; default: λ_A four times and λ_D a quarter of the pooled Poisson rate.

    Returns
    -------
    MMPPFit

    Notes
    -----
    Each page's state starts from the stationary law. The likelihood is the product of the filter's
    one-visit predictive probabilities (:func:`mmpp_step`); it is maximised over
    (log(λ_A - λ_D), log λ_D, log s_AD, log s_DA) with BFGS, and the standard errors come from the
    inverse of a finite-difference Hessian of the log-likelihood.
    """
    from scipy.optimize import minimize

    changed = np.asarray(changed, dtype=bool)
    if changed.ndim != 2 or changed.shape[1] < 2:
        raise ValueError(f"changed must have shape (n_pages, k >= 2); got {changed.shape}")
    tau = np.broadcast_to(np.asarray(tau, dtype=np.float64), changed.shape)
    if not (np.all(np.isfinite(tau)) and np.all(tau > 0)):
        raise ValueError("tau must be finite and > 0 days since the previous visit")
    if start is None:
        q = min(max(changed.mean(), 1e-3), 1 - 1e-3)
        rate = -np.log1p(-q) / float(tau.mean())
        start = MMPPParams(4.0 * rate, 0.25 * rate, rate / 4.0, rate / 12.0)
    x0 = np.log(
        [
            max(float(start.lam_a) - float(start.lam_d), 1e-6),
            max(float(start.lam_d), 1e-6),
            float(start.s_ad),
            float(start.s_da),
        ]
    )
    scale = float(changed.size)

    def neg(theta):
        return -_loglik(theta, changed, tau) / scale

    res = minimize(neg, x0, method="BFGS", options={"gtol": 1e-7})
    success = bool(res.success or np.max(np.abs(res.jac)) < 1e-5)
    theta = res.x
    # observed information on the natural scale (λ_A, λ_D, s_AD, s_DA) by the delta method
    h = 1e-3
    hess = np.zeros((4, 4))
    f0 = -neg(theta) * scale
    for i in range(4):
        for j in range(i, 4):
            ei = np.eye(4)[i] * h
            ej = np.eye(4)[j] * h
            fpp = _loglik(theta + ei + ej, changed, tau)
            fpm = _loglik(theta + ei - ej, changed, tau)
            fmp = _loglik(theta - ei + ej, changed, tau)
            fmm = _loglik(theta - ei - ej, changed, tau)
            hess[i, j] = hess[j, i] = (fpp - fpm - fmp + fmm) / (4 * h * h)
    try:
        cov_log = np.linalg.inv(-hess)
    except np.linalg.LinAlgError:
        cov_log = np.full((4, 4), np.nan)
    e = np.exp(theta)
    # natural parameters: λ_A = e0 + e1, λ_D = e1, s_AD = e2, s_DA = e3
    jac = np.array([[e[0], e[1], 0, 0], [0, e[1], 0, 0], [0, 0, e[2], 0], [0, 0, 0, e[3]]])
    cov = jac @ cov_log @ jac.T
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    params = MMPPParams(e[0] + e[1], e[1], e[2], e[3])
    return MMPPFit(params=params, se=se, loglik=f0, n_obs=int(changed.size), success=success)
