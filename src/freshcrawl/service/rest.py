"""The REST API of the frontier service (FastAPI), its Prometheus metrics and its dashboard.

For crawlers without a gRPC client. :func:`create_app` serves one :class:`FrontierService`:

=========================  ========================================================================
``POST /urls``             add URLs with weights (all or nothing; 422 names the bad field and index)
``POST /leases``           lease due visits for a worker (``count``, ``lease_s``); a visit not
                           reported before its lease runs out is handed out again
``POST /observations``     report what visits gave (a result per report; a malformed batch is
                           refused whole with 422, nothing recorded)
``POST /robots``           report a robots.txt a worker fetched (a lease of kind ``robots``)
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

Leases are taken under the service's lock, so workers leasing at once never get the same URL while
its lease holds; this holds across processes only because one serve process is the only writer of a
crawl database (:mod:`freshcrawl.service.writer`).
"""


import collections
import json
import math
import secrets
import threading
import time
from importlib.resources import files
from typing import Annotated, Any, Literal

import numpy as np
from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from freshcrawl.errors import DatabaseUnavailableError, WriterLockLostError
from freshcrawl.frontier import limits
from freshcrawl.frontier.frontier import origin_of
from freshcrawl.frontier.report import crawl_status, explain_page
from freshcrawl.service.announcements import announcements_router
from freshcrawl.service.core import DEFAULT_CRAWL, FrontierService, Report, queue_key
from freshcrawl.store import (
    check_namespace,
    database_url,
    is_connection_error,
    list_namespaces,
    reason_of,
    unavailable,
)

__all__ = ["create_app", "FreshnessHistory"]

_MAX_URL = limits.MAX_URL_CHARS
_MAX_ORIGIN = 512  # the hosts.origin column
_MAX_BATCH = 10_000


# --- helpers ---------------------------------------------------------------------------------------
def _finite(obj: Any) -> Any:
    """``obj`` with every non-finite float (and numpy scalar) made JSON-ready: inf and nan -> None."""
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def _text(value: str | None, *, name: str = "text") -> str | None:
    return None if value is None else limits.check_text(value, field=name)


def _public_url(url: str) -> str:
    """``url`` without a user name or password (a read never shows credentials)."""
    head, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, tail = rest.partition("/")
    return head + sep + authority.rpartition("@")[2] + slash + tail


def _crawl_id(value: str | None) -> str:
    if value is None or value == "" or value == DEFAULT_CRAWL:
        return DEFAULT_CRAWL
    return check_namespace(value)


def _url(value: str) -> str:
    # the syntax only: the egress policy depends on the service's settings (checked by the endpoint)
    try:
        url = limits.check_url(value, allow_private=True)
    except (TypeError, ValueError) as err:
        raise ValueError(str(err)) from None
    if len(origin_of(url)) > _MAX_ORIGIN:
        raise ValueError(f"url must be at most {_MAX_URL} characters with a host of at most {_MAX_ORIGIN}")
    return url


#: Seconds a client is asked to wait (Retry-After) before trying again during a database outage.
RETRY_AFTER_S = 5


def _database_down(msg: str, *, kind: str = "database_unavailable") -> JSONResponse:
    """503 with a JSON body and Retry-After: the database is unreachable (RFC 9110, 15.6.4)."""
    return JSONResponse(status_code=503, headers={"Retry-After": str(RETRY_AFTER_S)},
                        content={"detail": [{"loc": [], "msg": msg, "type": kind}]})


def _problem(status: int, loc: list[Any], msg: str, kind: str) -> HTTPException:
    return HTTPException(status, detail=[{"loc": loc, "msg": msg, "type": kind}])


# --- request and response models -------------------------------------------------------------------
class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class _CrawlScoped(_Model):
    crawl_id: str | None = Field(
        None, max_length=64, validate_default=True,
        description="Crawl ID (1-64 letters, digits, '.', '_' or '-'); null, '' or 'DEFAULT': the default crawl.",
    )

    @field_validator("crawl_id")
    @classmethod
    def _check_crawl(cls, v: str | None) -> str:
        return _crawl_id(v)


class UrlIn(_Model):
    """A URL to keep fresh."""

    url: str = Field(..., description="Absolute http(s) URL (normalised before it is stored).",
                     examples=["https://example.org/news"])
    weight: float = Field(1.0, ge=0, le=1e9, description="Importance w of the page (>= 0, dimensionless).")

    @field_validator("url")
    @classmethod
    def _check_url(cls, v: str) -> str:
        return _url(v)


class AddUrlsRequest(_CrawlScoped):
    """URLs to add to a crawl (created when it does not exist)."""

    urls: list[UrlIn] = Field(..., max_length=_MAX_BATCH, description="URLs with weights; at most 10,000.")


class AddUrlsResponse(_Model):
    crawl_id: str
    added: int = Field(..., description="URLs new to the crawl.")
    known: int = Field(..., description="URLs already in the crawl (left as they are).")


class LeaseRequest(_CrawlScoped):
    """A worker asking for due visits."""

    worker_id: str = Field(..., min_length=1, max_length=128, description="Who leases (free text).")
    count: int = Field(1, ge=1, le=1000, description="Most visits wanted; at most one per host is handed out.")
    lease_s: float = Field(60.0, gt=0, le=limits.MAX_LEASE_S,
                           description="Seconds the visits are held for this worker; unreported ones go back after.")
    queue: str | None = Field(None, max_length=600, description="Only visits of this queue (host[:port]).")

    @field_validator("worker_id", "queue")
    @classmethod
    def _no_nul(cls, v: str | None) -> str | None:
        return _text(v)


class LeaseOut(_Model):
    """A leased visit. ``kind="robots"``: fetch the host's robots.txt at ``url``, report it to /robots."""

    crawl_id: str
    kind: Literal["page", "robots"]
    url: str = Field(..., description="What to fetch.")
    queue: str = Field(..., description="host[:port] of the URL.")
    page_id: int | None
    etag: str | None = Field(None, description="Validator for If-None-Match.")
    last_modified: str | None = Field(None, description="Validator for If-Modified-Since.")
    signature: str | None = Field(None, description="Signature of the stored copy.")
    due: float = Field(..., description="When the visit was due, seconds since the epoch.")
    expires_at: float = Field(..., description="End of the lease, seconds since the epoch.")


class LeaseResponse(_Model):
    worker_id: str
    leases: list[LeaseOut]


class ReportIn(_Model):
    """What a visit gave."""

    url: str = Field(..., description="The URL visited (as leased).")
    status: int | None = Field(..., ge=100, le=599, description="HTTP status; null when no answer came.")
    signature: str | None = Field(None, max_length=128,
                                  description="Content signature of the body (any stable digest); ignored on 304.")
    etag: str | None = Field(None, max_length=4096)
    last_modified: str | None = Field(None, max_length=4096)
    elapsed_s: float = Field(0.0, ge=0, le=limits.MAX_DURATION_S, description="Seconds the visit took.")
    n_bytes: int = Field(0, ge=0, le=limits.MAX_SIZE, description="Body bytes (at most 2^53).")
    retry_after_s: float | None = Field(None, ge=0, le=limits.MAX_RETRY_AFTER_S,
                                        description="Seconds a 429/503 asked to wait.")
    error: str | None = Field(None, max_length=64,
                              description="Without a status: 'timeout', 'network' or another page error.")
    started_at: float | None = Field(
        None, description="When the request was sent, seconds since the epoch, within [now - 7 days, now + 5 min]; "
        "default now.")
    refetch_not_before: float | None = Field(
        None, description="After an error: earliest next visit, seconds since the epoch (at most now + 366 days).")

    @field_validator("url")
    @classmethod
    def _check_url(cls, v: str) -> str:
        return _url(v)

    @field_validator("started_at")
    @classmethod
    def _check_started(cls, v: float | None) -> float | None:
        return None if v is None else limits.check_report_time(v, field="started_at")

    @field_validator("refetch_not_before")
    @classmethod
    def _check_not_before(cls, v: float | None) -> float | None:
        return None if v is None else limits.check_not_before(v, field="refetch_not_before")

    @field_validator("signature", "etag", "last_modified", "error")
    @classmethod
    def _no_nul(cls, v: str | None) -> str | None:
        return _text(v)


class ObservationsRequest(_CrawlScoped):
    """Reports of visits; one malformed report refuses the whole batch (nothing is recorded)."""

    reports: list[ReportIn] = Field(..., max_length=_MAX_BATCH)


class ObservationsResponse(_Model):
    crawl_id: str
    results: list[str] = Field(..., description="Per report, in order: 'ok' or 'unknown-url'.")
    n_ok: int


class RobotsRequest(_CrawlScoped):
    """A robots.txt a worker fetched."""

    url: str = Field(..., description="The robots.txt URL leased (or any URL of the host).")
    status: int | None = Field(..., ge=100, le=599, description="HTTP status; null when unreachable.")
    text: str | None = Field(None, max_length=512_000, description="The body (RFC 9309: at least 500 KiB parsed).")
    fetched_at: float | None = Field(
        None, description="Seconds since the epoch, within [now - 7 days, now + 5 min]; default now.")
    elapsed_s: float = Field(0.0, ge=0, le=limits.MAX_DURATION_S)
    retry_after_s: float | None = Field(None, ge=0, le=limits.MAX_RETRY_AFTER_S)

    @field_validator("url")
    @classmethod
    def _check_url(cls, v: str) -> str:
        return _url(v)

    @field_validator("fetched_at")
    @classmethod
    def _check_fetched(cls, v: float | None) -> float | None:
        return None if v is None else limits.check_report_time(v, field="fetched_at")

    @field_validator("text")
    @classmethod
    def _no_nul(cls, v: str | None) -> str | None:
        return _text(v)


class RobotsResponse(_Model):
    crawl_id: str
    host: str


class HostUse(_Model):
    queue: str
    origin: str
    n_pages: int = Field(..., description="Active pages of the host.")
    rate_per_day: float = Field(..., description="Visits per day the plan gives the host's pages.")
    cap_per_day: float | None = Field(..., description="Most visits per day the host allows (null: no cap).")
    delay_s: float = Field(..., description="Least seconds between two requests to the host.")
    in_backoff: bool


class HostsResponse(_Model):
    crawl_id: str
    budget: float = Field(..., description="Crawl budget, visits per day.")
    budget_in_use: float = Field(..., description="Sum of planned rates, visits per day.")
    n_hosts: int
    hosts: list[HostUse] = Field(..., description="Hosts by planned rate, largest first.")


class OverduePage(_Model):
    url: str
    queue: str
    next_due: float = Field(..., description="Seconds since the epoch.")
    overdue_s: float = Field(..., description="Seconds past due.")
    rate: float = Field(..., description="Planned visits per day.")
    delta_hat: float | None = Field(..., description="Estimated changes per day.")
    leased: bool = Field(..., description="A worker holds its lease now.")


class OverdueResponse(_Model):
    crawl_id: str
    now: float
    n_due: int = Field(..., description="Active pages due now.")
    pages: list[OverduePage]


class HistorySample(_Model):
    time: float = Field(..., description="Seconds since the epoch.")
    estimated_freshness: float | None = Field(..., description="Weighted mean expected freshness in [0, 1].")
    budget_in_use: float = Field(..., description="Visits per day planned.")
    due_now: int
    n_pages: int


class PageCapture(_Model):
    url: str
    time: float = Field(..., description="WARC-Date, seconds since the epoch.")
    date: str = Field(..., description="WARC-Date as written (ISO 8601 UTC).")
    status: int | None = Field(None, description="HTTP status of the answer.")
    kind: str = Field(..., description="'response' (a new payload) or 'revisit'.")
    profile: str | None = Field(None, description="Revisit profile URI.")
    digest: str = Field(..., description="WARC-Payload-Digest, sha1:<base32>.")
    filename: str = Field(..., description="WARC file name.")
    offset: int = Field(..., description="Byte offset of the record in the file.")
    length: int = Field(..., description="Compressed length of the record, bytes.")
    outcome: str | None = Field(None, description="The observation committed at that time.")
    changed: bool | None = Field(None, description="I of that observation; null for a first copy.")


class HistoryResponse(_Model):
    crawl_id: str
    samples: list[HistorySample]
    url: str | None = Field(None, description="The page asked for with ?url=.")
    captures: list[PageCapture] | None = Field(
        None, description="With ?url=: the page's captures in the WARC files, oldest first.")


class DiffResponse(_Model):
    crawl_id: str
    url: str
    mode: str = Field(..., description="'text' (main text, a line per paragraph) or 'raw'.")
    old: PageCapture
    new: PageCapture
    diff: str = Field(..., description="Unified diff; empty when equal.")
    added: int = Field(..., description="Lines added.")
    removed: int = Field(..., description="Lines removed.")


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
        with self.service.lock:
            ids = list(self.service._crawls) if crawl_id is None else [crawl_id]  # same package
        for cid in ids:
            st = crawl_status(_store(self.service, cid), now=now)
            with self._lock:
                self._samples[cid].append(dict(
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


def _known(service: FrontierService, crawl_id: str, loc: list[Any]) -> None:
    """404 naming ``loc`` unless ``crawl_id`` is open or exists in the database (checked without opening it)."""
    with service.lock:
        if crawl_id == DEFAULT_CRAWL or crawl_id in service._crawls:  # same package
            return
    if crawl_id not in list_namespaces(service.db):
        raise _problem(404, loc, f"no crawl {crawl_id!r}", "not_found")


def _store(service: FrontierService, crawl_id: str):
    _known(service, crawl_id, ["query", "crawl_id"])
    try:
        return service.crawl(crawl_id).frontier.store
    except KeyError as err:
        raise _problem(404, ["query", "crawl_id"], f"no crawl {crawl_id!r}", "not_found") from err


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
        with self.service.lock:
            crawls = list(self.service._crawls.items())  # same package
            leased = {cid: c.frontier.n_leased(now) for cid, c in crawls}
            planned = {cid: c.frontier.planned_at for cid, c in crawls}
        up = GaugeMetricFamily("freshcrawl_database_up", "1 when the crawl database answered its last "
                               "operation, 0 during an outage.", labels=["crawl"])
        outages = CounterMetricFamily("freshcrawl_database_outages", "Database outages seen since the start.",
                                      labels=["crawl"])
        for cid, c in crawls:
            store = c.frontier.store
            up.add_metric([cid], 0.0 if store.down_since is not None else 1.0)
            outages.add_metric([cid], float(store.outages))
        yield up
        yield outages
        for cid, c in crawls:
            store = c.frontier.store
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
            fam["leased"].add_metric([cid], float(leased[cid]))
            if st["estimated_freshness"] is not None:
                fam["fresh"].add_metric([cid], float(st["estimated_freshness"]))
            fam["budget"].add_metric([cid], float(st["budget"] or 0.0))
            fam["in_use"].add_metric([cid], float(st["budget_in_use"]))
            fam["plan_age"].add_metric([cid], max(0.0, now - planned[cid]))
        yield from fam.values()


_ROUTES = {"/urls", "/leases", "/observations", "/robots", "/announcements", "/explain", "/status", "/hosts", "/overdue",
           "/history", "/diff", "/metrics", "/", "/openapi.json"}


class _Timing:
    """ASGI middleware: request counts and latencies by route and status code."""

    def __init__(self, app, requests: Counter, latency: Histogram) -> None:
        self.app = app
        self.requests = requests
        self.latency = latency

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        route = scope["path"] if scope["path"] in _ROUTES else "other"
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
    app.add_middleware(_BodyLimit, max_bytes=max_body_bytes)
    app.add_middleware(_Timing, requests=requests_total, latency=latency)

    bearer = HTTPBearer(auto_error=False, description="The API token given to `freshcrawl serve`.")

    def _check(creds: HTTPAuthorizationCredentials | None) -> None:
        if token is None:
            return
        if creds is None or creds.scheme.lower() != "bearer":
            raise HTTPException(401, detail=[{"loc": ["header", "Authorization"], "msg": "a Bearer token is required",
                                              "type": "missing_token"}], headers={"WWW-Authenticate": "Bearer"})
        if not secrets.compare_digest(creds.credentials.encode(), token.encode()):
            raise HTTPException(401, detail=[{"loc": ["header", "Authorization"], "msg": "the token is not valid",
                                              "type": "invalid_token"}],
                                headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})

    # async: a check without I/O runs on the event loop, not in a worker thread of its own
    async def write_auth(creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> None:
        _check(creds)

    async def read_auth(creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> None:
        if not public_reads:
            _check(creds)

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
        return JSONResponse(status_code=422, content=_finite({"detail": errors}))

    CrawlQuery = Annotated[str | None, Query(max_length=64, description="Crawl ID; default the default crawl.")]

    def crawl_q(crawl_id: str | None) -> str:
        try:
            return _crawl_id(crawl_id)
        except ValueError as err:
            raise _problem(422, ["query", "crawl_id"], str(err), "value_error") from err

    writes = [Depends(write_auth)]
    reads = [Depends(read_auth)]
    app.include_router(announcements_router(service, dependencies=writes))

    @app.post("/urls", response_model=AddUrlsResponse, dependencies=writes, tags=["write"])
    def add_urls(body: AddUrlsRequest) -> AddUrlsResponse:
        """Add URLs (all or none). Known URLs are left as they are; a new crawl ID creates the crawl.

        A URL whose host the egress policy refuses (private, link-local, reserved, metadata; unless
        the service allows private hosts) is refused with 422 naming its index."""
        refused = []
        for i, u in enumerate(body.urls):
            try:
                limits.check_url(u.url, allow_private=service.settings.allow_private)
            except ValueError as err:
                refused.append({"loc": ("body", "urls", i, "url"), "type": "egress_refused", "msg": str(err)})
        if refused:
            raise RequestValidationError(refused)
        added, known = service.add_urls(body.crawl_id, [(u.url, u.weight) for u in body.urls])
        return AddUrlsResponse(crawl_id=body.crawl_id, added=added, known=known)

    @app.post("/leases", response_model=LeaseResponse, dependencies=writes, tags=["write"])
    def lease(body: LeaseRequest) -> LeaseResponse:
        """Lease up to ``count`` due visits, at most one per host; report each to /observations or /robots."""
        _known(service, body.crawl_id, ["body", "crawl_id"])
        try:
            got = service.lease(body.crawl_id, body.worker_id, body.count, lease_s=body.lease_s, queue=body.queue)
        except KeyError as err:
            raise _problem(404, ["body", "crawl_id"], f"no crawl {body.crawl_id!r}", "not_found") from err
        for x in got:
            leases_total.labels(x.kind).inc()
        return LeaseResponse(worker_id=body.worker_id, leases=[
            LeaseOut(crawl_id=x.crawl_id, kind=x.kind, url=x.url, queue=x.queue, page_id=x.page_id, etag=x.etag,
                     last_modified=x.last_modified, signature=x.signature, due=x.due, expires_at=x.expires_at)
            for x in got])

    @app.post("/observations", response_model=ObservationsResponse, dependencies=writes, tags=["write"])
    def report(body: ObservationsRequest) -> ObservationsResponse:
        """Record what visits gave, in one transaction; per report 'ok' or 'unknown-url'.

        A URL appears at most once per batch (order would matter): send later visits in a later batch."""
        seen: dict[str, int] = {}
        for j, r in enumerate(body.reports):
            if r.url in seen:
                raise RequestValidationError([{
                    "loc": ("body", "reports", j, "url"), "type": "value_error",
                    "msg": f"{r.url} is reported twice in this batch (also at index {seen[r.url]}); one report "
                           "per URL and batch"}])
            seen[r.url] = j
        reports = [Report(url=r.url, status=r.status, signature=r.signature, started_at=r.started_at,
                          elapsed_s=r.elapsed_s, n_bytes=r.n_bytes, etag=r.etag, last_modified=r.last_modified,
                          retry_after_s=r.retry_after_s, error=r.error, refetch_not_before=r.refetch_not_before)
                   for r in body.reports]
        _known(service, body.crawl_id, ["body", "crawl_id"])
        try:
            results = service.report(body.crawl_id, reports, source="rest")
        except KeyError as err:
            raise _problem(404, ["body", "crawl_id"], f"no crawl {body.crawl_id!r}", "not_found") from err
        for r in results:
            reports_total.labels("ok" if r == "ok" else r.split(":")[0]).inc()
        return ObservationsResponse(crawl_id=body.crawl_id, results=results, n_ok=results.count("ok"))

    @app.post("/robots", response_model=RobotsResponse, dependencies=writes, tags=["write"])
    def robots(body: RobotsRequest) -> RobotsResponse:
        """Record a robots.txt fetched for a host of the crawl (rules, Crawl-delay, errors)."""
        _known(service, body.crawl_id, ["body", "crawl_id"])
        try:
            service.crawl(body.crawl_id)
        except KeyError as err:
            raise _problem(404, ["body", "crawl_id"], f"no crawl {body.crawl_id!r}", "not_found") from err
        try:
            service.report_robots(body.crawl_id, body.url, body.status, body.text, fetched_at=body.fetched_at,
                                  elapsed_s=body.elapsed_s, retry_after_s=body.retry_after_s)
        except KeyError as err:
            raise _problem(404, ["body", "url"], str(err.args[0]), "not_found") from err
        return RobotsResponse(crawl_id=body.crawl_id, host=origin_of(body.url))

    @app.get("/explain", dependencies=reads, tags=["read"])
    def explain(url: Annotated[str, Query(max_length=_MAX_URL, description="The page's URL.")],
                crawl_id: CrawlQuery = None) -> dict[str, Any]:
        """Why a page is visited as it is: its observations, Δ̂ (changes/day) with its 95% interval,
        rate (visits/day), next visit and what limits it. The content of ``freshcrawl crawl explain``."""
        cid = crawl_q(crawl_id)
        try:
            key = _url(url)
        except ValueError as err:
            raise _problem(422, ["query", "url"], str(err), "value_error") from err
        store = _store(service, cid)
        try:
            ex = explain_page(store, key)
            ex["url"] = _public_url(ex["url"])
            return _finite(ex)
        except KeyError as err:
            raise _problem(404, ["query", "url"], f"{key} is not in crawl {cid!r}",
                           "not_found") from err

    @app.get("/status", dependencies=reads, tags=["read"])
    def status(crawl_id: CrawlQuery = None) -> dict[str, Any]:
        """Pages, hosts, observations, estimated freshness, backlog, budget in use, plan age, errors."""
        cid = crawl_q(crawl_id)
        now = time.time()
        with service.lock:
            store = _store(service, cid)
            f = service.crawl(cid).frontier
            planned_at, leased = f.planned_at, f.n_leased(now)
        st = crawl_status(store, now=now)
        for failed in st["failed_pages"]:
            failed["url"] = _public_url(failed["url"])
        st.update(crawl_id=cid, now=now, plan_age_s=now - planned_at, leased=leased)
        return _finite(st)

    @app.get("/hosts", response_model=HostsResponse, dependencies=reads, tags=["read"])
    def hosts(crawl_id: CrawlQuery = None,
              limit: Annotated[int, Query(ge=1, le=10_000, description="Most hosts listed.")] = 50) -> HostsResponse:
        """Budget use by host: planned visits per day against each host's cap, largest first."""
        cid = crawl_q(crawl_id)
        now = time.time()
        with service.lock:
            _store(service, cid)
            f = service.crawl(cid).frontier
            h = f.host_load()
            order = np.argsort(-h.rate, kind="stable")[:limit]
            rows = [
                HostUse(
                    queue=queue_key(h.origin[k]),
                    origin=h.origin[k],
                    n_pages=int(h.n_pages[k]),
                    rate_per_day=float(h.rate[k]),
                    cap_per_day=float(h.cap[k]) if math.isfinite(h.cap[k]) else None,
                    delay_s=float(h.delay_s[k]),
                    in_backoff=bool(h.backoff_until[k] > now),
                )
                for k in order
            ]
            return HostsResponse(crawl_id=cid, budget=f.settings.budget,
                                 budget_in_use=h.budget_in_use, n_hosts=len(h.origin), hosts=rows)

    @app.get("/overdue", response_model=OverdueResponse, dependencies=reads, tags=["read"])
    def overdue(crawl_id: CrawlQuery = None,
                limit: Annotated[int, Query(ge=1, le=1000, description="Most pages listed.")] = 20) -> OverdueResponse:
        """Active pages due the longest, most overdue first (leased ones included, marked)."""
        cid = crawl_q(crawl_id)
        now = time.time()
        with service.lock:
            store = _store(service, cid)
            f = service.crawl(cid).frontier
            b = f.backlog(limit, now)
            rows = store.page_rows(b.page_id.tolist()) if b.page_id.size else {}
            pages_ = []
            for j, page_id in enumerate(b.page_id.tolist()):
                pages_.append(OverduePage(
                    url=_public_url(rows[page_id]["url"]),
                    queue=queue_key(f.origin(int(b.host_id[j]))),
                    next_due=float(b.next_due[j]),
                    overdue_s=float(now - b.next_due[j]),
                    rate=float(b.rate[j]),
                    delta_hat=_finite(rows[page_id]["delta_hat"]),
                    leased=bool(b.leased[j]),
                ))
            return OverdueResponse(crawl_id=cid, now=now, n_due=b.n_due, pages=pages_)

    PageQuery = Annotated[str | None, Query(max_length=_MAX_URL, description="A page's URL.")]

    def page_key(url: str) -> str:
        try:
            return _url(url)
        except ValueError as err:
            raise _problem(422, ["query", "url"], str(err), "value_error") from err

    @app.get("/history", response_model=HistoryResponse, dependencies=reads, tags=["read"])
    def get_history(crawl_id: CrawlQuery = None, url: PageQuery = None) -> HistoryResponse:
        """Estimated freshness over time (a sample after each plan, at most every minute on demand).

        With ``url``: also that page's captures in the crawl's WARC files (``crawl run --warc``),
        each with the observation committed at its time; the content of ``crawl history``."""
        cid = crawl_q(crawl_id)
        store = _store(service, cid)
        samples = [HistorySample(**_finite(s)) for s in history.get(cid)]
        if url is None:
            return HistoryResponse(crawl_id=cid, samples=samples)
        from freshcrawl.archive.history import page_history

        key = page_key(url)
        try:
            hist = page_history(store, key)
        except KeyError as err:
            raise _problem(404, ["query", "url"], f"{key} is not in crawl {cid!r}",
                           "not_found") from err
        except (LookupError, FileNotFoundError) as err:
            raise _problem(404, ["query", "url"], str(err), "not_found") from err
        return HistoryResponse(crawl_id=cid, samples=samples, url=key,
                               captures=[PageCapture(**c) for c in hist["captures"]])

    @app.get("/diff", response_model=DiffResponse, dependencies=reads, tags=["read"])
    def get_diff(
        url: Annotated[str, Query(max_length=_MAX_URL, description="The page's URL.")],
        crawl_id: CrawlQuery = None,
        at: Annotated[float | None, Query(allow_inf_nan=False, description=(
            "Seconds since the epoch: compare the response captured at or before it with the one "
            "before; default the latest."))] = None,
        mode: Annotated[Literal["text", "raw"], Query(description="Main text or raw.")] = "text",
    ) -> DiffResponse:
        """The change between two captures of a page, read from the crawl's WARC files; the
        content of ``crawl diff``. 404 when the page has fewer than two response captures."""
        from freshcrawl.archive.history import page_diff, warc_directory

        cid = crawl_q(crawl_id)
        store = _store(service, cid)
        key = page_key(url)
        if store.page_by_url(key) is None:
            raise _problem(404, ["query", "url"], f"{key} is not in crawl {cid!r}", "not_found")
        try:
            result = page_diff(warc_directory(store), key, at=at, mode=mode)
        except (LookupError, FileNotFoundError, ValueError) as err:
            raise _problem(404, ["query", "url"], str(err), "not_found") from err
        d = result.to_dict()
        return DiffResponse(crawl_id=cid, url=key, mode=d["mode"], old=PageCapture(**d["old"]),
                            new=PageCapture(**d["new"]), diff=d["diff"], added=d["added"],
                            removed=d["removed"])

    @app.get("/metrics", dependencies=reads, tags=["read"], response_class=Response,
             responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format."}})
    def metrics() -> Response:
        """Prometheus metrics."""
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/", response_class=HTMLResponse, tags=["read"],
             responses={200: {"content": {"text/html": {}}, "description": "The dashboard."}})
    def dashboard() -> HTMLResponse:
        """The dashboard: freshness over time, budget by host, pages most overdue, page explanations."""
        html = files("freshcrawl.service").joinpath("dashboard.html").read_text(encoding="utf-8")
        return HTMLResponse(html.replace("__PUBLIC_READS__", "true" if public_reads else "false"))

    return app
