"""Change models for pages that are not Poisson: bursts and dormancy, group priors, co-changes.

Three pieces, each usable alone, all learned from "changed / not changed since the last visit":

``mmpp_step`` / ``fit_mmpp``
    A two-state Markov-modulated Poisson process (MMPP): a page is *active* (changes at rate λ_A) or
    *dormant* (rate λ_D < λ_A) and switches A→D at rate s_AD, D→A at rate s_DA. A change makes the
    active state likelier, so another change soon likelier; a long quiet spell makes the dormant state
    likelier. ``mmpp_step`` is the exact forward filter of one visit (vectorised over pages): from the
    state probabilities after the previous visit and the visit's outcome over τ days it returns the
    new state probabilities and the visit's log-likelihood. ``fit_mmpp`` maximises the pooled
    likelihood of many pages' visit sequences (maximum likelihood, standard errors from the observed
    information).
``group_prior``
    Empirical-Bayes pooling across related pages (host, URL path prefix, any grouping): the prior
    rate of a page is the mean estimate of the observed pages of its group, itself shrunk towards the
    mean over all observed pages; ``shrink`` combines it with the page's own estimate
    (``(k Δ̂ + k0 m_g) / (k + k0)``), so a page seen once starts from its group and a page seen often
    converges to its own rate.
``AgeProfile``
    Pages have a life cycle: a document is edited most just after it is created and less and less as
    it ages (a PEP while in draft, an outage record in its first hours). ``AgeProfile`` pools the
    visits of each group by the page's age into a piecewise-constant change rate of age (log-spaced
    age bins), which serves as the prior of a page at its age instead of its group's mean.
``detect_cochanges``
    Excess changes within a group in one batch of visits: when more visited pages of a group changed
    than their own models predict (a one-sided Poisson test), the group had a sweep (a site-wide
    edit, a template change); the estimated share of the group it hit raises the staleness
    probability of the group's pages not visited since.

Units: days, changes per day, visits per day.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "AGE_EDGES",
    "AgeProfile",
    "CoChangeAccumulator",
    "CoChanges",
    "MMPPFit",
    "MMPPParams",
    "detect_cochanges",
    "fit_mmpp",
    "gamma_prior",
    "group_prior",
    "mmpp_mean_rate",
    "mmpp_propagate",
    "mmpp_step",
    "sample_mmpp_visits",
    "shrink",
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


def group_prior(
    delta: NDArray[np.float64],
    observed: NDArray[np.bool_],
    groups: NDArray[np.intp],
    *,
    prior_pages: float = 3.0,
) -> NDArray[np.float64]:
    """Empirical-Bayes prior rate of every page from its group, shape (n_pages,), changes per day.

    m_g = (n_g · mean_g + n1 · M) / (n_g + n1): mean_g the mean Δ̂ of the observed pages of group g
    (n_g of them), M the mean over all observed pages, n1 = ``prior_pages``. A page without a group
    (``groups < 0``) gets M.

    Examples
    --------
    >>> d = np.array([1.0, 1.0, 0.0, 0.0, 5.0])
    >>> group_prior(d, np.array([True, True, True, True, False]), np.array([0, 0, 1, 1, 0]),
    ...             prior_pages=0.0).tolist()
    [1.0, 1.0, 0.0, 0.0, 1.0]
    """
    n = delta.shape[0]
    obs = observed & np.isfinite(delta)
    if not obs.any():
        return np.zeros(n)
    mean_all = float(delta[obs].mean())
    g = np.asarray(groups, dtype=np.intp)
    has = g >= 0
    if not has.any():
        return np.full(n, mean_all)
    n_groups = int(g.max()) + 1
    sel = obs & has
    cnt = np.bincount(g[sel], minlength=n_groups).astype(np.float64)
    tot = np.bincount(g[sel], weights=delta[sel], minlength=n_groups)
    m_g = (tot + prior_pages * mean_all) / np.maximum(cnt + prior_pages, 1e-300)
    m_g[cnt + prior_pages == 0] = mean_all
    out = np.full(n, mean_all)
    out[has] = m_g[g[has]]
    return out


def gamma_prior(
    changes: NDArray[np.float64],
    exposure: NDArray[np.float64],
    groups: NDArray[np.intp],
    *,
    min_exposure: float = 1e-9,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Empirical-Bayes gamma prior of the change rate per group, by the method of moments.

    Pages of group g have rates Δ ~ Gamma(a_g, β_g) (mean m_g = a_g/β_g, between-page variance
    V_g = a_g/β_g²) and show c_i ~ Poisson(Δ_i T_i) changes in T_i days of observation. Then
    m_g = Σc / ΣT and V_g = max(0, Σ T_i (c_i/T_i - m_g)² - (n_g - 1) m_g) / (ΣT - ΣT²/ΣT), the
    moment estimator that removes the Poisson noise. The posterior mean of page i is
    (c_i + a_g)/(T_i + β_g) = w_i (c_i/T_i) + (1 - w_i) m_g with w_i = T_i/(T_i + β_g): β_g = m_g/V_g is
    the prior's weight in days of observation, small when the group's rates are dispersed (its own
    data soon decide), large when they are alike. Groups with too little data fall back to the
    moments over all pages (``groups < 0`` too).

    Returns
    -------
    m : ndarray of float, shape (n_pages,)
        Prior mean rate of each page's group, changes per day.
    beta : ndarray of float, shape (n_pages,)
        Prior weight of each page's group, days (inf when no between-page variance is seen).

    Examples
    --------
    >>> c = np.array([0.0, 0.0, 10.0, 10.0]); T = np.full(4, 100.0)
    >>> m, beta = gamma_prior(c, T, np.zeros(4, dtype=np.intp))
    >>> float(m[0]), round(float(beta[0]), 2)    # V = (4 * 100 * 0.05**2 - 3 * 0.05) / 300 = 0.00283
    (0.05, 17.65)
    """

    def moments(c, t):
        tot_t = t.sum()
        if tot_t <= min_exposure or c.size < 2:
            return np.nan, np.nan
        m = c.sum() / tot_t
        r = c / np.maximum(t, min_exposure)
        num = float((t * (r - m) ** 2).sum() - (c.size - 1) * m)
        den = float(tot_t - (t * t).sum() / tot_t)
        v = max(num, 0.0) / den if den > 0 else 0.0
        return m, (m / v if v > 0 else np.inf)

    n = changes.shape[0]
    seen = exposure > 0
    m_all, b_all = moments(changes[seen], exposure[seen])
    if not np.isfinite(m_all):
        return np.zeros(n), np.full(n, np.inf)
    m_out = np.full(n, m_all)
    b_out = np.full(n, b_all)
    g = np.asarray(groups, dtype=np.intp)
    ok = seen & (g >= 0)
    if ok.any():
        n_groups = int(g.max()) + 1
        gg = g[ok]
        cnt = np.bincount(gg, minlength=n_groups)
        sc = np.bincount(gg, weights=changes[ok], minlength=n_groups)
        st = np.bincount(gg, weights=exposure[ok], minlength=n_groups)
        st2 = np.bincount(gg, weights=exposure[ok] ** 2, minlength=n_groups)
        with np.errstate(divide="ignore", invalid="ignore"):
            m_g = sc / st
            r = changes[ok] / exposure[ok]
            ss = np.bincount(gg, weights=exposure[ok] * (r - m_g[gg]) ** 2, minlength=n_groups)
            num = np.maximum(ss - (cnt - 1) * m_g, 0.0)
            den = st - st2 / st
            v = np.where(den > 0, num / den, 0.0)
            beta_g = np.where(v > 0, m_g / v, np.inf)
        enough = (cnt >= 2) & (st > min_exposure)
        # each group's mean is shrunk to the global one by the global prior weight (one page's worth)
        w_all = b_all if np.isfinite(b_all) else 0.0
        m_g = np.where(
            enough, (sc + w_all * m_all) / np.where(st + w_all > 0, st + w_all, 1.0), m_all
        )
        beta_g = np.where(enough, beta_g, b_all)
        has = g >= 0
        m_out[has] = m_g[g[has]]
        b_out[has] = beta_g[g[has]]
    return m_out, b_out


def shrink(delta, k, prior, k0: float):
    """``(k Δ̂ + k0 m) / (k + k0)``: the page's own estimate from k visits against its prior m."""
    k = np.asarray(k, dtype=np.float64)
    delta = np.where(k > 0, np.nan_to_num(np.asarray(delta, dtype=np.float64)), 0.0)
    if k0 <= 0:
        return np.where(k > 0, delta, prior)
    return (k * delta + k0 * prior) / (k + k0)


#: Edges of the age bins of :class:`AgeProfile`, days: 1 h, 3 h, 6 h, 12 h, then doubling from 1 day to
#: 512 days, and one open bin beyond.
AGE_EDGES = np.array(
    [0.0, 1 / 24, 1 / 8, 1 / 4, 1 / 2, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, np.inf]
)


class AgeProfile:
    """Change rate as a function of page age, pooled per group: a piecewise-constant hazard of age.

    Each visit's interval (τ days, outcome I) is counted in the age bin of its midpoint: group g and
    bin k collect C_gk changed intervals in E_gk days. The rate of bin k over all groups is
    h_k = (C_k + a0) / (E_k + a0 / m), m = (C + a0) / (E + a0) the rate over all bins; a group's is
    shrunk towards it, h_gk = (C_gk + a0) / (E_gk + a0 / h_k), with a0 = ``prior_changes`` pseudo
    changes, so a bin no visit has reached yet takes the rate of the bins around it in the pooled
    profile, and a group's bin with many visits its own rate. C/E counts changed intervals, not
    changes: it is (1 - e^(-hτ))/τ for intervals of τ days at a constant rate h, a lower bound of h
    that is close where visits are frequent against changes, as a prior's should be (the page's own
    estimate, the interval-aware MLE, corrects it as its visits accumulate).

    Parameters
    ----------
    n_groups : int
        Number of groups (pages without a group use the pooled profile).
    edges : ndarray of float, default=AGE_EDGES
        Increasing bin edges in days, from 0, the last ``inf``.
    prior_changes : float, default=2.0
        a0 > 0, pseudo changes of each bin's prior.

    Examples
    --------
    >>> prof = AgeProfile(1)
    >>> prof.add(np.zeros(4, np.intp), np.array([0.5, 0.5, 300.0, 300.0]),
    ...          np.array([True, True, False, True]), np.full(4, 1.0))
    >>> prof.rate(np.zeros(2, np.intp), np.array([0.5, 300.0])).round(3).tolist()
    [0.952, 0.608]
    """

    def __init__(self, n_groups: int, *, edges=AGE_EDGES, prior_changes: float = 2.0) -> None:
        self.edges = np.asarray(edges, dtype=np.float64)
        if self.edges.ndim != 1 or self.edges.size < 2 or self.edges[0] != 0.0 or not np.all(
            np.diff(self.edges) > 0
        ) or self.edges[-1] != np.inf:
            raise ValueError("edges must increase from 0 to inf (days)")
        if not (np.isfinite(prior_changes) and prior_changes > 0):
            raise ValueError(f"prior_changes must be finite and > 0; got {prior_changes!r}")
        self.prior_changes = float(prior_changes)
        self.n_groups = int(n_groups)
        shape = (self.n_groups + 1, self.edges.size - 1)  # the last row: pages without a group
        self.changes_ = np.zeros(shape)
        self.exposure_ = np.zeros(shape)

    def bins(self, age) -> NDArray[np.intp]:
        """Age bin of each age (days; ``inf`` and NaN in the last bin), shape of ``age``."""
        age = np.asarray(age, dtype=np.float64)
        k = np.searchsorted(self.edges, np.where(np.isnan(age), np.inf, age), side="right") - 1
        return np.clip(k, 0, self.edges.size - 2)

    def _rows(self, groups) -> NDArray[np.intp]:
        g = np.asarray(groups, dtype=np.intp)
        return np.where(g >= 0, g, self.n_groups)

    def add(self, groups, age, changed, tau) -> None:
        """Count visits: ``groups`` (m,), ``age`` at the middle of each interval (m,) days, I (m,), τ (m,) days."""
        cell = self._rows(groups) * (self.edges.size - 1) + self.bins(age)
        size = self.changes_.size
        c = np.asarray(changed, dtype=np.float64)
        self.changes_ += np.bincount(cell, weights=c, minlength=size).reshape(self.changes_.shape)
        self.exposure_ += np.bincount(
            cell, weights=np.asarray(tau, dtype=np.float64), minlength=size
        ).reshape(self.exposure_.shape)

    def table(self) -> NDArray[np.float64]:
        """h_gk for every group (rows; the last: no group) and bin, shape (n_groups + 1, n_bins), per day."""
        a0 = self.prior_changes
        c, e = self.changes_, self.exposure_
        m = (c.sum() + a0) / (e.sum() + a0)
        h_k = (c.sum(0) + a0) / (e.sum(0) + a0 / m)
        return (c + a0) / (e + a0 / h_k[None, :])

    def rate(self, groups, age) -> NDArray[np.float64]:
        """Prior change rate of pages of ``groups`` at ``age`` days, shape (m,), changes per day."""
        return self.table()[self._rows(groups), self.bins(age)]


@dataclass(frozen=True, slots=True)
class CoChanges:
    """Groups with more changes in one batch of visits than their pages' own models predict.

    Attributes
    ----------
    groups : ndarray of intp, shape (m,)
        Groups with a detected co-change.
    share : ndarray of float, shape (m,)
        Estimated share of the group's pages the co-change hit: (C - E) / (V - E), C the changed
        visits, E their expected number, V the visits of the group in the batch.
    since : ndarray of float, shape (m,)
        Time (days) after which the co-change happened: the latest previous-visit time of the
        changed visits of the group (each changed after it, if they share the co-change).
    """

    groups: NDArray[np.intp]
    share: NDArray[np.float64]
    since: NDArray[np.float64]


class CoChangeAccumulator:
    """Running per-group sums of visits for :func:`detect_cochanges`, tested once a group has enough.

    Visits accumulate (changed count C, expected count E = Σ p, variance Σ p(1 - p), visits V, and the
    latest previous-visit time of a changed visit) until the group has ``min_visits`` visits; then it is
    tested and its sums start again. At a low budget a group's visits of one planning period are too
    few to test, so they are pooled over consecutive periods.

    Parameters
    ----------
    n_groups : int
        Number of groups.
    min_visits : int, default=8
        Visits of a group before it is tested.
    z, min_changes
        As in :func:`detect_cochanges`.
    """

    def __init__(
        self, n_groups: int, *, min_visits: int = 8, z: float = 4.0, min_changes: int = 3
    ) -> None:
        self.n_groups = int(n_groups)
        self.min_visits = int(min_visits)
        self.z = float(z)
        self.min_changes = int(min_changes)
        self._v = np.zeros(self.n_groups)
        self._c = np.zeros(self.n_groups)
        self._e = np.zeros(self.n_groups)
        self._var = np.zeros(self.n_groups)
        self._since = np.full(self.n_groups, -np.inf)

    def add(self, groups, changed, p_change, prev_time) -> CoChanges:
        """Add one batch of visits; return the co-changes of the groups tested now."""
        has = groups >= 0
        g = groups[has]
        c = np.asarray(changed, dtype=np.float64)[has]
        p = np.asarray(p_change, dtype=np.float64)[has]
        n = self.n_groups
        self._v += np.bincount(g, minlength=n)
        self._c += np.bincount(g, weights=c, minlength=n)
        self._e += np.bincount(g, weights=p, minlength=n)
        self._var += np.bincount(g, weights=p * (1.0 - p), minlength=n)
        pt = np.asarray(prev_time, dtype=np.float64)[has]
        np.maximum.at(self._since, g[c > 0], pt[c > 0])
        ready = np.flatnonzero(self._v >= self.min_visits)
        if ready.size == 0:
            return CoChanges(np.zeros(0, np.intp), np.zeros(0), np.zeros(0))
        v, cc, e, var = self._v[ready], self._c[ready], self._e[ready], self._var[ready]
        flag = (cc >= self.min_changes) & (cc > e + self.z * np.sqrt(var) + 1.0)
        idx = ready[flag]
        share = np.clip((cc[flag] - e[flag]) / np.maximum(v[flag] - e[flag], 1e-12), 0.0, 1.0)
        since = self._since[idx].copy()
        for a in (self._v, self._c, self._e, self._var):
            a[ready] = 0.0
        self._since[ready] = -np.inf
        return CoChanges(idx.astype(np.intp), share, since)


def detect_cochanges(
    groups: NDArray[np.intp],
    changed: NDArray[np.bool_],
    p_change: NDArray[np.float64],
    prev_time: NDArray[np.float64],
    *,
    n_groups: int,
    z: float = 4.0,
    min_changes: int = 3,
) -> CoChanges:
    """Detect co-changes in one batch of visits.

    Parameters
    ----------
    groups : ndarray of intp, shape (m,)
        Group of each visited page (``-1``: none).
    changed : ndarray of bool, shape (m,)
        I of each visit.
    p_change : ndarray of float, shape (m,)
        The change probability each page's own model predicted for the visit.
    prev_time : ndarray of float, shape (m,)
        Time of the page's previous visit, days.
    n_groups : int
        Number of groups.
    z : float, default=4.0
        One-sided threshold: C > E + z·sqrt(Σ p(1-p)) + 1 flags a group (the +1 is a continuity margin).
    min_changes : int, default=3
        Fewest changed visits to flag a group.

    Returns
    -------
    CoChanges
        ``since`` is the latest previous-visit time of the group's changed visits.
    """
    acc = CoChangeAccumulator(n_groups, min_visits=1, z=z, min_changes=min_changes)
    return acc.add(np.asarray(groups, dtype=np.intp), changed, p_change, prev_time)
