"""Empirical-Bayes group priors of change rates: a page's prior is its group's rate, itself shrunk
towards the rate over all groups. Units: days, changes per day.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["gamma_prior", "group_prior", "shrink"]


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
