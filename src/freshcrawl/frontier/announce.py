"""Change announcements in the live crawl: what they mean, how far each source is trusted, and the plan.

Sitemaps (``<lastmod>``), feeds (entry dates), REST clients (``POST /announcements``) and URLFrontier
clients (a discovered URL's ``sitemap.lastModified`` or ``feed.publishedDate``) announce that a page
changed at a time. An announcement newer than the page's last announcement from the same source is
logged; when it is newer than the page's copy, it is a change at that time.

Meaning and evidence. A visit that gives an observation (changed or unchanged since the copy of time
t0, at time t) is judged against each source that lists the page:

- the source announced a change in (t0, t] and the visit found one: **confirmed**;
- it announced one and the visit found the page unchanged: **refuted** (a ``lastmod`` bumped on every
  render);
- the visit found a change the source did not announce, and the source has been read since
  (:attr:`Announcer.horizon`; a source that pushes is given :data:`PUSH_GRACE_S`) without announcing
  a later change (a sitemap keeps only the last one): **missed** (a ``lastmod`` never updated).

An announcement dated more than :data:`FUTURE_SLACK_S` after it was received counts as **future** and
is not a change. Announcements within :data:`EDGE_S` seconds of t0 or t count in favour of the source
(the clocks of the site and of the crawl need not agree to the second).

Trust, per source and host (:func:`judge_trust`): ``learning`` until :data:`MIN_JUDGED` visits have
been judged, then ``trusted`` when at least :data:`MIN_SHARE` of its announcements were confirmed and
of the changes found were announced, ``demoted`` otherwise (or after :data:`MAX_FUTURE` dates in the
future), each state with its reason.

The plan (Kolobov et al., NeurIPS 2019, the mixed problem of LambdaCrawl): a page listed by a trusted
source is completely observed. Its Δ is estimated from the announcements (a Gamma-Poisson mean: the
announced changes since the source first listed it plus one, over the days since plus the prior's
mean interval, the prior a sitemap's ``changefreq`` or the page's Δ̂), and the allocation's rate
p_i <= Δ_i for it is spent following its announced changes, each with probability ρ_i = p_i / Δ_i.
Periodic audits at ``AUDIT_SHARE p_i`` keep judging the source (a source that stops announcing is
caught by them); the budget of the next plan leaves them out. A source's own page (the sitemap, the
feed) is planned like any page, with the weight of the pages it lists and their mean Δ
(:meth:`Announcer.source_delta`; its own weight where it is demoted): reading it costs budget and
obeys the same politeness. ``changefreq`` and ``priority`` only set priors: Δ's prior mean
(:data:`~freshcrawl.crawler.announcements.CHANGEFREQ_PER_DAY`, clamped to
[:data:`CHANGEFREQ_MIN`, :data:`CHANGEFREQ_MAX`] changes per day) and a weight factor
``clip(2 priority, 0.5, 2)``.

The announcement log and the source reads are in the store; the trust counts are saved at every plan
(a crash loses the judgements of the last period at most).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from freshcrawl.policies.base import AUDIT_SHARE
from freshcrawl.units import SECONDS_PER_DAY

__all__ = [
    "AUDIT_SHARE",
    "EDGE_S",
    "FUTURE_SLACK_S",
    "MAX_FUTURE",
    "MIN_JUDGED",
    "MIN_SHARE",
    "PUSH_GRACE_S",
    "Announcer",
    "Tally",
    "judge_trust",
]

#: Least visits judged before a source is trusted or demoted on a host.
MIN_JUDGED = 4
#: Least share of confirmed announcements, and of announced changes, of a trusted source.
MIN_SHARE = 0.75
#: Dates in the future (beyond :data:`FUTURE_SLACK_S`) after which a source is demoted on a host.
MAX_FUTURE = 3
#: Seconds an announced time may lie after its reception before it counts as in the future.
FUTURE_SLACK_S = 600.0
#: Seconds around a visit's interval within which an announcement counts for the source.
EDGE_S = 1.0
#: Seconds a pushing source (REST, gRPC) is given to announce a change a visit found.
PUSH_GRACE_S = 60.0
#: Bounds of the change-rate prior a ``changefreq`` gives, changes per day.
CHANGEFREQ_MIN, CHANGEFREQ_MAX = 1.0 / 3650, 24.0 * 60


@dataclass(slots=True)
class Tally:
    """Evidence about one source on one host: visits that confirmed or refuted an announcement,
    changes it missed, dates in the future."""

    confirmed: int = 0
    refuted: int = 0
    missed: int = 0
    future: int = 0


def judge_trust(t: Tally) -> tuple[str, str]:
    """``(state, reason)`` of a source on a host from its evidence (module docstring).

    Examples
    --------
    >>> judge_trust(Tally(confirmed=5))
    ('trusted', '5 of 5 announcements confirmed by visits; 5 of 5 changes found were announced')
    >>> judge_trust(Tally(confirmed=1, refuted=6))[0]
    'demoted'
    >>> judge_trust(Tally(confirmed=1))
    ('learning', '1 of 4 visits judged')
    """
    announced = t.confirmed + t.refuted
    found = t.confirmed + t.missed
    n = t.confirmed + t.refuted + t.missed
    shares = (
        f"{t.confirmed} of {announced} announcements confirmed by visits; "
        f"{t.confirmed} of {found} changes found were announced"
    )
    if t.future >= MAX_FUTURE:
        return (
            "demoted",
            f"{t.future} announcements dated in the future (more than {FUTURE_SLACK_S:g} s after they were read)",
        )
    if n < MIN_JUDGED:
        return "learning", f"{n} of {MIN_JUDGED} visits judged"
    if announced and t.confirmed < MIN_SHARE * announced:
        return "demoted", f"announces changes that visits do not find: {shares}"
    if found and t.confirmed < MIN_SHARE * found:
        return "demoted", f"misses changes that visits find: {shares}"
    return "trusted", shares


@dataclass(slots=True)
class _PageAnn:
    """One page's announcements: per source the announced times (increasing) and when it first listed
    the page."""

    times: dict[str, list[float]] = field(default_factory=dict)
    listed_at: dict[str, float] = field(default_factory=dict)


class Announcer:
    """The announcement state of a crawl, indexed like the frontier's pages (page id - 1).

    Parameters
    ----------
    rng : numpy.random.Generator
        Randomness of the decision to follow an announced change (probability ρ_i).

    Attributes
    ----------
    sources : dict of int to (str, str)
        Page index of each source -> (kind, name): ``("sitemap", "sitemap:<url>")``.
    horizon : dict of str to float
        Per source, the time (seconds since the epoch) up to which it has told what it knows: its
        last read.
    tally : dict of (str, int) to Tally
        Evidence per (source, host index).
    state : dict of (str, int) to (str, str)
        (state, reason) per (source, host index), as of the last :meth:`refresh`.
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.sources: dict[int, tuple[str, str]] = {}
        self.horizon: dict[str, float] = {}
        self.pages: dict[int, _PageAnn] = {}
        self.tally: dict[tuple[str, int], Tally] = {}
        self.state: dict[tuple[str, int], tuple[str, str]] = {}
        self.hints: dict[int, tuple[str | None, float | None]] = {}
        #: changed visits waiting for their sources' horizon: (page, host, source, t0, t)
        self.pending: list[tuple[int, int, str, float, float]] = []
        #: per page: the rate following announcements (visits/day) and Δ of the plan in force
        self.follow_p: dict[int, float] = {}
        self.complete_delta: dict[int, float] = {}
        self.last_followed: dict[int, float] = {}
        #: visits per day of the audits of completely observed pages in the plan in force
        self.audit_rate = 0.0
        self.dirty: set[tuple[str, int]] = set()

    # loading ----------------------------------------------------------------------------------
    def load(
        self,
        source_rows: Iterable[dict],
        log: Iterable[tuple],
        trust_rows: Iterable[dict],
        hints: dict[int, tuple[str | None, float | None]],
    ) -> None:
        """Take the store's sources, announcement log, trust rows and hints (a frontier's start)."""
        for r in source_rows:
            self.sources[r["page_id"] - 1] = (r["kind"], f"{r['kind']}:{r['url']}")
            if r["read_at"] is not None:
                self.horizon[f"{r['kind']}:{r['url']}"] = float(r["read_at"])
        for page_id, source, changed_at, received_at, note in log:
            pa = self.pages.setdefault(page_id - 1, _PageAnn())
            pa.listed_at.setdefault(source, float(received_at))
            if note != "future":
                pa.times.setdefault(source, []).append(float(changed_at))
        for times in (t for pa in self.pages.values() for t in pa.times.values()):
            times.sort()
        for r in trust_rows:
            key = (r["source"], r["host_id"] - 1)
            self.tally[key] = Tally(r["n_confirmed"], r["n_refuted"], r["n_missed"], r["n_future"])
            self.state[key] = (r["state"], r["reason"] or "")
        self.hints.update({k - 1: v for k, v in hints.items()})

    def sync_sources(self, source_rows: Iterable[dict]) -> None:
        """Take in sources added since (by another process, or a sitemap index)."""
        for r in source_rows:
            self.sources.setdefault(r["page_id"] - 1, (r["kind"], f"{r['kind']}:{r['url']}"))

    # announcements ----------------------------------------------------------------------------
    def list_page(self, k: int, source: str, now: float) -> None:
        """Note that ``source`` lists page ``k`` (from ``now`` on, if not before)."""
        self.pages.setdefault(k, _PageAnn()).listed_at.setdefault(source, now)

    def announce(
        self,
        k: int,
        host: int,
        source: str,
        changed_at: float,
        received_at: float,
        last_copy: float,
    ) -> str | None:
        """Take one announcement of page ``k`` (host index ``host``); return its note for the log.

        Returns ``"new"`` for a change newer than the source's last one for the page, ``"future"`` for
        a date in the future, None for one already known (not logged again).
        """
        pa = self.pages.setdefault(k, _PageAnn())
        pa.listed_at.setdefault(source, received_at)
        if changed_at > received_at + FUTURE_SLACK_S:
            self.tally.setdefault((source, host), Tally()).future += 1
            self.dirty.add((source, host))
            return "future"
        times = pa.times.setdefault(source, [])
        if times and changed_at <= times[-1]:
            return None
        times.append(changed_at)
        return "new"

    def should_follow(
        self, k: int, host: int, source: str, changed_at: float, last_copy: float
    ) -> bool:
        """Whether to visit page ``k`` now for a change announced at ``changed_at``: the source is
        trusted on the host, the change is newer than the copy and than the last change followed, and
        a draw falls below ρ_k."""
        if self.state.get((source, host), ("learning", ""))[0] != "trusted":
            return False
        if not (changed_at > (last_copy if not math.isnan(last_copy) else math.inf)):
            return False
        if changed_at <= self.last_followed.get(k, -math.inf):
            return False
        p, delta = self.follow_p.get(k, 0.0), self.complete_delta.get(k, 0.0)
        if p <= 0 or delta <= 0:
            return False
        self.last_followed[k] = changed_at
        return bool(self.rng.random() < min(1.0, p / delta))

    def catch_up(self, last_copy: NDArray[np.float64], hosts: NDArray[np.intp]) -> list[int]:
        """Pages of the new plan to visit now: completely observed ones whose last change announced
        by a trusted source is newer than their copy and was not followed yet (announced before the
        source was trusted, or before the page joined the plan), each drawn with probability ρ."""
        out = []
        for k in self.follow_p:
            pa = self.pages.get(k)
            if pa is None:
                continue
            for source, times in pa.times.items():
                if times and self.should_follow(
                    k, int(hosts[k]), source, times[-1], float(last_copy[k])
                ):
                    out.append(k)
                    break
        return out

    # evidence ---------------------------------------------------------------------------------
    def on_visit(self, k: int, host: int, t0: float, t: float, changed: bool) -> None:
        """Judge a visit of page ``k`` at ``t`` (seconds) that compared with the copy of ``t0``."""
        pa = self.pages.get(k)
        if pa is None:
            return
        for source, listed in pa.listed_at.items():
            if listed > t0:
                continue  # the source did not list the page over the whole interval
            times = pa.times.get(source, [])
            if changed:
                if _any_in(times, t0 - EDGE_S, t + EDGE_S):
                    self._count(source, host, "confirmed")
                else:
                    self.pending.append((k, host, source, t0, t))
            elif _any_in(times, t0 + EDGE_S, t - EDGE_S):
                self._count(source, host, "refuted")

    def _count(self, source: str, host: int, what: str) -> None:
        tally = self.tally.setdefault((source, host), Tally())
        setattr(tally, what, getattr(tally, what) + 1)
        self.dirty.add((source, host))

    def resolve(self, now: float) -> None:
        """Judge the changed visits whose sources have spoken since: announced late, or missed."""
        keep = []
        for k, host, source, t0, t in self.pending:
            horizon = (
                self.horizon.get(source, now - PUSH_GRACE_S)
                if source.partition(":")[0] in ("sitemap", "feed")
                else now - PUSH_GRACE_S
            )
            if horizon < t + EDGE_S:
                keep.append((k, host, source, t0, t))
                continue
            times = self.pages[k].times.get(source, [])
            if _any_in(times, t0 - EDGE_S, t + EDGE_S):
                self._count(source, host, "confirmed")
            elif not (times and times[-1] > t + EDGE_S):  # a later change would hide this one
                self._count(source, host, "missed")
        self.pending = keep

    def refresh(self, now: float) -> list[dict]:
        """Resolve what can be, re-judge the sources whose evidence changed; return their trust rows."""
        self.resolve(now)
        rows = []
        for key in sorted(self.dirty):
            tally = self.tally[key]
            self.state[key] = judge_trust(tally)
            rows.append(
                {
                    "source": key[0],
                    "host_id": key[1] + 1,
                    "n_confirmed": tally.confirmed,
                    "n_refuted": tally.refuted,
                    "n_missed": tally.missed,
                    "n_future": tally.future,
                    "state": self.state[key][0],
                    "reason": self.state[key][1],
                    "updated_at": now,
                }
            )
        self.dirty.clear()
        return rows

    # the plan ---------------------------------------------------------------------------------
    def completely_observed(
        self, n: int, hosts: NDArray[np.intp], delta_hat: NDArray[np.float64] | None, now: float
    ) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
        """Pages listed by a source trusted on their host, and their Δ from the announcements.

        Returns
        -------
        complete : ndarray of bool, shape (n,)
        delta : ndarray of float, shape (n,)
            Changes per day (0 where not complete).
        """
        complete = np.zeros(n, dtype=bool)
        delta = np.zeros(n)
        for k, pa in self.pages.items():
            if k >= n:
                continue
            best = None
            for source, listed in pa.listed_at.items():
                if self.state.get((source, int(hosts[k])), ("", ""))[0] != "trusted":
                    continue
                times = pa.times.get(source, [])
                n_ann = len(times) - int(np.searchsorted(times, listed, side="left"))
                span = max(now - listed, 0.0) / SECONDS_PER_DAY
                best = max(best or 0.0, self._posterior(k, n_ann, span, delta_hat))
            if best is not None:
                complete[k] = True
                delta[k] = best
        return complete, delta

    def _posterior(
        self, k: int, n_ann: int, span_days: float, delta_hat: NDArray[np.float64] | None
    ) -> float:
        freq = self.hints.get(k, (None, None))[0]
        from freshcrawl.crawler.announcements import CHANGEFREQ_PER_DAY

        if freq in CHANGEFREQ_PER_DAY:
            prior = min(max(CHANGEFREQ_PER_DAY[freq], CHANGEFREQ_MIN), CHANGEFREQ_MAX)
        elif (
            delta_hat is not None
            and k < delta_hat.shape[0]
            and np.isfinite(delta_hat[k])
            and delta_hat[k] > 0
        ):
            prior = float(delta_hat[k])
        else:
            prior = 1.0
        return (n_ann + 1.0) / (span_days + 1.0 / prior)

    def source_delta(
        self,
        n: int,
        hosts: NDArray[np.intp],
        delta_hat: NDArray[np.float64] | None,
        complete_delta: NDArray[np.float64],
    ) -> NDArray[np.float64]:
        """The Δ to plan each source page with: the mean Δ of the pages it lists on hosts where it is
        not demoted (their announced Δ where complete, else their Δ̂), or of all the pages it lists
        where it is demoted everywhere (it is then planned as one page of its host, with its own
        weight); NaN for other pages and where none is known. Changes per day, shape (n,).

        A source's own visits are not taught to the estimator (it changes with every page it lists:
        its rate is no page's rate), so this is the only Δ it is planned with."""
        out = np.full(n, np.nan)
        if not self.sources:
            return out
        sums: dict[str, list[float]] = {}
        demoted: dict[str, list[float]] = {}
        for k, pa in self.pages.items():
            if k >= n:
                continue
            d = (
                complete_delta[k]
                if complete_delta[k] > 0
                else (np.nan if delta_hat is None or k >= delta_hat.shape[0] else delta_hat[k])
            )
            if not np.isfinite(d):
                continue
            for source in pa.listed_at:
                is_demoted = self.state.get((source, int(hosts[k])), ("", ""))[0] == "demoted"
                acc = (demoted if is_demoted else sums).setdefault(source, [0.0, 0.0])
                acc[0] += d
                acc[1] += 1
        for k, (_, name) in self.sources.items():
            acc = sums.get(name) or demoted.get(name)
            if k < n and acc:
                out[k] = acc[0] / acc[1]
        return out

    def weights(self, base: NDArray[np.float64], hosts: NDArray[np.intp]) -> NDArray[np.float64]:
        """Planning weights: ``priority`` factors applied, and each source page weighing the pages it
        lists on hosts where it is not demoted (planned with their mean Δ, :meth:`source_delta`)."""
        w = base.copy()
        for k, (_, prio) in self.hints.items():
            if prio is not None and k < w.shape[0]:
                w[k] *= min(max(2.0 * prio, 0.5), 2.0)
        if not self.sources:
            return w
        by_source: dict[str, float] = {}
        for k, pa in self.pages.items():
            if k >= w.shape[0]:
                continue
            for source in pa.listed_at:
                if self.state.get((source, int(hosts[k])), ("", ""))[0] != "demoted":
                    by_source[source] = by_source.get(source, 0.0) + w[k]
        for k, (_, name) in self.sources.items():
            if k < w.shape[0]:
                w[k] = max(base[k], by_source.get(name, 0.0))
        return w

    def split(
        self,
        rates: NDArray[np.float64],
        complete: NDArray[np.bool_] | None,
        delta: NDArray[np.float64] | None,
    ) -> NDArray[np.float64]:
        """The periodic rates of a plan: a completely observed page follows its announced changes
        (each with probability ρ_i = min(1, p_i/Δ_i), kept in :attr:`follow_p`) and is audited
        periodically at ``AUDIT_SHARE p_i`` (:attr:`audit_rate` is their sum, which the next plan's
        budget leaves out); other pages keep their rates."""
        self.follow_p.clear()
        self.complete_delta.clear()
        self.audit_rate = 0.0
        if complete is None or delta is None or not complete.any():
            return rates
        periodic = rates.copy()
        idx = np.flatnonzero(complete)
        periodic[idx] = AUDIT_SHARE * rates[idx]
        self.audit_rate = float(periodic[idx].sum())
        for k in idx.tolist():
            self.follow_p[k] = float(rates[k])
            self.complete_delta[k] = float(delta[k])
        return periodic

    def page_state(self, k: int, host: int) -> list[tuple[str, str, str]]:
        """(source, state, reason) of each source listing page ``k``."""
        pa = self.pages.get(k)
        if pa is None:
            return []
        return [
            (s, *self.state.get((s, host), ("learning", f"0 of {MIN_JUDGED} visits judged")))
            for s in sorted(pa.listed_at)
        ]


def _any_in(times: list[float], lo: float, hi: float) -> bool:
    """Whether a sorted list holds a time in (lo, hi]."""
    i = int(np.searchsorted(times, lo, side="right"))
    return i < len(times) and times[i] <= hi
