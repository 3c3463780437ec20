"""The frontier served to other processes: crawls by ID, leases, reports, queues; thread-safe.

:class:`FrontierService` is what the gRPC (URLFrontier) and REST front ends call. It holds one
:class:`~freshcrawl.frontier.Frontier` per crawl ID (the default crawl is the database given; others
live beside it, see :func:`freshcrawl.store.open_store`'s ``namespace``) and serialises every call
with one lock, so several workers lease at once without ever getting the same URL twice: a lease is
taken and marked under the lock, and the frontier is the only writer of its database (run one serve
process per crawl database; a second one is refused while the first holds the database's lock).

A fetcher outside this process reports what a visit gave (:class:`Report`): freshcrawl turns it into
an observation (changed when the signature differs from the stored one; unchanged on 304 or an equal
signature; no information on errors), learns from it, and schedules the next visit itself.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from freshcrawl.crawler.outcome import FetchOutcome, FetchRequest, Outcome, classify
from freshcrawl.crawler.urls import normalize_url
from freshcrawl.frontier.frontier import (
    CrawlSettings,
    Frontier,
    RobotsVisit,
    Visit,
    origin_of,
)
from freshcrawl.frontier.limits import check_url
from freshcrawl.frontier.sources import IngestResult, ingest
from freshcrawl.store import Store, drop_namespace, list_namespaces, open_store

__all__ = ["DEFAULT_CRAWL", "CrawlInfo", "FrontierService", "Lease", "Report", "queue_key"]

#: The crawl ID of the database given to the service (URLFrontier's default crawl).
DEFAULT_CRAWL = "DEFAULT"


def queue_key(origin: str) -> str:
    """The URLFrontier queue key of a host: its name, with the port when it is not the default.

    Examples
    --------
    >>> queue_key("https://example.org"), queue_key("http://127.0.0.2:8080")
    ('example.org', '127.0.0.2:8080')
    """
    return origin.split("://", 1)[1]


@dataclass(frozen=True, slots=True)
class Lease:
    """A visit handed to a worker: the page, its URL and what is known of its last copy.

    ``kind`` is ``"page"`` or ``"robots"`` (fetch ``url``, the host's robots.txt, and report it with
    :meth:`FrontierService.report_robots`). ``expires_at`` is seconds since the epoch.
    """

    crawl_id: str
    kind: str
    url: str
    queue: str
    page_id: int | None
    host_id: int
    etag: str | None
    last_modified: str | None
    signature: str | None
    due: float
    expires_at: float


@dataclass(frozen=True, slots=True)
class CrawlInfo:
    """A crawl open in the service, as it is at one moment: its store (for reads), when its plan in
    force was made (seconds since the epoch) and how many of its pages are leased."""

    crawl_id: str
    store: Store
    planned_at: float
    n_leased: int


@dataclass(frozen=True, slots=True)
class Report:
    """What a worker's visit of a URL gave.

    Attributes
    ----------
    url : str
        The URL (as leased, or any known URL).
    status : int or None
        HTTP status; None when no answer came (network error, timeout).
    signature : str or None
        Content signature of the body (any stable digest the worker computes); compared with the one
        stored. Ignored on 304.
    started_at : float or None
        When the request was sent, seconds since the epoch; default the time of the report.
    elapsed_s : float
        Seconds the visit took.
    n_bytes : int
        Body bytes.
    etag, last_modified : str or None
        Validators of the new copy.
    retry_after_s : float or None
        Seconds a 429/503 asked to wait.
    error : str or None
        For answers without a status, why none came (``"timeout"``, ``"network"``,
        ``"connect-error"``, ...): recorded as the reason of a network error.
    refetch_not_before : float or None
        The worker's earliest next fetch (seconds since the epoch): a floor after errors only;
        freshcrawl sets the due time of a page whose visit gave information.

    The REST and gRPC front ends parse a worker's report into one of these; :meth:`outcome` turns
    it into the :class:`~freshcrawl.crawler.outcome.FetchOutcome` the frontier records, as the
    fetcher does for its own visits (:func:`~freshcrawl.crawler.outcome.classify`).
    """

    url: str
    status: int | None
    signature: str | None = None
    started_at: float | None = None
    elapsed_s: float = 0.0
    n_bytes: int = 0
    etag: str | None = None
    last_modified: str | None = None
    retry_after_s: float | None = None
    error: str | None = None
    refetch_not_before: float | None = None

    def outcome(self, url: str, copy: FetchRequest, now: float) -> FetchOutcome:
        """The outcome of this visit of ``url`` (normalised) against the page's last ``copy``.

        Changed when the signature differs from the copy's, unchanged on 304 (the copy's signature
        and validators kept, unless the report gives new validators) or an equal signature, a first
        copy when the page had none; no information otherwise (no signature kept). ``started_at``
        defaults to ``now``.
        """
        stored = copy.signature
        outcome, error, why = classify(self.status, self.signature, stored,
                                       conditional=stored is not None, no_answer=self.error or "network")
        not_modified = self.status == 304
        signature = stored if outcome is Outcome.UNCHANGED and not_modified else self.signature
        return FetchOutcome(
            url, outcome, why, now if self.started_at is None else float(self.started_at),
            float(self.elapsed_s), self.status, int(self.n_bytes),
            etag=(self.etag or copy.etag) if not_modified else self.etag,
            last_modified=(self.last_modified or copy.last_modified) if not_modified else self.last_modified,
            signature=None if outcome is Outcome.NO_INFO else signature, error=error,
            retry_after_s=self.retry_after_s,
        )


def _row_of(lease: Lease) -> dict[str, Any]:
    """The page columns that a report of a leased URL needs, as they were when it was leased."""
    return {"id": lease.page_id, "host_id": lease.host_id, "etag": lease.etag, "last_modified": lease.last_modified,
                "signature": lease.signature, "next_due": lease.due}


@dataclass
class _Crawl:
    frontier: Frontier
    active: bool = True
    #: leases of pages by URL (a report names its URL: a leased one reads nothing from the database)
    page_leases: dict[str, Lease] = field(default_factory=dict)
    #: leases of robots.txt fetches by host id
    robots_leases: dict[int, Lease] = field(default_factory=dict)
    #: queue keys chosen by a client for hosts (host index -> key), where not the host's own name
    host_keys: dict[int, str] = field(default_factory=dict)

    def queue_of(self, hk: int) -> str:
        """The queue key of host ``hk`` (index): the client's, or :func:`queue_key` of its origin."""
        return self.host_keys.get(hk) or queue_key(self.frontier.origin(hk + 1))

    def hosts_of(self, queue: str) -> list[int]:
        """Host indices whose queue is ``queue``; KeyError when none."""
        n_hosts = len(self.frontier.origins())
        out = [hk for hk in range(n_hosts) if self.queue_of(hk) == queue]
        if not out:
            raise KeyError(f"no queue {queue!r}")
        return out


class FrontierService:
    """Frontiers of one database served to many workers, one lock around all of them.

    Parameters
    ----------
    db : str
        The crawl database (SQLite path or URL); its crawl is :data:`DEFAULT_CRAWL`.
    settings : CrawlSettings
        Settings of every crawl this service opens or creates (the budget is per crawl).
    guard : callable, optional
        The writer lock's check, called before a new database connection is used (see
        :attr:`freshcrawl.store.Store.guard`).
    background_planning : bool, default=False
        Whether a planner thread calls :meth:`replan_all`. Then a lease that finds a plan due sets
        :attr:`plan_wanted` (the planner's wake-up) and is served with the plan in force; without
        one, the lease makes the plan itself.

    Raises
    ------
    ValueError
        If ``db`` is not a path or URL.
    DatabaseUnavailableError
        If the database cannot be reached (also from any later call, during an outage).
    """

    def __init__(
        self,
        db: str,
        settings: CrawlSettings,
        *,
        guard: Callable[[], None] | None = None,
        background_planning: bool = False,
    ) -> None:
        self.db = str(db)
        self.settings = settings
        self.guard = guard
        self.background_planning = background_planning
        #: set when a plan is due, for the planner thread (see ``background_planning``)
        self.plan_wanted = threading.Event()
        self.lock = threading.RLock()
        self._crawls: dict[str, _Crawl] = {}
        self.started_at = time.time()
        self.crawl(DEFAULT_CRAWL, create=True)

    # crawls --------------------------------------------------------------------------------------
    def crawl(self, crawl_id: str | None, *, create: bool = False) -> _Crawl:
        """The crawl ``crawl_id`` ("" or None: the default one); KeyError if unknown and not ``create``."""
        crawl_id = crawl_id or DEFAULT_CRAWL
        with self.lock:
            if crawl_id in self._crawls:
                return self._crawls[crawl_id]
            namespace = None if crawl_id == DEFAULT_CRAWL else crawl_id
            try:
                store = open_store(self.db, namespace=namespace, create=create or namespace is None,
                                   guard=self.guard)
            except FileNotFoundError as err:
                raise KeyError(f"no crawl {crawl_id!r}") from err
            c = _Crawl(Frontier(store, self.settings))
            keys = store.settings().get(self.QUEUE_KEYS_KEY) or {}
            origins = {o: hk for hk, o in enumerate(c.frontier.origins())}
            c.host_keys = {origins[o]: k for o, k in keys.items() if o in origins}
            self._crawls[crawl_id] = c
            return c

    def crawl_ids(self) -> list[str]:
        """Every crawl of the database: the default one and the namespaced ones."""
        with self.lock:
            return sorted({DEFAULT_CRAWL, *self._crawls, *list_namespaces(self.db)})

    def listed_crawl_ids(self) -> list[str]:
        """The crawls that hold pages or were created by name (the default one only when it holds pages)."""
        with self.lock:
            out = []
            for cid in self.crawl_ids():
                if cid != DEFAULT_CRAWL:
                    out.append(cid)
                    continue
                counts = self.crawl(cid).frontier.page_counts()
                counts.pop("leased")
                if sum(counts.values()) > 0:
                    out.append(cid)
            return out

    def exists(self, crawl_id: str | None) -> bool:
        """Whether the crawl is open here or kept in the database (checked without opening it)."""
        crawl_id = crawl_id or DEFAULT_CRAWL
        with self.lock:
            if crawl_id == DEFAULT_CRAWL or crawl_id in self._crawls:
                return True
        return crawl_id in list_namespaces(self.db)

    def open_crawls(self, *, now: float | None = None) -> list[CrawlInfo]:
        """Every crawl open in this service, in the order they were opened, read under the lock."""
        now = time.time() if now is None else float(now)
        with self.lock:
            return [CrawlInfo(cid, c.frontier.store, c.frontier.planned_at, c.frontier.n_leased(now))
                    for cid, c in self._crawls.items()]

    def crawl_info(self, crawl_id: str | None, *, now: float | None = None) -> CrawlInfo:
        """The crawl's store, plan time and leased pages (KeyError if the crawl is unknown)."""
        now = time.time() if now is None else float(now)
        crawl_id = crawl_id or DEFAULT_CRAWL
        with self._frontier(crawl_id) as f:
            return CrawlInfo(crawl_id, f.store, f.planned_at, f.n_leased(now))

    # queue keys chosen by clients ----------------------------------------------------------------
    #: Settings key under which a crawl keeps the queue keys its clients chose (origin -> key).
    QUEUE_KEYS_KEY = "urlfrontier_queue_keys"

    def set_queue_keys(self, crawl_id: str | None, pairs: Iterable[tuple[str, str]]) -> int:
        """Name the queue of each URL's host as a client does (URLFrontier's ``key``); return how many
        hosts changed.

        A client chooses how URLs are grouped for politeness (StormCrawler's ``partition.url.mode``:
        the host, the domain or the IP address, ``_DEFAULT_`` when it has none); the key it sends is
        the queue's name in every later call (GetURLs, BlockQueueUntil, SetDelay, GetStats, ...). A
        key names one or more hosts; each host keeps its own delay and cap in the plan. An empty key
        leaves the host's queue as it is; URLs of hosts the crawl does not hold are ignored.

        Raises
        ------
        KeyError
            If the crawl is unknown.
        """
        with self.lock:
            c = self.crawl(crawl_id)
            f = c.frontier
            origins = {o: hk for hk, o in enumerate(f.origins())}
            changed = False
            n = 0
            for url, key in pairs:
                if not key:
                    continue
                try:
                    hk = origins.get(origin_of(normalize_url(url)))
                except ValueError:
                    continue
                if hk is None or c.queue_of(hk) == key:
                    continue
                if key == queue_key(f.origin(hk + 1)):
                    c.host_keys.pop(hk, None)
                else:
                    c.host_keys[hk] = key
                changed = True
                n += 1
            if changed:
                keys = {f.origin(hk + 1): k for hk, k in sorted(c.host_keys.items())}
                f.store.save_settings({self.QUEUE_KEYS_KEY: keys})
            return n

    # reports without an outcome ----------------------------------------------------------------
    #: Settings key under which a crawl keeps its count of reports that carried no fetch outcome.
    NO_OUTCOME_KEY = "reports_without_outcome"

    def note_without_outcome(self, crawl_id: str | None, urls: list[str], *, now: float | None = None) -> int:
        """Count reports of leased URLs that carried no fetch outcome; return the crawl's total.

        Such a report teaches the estimators nothing (a client that does not send the HTTP status and
        a signature); the count, the last URL and its time are kept in the crawl's settings
        (``crawl_status`` lists them as a warning).

        Raises
        ------
        KeyError
            If the crawl is unknown.
        """
        now = time.time() if now is None else float(now)
        with self._frontier(crawl_id) as f:
            old = f.store.settings().get(self.NO_OUTCOME_KEY) or {}
            total = int(old.get("count", 0)) + len(urls)
            if urls:
                f.store.save_settings({self.NO_OUTCOME_KEY: {"count": total, "last_url": urls[-1],
                                                             "last_at": now}})
            return total

    def delete_crawl(self, crawl_id: str) -> int:
        """Delete a crawl and everything in it; return its number of pages (0 for an unknown crawl).

        The default crawl is emptied (its pages, hosts and log deleted), not dropped.
        """
        crawl_id = crawl_id or DEFAULT_CRAWL
        with self.lock:
            try:
                c = self.crawl(crawl_id)
            except KeyError:
                return 0
            store = c.frontier.store
            n = int(sum(store.counts()["pages"].values()))
            if crawl_id == DEFAULT_CRAWL:
                store.clear()
                c.frontier = Frontier(store, self.settings)
                c.page_leases.clear()
                c.robots_leases.clear()
                c.host_keys.clear()
                store.save_settings({self.QUEUE_KEYS_KEY: {}, self.NO_OUTCOME_KEY: {}})
            else:
                store.close()
                del self._crawls[crawl_id]
                drop_namespace(self.db, crawl_id)
            return n

    def close(self) -> None:
        """Close every crawl's store."""
        with self.lock:
            for c in self._crawls.values():
                c.frontier.store.close()
            self._crawls.clear()

    @contextmanager
    def _frontier(self, crawl_id: str | None, *, create: bool = False) -> Iterator[Frontier]:
        with self.lock:
            yield self.crawl(crawl_id, create=create).frontier

    # adding --------------------------------------------------------------------------------------
    def add_urls(self, crawl_id: str | None, urls: Iterable[tuple[str, float]], *, now: float | None = None
                 ) -> tuple[int, int]:
        """Add ``(url, weight)`` pairs not yet known; return (added, already known).

        Raises
        ------
        ValueError
            If a URL is refused by :func:`freshcrawl.frontier.limits.check_url` (malformed, not
            http(s), with credentials, or a host the egress policy refuses unless the settings'
            ``allow_private``), or a weight is negative (nothing is added).
        """
        now = time.time() if now is None else float(now)
        rows = []
        for url, weight in urls:
            u = check_url(url, allow_private=self.settings.allow_private)
            if not (np.isfinite(weight) and weight >= 0):
                raise ValueError(f"weight must be a finite number >= 0; got {weight!r} for {url!r}")
            rows.append((u, origin_of(u), float(weight)))
        with self._frontier(crawl_id, create=True) as f:
            return f.add_urls(rows, now=now, replan=False)

    def announce(self, crawl_id: str | None, items: Iterable[tuple[str, float, str]], *,
                 now: float | None = None) -> IngestResult:
        """Announced changes ``(url, changed_at, source)`` (seconds since the epoch) of known pages.

        Each source's announcements are logged and judged like a sitemap's
        (:mod:`freshcrawl.frontier.announce`); URLs not in the crawl are counted, not added.

        Raises
        ------
        ValueError
            If a URL is refused by :func:`freshcrawl.frontier.limits.check_url` or a time is not
            finite (nothing is taken).
        KeyError
            If the crawl does not exist.
        """
        now = time.time() if now is None else float(now)
        by_source: dict[str, list[tuple[str, float | None, None, None]]] = {}
        for url, changed_at, source in items:
            if not math.isfinite(changed_at):
                raise ValueError(f"changed_at must be finite seconds since the epoch; got {changed_at!r} for {url!r}")
            u = check_url(url, allow_private=self.settings.allow_private)
            by_source.setdefault(source, []).append((u, float(changed_at), None, None))
        total = IngestResult()
        with self._frontier(crawl_id) as f:
            for source, entries in by_source.items():
                got = ingest(f, source, entries, now=now)
                total = IngestResult(*(a + b for a, b in zip(
                    (total.n_entries, total.n_new, total.n_future, total.n_unknown, total.n_followed),
                    (got.n_entries, got.n_new, got.n_future, got.n_unknown, got.n_followed), strict=True)))
        return total

    # leasing -------------------------------------------------------------------------------------
    def lease(
        self,
        crawl_id: str | None,
        worker: str,
        count: int,
        *,
        lease_s: float = 60.0,
        queue: str | None = None,
        now: float | None = None,
        per_queue: int = 1,
        robots: bool = True,
    ) -> list[Lease]:
        """Due visits of up to ``count`` queues (hosts) for ``worker``, each leased for ``lease_s``.

        At most ``per_queue`` visits of one queue, its earliest due pages (the worker spaces them by
        the queue's delay; the queue is not handed out again until all are reported or their leases
        run out). A visit leased is not handed out again before its lease runs out unless it is
        reported. An inactive crawl (``set_active(False)``) leases nothing. With ``robots`` False (a
        worker that enforces robots.txt itself) no robots.txt visit is handed out.

        Raises
        ------
        ValueError
            If ``count`` or ``per_queue`` is < 0, or ``lease_s`` is not finite and > 0 seconds.
        """
        if count < 0 or per_queue < 0 or not (np.isfinite(lease_s) and lease_s > 0):
            raise ValueError(f"count and per_queue must be >= 0 and lease_s > 0 seconds; got {count!r}, "
                             f"{per_queue!r}, {lease_s!r}")
        now = time.time() if now is None else float(now)
        crawl_id = crawl_id or DEFAULT_CRAWL
        with self.lock:
            c = self.crawl(crawl_id)
            if not c.active or count == 0:
                return []
            f = c.frontier
            if now >= f.next_replan and not f.planning:
                if self.background_planning:
                    self.plan_wanted.set()  # computed off this lock; this lease gets the plan in force
                else:
                    f.replan(now)
            mask = None
            if queue is not None:
                mask = np.zeros(len(f.origins()), dtype=bool)
                try:
                    mask[c.hosts_of(queue)] = True
                except KeyError:
                    return []
            per_queue = per_queue or 1_000_000
            items = f.due(now, count, lease_s=lease_s, per_host=per_queue, robots=robots, hosts=mask)
            if c.host_keys:  # a queue of several hosts: at most per_queue of it, at most count queues
                taken: dict[str, int] = {}
                keep, back = [], []
                for item in items:
                    q = c.queue_of(item.host_id - 1)
                    if taken.get(q, 0) < per_queue and (q in taken or len(taken) < count):
                        taken[q] = taken.get(q, 0) + 1
                        keep.append(item)
                    else:
                        back.append(item)
                f.release(back)
                items = keep
            out = []
            for item in items:
                origin = f.origin(item.host_id)
                if isinstance(item, RobotsVisit):
                    lease = Lease(crawl_id, "robots", origin + "/robots.txt", c.queue_of(item.host_id - 1), None,
                                  item.host_id, None, None, None, now, now + lease_s)
                else:
                    r = item.request
                    lease = Lease(crawl_id, "page", r.url, c.queue_of(item.host_id - 1), item.page_id, item.host_id,
                                  r.etag, r.last_modified, r.signature, item.due, now + lease_s)
                if lease.kind == "robots":
                    c.robots_leases[item.host_id] = lease
                else:
                    c.page_leases[lease.url] = lease
                out.append(lease)
            return out

    def report(self, crawl_id: str | None, reports: Iterable[Report], *, source: str = "worker",
               now: float | None = None) -> list[str]:
        """Record what visits gave; return, per report, ``"ok"`` or why it was refused.

        A report of a URL not in the crawl is refused (``"unknown-url"``); a malformed URL too
        (``"bad-url: ..."``). Reports need not hold a lease (a worker that fetched on its own).
        """
        now = time.time() if now is None else float(now)
        crawl_id = crawl_id or DEFAULT_CRAWL
        answers: list[str] = []
        with self.lock:
            c = self.crawl(crawl_id)
            f = c.frontier
            batch: list = []
            floors: list = []
            reported: list[str] = []

            def commit() -> None:
                # effects after commit: a lease ends only once its report is committed, so that a
                # report that failed (the database is down) can be sent again under the same lease
                if batch:
                    f.record(batch, source=source)
                    for url_ in reported:
                        c.page_leases.pop(url_, None)
                    for page_id, floor in floors:
                        if floor is not None:
                            f.hold(page_id, floor, only_later=True)
                batch.clear()
                floors.clear()
                reported.clear()

            reports = list(reports)
            urls: list[str | ValueError] = []
            for rep in reports:
                try:
                    urls.append(normalize_url(rep.url))
                except ValueError as err:
                    urls.append(err)
            # a leased URL's row is its lease's (what the worker was sent); the others, one query for all
            rows = {u: _row_of(c.page_leases[u]) for u in urls if isinstance(u, str) and u in c.page_leases}
            rows.update(f.store.pages_by_url([u for u in urls if isinstance(u, str) and u not in rows]))
            in_batch: set[str] = set()
            for rep, url in zip(reports, urls, strict=True):
                if isinstance(url, ValueError):
                    answers.append(f"bad-url: {url}")
                    continue
                row = rows.get(url)
                if row is None:
                    answers.append("unknown-url")
                    continue
                if url in in_batch:  # a second report of one URL: commit the first and read its row again
                    commit()
                    in_batch.clear()
                    row = rows[url] = f.store.page_by_url(url)
                in_batch.add(url)
                copy = FetchRequest(url, row["etag"], row["last_modified"], row["signature"])
                out = rep.outcome(url, copy, now)
                visit = Visit(row["id"], row["host_id"], copy, row["next_due"])
                batch.append((visit, out))
                floors.append((row["id"], rep.refetch_not_before if out.outcome is Outcome.NO_INFO else None))
                reported.append(url)
                answers.append("ok")
            commit()
        return answers

    def report_robots(self, crawl_id: str | None, origin_or_url: str, status: int | None, text: str | None,
                      *, fetched_at: float | None = None, elapsed_s: float = 0.0,
                      retry_after_s: float | None = None) -> None:
        """Record a robots.txt fetched by a worker for a host of the crawl (KeyError for an unknown host)."""
        from freshcrawl.crawler.outcome import RobotsOutcome

        fetched_at = time.time() if fetched_at is None else float(fetched_at)
        with self.lock:
            c = self.crawl(crawl_id)
            f = c.frontier
            origin = origin_of(normalize_url(origin_or_url))
            host_id = f.host_id(origin)
            if host_id is None:
                raise KeyError(f"no host {origin} in this crawl")
            why = "ok" if status is not None and 200 <= status < 300 else (f"http-{status}" if status else "network")
            f.record_robots(RobotsVisit(host_id, origin),
                            RobotsOutcome(origin, status, text, fetched_at, elapsed_s, why, retry_after_s))
            c.robots_leases.pop(host_id, None)

    def schedule(self, crawl_id: str | None, url: str, not_before: float) -> bool:
        """Set a known URL's next due time (a client's date); 0 means never again. False if unknown.

        The date holds across plans until it passes (:meth:`Frontier.hold`). A lease of the URL ends
        (its host may be handed out again at once, within its delay).
        """
        with self.lock:
            c = self.crawl(crawl_id)
            f = c.frontier
            row = f.store.page_by_url(normalize_url(url))
            if row is None:
                return False
            if not_before <= 0:
                f.remove([row["id"]])  # never visited again, its log kept
            else:
                f.hold(row["id"], float(not_before))
            if c.page_leases.pop(row["url"], None) is not None:
                f.release_host(row["host_id"])
            return True

    def set_url_metadata(self, crawl_id: str | None, items: dict[str, dict[str, list[str]]], *,
                         overwrite: bool = True) -> int:
        """Keep a client's metadata of known URLs (normalised url -> key -> values; unknown ones skipped).

        ``overwrite=False`` keeps the metadata a URL already has. Returns how many URLs were written.
        """
        with self._frontier(crawl_id) as f:
            rows = f.store.pages_by_url(items)
            return f.store.save_url_metadata({row["id"]: items[url] for url, row in rows.items()},
                                             overwrite=overwrite)

    def url_metadata(self, crawl_id: str | None, page_ids: Iterable[int]) -> dict[int, dict[str, list[str]]]:
        """A client's metadata of pages, by page id."""
        with self._frontier(crawl_id) as f:
            return f.store.url_metadata(page_ids)

    # queues --------------------------------------------------------------------------------------
    def _hosts_of(self, crawl_id: str | None, queue: str) -> list[int]:
        """Host indices of a queue of a crawl; KeyError when the crawl or the queue is unknown."""
        return self.crawl(crawl_id).hosts_of(queue)

    def queues(self, crawl_id: str | None, *, include_inactive: bool = False, now: float | None = None) -> list[str]:
        """Queue keys of the crawl, sorted; only those with a URL due now unless ``include_inactive``."""
        now = time.time() if now is None else float(now)
        with self._frontier(crawl_id) as f:
            if include_inactive:
                hks = range(len(f.origins()))
            else:
                hks = f.ready_hosts(now) - 1
            c = self.crawl(crawl_id)
            return sorted({c.queue_of(int(hk)) for hk in hks})

    def block_queue(self, crawl_id: str | None, queue: str, until: float) -> None:
        """No URL of ``queue`` is handed out before ``until`` (seconds since the epoch; 0 unblocks)."""
        with self._frontier(crawl_id) as f:
            for hk in self._hosts_of(crawl_id, queue):
                f.block_host(hk + 1, until)

    def set_delay(self, crawl_id: str | None, queue: str | None, delay_s: float) -> None:
        """Least seconds between two requests to ``queue`` (None or "": every queue, and the default of
        queues to come); feeds the host caps."""
        if not (np.isfinite(delay_s) and delay_s >= 0):
            raise ValueError(f"delay must be finite and >= 0 seconds; got {delay_s!r}")
        with self._frontier(crawl_id) as f:
            if not queue:
                f.set_delay(float(delay_s))
            for hk in self._hosts_of(crawl_id, queue) if queue else ():
                f.set_delay(float(delay_s), hk + 1)

    def delete_queue(self, crawl_id: str | None, queue: str) -> int:
        """Remove every page of ``queue`` from the crawl (their logs stay); return how many."""
        with self._frontier(crawl_id) as f:
            return sum(f.remove_host(hk + 1) for hk in self._hosts_of(crawl_id, queue))

    # reading -------------------------------------------------------------------------------------
    def count_urls(self, crawl_id: str | None, *, queue: str | None = None, contains: str | None = None,
                   ignore_case: bool = False) -> int:
        """URLs in the crawl (not removed), of one queue and/or containing a text."""
        with self._frontier(crawl_id) as f:
            hks = [None] if not queue else [hk + 1 for hk in self._hosts_of(crawl_id, queue)]
            return sum(f.store.count_urls(host_id=h, contains=contains, ignore_case=ignore_case) for h in hks)

    def list_urls(self, crawl_id: str | None, *, start: int = 0, size: int = 100, queue: str | None = None,
                  contains: str | None = None, ignore_case: bool = False) -> list[dict[str, Any]]:
        """Page rows (url, queue, status, next_due, rate, delta_hat, signature, ...) by id, paginated."""
        with self._frontier(crawl_id) as f:
            c = self.crawl(crawl_id)
            hks = [None] if not queue else [hk + 1 for hk in self._hosts_of(crawl_id, queue)]
            if len(hks) == 1:
                rows = f.store.list_urls(start=start, size=size, host_id=hks[0], contains=contains,
                                         ignore_case=ignore_case)
            else:  # a queue of several hosts: each host's first start + size rows, merged by id
                rows = [r for h in hks for r in f.store.list_urls(start=0, size=start + size, host_id=h,
                                                                  contains=contains, ignore_case=ignore_case)]
                rows = sorted(rows, key=lambda r: r["id"])[start: start + size]
            for row in rows:
                row["queue"] = c.queue_of(row["host_id"] - 1)
            return rows

    def url_status(self, crawl_id: str | None, url: str) -> dict[str, Any] | None:
        """The page row of ``url`` with its queue, or None."""
        with self._frontier(crawl_id) as f:
            row = f.store.page_by_url(normalize_url(url))
            if row is not None:
                row["queue"] = self.crawl(crawl_id).queue_of(row["host_id"] - 1)
            return row

    def stats(self, crawl_id: str | None, queue: str | None = None, *, now: float | None = None) -> dict[str, Any]:
        """``size`` (active URLs), ``in_process`` (leased), ``counts`` (pages by status), ``queues`` (active)."""
        now = time.time() if now is None else float(now)
        with self._frontier(crawl_id) as f:
            host_ids = None if not queue else [hk + 1 for hk in self._hosts_of(crawl_id, queue)]
            counts = f.page_counts(host_ids, now=now)
            leased = counts.pop("leased")
            n_queues = len(self.queues(crawl_id, now=now)) if not queue else int(counts["active"] > 0)
            return {"size": counts["active"], "in_process": leased, "counts": counts, "queues": n_queues}

    def is_leased(self, crawl_id: str | None, url: str) -> bool:
        """Whether ``url`` was handed out by :meth:`lease` and not reported since (False for a
        malformed URL or an unknown crawl)."""
        try:
            u = normalize_url(url)
        except ValueError:
            return False
        with self.lock:
            try:
                return u in self.crawl(crawl_id).page_leases
            except KeyError:
                return False

    def host_use(self, crawl_id: str | None, limit: int, *, now: float | None = None) -> dict[str, Any]:
        """Budget use by host (:meth:`Frontier.host_load`), the ``limit`` largest planned rates first.

        Returns
        -------
        dict
            ``budget`` and ``budget_in_use`` (visits per day), ``n_hosts`` and ``hosts``: per host
            ``queue`` (its name), ``origin``, ``n_pages`` (active), ``rate_per_day`` (planned),
            ``cap_per_day`` (None: no cap), ``delay_s`` and ``in_backoff`` (now).
        """
        now = time.time() if now is None else float(now)
        with self._frontier(crawl_id) as f:
            h = f.host_load()
            budget = f.settings.budget
        order = np.argsort(-h.rate, kind="stable")[:limit]
        hosts = [{"queue": queue_key(h.origin[k]), "origin": h.origin[k], "n_pages": int(h.n_pages[k]),
                  "rate_per_day": float(h.rate[k]),
                  "cap_per_day": float(h.cap[k]) if np.isfinite(h.cap[k]) else None,
                  "delay_s": float(h.delay_s[k]), "in_backoff": bool(h.backoff_until[k] > now)}
                 for k in order]
        return {"budget": budget, "budget_in_use": h.budget_in_use, "n_hosts": len(h.origin), "hosts": hosts}

    def overdue(self, crawl_id: str | None, limit: int, *, now: float | None = None) -> dict[str, Any]:
        """The ``limit`` active pages due the longest (:meth:`Frontier.backlog`), most overdue first.

        Returns
        -------
        dict
            ``n_due`` (active pages due now) and ``pages``: per page ``url``, ``queue`` (its host's
            name), ``next_due`` (seconds since the epoch), ``overdue_s``, ``rate`` (visits per day),
            ``delta_hat`` (changes per day) and ``leased``.
        """
        now = time.time() if now is None else float(now)
        with self._frontier(crawl_id) as f:
            b = f.backlog(limit, now)
            rows = f.store.page_rows(b.page_id.tolist()) if b.page_id.size else {}
            pages = [{"url": rows[page_id]["url"], "queue": queue_key(f.origin(int(b.host_id[j]))),
                      "next_due": float(b.next_due[j]), "overdue_s": float(now - b.next_due[j]),
                      "rate": float(b.rate[j]), "delta_hat": rows[page_id]["delta_hat"],
                      "leased": bool(b.leased[j])}
                     for j, page_id in enumerate(b.page_id.tolist())]
        return {"n_due": b.n_due, "pages": pages}

    def set_active(self, crawl_id: str | None, state: bool) -> None:
        """(De)activate leasing of a crawl; reports are still taken."""
        with self.lock:
            self.crawl(crawl_id).active = bool(state)

    def replan_all(self, now: float | None = None) -> int:
        """Re-plan every crawl whose plan is due; return how many were re-planned.

        Each plan is prepared and applied under the service's lock, and computed outside it, so
        leases and reports are served (with the plan in force) while a plan is made.
        """
        fixed = now is not None
        now = time.time() if now is None else float(now)
        n = 0
        with self.lock:
            due = [c.frontier for c in self._crawls.values()
                   if now >= c.frontier.next_replan and not c.frontier.planning]
        for f in due:
            with self.lock:
                if f.planning:
                    continue
                job = f.prepare_plan(now)
            try:
                plan = f.compute_plan(job)
            except BaseException:
                with self.lock:
                    f.cancel_plan(job)  # the plan in force stays
                raise
            with self.lock:
                f.apply_plan(job, plan, now=now if fixed else time.time())
                n += 1
        return n
