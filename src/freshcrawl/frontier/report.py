"""What a crawl looks like, read from its store: ``crawl status`` and ``crawl explain``.

Both return plain dicts (JSON-ready); the command line prints them as tables, the frontier service
serves them as they are.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import brentq
from sqlalchemy import func, select

from freshcrawl.crawler.urls import normalize_url
from freshcrawl.store import Store
from freshcrawl.store.schema import hosts, pages
from freshcrawl.units import SECONDS_PER_DAY

__all__ = [
    "announcement_status",
    "crawl_status",
    "delta_interval",
    "expected_freshness",
    "explain_page",
    "page_announcements",
]


def expected_freshness(p: NDArray[np.float64], delta: NDArray[np.float64]) -> NDArray[np.float64]:
    """Expected freshness of pages visited periodically at rate p with change rate Δ (same unit).

    ``(p/Δ)(1 - e^{-Δ/p})`` (Cho & Garcia-Molina 2003); 1 when Δ = 0, 0 when p = 0 < Δ.

    Examples
    --------
    >>> expected_freshness(np.array([1.0, 0.0, 2.0]), np.array([1.0, 1.0, 0.0])).round(4).tolist()
    [0.6321, 0.0, 1.0]
    """
    p = np.asarray(p, dtype=np.float64)
    delta = np.asarray(delta, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = delta / p
        f = -np.expm1(-x) / x
    return np.where(delta <= 0, 1.0, np.where(p > 0, f, 0.0))


def delta_interval(changed: NDArray[np.bool_], tau: NDArray[np.float64], level: float = 0.95) -> tuple[float, float]:
    """Likelihood-based confidence interval of Δ from changed / unchanged visits (changes per day).

    The log-likelihood of Bernoulli observations with P(I=1) = 1 - e^{-Δτ} (seed 001, eq. (15)) is
    cut at its maximum minus χ²₁(level)/2. With no change seen the lower end is 0; with only changes
    the upper end is inf.

    Parameters
    ----------
    changed : ndarray of bool, shape (m,)
    tau : ndarray of float, shape (m,)
        Days since the previous visit, > 0.
    level : float, default=0.95

    Returns
    -------
    (low, high) : tuple of float
        ``(nan, nan)`` when m = 0.

    Examples
    --------
    >>> lo, hi = delta_interval(np.array([True, False] * 20), np.ones(40))
    >>> round(lo, 3), round(hi, 3)
    (0.429, 1.054)
    """
    changed = np.asarray(changed, dtype=bool)
    tau = np.asarray(tau, dtype=np.float64)
    if changed.size == 0:
        return (math.nan, math.nan)
    from scipy.stats import chi2

    cut = chi2.ppf(level, 1) / 2.0
    tc, tu = tau[changed], tau[~changed]
    sum_u = float(tu.sum())

    def loglik(d: float) -> float:
        return float(np.log(-np.expm1(-d * tc)).sum()) - d * sum_u

    if tc.size == 0:  # L(Δ) = -Δ Σ τ, maximum at 0
        return (0.0, cut / sum_u)
    lo_b, hi_b = 1e-12 / float(tau.max()), 1e6 / float(tau.min())
    if tu.size == 0:  # increasing in Δ: only a lower end
        top = loglik(hi_b)
        return (brentq(lambda d: loglik(d) - (top - cut), lo_b, hi_b), math.inf)
    from freshcrawl.estimators.mle import solve_mle

    mle = solve_mle(changed, tau)
    top = loglik(mle)
    g = lambda d: loglik(d) - (top - cut)
    low = brentq(g, lo_b, mle) if g(lo_b) < 0 else 0.0
    high = brentq(g, mle, hi_b) if g(hi_b) < 0 else math.inf
    return (low, high)


def _rate_posterior(prior: dict | None, page: dict, changed: NDArray[np.bool_], tau: NDArray[np.float64],
                    low: float, high: float) -> dict[str, Any] | None:
    """The page's posterior of Δ under its host's prior saved with the last plan (None without one)."""
    if not prior:
        return None
    mv = (prior.get("hosts") or {}).get(str(page["host_id"]))
    if mv is None or not (mv[0] > 0 and mv[1] > 0):
        return None
    from freshcrawl.estimators.posterior import page_posterior

    m, v = float(mv[0]), float(mv[1])
    post = page_posterior(changed, tau, m, v)
    learning = post["learned"] < 0.5
    own = "no visit compared yet" if changed.size == 0 else (
        f"its own {changed.size} visit(s) ({int(changed.sum())} changed; alone they give "
        f"[{low:.3g}, {high:.3g}] at 95%)")
    summary = (
        f"planned on Δ = {post['mean']:.3g}/day, the posterior mean given its host's prior "
        f"{m:.3g} ± {v ** 0.5:.3g}/day and {own}; its visits removed {100 * post['learned']:.0f}% "
        f"of the prior's variance"
        + ("; still being learned: the plan leans on the prior" if learning else "")
    )
    return {"prior_mean": m, "prior_sd": v**0.5, "mean": post["mean"], "sd": post["sd"],
            "interval": [post["low"], post["high"]], "learned": post["learned"], "learning": learning,
            "summary": summary}


def crawl_status(store: Store, *, now: float | None = None) -> dict[str, Any]:
    """Pages, hosts, estimated freshness, what is due and the errors of a crawl.

    Returns
    -------
    dict
        ``pages`` (by status), ``hosts``, ``observations`` (by outcome), ``estimated_freshness``
        (weighted mean over active pages with an estimate, periodic visits), ``due_now``,
        ``budget`` and ``budget_in_use`` (visits per day), ``planned_at``, ``hosts_in_backoff``,
        ``failed_pages`` (at most 20: url and last error), ``settings``,
        ``reports_without_outcome`` (reports of leased URLs that carried no fetch outcome, counted by
        the URLFrontier service), ``warnings`` (texts for the operator) and ``announcements``
        (:func:`announcement_status`).
    """
    now = time.time() if now is None else float(now)
    counts = store.counts()
    settings = store.settings()
    crawl_settings = settings.get("settings", {})
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(pages.c.weight, pages.c.rate, pages.c.delta_hat).where(
                pages.c.status == "active", pages.c.delta_hat.is_not(None)
            )
        ).all()
        due_now = conn.execute(
            select(func.count()).select_from(pages).where(pages.c.status == "active", pages.c.next_due <= now)
        ).scalar_one()
        in_use = conn.execute(select(func.coalesce(func.sum(pages.c.rate), 0.0))).scalar_one()
        backoff = conn.execute(
            select(func.count()).select_from(hosts).where(hosts.c.backoff_until > now)
        ).scalar_one()
        failed = conn.execute(
            select(pages.c.url, pages.c.last_error, pages.c.n_errors).where(pages.c.status == "failed").limit(20)
        ).all()
    fresh = None
    if rows:
        w, p, d = (np.array(c, dtype=np.float64) for c in zip(*rows))
        if w.sum() > 0:
            fresh = float((w * expected_freshness(p, d)).sum() / w.sum())
    warnings = []
    no_outcome = settings.get("reports_without_outcome") or {}
    if no_outcome.get("count"):
        warnings.append(
            f"{no_outcome['count']} report(s) carried no fetch outcome (no HTTP status, no error), the "
            f"last for {no_outcome.get('last_url')}: nothing was learned from them; a StormCrawler "
            "client must list fetch.statusCode and signature in metadata.persist"
        )
    return {
        "pages": counts["pages"],
        "n_pages": int(sum(counts["pages"].values())),
        "hosts": counts["hosts"],
        "observations": counts["observations"],
        "estimated_freshness": fresh,
        "due_now": int(due_now),
        "budget": crawl_settings.get("budget"),
        "budget_in_use": float(in_use),
        "planned_at": settings.get("planned_at"),
        "hosts_in_backoff": int(backoff),
        "failed_pages": [{"url": u, "last_error": e, "errors_in_a_row": n} for u, e, n in failed],
        "announcements": announcement_status(store),
        "settings": crawl_settings,
        "reports_without_outcome": int(no_outcome.get("count", 0)),
        "warnings": warnings,
    }


def explain_page(store: Store, url: str, *, now: float | None = None, last: int = 20) -> dict[str, Any]:
    """Why a page is visited as it is: observations, Δ̂ with its interval, rate, next visit, limits.

    Parameters
    ----------
    url : str
        The page's URL (normalised before the look-up).
    last : int, default=20
        Most recent observations listed.

    Returns
    -------
    dict
        ``url``, ``status``, ``weight``, ``delta_hat`` (changes per day) and ``delta_interval`` (95%),
        ``n_observations``, ``n_changes``, ``rate`` (visits per day), ``next_due`` (seconds since the
        epoch), ``rate_posterior`` (how uncertain Δ is and what the plan made of it, see below; None
        when the crawl's policy plans on no prior), ``observations`` (the last ones, newest first),
        ``limits``: what bounds this page's visits (``budget``, ``host_cap``, ``backoff``,
        ``robots``, ``errors``), each with its numbers.

        ``rate_posterior`` holds ``prior_mean`` and ``prior_sd`` (the empirical-Bayes gamma prior of
        the page's host at the last plan, changes per day), ``mean``, ``sd`` and the 90%
        ``interval`` of the posterior given the page's own visits
        (:func:`freshcrawl.estimators.posterior.page_posterior`, recomputed from the page's log: the
        rate the plan allocates on is its mean),
        ``learned`` (the share of the prior's variance the page's visits removed), ``learning``
        (True while that share is below one half: the plan leans on the prior more than on the
        page) and ``summary``, one sentence.

    Raises
    ------
    KeyError
        If the URL is not in the crawl.
    ValueError
        If the URL is malformed.
    """
    now = time.time() if now is None else float(now)
    key = normalize_url(url)
    page = store.page_by_url(key)
    if page is None:
        raise KeyError(f"{key} is not in this crawl")
    host = store.host_row(page["host_id"])
    log = store.observation_log(page_id=page["id"])
    learn = [r for r in log if r["outcome"] in ("changed", "unchanged") and r["tau_days"]]
    changed = np.array([r["outcome"] == "changed" for r in learn], dtype=bool)
    tau = np.array([r["tau_days"] for r in learn], dtype=np.float64)
    low, high = delta_interval(changed, tau)
    settings = store.settings().get("settings", {})
    with store.engine.connect() as conn:
        host_rate = conn.execute(
            select(func.coalesce(func.sum(pages.c.rate), 0.0)).where(pages.c.host_id == page["host_id"])
        ).scalar_one()
    min_delay = settings.get("min_delay_s", 1.0) if host["min_delay_s"] is None else host["min_delay_s"]
    delay = max(min_delay, host["crawl_delay_s"] or 0.0)
    cap = SECONDS_PER_DAY / delay if delay > 0 else math.inf
    per_day = settings.get("max_per_host_day") if host["max_per_day"] is None else host["max_per_day"]
    if per_day is not None:
        cap = min(cap, per_day)
    limits: dict[str, Any] = {
        "budget": {"budget": settings.get("budget"), "policy": settings.get("policy"),
                   "objective": settings.get("objective")},
        "host_cap": {"host": host["origin"], "delay_s": delay, "cap_per_day": cap,
                     "host_rate_per_day": float(host_rate),
                     "binding": bool(math.isfinite(cap) and host_rate >= cap * (1 - 1e-9))},
        "backoff": {"until": host["backoff_until"],
                    "active": bool(host["backoff_until"] is not None and host["backoff_until"] > now),
                    "in_a_row": host["n_backoff"]},
        "robots": {"status": host["robots_status"], "fetched_at": host["robots_fetched_at"],
                   "crawl_delay_s": host["crawl_delay_s"], "disallowed": page["status"] == "disallowed"},
        "errors": {"in_a_row": page["n_errors"], "total": page["n_errors_total"],
                   "last": page["last_error"], "failed": page["status"] == "failed"},
    }
    posterior = _rate_posterior(store.settings().get("rate_prior"), page, changed, tau, low, high)
    recent = [
        {k: r[k] for k in ("time", "outcome", "status", "tau_days", "n_bytes", "elapsed_s", "why", "source")}
        for r in reversed(log[-last:])
    ]
    return {
        "url": page["url"],
        "status": page["status"],
        "weight": page["weight"],
        "added_at": page["added_at"],
        "last_visit_at": page["last_visit_at"],
        "delta_hat": page["delta_hat"],
        "delta_interval": [low, high],
        "n_observations": int(changed.size),
        "n_changes": int(changed.sum()),
        "rate": page["rate"],
        "expected_freshness": (
            None if page["delta_hat"] is None
            else float(expected_freshness(np.array(page["rate"]), np.array(page["delta_hat"])))
        ),
        "next_due": page["next_due"],
        "rate_posterior": posterior,
        "observations": recent,
        "n_log_rows": len(log),
        "limits": limits,
        "announcements": page_announcements(store, page["id"], page["host_id"]),
    }



def announcement_status(store: Store) -> dict[str, Any]:
    """The crawl's sources and the trust in each source on each host.

    Returns
    -------
    dict
        ``sources``: each sitemap or feed read by the crawl (url, kind, how it joined, last read,
        URLs listed, whether a limit cut it, what the read said); ``trust``: per source and host, the
        state (``learning``, ``trusted``: its pages are completely observed; ``demoted``: they are
        ordinary pages), the reason and the evidence counts.
    """
    sources = [
        {k: r[k] for k in ("url", "kind", "how", "read_at", "n_entries", "why")} | {"truncated": bool(r["truncated"])}
        for r in store.source_rows()
    ]
    trust = [
        {k: r[k] for k in ("source", "origin", "state", "reason", "n_confirmed", "n_refuted", "n_missed", "n_future")}
        for r in store.trust_rows()
    ]
    return {"sources": sources, "trust": trust}


def page_announcements(store: Store, page_id: int, host_id: int, *, last: int = 10) -> dict[str, Any]:
    """A page's last announcements and the trust in each source that announced it (its host's)."""
    from freshcrawl.store.schema import announcements

    a = announcements.c
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(a.source, a.changed_at, a.received_at, a.note)
            .where(a.page_id == page_id).order_by(a.id.desc()).limit(last)
        ).all()
        names = set(conn.execute(select(a.source).where(a.page_id == page_id).distinct()).scalars())
    trust = [
        {k: r[k] for k in ("source", "state", "reason", "n_confirmed", "n_refuted", "n_missed", "n_future")}
        for r in store.trust_rows(host_id) if r["source"] in names
    ]
    if not trust and names:
        trust = [{"source": n, "state": "learning", "reason": "no visit judged yet", "n_confirmed": 0,
                  "n_refuted": 0, "n_missed": 0, "n_future": 0} for n in sorted(names)]
    complete = any(t["state"] == "trusted" for t in trust)
    return {
        "completely_observed": complete,
        "sources": trust,
        "recent": [{"source": s, "changed_at": c, "received_at": r, "note": n} for s, c, r, n in rows],
    }
