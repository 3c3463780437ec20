"""Announcements in the replay: a share of a history's pages tell the policy when they changed.

Many sites announce their changes (sitemaps, feeds, pings); a page whose every change is announced is
*completely observed* (Kolobov et al., NeurIPS 2019, the mixed problem of LambdaCrawl). In the replay
(:func:`freshcrawl.simulation.simulate` with ``announce=``), a share of the pages, drawn at random,
announce their true change times from the history, optionally late (``delay``), with some changes not
announced (``miss``) and with announcements of changes that did not happen (``false``, spread
uniformly over the page's life in the window).

The policy plans as the live crawl does (:mod:`freshcrawl.frontier.announce`), trust aside (every
announcing page is taken at its word): at each plan an announcing page is completely observed; the
allocation's rate p_i <= Δ_i is spent following a share ρ_i = min(1, p_i/Δ_i) of its announced
changes (each drawn; an announced change older than the page's copy or than the last one drawn for
is not), plus periodic audits at :data:`~freshcrawl.policies.base.AUDIT_SHARE` p_i whose total
the next plan's budget leaves out. A visit made for an announcement is no sample of the page's
change process (it finds the change by construction): it refreshes the copy and counts as a visit,
but is not taught to the policy. Δ_i is the Gamma-Poisson posterior mean of the page's announcements
so far, ``(n_i + a) / (T_i + β)``, under a gamma prior Gamma(a, β) fitted across the announcing
pages (:meth:`AnnouncedChanges.delta`; the live crawl's prior is a sitemap's ``changefreq`` or the
page's Δ̂ instead, over a span of minutes to days where a replay's runs over months).

Every visit goes through the engine's budget rule (:mod:`freshcrawl.simulation.dispatch`), so runs
with and without announcements are compared under the same bound on visits. A visit made for an
announced change takes the next token before the visits waiting (it is worth most at once), and the
visits still waiting at the end of a planning period are asked again at the next one, where a visit
for an announcement may go before them. A plan whose observed pages are all completely observed
spends at most Σ Δ_i (p_i <= Δ_i): it then makes fewer visits than the budget allows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from freshcrawl.policies.base import AUDIT_SHARE

__all__ = ["AUDIT_SHARE", "AnnouncedChanges", "Announcements"]


@dataclass(frozen=True, slots=True)
class Announcements:
    """Which pages announce their changes in a replay, and how well.

    Attributes
    ----------
    share : float
        Fraction of the pages that announce, in [0, 1] (drawn at random per run).
    delay : float, default=0.0
        Days from a change to its announcement, >= 0.
    miss : float, default=0.0
        Fraction of an announcing page's changes not announced, in [0, 1).
    false : float, default=0.0
        Announcements of changes that did not happen, per true change of the page, >= 0.

    Raises
    ------
    ValueError
        If a value is out of range.
    """

    share: float
    delay: float = 0.0
    miss: float = 0.0
    false: float = 0.0

    def __post_init__(self) -> None:
        checks = (
            ("share", self.share, 0.0 <= self.share <= 1.0, "in [0, 1]"),
            ("delay", self.delay, math.isfinite(self.delay) and self.delay >= 0, ">= 0 days"),
            ("miss", self.miss, 0.0 <= self.miss < 1.0, "in [0, 1)"),
            ("false", self.false, math.isfinite(self.false) and self.false >= 0, ">= 0 per change"),
        )
        for name, value, ok, what in checks:
            if not ok:
                raise ValueError(f"announce {name} must be {what}; got {value!r}")


class AnnouncedChanges:
    """The announcements of one replay: drawn once per run, then read period by period.

    Parameters
    ----------
    spec : Announcements
    offsets, times : ndarray
        The history's change times, page ``i``'s in ``times[offsets[i]:offsets[i+1]]`` (days).
    lo, hi : ndarray of float, shape (n_pages,)
        Each page's life inside the window, days (``lo`` its start: the window's or its birth).
    rng : numpy.random.Generator
        Draws the pages, the misses, the false announcements and then the follows.

    Attributes
    ----------
    pages : ndarray of bool, shape (n_pages,)
        The pages that announce.
    page, changed_at, received_at : ndarray, shape (m,)
        Every announcement, in order of reception (days).
    """

    def __init__(
        self,
        spec: Announcements,
        offsets: NDArray[np.int64],
        times: NDArray[np.float64],
        lo: NDArray[np.float64],
        hi: NDArray[np.float64],
        rng: np.random.Generator,
    ) -> None:
        n = lo.shape[0]
        self.spec = spec
        self.rng = rng
        self.lo = lo
        self.pages = (rng.random(n) < spec.share) & (hi > lo)
        page = np.repeat(np.arange(n), np.diff(offsets))
        inside = self.pages[page] & (times > lo[page]) & (times <= hi[page])
        page, changed = page[inside], times[inside]
        if spec.miss > 0:
            kept = rng.random(page.shape[0]) >= spec.miss
            page, changed = page[kept], changed[kept]
        received = changed + spec.delay
        if spec.false > 0:
            n_true = np.bincount(page, minlength=n) if page.size else np.zeros(n, dtype=np.int64)
            idx = np.flatnonzero(self.pages)
            n_false = rng.poisson(spec.false * np.maximum(n_true[idx], 1))
            fp = np.repeat(idx, n_false)
            ft = lo[fp] + rng.random(fp.shape[0]) * (hi[fp] - lo[fp])
            page = np.concatenate([page, fp])
            changed = np.concatenate([changed, ft])
            received = np.concatenate([received, ft + spec.delay])
        order = np.argsort(received, kind="stable")
        self.page = page[order].astype(np.intp)
        self.changed_at = changed[order]
        self.received_at = received[order]
        self._followed = np.full(n, -np.inf)  # the last announced change drawn for, per page

    def delta(self, t: float, fallback: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        """Each announcing page's Δ from its announcements received before ``t``, 0 for the others;
        changes per day, shape (n_pages,).

        The Gamma-Poisson posterior mean ``(n_i + a) / (T_i + β)`` of page i's n_i announcements in
        its T_i days since the window's start (or its birth), under the gamma prior Gamma(a, β)
        fitted across the announcing pages by the method of moments
        (:func:`freshcrawl.estimators.bursty.priors.gamma_prior`). Before that prior can be
        fitted (two pages with time behind them), an exponential prior of mean ``fallback`` (the
        plan's Δ̂; 1 change per day where it is not > 0): ``(n_i + 1) / (T_i + 1/fallback)``.
        """
        from freshcrawl.estimators.bursty.priors import gamma_prior

        n = self.lo.shape[0]
        k = int(np.searchsorted(self.received_at, t, side="left"))
        counts = np.bincount(self.page[:k], minlength=n).astype(np.float64)
        span = np.maximum(t - self.lo, 0.0)
        fit = self.pages & (span > 0)
        m, beta = np.nan, np.nan
        if fit.sum() >= 2:
            ms, betas = gamma_prior(counts[fit], span[fit], np.zeros(int(fit.sum()), dtype=np.intp))
            m, beta = float(ms[0]), float(betas[0])
        if math.isfinite(m) and m > 0 and not math.isnan(beta):
            if math.isinf(beta):  # no spread between the pages: the common rate
                return np.where(self.pages, m, 0.0)
            return np.where(self.pages, (counts + m * beta) / (span + beta), 0.0)
        f = np.ones(n) if fallback is None else np.asarray(fallback, dtype=np.float64)
        f = np.where(np.isfinite(f) & (f > 0), f, 1.0)
        return np.where(self.pages, (counts + 1.0) / (span + 1.0 / f), 0.0)

    def follow(
        self,
        t0: float,
        t1: float,
        rho: NDArray[np.float64],
        last_copy: NDArray[np.float64],
    ) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
        """Visits for the announcements received in ``[t0, t1)``: of each page with ρ > 0, every
        announced change newer than its copy (``last_copy``, days) and than the last one followed,
        drawn with probability ρ, is visited when it is received. Returns (pages, times) in time
        order."""
        a = int(np.searchsorted(self.received_at, t0, side="left"))
        b = int(np.searchsorted(self.received_at, t1, side="left"))
        page = self.page[a:b]
        sel = np.flatnonzero(rho[page] > 0)
        draws = self.rng.random(sel.shape[0])
        copy = last_copy.copy()
        out_p: list[int] = []
        out_t: list[float] = []
        for j, u in zip(sel.tolist(), draws.tolist(), strict=True):
            k = int(page[j])
            changed = float(self.changed_at[a + j])
            if changed <= copy[k] or changed <= self._followed[k]:
                continue
            self._followed[k] = changed
            if u < rho[k]:
                t = float(self.received_at[a + j])
                copy[k] = t
                out_p.append(k)
                out_t.append(t)
        return np.asarray(out_p, dtype=np.intp), np.asarray(out_t, dtype=np.float64)
