"""Sitemaps and feeds as pages of the crawl, and announcements into the frontier.

A source is a page of the crawl (planned, fetched, politely, out of the same budget) that the frontier
reads: :func:`read_source` parses the body of a visit that found it new or changed
(:mod:`freshcrawl.crawler.announcements`) and hands its dated entries to :func:`ingest`, which logs
the announcements, notes which pages each source lists, and sends the pages a trusted source says
changed to be visited now, each with the probability the plan chose (:mod:`freshcrawl.frontier.announce`).
REST and gRPC clients announce through :func:`ingest` too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from freshcrawl.frontier.limits import check_url

if TYPE_CHECKING:
    from freshcrawl.crawler.outcome import FetchOutcome
    from freshcrawl.frontier.frontier import Frontier
    from freshcrawl.store import Store

__all__ = [
    "SOURCE_KINDS",
    "IngestResult",
    "add_sources",
    "add_sources_to_store",
    "auto_sitemaps",
    "ingest",
    "read_source",
]

#: Kinds of source a crawl reads itself.
SOURCE_KINDS = ("sitemap", "feed")


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What a batch of announcements did.

    Attributes
    ----------
    n_entries : int
        Entries handed in.
    n_new : int
        Announcements logged (newer than the source's last for their page).
    n_future : int
        Dated after they were received (logged as such; evidence against the source).
    n_unknown : int
        URLs not in the crawl (or refused by the URL checks), left out.
    n_followed : int
        Pages sent to be visited now.
    """

    n_entries: int = 0
    n_new: int = 0
    n_future: int = 0
    n_unknown: int = 0
    n_followed: int = 0


def add_sources_to_store(
    store: Store,
    urls: list[str],
    kind: str,
    *,
    how: str = "user",
    now: float,
    allow_private: bool = False,
) -> list[int]:
    """Add sitemaps or feeds (``kind``) to a crawl's database as pages that are read; return their ids.

    URLs already in the crawl become sources (a page of the crawl that is also a feed). A running
    crawl takes them in at its next plan.

    Raises
    ------
    ValueError
        If ``kind`` is not one of :data:`SOURCE_KINDS`, or a URL is refused by
        :func:`freshcrawl.frontier.limits.check_url`.
    """
    from freshcrawl.frontier.frontier import origin_of

    if kind not in SOURCE_KINDS:
        raise ValueError(f"kind must be one of {', '.join(SOURCE_KINDS)}; got {kind!r}")
    norm = [check_url(u, allow_private=allow_private, field=kind) for u in urls]
    store.add_pages([(u, origin_of(u), 1.0) for u in norm], now=now)
    rows = store.pages_by_url(norm)
    ids = [rows[u]["id"] for u in norm]
    store.add_sources([{"page_id": i, "kind": kind, "how": how, "added_at": now} for i in ids])
    return ids


def add_sources(
    frontier: Frontier, urls: list[str], kind: str, *, how: str = "user", now: float | None = None
) -> list[int]:
    """:func:`add_sources_to_store` on a running frontier, which reads them from now on."""
    import time

    now = time.time() if now is None else float(now)
    ids = add_sources_to_store(
        frontier.store, urls, kind, how=how, now=now, allow_private=frontier.settings.allow_private
    )
    frontier.add_urls([], now=now, replan=False)  # takes in the new pages
    frontier.announcer.sync_sources(frontier.store.source_rows())
    return ids


def auto_sitemaps(frontier: Frontier, origin: str, sitemaps: list[str], now: float) -> list[int]:
    """With ``crawl add --sitemap auto``: the sitemaps a host's robots.txt lists (on its own origin)
    become sources; returns their page ids ([] without the setting)."""
    from freshcrawl.frontier.frontier import origin_of

    urls = [u for u in sitemaps if _same_origin(u, origin, origin_of)]
    if not urls or not frontier.store.settings().get("sitemaps_auto"):
        return []
    return add_sources(frontier, urls, "sitemap", how="robots", now=now)


def _same_origin(url: str, origin: str, origin_of) -> bool:
    try:
        return origin_of(url) == origin
    except ValueError:
        return False


def read_source(frontier: Frontier, k: int, out: FetchOutcome) -> IngestResult | None:
    """Read the body of a visit of source page ``k`` (index): log what it announces.

    An unchanged source (304, same signature) has nothing new, but has spoken: its horizon moves to
    the visit. A visit without information changes nothing. Returns None unless the body was read.
    """
    from freshcrawl.crawler.announcements import parse_feed, parse_sitemap
    from freshcrawl.crawler.outcome import Outcome
    from freshcrawl.frontier.frontier import origin_of

    kind, name = frontier.announcer.sources[k]
    if out.outcome is Outcome.NO_INFO:
        return None
    t = out.started_at
    if out.body is None:
        frontier.announcer.horizon[name] = t
        frontier.store.record_announcements([], source_read={"page_id": k + 1, "read_at": t})
        return None
    parsed = parse_sitemap(out.body) if kind == "sitemap" else parse_feed(out.body)
    source_url = name.partition(":")[2]
    origin = origin_of(source_url)
    problems = list(parsed.problems)
    if parsed.children:
        children = []
        for child in parsed.children:
            try:
                url = check_url(child, allow_private=frontier.settings.allow_private)
            except ValueError:
                url = None
            if url is None or origin_of(url) != origin:
                problems.append(f"sitemap {child!r} refused (malformed, or off the index's host)")
            else:
                children.append(url)
        if children:
            add_sources(frontier, children, "sitemap", how="index", now=t)
    entries = []
    off_host = 0
    for e in parsed.entries:
        try:
            url = check_url(e.url, allow_private=frontier.settings.allow_private)
        except ValueError:
            off_host += 1
            continue
        # sitemaps.org: a sitemap lists its own host's URLs (a feed too, here)
        if origin_of(url) != origin:
            off_host += 1
            continue
        entries.append((url, e.changed_at, e.changefreq, e.priority))
    if off_host:
        problems.append(f"{off_host} URLs refused (malformed, or off the {kind}'s host)")
    why = (
        parsed.why
        if problems == parsed.problems
        else f"{parsed.why}; " + "; ".join(problems[len(parsed.problems) :])
    )
    read = {
        "page_id": k + 1,
        "read_at": t,
        "n_entries": len(entries),
        "truncated": int(parsed.truncated),
        "why": why[:2000],
    }
    return ingest(frontier, name, entries, now=t, add_listed=True, source_read=read)


def ingest(
    frontier: Frontier,
    source: str,
    entries: list[tuple[str, float | None, str | None, float | None]],
    *,
    now: float,
    add_listed: bool = False,
    source_read: dict[str, Any] | None = None,
) -> IngestResult:
    """Take ``(url, changed_at, changefreq, priority)`` entries of ``source`` (normalised URLs).

    Parameters
    ----------
    source : str
        The source's name (``sitemap:<url>``, ``feed:<url>``, ``rest:<client's name>``,
        ``grpc:sitemap``, ``grpc:feed``); trust is kept per source and host.
    entries : list of tuple
        ``changed_at`` in seconds since the epoch or None (a listing without a date).
    now : float
        When they were received, seconds since the epoch.
    add_listed : bool, default=False
        Add the URLs not yet in the crawl (a sitemap or a feed of the crawl lists its pages).
    source_read : dict, optional
        The source's read to commit with the announcements (columns of the ``sources`` table).
    """
    from freshcrawl.frontier.frontier import origin_of

    an = frontier.announcer
    urls = [e[0] for e in entries]
    if add_listed and urls:
        frontier.add_urls(
            [(u, origin_of(u), 1.0) for u in dict.fromkeys(urls)], now=now, replan=False
        )
    rows = frontier.store.pages_by_url(urls)
    logged, hints, follow = [], [], []
    n_new = n_future = n_unknown = 0
    for url, changed_at, freq, prio in entries:
        row = rows.get(url)
        if row is None or not 1 <= row["id"] <= frontier.capacity:
            n_unknown += 1
            continue
        k, hk = row["id"] - 1, row["host_id"] - 1
        an.list_page(k, source, now)
        if (freq is not None or prio is not None) and an.hints.get(k) != (freq, prio):
            an.hints[k] = (freq, prio)
            hints.append({"page_id": k + 1, "changefreq": freq, "priority": prio})
        if changed_at is None or not math.isfinite(changed_at):
            continue
        note = an.announce(k, hk, source, changed_at, now, frontier.last_copy[k])
        if note is None:
            continue
        logged.append(
            {
                "page_id": k + 1,
                "source": source,
                "changed_at": float(changed_at),
                "received_at": now,
                "note": None if note == "new" else note,
            }
        )
        if note == "future":
            n_future += 1
            continue
        n_new += 1
        if an.should_follow(k, hk, source, changed_at, float(frontier.last_copy[k])):
            follow.append(k + 1)
    frontier.store.record_announcements(logged, source_read=source_read, hints=hints)
    if source_read is not None:
        an.horizon[source] = now
    for page_id in follow:
        frontier.hold(page_id, now, only_later=False)
        frontier.following.add(page_id - 1)
    return IngestResult(len(entries), n_new, n_future, n_unknown, len(follow))
