"""The REST API of the frontier service (FastAPI), its Prometheus metrics and its dashboard.

For crawlers without a gRPC client. :func:`create_app` serves one :class:`FrontierService`:

=========================  ========================================================================
``POST /urls``             add URLs with weights (all or nothing; 422 names the bad field and index)
``POST /leases``           lease due visits for a worker (``count``, ``lease_s``); a visit not
                           reported before its lease runs out is handed out again
``POST /observations``     report what visits gave (a result per report; a malformed batch is
                           refused whole with 422, nothing recorded)
``POST /robots``           report a robots.txt a worker fetched (a lease of kind ``robots``)
``POST /announcements``    changes a pipeline announces (url, changed_at, source): logged, judged
                           by the visits that follow, followed where the source is trusted
``GET /explain?url=``      why a page is visited as it is (:func:`~freshcrawl.frontier.report.explain_page`)
``GET /status``            the crawl's status (:func:`~freshcrawl.frontier.report.crawl_status`)
``GET /hosts``             budget use by host: planned visits per day against the host's cap
``GET /overdue``           the pages most overdue
``GET /history``           estimated freshness over time (samples kept in memory); with ``?url=``
                           also the page's captures in the crawl's WARC files
``GET /diff?url=``         the change between two captures of a page (a unified diff, from the
                           WARC files)
``GET /metrics``           Prometheus metrics (``freshcrawl_*``)
``GET /``                  the dashboard (HTML and plain JS drawing SVG; nothing fetched elsewhere)
``GET /openapi.json``      the OpenAPI document
=========================  ========================================================================

Input is bounded in one place (:mod:`freshcrawl.frontier.limits`): URLs (normalised, no
credentials, a host the egress policy allows), report times within [now - 7 days, now + 5 min],
leases of at most a day, statuses 100-599, sizes at most 2^53; a request body over the app's
``max_body_bytes`` is answered 413 before the rest of it is read. URLs shown by a read are shown
without any user name or password.

Every write needs ``Authorization: Bearer <token>`` when the app has a token (401 with a JSON body
otherwise); reads are public unless ``public_reads=False``. Errors are JSON: ``{"detail": [{"loc":
[...], "msg": ..., "type": ...}]}`` where ``loc`` names the field (``["body", "urls", 3, "url"]``).

During a database outage every call that needs the database answers 503 with a JSON body of type
``database_unavailable`` and ``Retry-After: 5``; ``GET /metrics`` still answers, with
``freshcrawl_database_up`` 0 and without the metrics read from the database.

Non-finite numbers are not JSON: an unbounded interval end or cap (``inf``) and an unknown value
(``nan``) are served as ``null``.

The routes are :class:`fastapi.APIRouter` s of :mod:`freshcrawl.service.routes` (writes, reads,
metrics, the dashboard), each reaching the crawls through :class:`FrontierService`'s public
methods; :func:`create_app` includes every one of :data:`freshcrawl.service.routes.ROUTERS` and adds
the middleware (body limit, timing), the error handlers and the metrics.

Leases are taken under the service's lock, so workers leasing at once never get the same URL while
its lease holds; this holds across processes only because one serve process is the only writer of a
crawl database (:mod:`freshcrawl.store.writer`).
"""

import collections
import json
import math
import threading
import time
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from freshcrawl.errors import DatabaseUnavailableError, WriterLockLostError
from freshcrawl.frontier import limits
from freshcrawl.frontier.report import crawl_status
from freshcrawl.service.core import FrontierService
from freshcrawl.service.routes import ROUTERS
from freshcrawl.service.routes.common import finite
from freshcrawl.store import database_url, is_connection_error, reason_of, unavailable

__all__ = ["FreshnessHistory", "create_app"]

#: Seconds a client is asked to wait (Retry-After) before trying again during a database outage.
RETRY_AFTER_S = 5


def _database_down(msg: str, *, kind: str = "database_unavailable") -> JSONResponse:
    """503 with a JSON body and Retry-After: the database is unreachable (RFC 9110, 15.6.4)."""
    return JSONResponse(status_code=503, headers={"Retry-After": str(RETRY_AFTER_S)},
                        content={"detail": [{"loc": [], "msg": msg, "type": kind}]})


# --- freshness history ------------------------------------------------------------------------------
class FreshnessHistory:
    """Estimated freshness over time per crawl, sampled in memory (at most ``maxlen`` per crawl).

    :meth:`sample` is called after each plan by ``freshcrawl serve``, and by the API when the last
    sample is older than ``every_s`` seconds.
    """

    def __init__(self, service: FrontierService, *, every_s: float = 60.0, maxlen: int = 10_000) -> None:
        self.service = service
        self.every_s = float(every_s)
        self._lock = threading.Lock()
        self._samples: dict[str, collections.deque] = collections.defaultdict(lambda: collections.deque(maxlen=maxlen))

    def sample(self, crawl_id: str | None = None, *, now: float | None = None) -> None:
        """Take a sample of ``crawl_id`` (None: every crawl open in the service)."""
        now = time.time() if now is None else float(now)
        if crawl_id is None:
            crawls = self.service.open_crawls(now=now)
        else:
            crawls = [self.service.crawl_info(crawl_id, now=now)]
        for c in crawls:
            st = crawl_status(c.store, now=now)
            with self._lock:
                self._samples[c.crawl_id].append(dict(
                    time=now, estimated_freshness=st["estimated_freshness"], budget_in_use=st["budget_in_use"],
                    due_now=st["due_now"], n_pages=st["n_pages"]))

    def get(self, crawl_id: str, *, now: float | None = None) -> list[dict[str, Any]]:
        """The samples of ``crawl_id``, oldest first (a new one taken first if the last is old)."""
        now = time.time() if now is None else float(now)
        with self._lock:
            last = self._samples[crawl_id][-1]["time"] if self._samples[crawl_id] else -math.inf
        if now - last >= self.every_s:
            self.sample(crawl_id, now=now)
        with self._lock:
            return list(self._samples[crawl_id])


# --- metrics ----------------------------------------------------------------------------------------
class _CrawlCollector:
    """Metrics read from each open crawl at scrape time (the log's counts are counters)."""

    def __init__(self, service: FrontierService) -> None:
        self.service = service

    def describe(self):
        return []

    def collect(self):
        now = time.time()
        fam = dict(
            visits=CounterMetricFamily("freshcrawl_visits", "Visits recorded in the crawl's log, by outcome.",
                                       labels=["crawl", "outcome"]),
            no_outcome=CounterMetricFamily(
                "freshcrawl_reports_without_outcome",
                "Reports of leased URLs that carried no fetch outcome (nothing learned from them).",
                labels=["crawl"]),
            changes=CounterMetricFamily("freshcrawl_changes_detected", "Visits that found the page changed.",
                                        labels=["crawl"]),
            errors=CounterMetricFamily("freshcrawl_errors", "Visits without information, by error kind.",
                                       labels=["crawl", "kind"]),
            pages=GaugeMetricFamily("freshcrawl_pages", "Pages in the crawl, by status.", labels=["crawl", "status"]),
            hosts=GaugeMetricFamily("freshcrawl_hosts", "Hosts in the crawl.", labels=["crawl"]),
            backoff=GaugeMetricFamily("freshcrawl_hosts_in_backoff", "Hosts in back-off now.", labels=["crawl"]),
            due=GaugeMetricFamily("freshcrawl_due_pages", "Active pages due now (the backlog).", labels=["crawl"]),
            leased=GaugeMetricFamily("freshcrawl_leased_pages", "Pages leased to workers now.", labels=["crawl"]),
            fresh=GaugeMetricFamily("freshcrawl_estimated_freshness_ratio",
                                    "Weighted mean expected freshness of the active pages, in [0, 1].",
                                    labels=["crawl"]),
            budget=GaugeMetricFamily("freshcrawl_budget_visits_per_day", "Crawl budget.", labels=["crawl"]),
            in_use=GaugeMetricFamily("freshcrawl_budget_in_use_visits_per_day",
                                     "Sum of the planned rates.", labels=["crawl"]),
            plan_age=GaugeMetricFamily("freshcrawl_plan_age_seconds", "Time since the last plan.", labels=["crawl"]),
        )
        crawls = self.service.open_crawls(now=now)
        up = GaugeMetricFamily("freshcrawl_database_up", "1 when the crawl database answered its last "
                               "operation, 0 during an outage.", labels=["crawl"])
        outages = CounterMetricFamily("freshcrawl_database_outages", "Database outages seen since the start.",
                                      labels=["crawl"])
        for c in crawls:
            cid, store = c.crawl_id, c.store
            up.add_metric([cid], 0.0 if store.down_since is not None else 1.0)
            outages.add_metric([cid], float(store.outages))
        yield up
        yield outages
        for c in crawls:
            cid, store = c.crawl_id, c.store
            try:
                st = crawl_status(store, now=now)
                by_kind = store.outcome_counts()
            except Exception as err:  # an outage: the metrics read from the database are left out
                if not is_connection_error(err):
                    raise
                continue
            for outcome in ("changed", "unchanged", "first", "no-info"):
                fam["visits"].add_metric([cid, outcome], float(st["observations"].get(outcome, 0)))
            fam["changes"].add_metric([cid], float(st["observations"].get("changed", 0)))
            fam["no_outcome"].add_metric([cid], float(st["reports_without_outcome"]))
            kinds = collections.Counter()
            for (outcome, error), n in by_kind.items():
                if outcome == "no-info":
                    kinds[error or "unknown"] += n
            for kind in dict.fromkeys(("throttled", "server", "network", "page", "content", "robots", *sorted(kinds))):
                fam["errors"].add_metric([cid, kind], float(kinds.get(kind, 0)))
            for status in ("active", "disallowed", "failed", "removed"):
                fam["pages"].add_metric([cid, status], float(st["pages"].get(status, 0)))
            fam["hosts"].add_metric([cid], float(st["hosts"]))
            fam["backoff"].add_metric([cid], float(st["hosts_in_backoff"]))
            fam["due"].add_metric([cid], float(st["due_now"]))
            fam["leased"].add_metric([cid], float(c.n_leased))
            if st["estimated_freshness"] is not None:
                fam["fresh"].add_metric([cid], float(st["estimated_freshness"]))
            fam["budget"].add_metric([cid], float(st["budget"] or 0.0))
            fam["in_use"].add_metric([cid], float(st["budget_in_use"]))
            fam["plan_age"].add_metric([cid], max(0.0, now - c.planned_at))
        yield from fam.values()


class _Timing:
    """ASGI middleware: request counts and latencies by route and status code."""

    def __init__(self, app, requests: Counter, latency: Histogram, routes: frozenset[str]) -> None:
        self.app = app
        self.requests = requests
        self.latency = latency
        self.routes = routes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        route = scope["path"] if scope["path"] in self.routes else "other"
        code = {"status": 500}
        t0 = time.perf_counter()

        async def send_(message):
            if message["type"] == "http.response.start":
                code["status"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_)
        finally:
            self.latency.labels(route).observe(time.perf_counter() - t0)
            self.requests.labels(scope["method"], route, str(code["status"])).inc()


class _BodyLimit:
    """ASGI middleware: a request body over ``max_bytes`` is answered 413 before the rest is read.

    A declared Content-Length over the cap is refused at once; a body without one (chunked) is read
    up to the cap, then refused.
    """

    def __init__(self, app, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = int(max_bytes)

    async def _too_large(self, send) -> None:
        body = json.dumps({"detail": [{
            "loc": ["body"], "type": "too_large",
            "msg": f"the request body must be at most {self.max_bytes} bytes"}]}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = None
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    length = None
                break
        if length is not None:
            if length > self.max_bytes:
                return await self._too_large(send)
            return await self.app(scope, receive, send)
        if scope.get("method") in ("GET", "HEAD", "OPTIONS", "DELETE"):
            return await self.app(scope, receive, send)
        # no length given: read the body here, up to the cap, then hand it on
        chunks, total, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return None  # the client went away
            chunk = message.get("body", b"")
            total += len(chunk)
            if total > self.max_bytes:
                return await self._too_large(send)
            chunks.append(chunk)
            more = message.get("more_body", False)
        body, sent = b"".join(chunks), False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)


# --- the app ----------------------------------------------------------------------------------------
def create_app(
    service: FrontierService,
    *,
    token: str | None,
    public_reads: bool = True,
    history_every_s: float = 60.0,
    client_certs: bool = False,
    max_body_bytes: int = limits.DEFAULT_MAX_BODY_BYTES,
) -> FastAPI:
    """The REST API, metrics and dashboard of ``service``.

    Parameters
    ----------
    service : FrontierService
        The frontier served.
    token : str or None
        Bearer token every write must carry; None leaves writes open (only for a server bound to
        loopback: ``freshcrawl serve`` refuses other addresses without a token).
    public_reads : bool, default=True
        Whether reads (status, explain, hosts, overdue, history, metrics, the dashboard's data) are
        served without the token. The dashboard page and the OpenAPI document are always public.
    history_every_s : float, default=60.0
        Least seconds between two freshness samples taken by the API (``freshcrawl serve`` also
        samples after every plan).
    client_certs : bool, default=False
        Whether the server in front of the app (mutual TLS) admits only connections that presented
        a client certificate signed by its client CA. Such a connection is authorized as the token
        authorizes: with no token, its writes (and reads) need nothing more; with a token, they need
        the token too.
    max_body_bytes : int, default=16777216 (16 MiB)
        Largest request body read; a larger one is answered 413 before the rest of it is read.

    Raises
    ------
    ValueError
        If ``public_reads`` is False without a token or client certificates, the token is empty,
        or ``max_body_bytes`` < 1.
    """
    if isinstance(max_body_bytes, bool) or not isinstance(max_body_bytes, int) or max_body_bytes < 1:
        raise ValueError(f"max_body_bytes must be an int >= 1 (bytes); got {max_body_bytes!r}")
    if token is not None and not token.strip():
        raise ValueError("token must be a non-empty string or None")
    if not public_reads and token is None and not client_certs:
        raise ValueError(
            "public_reads=False needs a token or client certificates (no one could read)"
        )

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_CrawlCollector(service))
    leases_total = Counter("freshcrawl_rest_leases", "Visits handed out through the REST API, by kind.",
                           ["kind"], registry=registry)
    reports_total = Counter("freshcrawl_rest_reports", "Reports taken through the REST API, by result.",
                            ["result"], registry=registry)
    requests_total = Counter("freshcrawl_http_requests", "HTTP requests, by method, route and status code.",
                             ["method", "route", "code"], registry=registry)
    latency = Histogram("freshcrawl_http_request_duration_seconds", "Time to answer an HTTP request.", ["route"],
                        buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
                        registry=registry)
    history = FreshnessHistory(service, every_s=history_every_s)

    app = FastAPI(
        docs_url=None,  # Swagger UI and ReDoc load their scripts from a CDN: only the document is served
        redoc_url=None,
        title="freshcrawl frontier",
        version="1",
        description=__doc__.split("\n\n")[0] + " Writes need a Bearer token; times are seconds since the epoch, "
        "rates visits (or changes) per day.",
    )
    app.state.service = service
    app.state.history = history
    app.state.registry = registry
    app.state.token = token
    app.state.public_reads = public_reads
    app.state.leases_total = leases_total
    app.state.reports_total = reports_total
    for router in ROUTERS:
        app.include_router(router)
    app.add_middleware(_BodyLimit, max_bytes=max_body_bytes)
    # a request's route label: a path served, or "other"
    paths = frozenset({app.openapi_url, *(route.path for router in ROUTERS for route in router.routes)})
    app.add_middleware(_Timing, requests=requests_total, latency=latency, routes=paths)

    @app.exception_handler(DatabaseUnavailableError)
    async def _unavailable(request: Request, exc: DatabaseUnavailableError) -> JSONResponse:
        return _database_down(str(exc))

    @app.exception_handler(WriterLockLostError)
    async def _lock_lost(request: Request, exc: WriterLockLostError) -> JSONResponse:
        return _database_down(str(exc), kind="writer_lock_lost")

    @app.exception_handler(DBAPIError)
    async def _database_error(request: Request, exc: DBAPIError) -> JSONResponse:
        if is_connection_error(exc):
            where = make_url(database_url(service.db)).render_as_string(hide_password=True)
            return _database_down(str(unavailable(where, exc)))
        return JSONResponse(status_code=500, content={"detail": [
            {"loc": [], "msg": f"database error: {reason_of(exc)}", "type": "database_error"}]})

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
                  for e in exc.errors()]
        return JSONResponse(status_code=422, content=finite({"detail": errors}))

    return app
