"""freshcrawl's schedule for Scrapy: a scheduler and a downloader middleware.

Two settings give a Scrapy project freshcrawl's schedule, with no change to its spiders::

    SCHEDULER = "freshcrawl.scrapy.Scheduler"
    DOWNLOADER_MIDDLEWARES = {"freshcrawl.scrapy.ObservationMiddleware": 950}
    FRESHCRAWL_DB = "crawl.db"        # an in-process frontier (SQLite file or PostgreSQL URL), or
    FRESHCRAWL_SERVER = "http://127.0.0.1:8080"   # a running `freshcrawl serve` (REST)
    FRESHCRAWL_BUDGET = "20000/day"

:class:`Scheduler` hands Scrapy the visits the frontier says are due, as GET requests carrying
If-None-Match and If-Modified-Since; the URLs a spider yields (start requests included) go to the
frontier as discovered pages, and redirects and retries of a visit stay in the scheduler's own
queue. Leases are taken ahead by one background thread, which alone talks to the frontier (the one
interface of :class:`~freshcrawl.crawler.loop.FrontierLike` that ``freshcrawl crawl run`` uses: a
:class:`~freshcrawl.frontier.Frontier` in this process, or a
:class:`~freshcrawl.service.rest_client.RestFrontier`), so the reactor never waits on a database,
a plan or the network. An in-process frontier's plans are computed in a second thread, as
``crawl run`` computes them, while the first keeps leasing and recording with the plan in force.
A served frontier is asked for leases again soon after a visit was leased or reported (a host just
freed may have its next visit due after its delay), less often while nothing happens. The spider
stays open while the crawl has active pages (``DontCloseSpider`` on ``spider_idle``);
``CLOSESPIDER_TIMEOUT`` or a signal ends it.

:class:`ObservationMiddleware` turns the final response or exception of every visit into one
freshcrawl outcome (one lease, one report), as :class:`~freshcrawl.crawler.fetcher.Fetcher` would:

===================================  =========  =========  ====================================
answer                               outcome    error      why
===================================  =========  =========  ====================================
304 to a conditional request         unchanged  -          not-modified
2xx, signature equal / different     unchanged / changed   same-signature / new-signature
2xx, no previous copy                first      -          first-copy
429, 503 (Retry-After kept)          no-info    throttled  http-<status>
other 5xx / 4xx, other 3xx           no-info    server / page   http-<status>
timeout, refused, DNS, reset         no-info    network    timeout, connect-error, dns-error, reset
dropped by ROBOTSTXT_OBEY            no-info    page       robots-disallowed
===================================  =========  =========  ====================================

Visits are not retried by Scrapy (``dont_retry``): a visit without information goes back to the
frontier, whose back-off and Retry-After decide when it is made again. A 304 reaches the spider's
callback only when the spider asks for it (``handle_httpstatus_list``, the request's
``handle_httpstatus_list`` or ``HTTPERROR_ALLOWED_CODES``); otherwise it is dropped quietly after
its report. Signatures are those of ``crawl run`` (:func:`freshcrawl.crawler.signature.signature`
of the decompressed body, ``raw`` or ``text``), computed in the background thread.

robots.txt: the frontier hands out each host's robots.txt to fetch first (through Scrapy, not
obeying itself), so that its Crawl-delay and the host caps shape the plan and disallowed pages are
not handed out; with ``ROBOTSTXT_OBEY`` Scrapy's own middleware still drops what it disallows.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider, IgnoreRequest, NotConfigured
from scrapy.http import Response
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.request import request_from_dict

from freshcrawl.crawler.fetcher import parse_retry_after
from freshcrawl.crawler.outcome import ErrorKind, FetchOutcome, Outcome, RobotsOutcome, classify
from freshcrawl.crawler.signature import SIGNATURE_MODES
from freshcrawl.crawler.signature import signature as compute_signature
from freshcrawl.frontier.frontier import RobotsVisit, Visit, origin_of
from freshcrawl.frontier.limits import check_url

__all__ = ["Lease", "ObservationMiddleware", "Scheduler"]

log = logging.getLogger(__name__)

#: The request meta key that carries a :class:`Lease`.
META_KEY = "freshcrawl_lease"


@dataclass(eq=False)
class Lease:
    """One visit handed out by the frontier, shared by the requests of its redirects.

    Attributes
    ----------
    visit : Visit or RobotsVisit
        What the frontier handed out.
    started_at : float or None
        When its first request was sent, seconds since the epoch.
    reported : bool
        Whether its outcome went back to the frontier (exactly once).
    """

    visit: Visit | RobotsVisit
    started_at: float | None = None
    reported: bool = False
    enqueued: bool = False
    last_request_at: float = 0.0
    template_errback: Any = None

    @property
    def url(self) -> str:
        """The URL handed out."""
        if isinstance(self.visit, RobotsVisit):
            return self.visit.origin + "/robots.txt"
        return self.visit.url


def _ignore(response: Response) -> None:
    """Callback of robots.txt requests: their body goes to the frontier, not to the spider."""


def _network_why(exc: BaseException) -> str:
    from twisted.internet import error as terr

    name = type(exc).__name__
    if (
        isinstance(exc, (terr.TimeoutError, terr.TCPTimedOutError, TimeoutError))
        or "Timeout" in name
    ):
        return "timeout"
    if isinstance(exc, terr.DNSLookupError):
        return "dns-error"
    if isinstance(exc, (terr.ConnectionRefusedError, terr.ConnectError)):
        return "connect-error"
    return "reset"


def _response_outcome(lease: Lease, response: Response, *, now: float, mode: str) -> FetchOutcome:
    """The outcome of a page visit whose final answer is ``response`` (signature computed here)."""
    req = lease.visit.request
    started = lease.started_at if lease.started_at is not None else now
    elapsed = max(0.0, now - started)
    status = response.status
    final_url = response.url if response.url != req.url else None
    common = {
        "url": req.url,
        "started_at": started,
        "elapsed_s": elapsed,
        "status": status,
        "final_url": final_url,
    }
    conditional = bool(req.etag or req.last_modified)
    if not 200 <= status < 300:
        outcome, kind, why = classify(status, None, req.signature, conditional=conditional)
        if kind is None:  # a 304 to a conditional request
            return FetchOutcome(
                outcome=outcome,
                why=why,
                etag=req.etag,
                last_modified=req.last_modified,
                signature=req.signature,
                **common,
            )
        retry = None if status == 304 else parse_retry_after(_header(response, b"Retry-After"), now)
        return FetchOutcome(outcome=outcome, why=why, error=kind, retry_after_s=retry, **common)
    body = response.body
    sig = compute_signature(body, _header(response, b"Content-Type"), mode)
    outcome, _, why = classify(status, sig, req.signature, conditional=conditional)
    return FetchOutcome(
        outcome=outcome,
        why=why,
        n_bytes=len(body),
        etag=_header(response, b"ETag"),
        last_modified=_header(response, b"Last-Modified"),
        signature=sig,
        **common,
    )


def _failure_outcome(lease: Lease, exc: BaseException, *, now: float) -> FetchOutcome:
    """The outcome of a page visit that ended with ``exc`` (no answer, or dropped by Scrapy)."""
    started = lease.started_at if lease.started_at is not None else now
    common = {
        "url": lease.visit.request.url,
        "started_at": started,
        "elapsed_s": max(0.0, now - started),
    }
    if isinstance(exc, IgnoreRequest):
        return FetchOutcome(
            outcome=Outcome.NO_INFO, why="robots-disallowed", error=ErrorKind.PAGE, **common
        )
    return FetchOutcome(
        outcome=Outcome.NO_INFO, why=_network_why(exc), error=ErrorKind.NETWORK, **common
    )


def _header(response: Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    return None if value is None else value.decode("latin-1")


def _allows_304(request: Request, spider: Any, settings: Any) -> bool:
    """Whether the spider asks for 304 answers (what Scrapy's HttpErrorMiddleware would let through)."""
    meta = request.meta
    if meta.get("handle_httpstatus_all"):
        return True
    if "handle_httpstatus_list" in meta:
        return 304 in meta["handle_httpstatus_list"]
    if settings.getbool("HTTPERROR_ALLOW_ALL"):
        return True
    allowed = set(getattr(spider, "handle_httpstatus_list", ()) or ())
    allowed |= set(settings.getlist("HTTPERROR_ALLOWED_CODES"))
    return 304 in allowed or "304" in allowed


class ObservationMiddleware:
    """Downloader middleware: every visit's final response or exception becomes one outcome.

    Install it at 950 (closest to the download, after Scrapy's own middlewares): it stamps the time
    a visit's first request is sent, hands the final answer to :class:`Scheduler`, which reports it,
    and drops a 304 the spider did not ask for (after its report) instead of letting
    HttpErrorMiddleware log it. Requests that are not freshcrawl visits pass untouched.

    Raises
    ------
    NotConfigured
        If the project's scheduler is not :class:`Scheduler` (the middleware then stays out).

    References
    ----------
    .. [1] Scrapy documentation, "Downloader Middleware" (``process_request``,
       ``process_response``); RFC 9110 Sec. 15.4.5 (304 Not Modified) and Sec. 10.2.3 (Retry-After).
    """

    #: Seconds for which a robots.txt that Scrapy's RobotsTxtMiddleware fetched answers a robots.txt
    #: visit of the same host (one request instead of two in a row).
    ROBOTS_REUSE_S = 60.0

    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler
        self._robots: dict[str, tuple[float, Response]] = {}

    @classmethod
    def from_crawler(cls, crawler: Any) -> ObservationMiddleware:
        """Scrapy's constructor hook."""
        sched = crawler.settings.get("SCHEDULER")
        if not (
            sched is Scheduler
            or (isinstance(sched, str) and sched.endswith("freshcrawl.scrapy.Scheduler"))
        ):
            raise NotConfigured(
                "ObservationMiddleware goes with SCHEDULER = 'freshcrawl.scrapy.Scheduler'"
            )
        return cls(crawler)

    def process_request(self, request: Request, spider: Any = None) -> None:
        """Stamp the time the visit's first request is sent."""
        lease = request.meta.get(META_KEY)
        if lease is None:
            return None
        now = time.time()
        if isinstance(lease.visit, RobotsVisit) and lease.started_at is None:
            fetched = self._robots.pop(lease.visit.origin, None)
            if fetched is not None and now - fetched[0] < self.ROBOTS_REUSE_S:
                lease.started_at = lease.last_request_at = fetched[0]
                return fetched[1].replace(request=request)
        if lease.started_at is None:
            lease.started_at = now
        lease.last_request_at = now
        return None

    def process_response(
        self, request: Request, response: Response, spider: Any = None
    ) -> Response:
        """Report a 304 the spider does not handle and drop it (IgnoreRequest); pass the rest."""
        lease = request.meta.get(META_KEY)
        if lease is None:
            if (
                request.meta.get("dont_obey_robotstxt")
                and urlsplit(request.url).path == "/robots.txt"
            ):
                # Scrapy's own robots.txt fetch (ROBOTSTXT_OBEY): it answers the frontier's next
                # robots.txt visit of the host, which is then not made again
                self._robots[origin_of(request.url)] = (time.time(), response)
            return response
        if response.status != 304 or isinstance(lease.visit, RobotsVisit):
            return response
        spider = spider or getattr(self.crawler, "spider", None)
        if _allows_304(request, spider, self.crawler.settings):
            return response
        sched = _scheduler_of(self.crawler)
        if sched is not None:
            sched.report_response(lease, response)
        raise IgnoreRequest("304 Not Modified (reported to freshcrawl as unchanged)")

    def process_exception(
        self, request: Request, exception: BaseException, spider: Any = None
    ) -> None:
        """Nothing here: the visit's final exception is reported by the scheduler's errback."""
        return


_SCHEDULERS: dict[int, Scheduler] = {}


def _scheduler_of(crawler: Any) -> Scheduler | None:
    return _SCHEDULERS.get(id(crawler))


class _LocalFrontier:
    """The in-process frontier of ``FRESHCRAWL_DB`` with the calls the scheduler makes beyond the loop's."""

    def __init__(self, db: str, settings: dict[str, Any]) -> None:
        from freshcrawl.frontier import CrawlSettings, Frontier
        from freshcrawl.store import acquire_writer_lock, open_store

        self.store = open_store(db, create=True)
        try:
            self.lock = acquire_writer_lock(db)
        except Exception:
            self.store.close()
            raise
        self.store.guard = self.lock.ensure  # a new connection (after an outage) first checks the lock
        stored = dict(self.store.settings().get("settings") or {})
        stored.update({k: v for k, v in settings.items() if v is not None})
        self.frontier = Frontier(self.store, CrawlSettings.from_dict(stored))
        self.allow_private = self.frontier.settings.allow_private

    def __getattr__(self, name: str) -> Any:
        return getattr(self.frontier, name)

    def add_urls(self, urls: list[tuple[str, float]]) -> tuple[int, int]:
        rows = []
        for url, weight in urls:
            try:
                u = check_url(url, allow_private=self.allow_private)
            except ValueError:
                continue
            rows.append((u, origin_of(u), float(weight)))
        return self.frontier.add_urls(rows, replan=False) if rows else (0, 0)

    def n_active(self) -> int:
        return int(self.frontier.page_counts()["active"])

    def close(self) -> None:
        try:
            self.store.close()
        finally:
            self.lock.release()


class Scheduler:
    """Scrapy scheduler (the ``BaseScheduler`` interface) backed by a freshcrawl frontier.

    Parameters
    ----------
    crawler : scrapy.crawler.Crawler
        The crawler (Scrapy builds the scheduler with :meth:`from_crawler`).
    open_frontier : callable
        Opens the frontier, in the background thread.
    mode : str
        Signature mode, ``raw`` or ``text``.
    prefetch : int
        Visits leased ahead of Scrapy.
    poll_s : float, default=0.05
        Seconds between two lease calls to a served frontier right after a visit was leased or
        reported; while nothing happens the wait grows to half the time since, up to the
        frontier's own poll interval (``RestFrontier.poll_s``). An in-process frontier is asked
        when it says something is due (``next_wakeup``), or at once after a report.

    Notes
    -----
    Settings read by :meth:`from_crawler` (the Scrapy page of the documentation has the table):
    ``FRESHCRAWL_DB`` (an in-process frontier: SQLite file or PostgreSQL URL) or
    ``FRESHCRAWL_SERVER`` (``http(s)://host:port`` of a running ``freshcrawl serve``), exactly one;
    ``FRESHCRAWL_TOKEN``, ``FRESHCRAWL_CRAWL_ID`` and ``FRESHCRAWL_TLS_CA`` / ``_CERT`` / ``_KEY``
    for a server; ``FRESHCRAWL_BUDGET`` (visits per day, ``"20000/day"``), ``FRESHCRAWL_POLICY``,
    ``FRESHCRAWL_MIN_DELAY`` and ``FRESHCRAWL_REPLAN_EVERY`` (seconds),
    ``FRESHCRAWL_MAX_PER_HOST_DAY``, ``FRESHCRAWL_ALLOW_PRIVATE`` and ``FRESHCRAWL_SEED`` in
    process; ``FRESHCRAWL_SIGNATURE`` (``raw`` or ``text``), ``FRESHCRAWL_LEASE`` (seconds a visit
    is held, default ``2 * DOWNLOAD_TIMEOUT + 30``) and ``FRESHCRAWL_PREFETCH`` (visits leased
    ahead, default ``CONCURRENT_REQUESTS``) for both.

    References
    ----------
    .. [1] Scrapy documentation, "Scheduler" (``BaseScheduler``) and "Signals" (``spider_idle``,
       ``response_received``), Scrapy 2.11 and later.

    Raises
    ------
    NotConfigured
        If neither or both of FRESHCRAWL_DB and FRESHCRAWL_SERVER are set, or a setting is malformed
        (the message names it).
    """

    def __init__(
        self, crawler: Any, open_frontier: Any, *, mode: str, prefetch: int, poll_s: float = 0.05
    ) -> None:
        self.crawler = crawler
        self._open_frontier = open_frontier
        self.mode = mode
        self.prefetch = prefetch
        self.poll_s = poll_s
        self.frontier: Any = None
        self.spider: Any = None
        self._ready: deque[Request] = deque()  # leased visits, ready for Scrapy
        self._local: deque[tuple[float, Request]] = deque()  # redirects, retries, non-GET requests
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()
        self._active_at = 0.0  # when a visit was last leased or reported (the worker's clock)
        self._planner: ThreadPoolExecutor | None = None  # computes an in-process frontier's plans
        self._planning: tuple[Any, Future] | None = None  # (job, its plan) while one is computed
        self._plan_retry_at = 0.0  # after a plan failed, the next is not tried before this time
        self._leased: set[Lease] = set()
        self._templates: dict[str, dict] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._has_pages = True
        self._error: BaseException | None = None
        self._unsent_pages: list[tuple[Visit, FetchOutcome]] = []  # kept over a failed call
        self._unsent_urls: dict[str, float] = {}
        #: leased visits, reports (page and robots) and discovered URLs sent to the frontier
        self.counts = {
            "leased": 0,
            "reported": 0,
            "robots": 0,
            "discovered": 0,
            "changed": 0,
            "unchanged": 0,
            "first": 0,
            "no-info": 0,
        }

    # BaseScheduler -------------------------------------------------------------------------------
    @classmethod
    def from_crawler(cls, crawler: Any) -> Scheduler:
        """Read the FRESHCRAWL_* settings (see the class docstring)."""
        import os

        from freshcrawl.units import parse_rate

        s = crawler.settings
        db, server = s.get("FRESHCRAWL_DB"), s.get("FRESHCRAWL_SERVER")
        if bool(db) == bool(server):
            raise NotConfigured(
                "freshcrawl.scrapy.Scheduler needs exactly one of FRESHCRAWL_DB (an in-process "
                f"frontier) and FRESHCRAWL_SERVER (a running freshcrawl serve); got {db!r}, {server!r}"
            )
        mode = s.get("FRESHCRAWL_SIGNATURE", "raw")
        if mode not in SIGNATURE_MODES:
            raise NotConfigured(
                f"FRESHCRAWL_SIGNATURE must be one of {sorted(SIGNATURE_MODES)}; got {mode!r}"
            )
        lease_s = s.getfloat("FRESHCRAWL_LEASE", 2 * s.getfloat("DOWNLOAD_TIMEOUT", 180.0) + 30.0)
        prefetch = s.getint("FRESHCRAWL_PREFETCH", s.getint("CONCURRENT_REQUESTS", 16))
        if db:
            try:
                budget = s.get("FRESHCRAWL_BUDGET")

                def seconds(name: str) -> float | None:
                    return None if s.get(name) is None else s.getfloat(name)

                given = {
                    "budget": None
                    if budget is None
                    else parse_rate(budget, name="FRESHCRAWL_BUDGET"),
                    "policy": s.get("FRESHCRAWL_POLICY"),
                    "signature": mode,
                    "min_delay_s": seconds("FRESHCRAWL_MIN_DELAY"),
                    "replan_every_s": seconds("FRESHCRAWL_REPLAN_EVERY"),
                    "max_per_host_day": seconds("FRESHCRAWL_MAX_PER_HOST_DAY"),
                    "allow_private": s.getbool("FRESHCRAWL_ALLOW_PRIVATE") or None,
                    "seed": s.getint("FRESHCRAWL_SEED", 0),
                }
            except ValueError as err:
                raise NotConfigured(str(err)) from err

            def open_frontier() -> Any:
                return _LocalFrontier(db, given)
        else:
            from freshcrawl.service.rest_client import RestFrontier
            from freshcrawl.service.tls import ClientTLS

            tls_files = [
                s.get(k) for k in ("FRESHCRAWL_TLS_CA", "FRESHCRAWL_TLS_CERT", "FRESHCRAWL_TLS_KEY")
            ]
            token = s.get("FRESHCRAWL_TOKEN") or os.environ.get("FRESHCRAWL_TOKEN") or None
            try:
                tls = ClientTLS(*tls_files) if any(tls_files) else None
                frontier = RestFrontier(
                    server,
                    s.get("FRESHCRAWL_CRAWL_ID"),
                    lease_s=lease_s,
                    token=token,
                    tls=tls,
                    allow_private=s.getbool("FRESHCRAWL_ALLOW_PRIVATE"),
                )
            except ValueError as err:
                raise NotConfigured(str(err)) from err

            def open_frontier() -> Any:
                return frontier

        sched = cls(crawler, open_frontier, mode=mode, prefetch=max(1, prefetch))
        sched.lease_s = lease_s
        _SCHEDULERS[id(crawler)] = sched
        return sched

    def open(self, spider: Any) -> None:
        """Open the frontier (in the background thread) and start leasing ahead."""
        self.spider = spider
        sig = self.crawler.signals
        sig.connect(self._on_idle, signal=signals.spider_idle)
        sig.connect(self._on_response, signal=signals.response_received)
        mws = self.crawler.settings.getdict("DOWNLOADER_MIDDLEWARES")
        if not any("ObservationMiddleware" in str(k) for k, v in mws.items() if v is not None):
            log.warning(
                "freshcrawl: ObservationMiddleware is not in DOWNLOADER_MIDDLEWARES; visits are timed "
                "from when Scrapy takes them, and 304s reach HttpErrorMiddleware"
            )
        self._no_transport_retries()
        opened = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(opened,), name="freshcrawl-frontier", daemon=True
        )
        self._thread.start()
        opened.wait()
        if self._error is not None:
            raise self._error

    def _no_transport_retries(self) -> None:
        """Stop Twisted's connection pool from sending a GET again, at once, when a reused connection
        fails before any answer (``HTTPConnectionPool.retryAutomatically``): that second request
        would come closer than the host's delay. Scrapy keeps its handlers' pools private, so this
        reaches them by name and does nothing where they are not found."""
        handlers = getattr(getattr(self.crawler.engine, "downloader", None), "handlers", None)
        get = getattr(handlers, "_get_handler", None)
        for scheme in ("http", "https"):
            pool = getattr(get(scheme), "_pool", None) if get is not None else None
            if pool is not None and hasattr(pool, "retryAutomatically"):
                pool.retryAutomatically = False

    def close(self, reason: str) -> None:
        """Stop leasing, report what is waiting, give back the visits not made, close the frontier."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        _SCHEDULERS.pop(id(self.crawler), None)
        stats = self.crawler.stats
        for k, v in self.counts.items():
            stats.set_value(f"freshcrawl/{k}", v)
        log.info("freshcrawl: %s", ", ".join(f"{k} {v}" for k, v in self.counts.items()))

    def has_pending_requests(self) -> bool:
        """Whether a leased visit, a redirect or a retry waits for Scrapy."""
        return bool(self._ready) or bool(self._local)

    def enqueue_request(self, request: Request) -> bool:
        """Take a request: a visit leased in the background, a redirect or retry of one (kept
        here), or a spider's request (its URL goes to the frontier; non-GET ones are kept here)."""
        lease = request.meta.get(META_KEY)
        if lease is not None and lease.reported:
            # a request yielded by the callback of a visit, with the visit's meta copied: a page
            request = request.replace(meta={k: v for k, v in request.meta.items() if k != META_KEY})
            lease = None
        if lease is not None and not lease.enqueued:
            lease.enqueued = True
            self._ready.append(request)
            return True
        if lease is not None or request.method != "GET" or request.body:
            # a hop of a visit waits for the host's delay since the visit's previous request
            delay = (
                getattr(lease.visit.request, "hop_delay_s", 0.0)
                if lease is not None and isinstance(lease.visit, Visit)
                else 0.0
            )
            if lease is not None and isinstance(lease.visit, RobotsVisit):
                delay = lease.visit.delay_s
            not_before = (lease.last_request_at + delay) if lease is not None else 0.0
            self._local.append((not_before, request))
            wait = not_before - time.time()
            if wait > 0:  # Scrapy asks again at once when the hop may go, not at its next heartbeat
                from twisted.internet import reactor

                reactor.callLater(wait + 0.001, self._wake)
            return True
        if (
            request.callback is not None
            or request.errback is not None
            or request.meta
            or request.cb_kwargs
        ):
            try:
                self._templates[request.url] = request.to_dict(spider=self.spider)
            except ValueError:
                pass
        weight = float(request.meta.get("freshcrawl_weight", 1.0))
        self._has_pages = True  # until the frontier, having taken the URL, says otherwise
        self._inbox.put(("discover", request.url, weight))
        return True

    def next_request(self) -> Request | None:
        """The next request for Scrapy, or None (never waits)."""
        if self._local:
            now = time.time()
            for _ in range(len(self._local)):
                not_before, req = self._local.popleft()
                if not_before <= now:
                    return req
                self._local.append((not_before, req))
        if self._ready:
            return self._ready.popleft()
        return None

    # reports ---------------------------------------------------------------------------------------
    def report_response(self, lease: Lease, response: Response) -> None:
        """Send the final answer of a visit to the frontier (once per lease)."""
        if lease.reported:
            return
        lease.reported = True
        self._inbox.put(("response", lease, response, time.time()))

    def report_failure(self, lease: Lease, exc: BaseException) -> None:
        """Send the final exception of a visit to the frontier (once per lease)."""
        if lease.reported:
            return
        lease.reported = True
        self._inbox.put(("failure", lease, exc, time.time()))

    def _on_response(self, response: Response, request: Request, spider: Any = None) -> None:
        lease = request.meta.get(META_KEY)
        if lease is not None:
            self.report_response(lease, response)

    def _errback(self, failure: Any) -> Any:
        request = getattr(failure, "request", None)
        lease = request.meta.get(META_KEY) if request is not None else None
        exc = failure.value
        if lease is not None and not isinstance(exc, HttpError):
            if isinstance(exc, IgnoreRequest) and lease.reported:
                return None  # a 304 dropped after its report
            self.report_failure(lease, exc)
        template = lease.template_errback if lease is not None else None
        if template is not None:
            return template(failure)
        return None

    def _on_idle(self, spider: Any = None) -> None:
        if self._has_pages and not self._stop.is_set():
            raise DontCloseSpider

    # the background thread -------------------------------------------------------------------------
    def _run(self, opened: threading.Event) -> None:
        try:
            self.frontier = self._open_frontier()
        except Exception as err:  # noqa: BLE001 - handed to open(), which raises it in Scrapy's thread
            self._error = NotConfigured(f"freshcrawl: cannot open the frontier: {err}")
            opened.set()
            return
        opened.set()
        from twisted.internet import reactor

        last_count = 0.0
        try:
            while not self._stop.is_set():
                try:
                    self._step(reactor)
                except Exception as err:  # noqa: BLE001 - a served frontier down: try again
                    log.warning(
                        "freshcrawl: a frontier call failed (%s: %s); trying again in 1 s",
                        type(err).__name__,
                        err,
                    )
                    self._stop.wait(1.0)
                now = time.time()
                if now - last_count >= 2.0:
                    last_count = now
                    try:
                        active = self.frontier.n_active() > 0 or bool(self._leased)
                        self._has_pages = active or not self._inbox.empty()
                    except Exception as err:  # noqa: BLE001 - the next count may succeed
                        log.warning("freshcrawl: cannot count the crawl's pages (%s)", err)
            try:
                self._finish_plan(wait=True)
                self._drain(timeout=0.0)
                self._report_cut_off()
            finally:
                if self._unsent_pages or self._unsent_urls:
                    log.warning(
                        "freshcrawl: %d report(s) and %d discovered URL(s) could not be sent",
                        len(self._unsent_pages),
                        len(self._unsent_urls),
                    )
                self._give_back()
        except Exception:
            log.exception("freshcrawl: the frontier thread failed")
        finally:
            if self._planner is not None:
                self._planner.shutdown(wait=True)
            try:
                self.frontier.close()
            except Exception:
                log.exception("freshcrawl: closing the frontier failed")

    def _step(self, reactor: Any) -> None:
        """One round of the background thread: reports in, a plan when due, leases out, a short wait."""
        self._drain(timeout=0.0)
        self._finish_plan(wait=False)
        now = time.time()
        if self._planning is None and now >= max(self.frontier.next_replan, self._plan_retry_at):
            self._start_plan(now)
        want = self.prefetch - len(self._leased)
        items: list = []
        if want > 0:
            try:
                items = self.frontier.due(now, want)
            except Exception as err:  # noqa: BLE001 - a served frontier unreachable: ask again
                log.warning("freshcrawl: leasing failed (%s); asking again", err)
            for item in items:
                reactor.callFromThread(self._inject, self._request_for(item))
        if items:
            self._active_at = now
        wake = min(self.frontier.next_wakeup(now), self.frontier.next_replan, now + 0.25)
        if not isinstance(self.frontier, _LocalFrontier):
            # the server knows when the next visit is due, this side does not: soon after a lease or
            # a report (a host just freed, its next page may be due after its delay) ask again soon
            wake = min(wake, now + max(self.poll_s, 0.5 * (now - self._active_at)))
        # a report wakes the wait at once; 1 ms at least, should the frontier's wake-up be past
        self._drain(timeout=max(min(wake - time.time(), 0.25), 0.001))

    def _start_plan(self, now: float) -> None:
        """Re-plan: an in-process frontier's plan is computed in a worker thread (as ``crawl run``
        does) while this thread keeps leasing and recording with the plan in force."""
        f = self.frontier
        if not hasattr(f, "prepare_plan"):
            f.replan(now)
            return
        if self._planner is None:
            self._planner = ThreadPoolExecutor(1, thread_name_prefix="freshcrawl-plan")
        job = f.prepare_plan(now)
        plan = self._planner.submit(f.compute_plan, job)
        plan.add_done_callback(lambda _: self._inbox.put(("planned",)))
        self._planning = (job, plan)

    def _finish_plan(self, *, wait: bool) -> None:
        """Apply the plan computed in the worker thread once it is ready (``wait``: wait for it); a
        plan that failed is dropped, the one in force stays and the next is tried 1 s later."""
        if self._planning is None:
            return
        job, plan = self._planning
        if not (wait or plan.done()):
            return
        self._planning = None
        try:
            self.frontier.apply_plan(job, plan.result(), now=time.time())
        except Exception as err:  # noqa: BLE001 - the plan in force keeps serving
            self.frontier.cancel_plan(job)
            self._plan_retry_at = time.time() + 1.0
            log.warning("freshcrawl: a plan failed (%s: %s)", type(err).__name__, err)

    def _wake(self) -> None:
        slot = getattr(self.crawler.engine, "_slot", None)
        if slot is not None and getattr(slot, "nextcall", None) is not None:
            slot.nextcall.schedule()

    def _inject(self, request: Request) -> None:
        engine = self.crawler.engine
        if engine is None or engine.spider is None or self._stop.is_set():
            lease = request.meta[META_KEY]
            self._inbox.put(("release", lease))
            return
        engine.crawl(request)

    def _request_for(self, item: Visit | RobotsVisit) -> Request:
        lease = Lease(item)
        self._leased.add(lease)
        self.counts["leased"] += 1
        if isinstance(item, RobotsVisit):
            return Request(
                lease.url,
                callback=_ignore,
                errback=self._errback,
                dont_filter=True,
                priority=10,
                meta={META_KEY: lease, "handle_httpstatus_all": True, "dont_retry": True},
            )
        req = item.request
        headers = {}
        if req.etag:
            headers["If-None-Match"] = req.etag
        if req.last_modified:
            headers["If-Modified-Since"] = req.last_modified
        template = self._templates.get(req.url)
        meta = {META_KEY: lease, "dont_retry": True}
        if template is not None:
            base = request_from_dict(template, spider=self.spider)
            lease.template_errback = base.errback
            return base.replace(
                url=req.url,
                headers={**base.headers.to_unicode_dict(), **headers},
                errback=self._errback,
                dont_filter=True,
                meta={**base.meta, **meta},
            )
        return Request(req.url, headers=headers, errback=self._errback, dont_filter=True, meta=meta)

    def _drain(self, timeout: float) -> None:
        """Take what the reactor sent (reports, discovered URLs) and pass it to the frontier."""
        pages: list[tuple[Visit, FetchOutcome]] = []
        discovered: dict[str, float] = {}
        deadline = time.monotonic() + timeout
        woken = False
        while True:
            try:
                wait = deadline - time.monotonic()
                msg = (
                    self._inbox.get(timeout=wait)
                    if wait > 0 and not (pages or discovered or woken)
                    else self._inbox.get_nowait()
                )
            except queue.Empty:
                break
            kind = msg[0]
            if kind == "planned":
                woken = True
                continue
            if kind == "discover":
                discovered.setdefault(msg[1], msg[2])
                continue
            lease = msg[1]
            self._leased.discard(lease)
            if kind == "release":
                if isinstance(lease.visit, Visit) and hasattr(self.frontier, "release"):
                    self.frontier.release([lease.visit])
                continue
            if isinstance(lease.visit, RobotsVisit):
                self._record_robots(lease, msg[2], msg[3])
                continue
            if kind == "response":
                out = _response_outcome(lease, msg[2], now=msg[3], mode=self.mode)
            else:
                out = _failure_outcome(lease, msg[2], now=msg[3])
            pages.append((lease.visit, out))
            self.counts[out.outcome.value] += 1
        if pages:
            self._active_at = time.time()
        # what a failed call left unsent goes first; a report is never sent twice
        self._unsent_pages.extend(pages)
        while self._unsent_pages:
            # a URL at most once per batch (the store's rows are updated in order)
            batch: list[tuple[Visit, FetchOutcome]] = []
            seen: set[str] = set()
            for visit, out in self._unsent_pages:
                if visit.url in seen:
                    break
                batch.append((visit, out))
                seen.add(visit.url)
            self.frontier.record(batch)
            del self._unsent_pages[: len(batch)]
            self.counts["reported"] += len(batch)
        for url, weight in discovered.items():
            self._unsent_urls.setdefault(url, weight)
        # new pages wait for the plan under way: they may grow the frontier's policy, which the
        # planning thread is using
        if self._unsent_urls and self._planning is None:
            added, _ = self.frontier.add_urls(list(self._unsent_urls.items()))
            self._unsent_urls.clear()
            self.counts["discovered"] += added
            if added:
                self._has_pages = True

    def _record_robots(self, lease: Lease, got: Any, now: float) -> None:
        started = lease.started_at if lease.started_at is not None else now
        elapsed = max(0.0, now - started)
        origin = lease.visit.origin
        if isinstance(got, Response):
            status = got.status
            text = (
                got.text
                if 200 <= status < 300 and hasattr(got, "text")
                else (got.body.decode("utf-8", "replace") if 200 <= status < 300 else None)
            )
            retry = (
                parse_retry_after(_header(got, b"Retry-After"), now)
                if status in (429, 503)
                else None
            )
            out = RobotsOutcome(
                origin,
                status,
                text[:512_000] if text else text,
                started,
                elapsed,
                "ok" if 200 <= status < 300 else f"http-{status}",
                retry,
            )
        else:
            out = RobotsOutcome(origin, None, None, started, elapsed, _network_why(got))
        self.frontier.record_robots(lease.visit, out)
        self.counts["robots"] += 1

    def _report_cut_off(self) -> None:
        """Visits whose request was sent but whose answer the spider's close cut off: no information."""
        now = time.time()
        cut = [
            lease for lease in self._leased if lease.started_at is not None and not lease.reported
        ]
        for lease in cut:
            lease.reported = True
            self._leased.discard(lease)
            out = FetchOutcome(
                url=lease.visit.url,
                outcome=Outcome.NO_INFO,
                why="cut-off",
                started_at=lease.started_at,
                elapsed_s=max(0.0, now - lease.started_at),
                error=ErrorKind.NETWORK,
            )
            if isinstance(lease.visit, Visit):
                self._unsent_pages.append((lease.visit, out))
                self.counts["no-info"] += 1
        self._drain(timeout=0.0)

    def _give_back(self) -> None:
        """Visits leased and not reported at the end go back to the frontier (in-process) or expire."""
        left = [lease.visit for lease in self._leased if isinstance(lease.visit, Visit)]
        if left and hasattr(self.frontier, "release"):
            self.frontier.release(left)
        self._leased.clear()
