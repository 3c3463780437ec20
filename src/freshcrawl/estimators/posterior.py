"""Empirical-Bayes posterior of change rates from changed / unchanged visits, pooled over pages.

A page's own visits say little about its Δ until it has been visited a few times; the other pages of
the crawl (and of its group, e.g. its host) say what rates are common. Each page's Δ gets a gamma prior
Gamma(a, β) whose mean m = a/β and variance V = a/β² are fitted across pages, and the exact likelihood
of its visits (seed 001, eq. (15): a visit τ days after the previous one finds a change with probability
1 − e^{−Δτ}) gives the posterior, evaluated on a logarithmic grid of rates. Pages with few visits sit
near their group's mean; pages with many follow their own data. Units: τ in days, Δ in changes per day.

Sufficient statistics per page: c changes seen, S_c the days spanned by the visits that found a change
and U the days spanned by the visits that did not, so the log-likelihood is
``c log(1 − e^{−Δ S_c / c}) − Δ U``: exact when the intervals of a page's changed visits are equal
(periodic visits at a rate the plan keeps), and the likelihood of their mean interval otherwise.

The prior is fitted by expectation-maximisation of the pages' marginal likelihood (type-II maximum
likelihood): the E-step takes each observed page's posterior E[Δ] and E[log Δ], the M-step the gamma
that best explains their means, warm-started from the previous fit; a group's prior adds
``prior_pages`` pseudo-pages of the crawl's means to its own pages'.
(:func:`freshcrawl.estimators.bursty.priors.gamma_prior` fits a gamma prior by the method of moments
from Poisson counts, which a visit that only says changed / not changed does not give.)
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from freshcrawl._validation import check_half_life

__all__ = ["RatePosterior", "page_posterior"]

#: Pages per block of the grid computations (bounds their memory to a few MB).
_BLOCK = 8192


class RatePosterior:
    """Posterior of each page's change rate Δ under an empirical-Bayes gamma prior.

    Parameters
    ----------
    n_pages : int
        Number of pages, >= 1.
    n_grid : int, default=96
        Rates of the logarithmic grid the posterior is evaluated on (>= 16).
    decades : float, default=7.0
        Width of the grid in decades, centred (in log) on the inverse of the median interval
        between visits (> 0).
    prior_pages : float, default=3.0
        Pseudo-pages of the crawl-wide prior in a group's prior (>= 0).
    half_life : float or None, default=None
        Days of exponential forgetting: a page's statistics decay by 2^{-τ/half_life} before a visit
        τ days after its previous one is added. None: no forgetting.
    em_steps : int, default=5
        EM steps of the prior at the first :meth:`fit` (>= 1); each later fit takes one more step
        from where the last one ended. The posteriors of a fit are those of its last E-step: under
        the prior ``prior_mean_``, ``prior_var_`` in force before its M-step.

    Attributes
    ----------
    changes_, changed_days_, unchanged_days_ : ndarray of float, shape (n_pages,)
        c, S_c and U of each page (decayed with forgetting).
    n_visits_ : ndarray of float, shape (n_pages,)
        Observations of each page (decayed with forgetting).
    prior_mean_, prior_var_ : ndarray of float, shape (n_pages,)
        Prior mean m (changes per day) and variance V ((changes per day)²) of each page's group after
        :meth:`fit`; NaN before any observation.
    mean_, sd_ : ndarray of float, shape (n_pages,)
        Posterior mean and standard deviation of Δ after :meth:`fit`, changes per day.
    quantile_ : ndarray of float, shape (n_pages,) or None
        Posterior q-quantile of Δ after ``fit(q=q)``, changes per day (a grid rate).

    Raises
    ------
    ValueError
        If a parameter is out of range.

    Examples
    --------
    >>> post = RatePosterior(3)
    >>> post.update([0, 1, 0, 1], [True, False, True, False], [1.0, 1.0, 1.0, 1.0])
    >>> post.fit()
    >>> bool(post.mean_[0] > post.mean_[2] > post.mean_[1])    # page 2: never visited, the prior mean
    True
    """

    def __init__(
        self,
        n_pages: int,
        *,
        n_grid: int = 96,
        decades: float = 7.0,
        prior_pages: float = 3.0,
        half_life: float | None = None,
        em_steps: int = 5,
    ) -> None:
        if not (isinstance(n_pages, int | np.integer) and n_pages >= 1):
            raise ValueError(f"n_pages must be an int >= 1; got {n_pages!r}")
        if not (isinstance(n_grid, int | np.integer) and n_grid >= 16):
            raise ValueError(f"n_grid must be an int >= 16 rates; got {n_grid!r}")
        if not (np.isfinite(decades) and decades > 0):
            raise ValueError(f"decades must be finite and > 0; got {decades!r}")
        if not (np.isfinite(prior_pages) and prior_pages >= 0):
            raise ValueError(f"prior_pages must be finite and >= 0 pages; got {prior_pages!r}")
        if not (isinstance(em_steps, int | np.integer) and em_steps >= 1):
            raise ValueError(f"em_steps must be an int >= 1; got {em_steps!r}")
        n = int(n_pages)
        self.n_pages = n
        self.n_grid = int(n_grid)
        self.decades = float(decades)
        self.prior_pages = float(prior_pages)
        self.half_life = check_half_life(half_life)
        self.em_steps = int(em_steps)
        self.changes_ = np.zeros(n)
        self.changed_days_ = np.zeros(n)
        self.unchanged_days_ = np.zeros(n)
        self.n_visits_ = np.zeros(n)
        self.prior_mean_ = np.full(n, np.nan)
        self.prior_var_ = np.full(n, np.nan)
        self.mean_ = np.full(n, np.nan)
        self.sd_ = np.full(n, np.nan)
        self.quantile_: NDArray[np.float64] | None = None
        self._moments: tuple[float, float] | None = None  # crawl-wide (m, V), warm start of the EM
        #: per group: observed pages, Σ E[Δ], Σ E[log Δ]; and the crawl's mean E[log Δ]
        self._group_sums: tuple | None = None

    # statistics ----------------------------------------------------------------------------------
    def update(self, pages: ArrayLike, changed: ArrayLike, tau: ArrayLike) -> None:
        """Add observations: page index, I_k and τ_k (days, > 0), arrays of shape (m,).

        Raises
        ------
        ValueError
            If the shapes differ, a page is out of range or a τ is not finite and > 0.
        """
        pages = np.asarray(pages, dtype=np.intp).ravel()
        changed = np.asarray(changed, dtype=bool).ravel()
        tau = np.asarray(tau, dtype=np.float64).ravel()
        if not (pages.shape == changed.shape == tau.shape):
            raise ValueError(
                f"pages, changed and tau must have one shape; got {pages.shape}, {changed.shape}, {tau.shape}"
            )
        if pages.size == 0:
            return
        if pages.min() < 0 or pages.max() >= self.n_pages:
            raise ValueError(f"pages must lie in 0..{self.n_pages - 1}")
        if not (np.isfinite(tau).all() and (tau > 0).all()):
            raise ValueError("tau must be finite and > 0 days")
        if self.half_life is None:
            np.add.at(self.changes_, pages, changed.astype(np.float64))
            np.add.at(self.changed_days_, pages, np.where(changed, tau, 0.0))
            np.add.at(self.unchanged_days_, pages, np.where(changed, 0.0, tau))
            np.add.at(self.n_visits_, pages, 1.0)
            return
        for k in range(pages.size):  # decay is sequential per page; observations come in time order
            i = pages[k]
            keep = 2.0 ** (-tau[k] / self.half_life)
            self.changes_[i] = keep * self.changes_[i] + changed[k]
            self.changed_days_[i] = keep * self.changed_days_[i] + (tau[k] if changed[k] else 0.0)
            self.unchanged_days_[i] = keep * self.unchanged_days_[i] + (
                0.0 if changed[k] else tau[k]
            )
            self.n_visits_[i] = keep * self.n_visits_[i] + 1.0

    # the posterior -------------------------------------------------------------------------------
    def _make_grid(self, seen: NDArray[np.intp]) -> NDArray[np.float64]:
        days = (self.changed_days_[seen] + self.unchanged_days_[seen]) / self.n_visits_[seen]
        centre = 1.0 / float(np.median(days))
        half = self.decades / 2.0
        return centre * np.logspace(-half, half, self.n_grid)

    def _log_weights(self, idx, grid, logs, m, v) -> NDArray[np.float64]:
        """Log posterior weights (up to a constant per page) of pages ``idx`` on the grid under priors
        Gamma(m²/V, m/V) (density times Δ, the grid being logarithmic), shape (len(idx), n_grid)."""
        # prior: a log Δ − b Δ; unchanged visits: −Δ U
        a = (m * m / v)[:, None]
        b = (m / v + self.unchanged_days_[idx])[:, None]
        lw = a * logs[None, :]
        lw -= b * grid[None, :]
        c = self.changes_[idx]
        hit = np.flatnonzero(c > 0)
        if hit.size:  # changed visits: c log(1 − e^{−Δ S_c / c})
            s = self.changed_days_[idx[hit]] / c[hit]
            x = np.maximum(grid[None, :] * s[:, None], 1e-300)
            lw[hit] += c[hit, None] * np.log(-np.expm1(-x))
        return lw

    def _moments_of(self, idx, grid, m, v):
        """Posterior weights of pages ``idx`` under priors (m, V); their first two moments."""
        logs = np.log(grid)
        lw = self._log_weights(idx, grid, logs, m, v)
        lw -= lw.max(axis=1, keepdims=True)
        w = np.exp(lw, out=lw)
        w /= w.sum(axis=1, keepdims=True)
        m1 = w @ grid
        m2 = w @ (grid * grid)
        return w, m1, m2

    def fit(self, groups: ArrayLike | None = None, *, q: float | None = None) -> None:
        """Fit the prior (crawl-wide, and per group when ``groups`` is given) and the posteriors.

        Pages never observed get their group's prior (all NaN while no page is observed).

        Parameters
        ----------
        groups : array of int, shape (n_pages,), optional
            Group of each page (its host, say; ``-1`` for none): a group's prior is fitted on its own
            pages and shrunk towards the crawl's by ``prior_pages`` pseudo-pages.
        q : float, optional
            Also compute the posterior q-quantile of every page (``quantile_``), q in (0, 1).

        Raises
        ------
        ValueError
            If ``groups`` has the wrong shape or q is not in (0, 1).
        """
        n = self.n_pages
        if q is not None and not 0.0 < q < 1.0:
            raise ValueError(f"q must lie in (0, 1); got {q!r}")
        g = None if groups is None else np.asarray(groups, dtype=np.intp)
        if g is not None and g.shape != (n,):
            raise ValueError(f"groups must have shape ({n},); got {g.shape}")
        seen = np.flatnonzero(self.n_visits_ > 0)
        if seen.size == 0:
            return
        grid = self._make_grid(seen)
        lo, hi = float(grid[0]), float(grid[-1])
        steps = self.em_steps
        if self._moments is None:  # start: the naive pooled rate, exponential spread (a = 1)
            days = float(self.changed_days_[seen].sum() + self.unchanged_days_[seen].sum())
            m0 = min(max(float(self.changes_[seen].sum()) / days, 10 * lo), hi / 10)
            self._moments = (m0, m0 * m0)
        else:
            steps = 1  # warm: one more step from the last fit
        m_all, v_all = self._clip(*self._moments, lo, hi)
        sums = self._group_sums if g is not None else None
        logs = np.log(grid)
        for step in range(steps):
            # E-step: every page's posterior under the prior in force; the last step keeps them
            last = step == steps - 1
            pm, pv = self._priors(g, m_all, v_all, sums)
            idx_all = np.arange(n) if last else seen
            m1 = np.empty(idx_all.size)
            l1 = np.empty(idx_all.size)
            if last:
                sd = np.empty(n)
                quant = None if q is None else np.empty(n)
            for start in range(0, idx_all.size, _BLOCK):
                sl = slice(start, start + _BLOCK)
                idx = idx_all[sl]
                w, m1[sl], m2 = self._moments_of(idx, grid, pm[idx], pv[idx])
                l1[sl] = w @ logs
                if last:
                    sd[idx] = np.sqrt(np.maximum(m2 - m1[sl] * m1[sl], 0.0))
                    if quant is not None:
                        k = (np.cumsum(w, axis=1) < q).sum(axis=1)
                        quant[idx] = grid[np.minimum(k, self.n_grid - 1)]
            if last:
                mean = m1
                self.prior_mean_, self.prior_var_ = pm, pv
                m1, l1 = m1[seen], l1[seen]
            # M-step: the gamma prior of greatest expected log-density given E[Δ] and E[log Δ],
            # for the next step (or the next fit)
            m_all, v_all = self._clip(*_gamma_fit(float(m1.mean()), float(l1.mean())), lo, hi)
            if g is not None:
                ok = g[seen] >= 0
                n_groups = int(g.max()) + 1
                gs = g[seen][ok]
                sums = (
                    np.bincount(gs, minlength=n_groups).astype(np.float64),
                    np.bincount(gs, weights=m1[ok], minlength=n_groups),
                    np.bincount(gs, weights=l1[ok], minlength=n_groups),
                    float(l1.mean()),
                )
        self._moments = (m_all, v_all)
        self._group_sums = sums
        self.mean_, self.sd_, self.quantile_ = mean, sd, quant

    @staticmethod
    def _clip(m: float, v: float, lo: float, hi: float) -> tuple[float, float]:
        m = min(max(m, lo), hi)
        return m, max(v, 1e-6 * m * m)

    def _priors(self, g, m_all: float, v_all: float, sums):
        """Each page's prior (m, V): its group's gamma fit, with ``prior_pages`` pseudo-pages of the
        crawl's E[Δ] and E[log Δ] added to the group's."""
        n = self.n_pages
        pm = np.full(n, m_all)
        pv = np.full(n, v_all)
        if g is None or sums is None:
            return pm, pv
        cnt, s1, sl, l_all = sums
        k0 = self.prior_pages
        with np.errstate(divide="ignore", invalid="ignore"):
            mean_g = (s1 + k0 * m_all) / (cnt + k0)
            log_g = (sl + k0 * l_all) / (cnt + k0)
        mg, vg = _gamma_fit(mean_g, log_g)
        ok = (cnt > 0) & np.isfinite(mg) & np.isfinite(vg) & (mg > 0)
        sel = np.flatnonzero((g >= 0) & (g < cnt.shape[0]))
        sel = sel[ok[g[sel]]]
        pm[sel] = mg[g[sel]]
        pv[sel] = np.maximum(vg[g[sel]], 1e-6 * pm[sel] ** 2)
        return pm, pv


def _gamma_fit(mean, mean_log):
    """Gamma (m, V) of greatest expected log-density given E[Δ] and E[log Δ] (Minka 2002's closed
    approximation of the shape a from s = log E[Δ] − E[log Δ], within 1.5%); V = m²/a."""
    mean = np.asarray(mean, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.maximum(np.log(mean) - mean_log, 1e-9)
        a = (3.0 - s + np.sqrt((s - 3.0) ** 2 + 24.0 * s)) / (12.0 * s)
        v = mean * mean / a
    if v.ndim == 0:
        return float(mean), float(v)
    return mean, v


def page_posterior(
    changed: ArrayLike,
    tau: ArrayLike,
    prior_mean: float,
    prior_var: float,
    *,
    level: float = 0.9,
    n_grid: int = 400,
) -> dict[str, float]:
    """Posterior of one page's Δ under a Gamma prior of mean ``prior_mean`` and variance ``prior_var``.

    The exact likelihood of each visit (P(change) = 1 − e^{−Δτ}, seed 001 eq. (15)) times the
    prior, on a logarithmic grid of ``n_grid`` rates over 8 decades around the prior mean.

    Parameters
    ----------
    changed : array of bool, shape (k,)
    tau : array of float, shape (k,)
        Days since the previous visit, > 0.
    prior_mean, prior_var : float
        m (changes per day) and V ((changes per day)²), both > 0.
    level : float, default=0.9
        Probability of the central credible interval.

    Returns
    -------
    dict
        ``mean``, ``sd``, ``low``, ``high`` (changes per day) and ``learned``: 1 − posterior variance
        / prior variance, the share of the prior's uncertainty the page's own visits removed (0 with
        no visit, towards 1 as they accumulate).

    Raises
    ------
    ValueError
        If the shapes differ, a τ is not > 0, or the prior's moments are not finite and > 0.

    Examples
    --------
    >>> p = page_posterior([], [], 1.0, 1.0)
    >>> round(p["mean"], 2), round(p["learned"], 2)
    (1.0, 0.0)
    >>> page_posterior([True] * 10, [1.0] * 10, 1.0, 1.0)["mean"] > 2.0
    True
    """
    changed = np.asarray(changed, dtype=bool).ravel()
    tau = np.asarray(tau, dtype=np.float64).ravel()
    if changed.shape != tau.shape:
        raise ValueError(f"changed and tau must have one shape; got {changed.shape}, {tau.shape}")
    if tau.size and not (np.isfinite(tau).all() and (tau > 0).all()):
        raise ValueError("tau must be finite and > 0 days")
    if not (
        np.isfinite(prior_mean) and prior_mean > 0 and np.isfinite(prior_var) and prior_var > 0
    ):
        raise ValueError(
            f"prior mean and variance must be finite and > 0; got {prior_mean!r}, {prior_var!r}"
        )
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1); got {level!r}")
    grid = prior_mean * np.logspace(-4.0, 4.0, n_grid)
    a, b = prior_mean**2 / prior_var, prior_mean / prior_var
    lw = a * np.log(grid) - b * grid
    if tau.size:
        tc = tau[changed]
        lw = lw + np.log(-np.expm1(-np.outer(grid, tc))).sum(axis=1) - grid * tau[~changed].sum()
    w = np.exp(lw - lw.max())
    w /= w.sum()
    mean = float(w @ grid)
    var = max(float(w @ (grid * grid)) - mean * mean, 0.0)
    cdf = np.cumsum(w)
    low = float(grid[min(int((cdf < (1 - level) / 2).sum()), n_grid - 1)])
    high = float(grid[min(int((cdf < (1 + level) / 2).sum()), n_grid - 1)])
    return {
        "mean": mean,
        "sd": var**0.5,
        "low": low,
        "high": high,
        "learned": float(min(max(1.0 - var / prior_var, 0.0), 1.0)),
    }
