"""The URLFrontier gRPC API (crawler-commons/url-frontier, API 2.6) over :class:`FrontierService`.

Any URLFrontier client (StormCrawler's spout and status updater, the API's command-line client,
``freshcrawl crawl run --frontier grpc://...``) can use freshcrawl as its frontier through
:func:`serve_grpc`. The wire format is that of ``freshcrawl/service/proto/urlfrontier.proto``.

Mapping
-------
Crawls
    ``crawlID`` "" (or ``DEFAULT``) is the database given to the service; any other ID (1-64
    letters, digits, ``.``, ``_``, ``-``) is a crawl of its own, created by the first PutURLs that
    adds a URL to it.
Queues
    A URL's queue is the ``key`` its client set (StormCrawler's partition key: host, domain or IP,
    ``_DEFAULT_``), kept per host (:meth:`FrontierService.set_queue_keys`); without one, the host
    name with the port when it is not the scheme's default (``queue_key``). A key may name several
    hosts; each keeps its own delay and cap in the plan.
GetURLs
    Leases due URLs, earliest due first, up to ``max_urls_per_queue`` of each queue (0: no limit),
    from at most ``max_queues`` queues (0: every queue with a URL due), of one queue when ``key`` is
    set, of every crawl with ``anyCrawlID``. A URL handed out is held for ``delay_requestable``
    seconds (0: ``default_lease_s``, 30 s), and so is its queue until every URL handed out with it
    is updated; the client spaces the URLs of one queue. A queue's delay (SetDelay, robots.txt's
    Crawl-delay, the crawl's ``min_delay_s``) and blocks (BlockQueueUntil, Retry-After, back-off)
    decide when it is handed out again. A client that sends the call metadata ``freshcrawl-robots:
    lease`` (freshcrawl's own fetcher) gets ``<origin>/robots.txt`` with metadata
    ``freshcrawl.kind`` = ``robots`` when a host's robots.txt must be fetched first (see "robots.txt"
    below); other clients enforce robots.txt themselves and get none. Each URL carries metadata:
    ``freshcrawl.kind`` (``page`` or ``robots``), ``freshcrawl.etag``, ``freshcrawl.last_modified``
    and ``freshcrawl.signature`` of the last copy (when known), the validators as StormCrawler's
    HTTP protocols read them for conditional requests (``protocol.etag``; ``last-modified``, an
    ISO-8601 instant), ``freshcrawl.due`` (seconds since the epoch) and
    ``freshcrawl.lease_expires``, beside the client's own metadata of the URL (see "Client
    metadata").
PutURLs
    Each item is acknowledged by its ``ID`` (the URL when empty): OK, SKIPPED (malformed URL or
    metadata; do not resend) or FAIL (the database failed; may be resent). A discovered URL is added
    when unknown (weight ``freshcrawl.weight``, default 1). A known URL the crawl does not hold is
    added first (a restarted or re-seeded frontier, a status dump fed back). A known URL that carries
    a fetch outcome (metadata key ``MetadataKeys.status``, default ``fetch.statusCode``, or an error
    key, ``MetadataKeys.error_keys()``) and was handed out by GetURLs (or gives
    ``freshcrawl.started_at``) is a visit's report: no information when an error key is present,
    whatever the status (a failed fetch keeps the previous status in StormCrawler's metadata);
    otherwise changed when ``MetadataKeys.signature`` (default ``signature``) differs from the stored
    signature, unchanged on 304 or an equal signature, no information on other statuses; freshcrawl
    learns from it and sets the next due time itself. The client's ``refetchable_from_date`` is kept
    as a floor after errors only; 0 still means "never again". Any other known URL is scheduled at
    ``refetchable_from_date`` (0: never again), as the API says; one that was handed out is a report
    without an outcome: counted (:meth:`FrontierService.note_without_outcome`, ``crawl status``, the
    Prometheus counter ``freshcrawl_reports_without_outcome_total``) and warned about in the log at
    most once a minute. Further keys read from a report: ``freshcrawl.etag`` and
    ``freshcrawl.last_modified`` (validators of the new copy; else ``protocol.etag`` and
    ``protocol.last-modified``, any case), ``freshcrawl.started_at`` (seconds since the epoch;
    default: when the report arrives), ``freshcrawl.elapsed_s``, ``freshcrawl.n_bytes``,
    ``freshcrawl.retry_after_s``.
PutDiscovered
    Batches of discovered URLs (API 2.6), each URL taken as a discovered item of PutURLs; each batch
    is acknowledged by one BatchAck with its ID and a status per URL, in order.
Client metadata
    Every key of a URL's metadata that does not start with ``freshcrawl.`` is the client's: kept
    with the URL (a discovered URL's when it is added, a known URL's replacing what was kept unless
    it holds nothing but the fetch-outcome keys) and handed back by GetURLs, ListURLs and GetURLStatus
    (StormCrawler's ``depth``, ``fetch.error.count``, ... round-trip).
robots.txt
    A known ``<origin>/robots.txt`` that is not a page of the crawl is the host's robots.txt: its
    status (``MetadataKeys.status``) and text (``freshcrawl.robots``) are recorded for the host (rules,
    Crawl-delay as the host's cap). A client that sends no text (it enforces robots.txt itself) gets
    every path of the host allowed after a 2xx; 4xx allows everything, 5xx or no answer disallows
    the host until a retry succeeds (RFC 9309).
Other calls
    BlockQueueUntil, SetDelay (an empty key: every queue and the default of new ones), GetStats (an
    unknown or deleted crawl or queue: zero counts), ListCrawls (the default crawl only when it
    holds pages), DeleteCrawl, ListQueues, DeleteQueue, CountURLs, GetURLStatus, ListURLs (each URL a
    known item whose ``refetchable_from_date`` is its next due time, 0 for a page failed or done (never
    fetched again; GetURLStatus only: ListURLs and CountURLs leave done pages out); metadata
    ``freshcrawl.status``, ``freshcrawl.weight``, ``freshcrawl.rate`` (visits per day),
    ``freshcrawl.delta_hat`` (changes per day), ``freshcrawl.n_obs`` and the last copy's
    validators), SetActive and GetActive (every crawl at once). ListNodes, SetLogLevel,
    SetCrawlLimit, PurgeURLs and GetCrawlStats answer UNIMPLEMENTED. Bad arguments answer
    INVALID_ARGUMENT, an unknown crawl NOT_FOUND (GetURLs: nothing; DeleteCrawl: 0; GetStats: zero
    counts), an unknown queue NOT_FOUND for BlockQueueUntil and SetDelay (reads of it give nothing).
    During a database outage a call answers UNAVAILABLE (try again later) and PutURLs acks its items
    as failed, so that the client sends them again.
Bounded input
    The limits of :mod:`freshcrawl.frontier.limits`, as for REST: a discovered URL that is
    malformed, carries credentials or names a host the egress policy refuses is SKIPPED (logged with
    the reason); a report with ``freshcrawl.started_at`` outside [now - 7 days, now + 5 min], a
    status outside 100-599, ``freshcrawl.n_bytes`` over 2^53 or a ``refetchable_from_date`` more than
    366 days ahead is SKIPPED; ``delay_requestable`` over 86,400 s (GetURLs, SetDelay) is
    INVALID_ARGUMENT. A message that is not valid protobuf (invalid UTF-8 in a string field) is
    INVALID_ARGUMENT; one over ``max_message_bytes`` is RESOURCE_EXHAUSTED.
Security
    Plaintext unless ``tls`` (a :class:`~freshcrawl.service.tls.ServerTLS`) is given: then TLS, and
    with its client CA mutual TLS, where every connection must present a certificate signed by that
    CA and every call is checked to come from such a connection. With ``token``, every call needs
    ``authorization: Bearer <token>`` in its metadata (with both, a call needs both).
"""

from __future__ import annotations

import logging
import math
import queue as queue_mod
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import grpc

from freshcrawl.crawler.urls import normalize_url
from freshcrawl.frontier import limits
from freshcrawl.service.core import DEFAULT_CRAWL, FrontierService, Report
from freshcrawl.service.proto import urlfrontier_pb2 as pb
from freshcrawl.service.proto import urlfrontier_pb2_grpc as pb_grpc
from freshcrawl.service.tls import ServerTLS
from freshcrawl.store.store import check_namespace

__all__ = ["DEFAULT_LEASE_S", "MetadataKeys", "URLFrontierServicer", "serve_grpc"]

log = logging.getLogger(__name__)

#: Seconds a URL handed out by GetURLs is held when the client gives no ``delay_requestable``.
DEFAULT_LEASE_S = 30.0
#: Items of a PutURLs stream taken in one batch (one transaction per run of one kind).
_PUT_BATCH = 512
_OK, _SKIPPED, _FAIL = pb.AckMessage.OK, pb.AckMessage.SKIPPED, pb.AckMessage.FAIL
#: Call metadata with which a fetcher asks for robots.txt leases (freshcrawl's own fetcher does).
ROBOTS_HEADER = "freshcrawl-robots"
#: Least seconds between two warnings about reports that carried no fetch outcome.
_WARN_EVERY_S = 60.0


@dataclass(frozen=True, slots=True)
class MetadataKeys:
    """Metadata keys of a known URL that carry a fetch outcome (StormCrawler's by default).

    Attributes
    ----------
    status : str
        HTTP status of the fetch, an integer (StormCrawler: ``fetch.statusCode``).
    signature : str
        Content signature of the body, any stable text (StormCrawler's MD5 signature filter:
        ``signature``).
    error : str
        Present when a fetch got no answer (StormCrawler: ``fetch.exception``); freshcrawl's own
        fetcher sends ``freshcrawl.error`` (read as well).
    other_errors : tuple of str
        Further keys whose presence means the visit failed, whatever status it carries
        (StormCrawler: ``fetch.error.count``, set on a fetch error and always persisted;
        ``error.cause`` and ``error.source``, removed by its status updater on success).
    """

    status: str = "fetch.statusCode"
    signature: str = "signature"
    error: str = "fetch.exception"
    other_errors: tuple[str, ...] = ("fetch.error.count", "error.cause", "error.source")

    def error_keys(self) -> tuple[str, ...]:
        """Every key that marks a failed visit (an error wins over a status: a stale one is kept)."""
        return (self.error, "freshcrawl.error", *self.other_errors)


class _Skip(ValueError):
    """An item refused for good (SKIPPED)."""


def _first(info: pb.URLInfo, key: str) -> str | None:
    v = info.metadata.get(key)
    return v.values[0] if v is not None and len(v.values) else None


def _float(info: pb.URLInfo, key: str) -> float | None:
    text = _first(info, key)
    if text is None or text == "":
        return None
    try:
        value = float(text)
    except ValueError as err:
        raise _Skip(f"{key} must be a number; got {text!r}") from err
    if not math.isfinite(value):
        raise _Skip(f"{key} must be finite; got {text!r}")
    return value


def _md(**values: Any) -> dict[str, pb.StringList]:
    return {f"freshcrawl.{k}": pb.StringList(values=[str(v)]) for k, v in values.items()
            if v is not None and not (isinstance(v, float) and not math.isfinite(v))}


def _client_md(info: pb.URLInfo) -> dict[str, list[str]]:
    """The client's own metadata of a URL: every key but freshcrawl's."""
    return {k: list(v.values) for k, v in info.metadata.items() if not k.startswith("freshcrawl.")}


def _merge(client: dict[str, list[str]] | None, ours: dict[str, pb.StringList]) -> dict[str, pb.StringList]:
    out = {k: pb.StringList(values=v) for k, v in (client or {}).items()}
    out.update(ours)
    return out


def _validator(info: pb.URLInfo, *names: str) -> str | None:
    """The first of ``names`` in the metadata, the key's case ignored (HTTP header names)."""
    wanted = {n.lower() for n in names}
    for key, values in info.metadata.items():
        if key.lower() in wanted and len(values.values) and values.values[0]:
            return values.values[0]
    return None


#: Metadata of a discovered URL that announces a change (StormCrawler's sitemap and feed parsers),
#: with the source name the announcement is judged under.
ANNOUNCING_KEYS = {"sitemap.lastModified": "grpc:sitemap", "feed.publishedDate": "grpc:feed"}


def _announced(info: pb.URLInfo, url: str) -> list[tuple[str, float, str]]:
    """The changes a discovered URL's metadata announces: ``(url, changed_at, source)``; an unreadable
    date is left out."""
    from freshcrawl.crawler.announcements import parse_announced_time

    out = []
    for key, source in ANNOUNCING_KEYS.items():
        text = _first(info, key)
        got = parse_announced_time(text) if text else None
        if got is not None:
            out.append((url, got[0], source))
        elif text:
            log.info("PutURLs: %s of %s unreadable: %r", key, url, text)
    return out


def _iso_instant(http_date: str | None) -> str | None:
    """An HTTP date as an ISO-8601 instant (StormCrawler's ``last-modified``), None if unreadable."""
    if not http_date:
        return None
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(http_date)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when.timestamp()))


def _is_robots_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.path == "/robots.txt" and not parts.query


class URLFrontierServicer(pb_grpc.URLFrontierServicer):
    """The URLFrontier service over a :class:`FrontierService` (see the module docstring).

    Parameters
    ----------
    service : FrontierService
        The frontier served.
    keys : MetadataKeys, optional
        Metadata keys of fetch outcomes (default StormCrawler's).
    default_lease_s : float, default=30.0
        Seconds a URL handed out is held when GetURLs gives no ``delay_requestable``.
    """

    def __init__(self, service: FrontierService, *, keys: MetadataKeys | None = None,
                 default_lease_s: float = DEFAULT_LEASE_S) -> None:
        if not (math.isfinite(default_lease_s) and default_lease_s > 0):
            raise ValueError(f"default_lease_s must be finite and > 0 seconds; got {default_lease_s!r}")
        self.service = service
        self.keys = keys or MetadataKeys()
        self.default_lease_s = float(default_lease_s)
        self._warned_at = -math.inf

    # helpers -------------------------------------------------------------------------------------
    @staticmethod
    def _crawl_id(crawl_id: str, context=None) -> str:
        """The crawl ID of a request ("" -> DEFAULT); INVALID_ARGUMENT (or _Skip) when malformed."""
        if not crawl_id or crawl_id == DEFAULT_CRAWL:
            return DEFAULT_CRAWL
        try:
            return check_namespace(crawl_id)
        except ValueError as err:
            if context is None:
                raise _Skip(str(err)) from err
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
            raise  # pragma: no cover - abort raises

    def _existing(self, crawl_id: str, context) -> str:
        cid = self._crawl_id(crawl_id, context)
        try:
            self.service.crawl(cid)
        except KeyError:
            context.abort(grpc.StatusCode.NOT_FOUND, f"no crawl {cid!r}")
        return cid

    def _exists(self, cid: str) -> bool:
        try:
            self.service.crawl(cid)
        except KeyError:
            return False
        return True

    @staticmethod
    def _worker(context) -> str:
        md = dict(context.invocation_metadata() or ())
        return str(md.get("freshcrawl-worker") or context.peer())

    # the crawl -----------------------------------------------------------------------------------
    def GetURLs(self, request, context) -> Iterator[pb.URLInfo]:
        lease_s = float(request.delay_requestable) or self.default_lease_s
        try:
            limits.check_lease(lease_s, field="delay_requestable")
        except ValueError as err:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        count = request.max_queues or (1 if request.key else 1_000_000)
        if request.WhichOneof("item") == "anyCrawlID":
            crawls = self.service.crawl_ids()
        else:
            cid = self._crawl_id(request.crawlID, context)
            crawls = [cid] if self._exists(cid) else []
        worker = self._worker(context)
        queue = request.key or None
        md_in = dict(context.invocation_metadata() or ())
        robots = str(md_in.get(ROBOTS_HEADER, "")).lower() in ("1", "true", "yes", "lease")
        for cid in crawls:
            if count <= 0:
                break
            try:
                leases = self.service.lease(cid, worker, count, lease_s=lease_s, queue=queue,
                                            per_queue=request.max_urls_per_queue, robots=robots)
            except KeyError:  # deleted meanwhile
                continue
            count -= len({x.queue for x in leases})
            ids = [x.page_id for x in leases if x.page_id is not None]
            kept = self.service.url_metadata(cid, ids) if ids else {}
            for lease in leases:
                md = _md(kind=lease.kind, etag=lease.etag, last_modified=lease.last_modified,
                         signature=lease.signature, due=lease.due, lease_expires=lease.expires_at)
                # the validators as StormCrawler's protocols read them (If-None-Match from
                # protocol.etag, If-Modified-Since from an ISO instant in last-modified)
                if lease.etag:
                    md["protocol.etag"] = pb.StringList(values=[lease.etag])
                if iso := _iso_instant(lease.last_modified):
                    md["last-modified"] = pb.StringList(values=[iso])
                yield pb.URLInfo(url=lease.url, key=lease.queue, crawlID=lease.crawl_id,
                                 metadata=_merge(kept.get(lease.page_id), md))

    def PutURLs(self, request_iterator, context) -> Iterator[pb.AckMessage]:
        # a reader thread takes items as they come, so that whatever has arrived is processed as one
        # batch and acknowledged at once (a client may wait for acks before it sends more)
        end = object()
        inbox: queue_mod.Queue = queue_mod.Queue(maxsize=4 * _PUT_BATCH)
        malformed: list[_Malformed] = []

        def read() -> None:
            try:
                for item in request_iterator:
                    while context.is_active():
                        try:
                            inbox.put(item, timeout=0.5)
                            break
                        except queue_mod.Full:
                            continue
                    else:
                        return
            except _Malformed as err:  # the stream ends INVALID_ARGUMENT once what came before is acked
                malformed.append(err)
            except Exception as err:  # noqa: BLE001 - the client went away: nothing more comes
                log.debug("PutURLs stream ended: %r", err)
            finally:
                try:
                    inbox.put(end, timeout=5.0)
                except queue_mod.Full:
                    pass

        threading.Thread(target=read, name="urlfrontier-put", daemon=True).start()
        done = False
        while not done:
            try:
                batch = [inbox.get(timeout=1.0)]
            except queue_mod.Empty:
                if not context.is_active():
                    return
                continue
            if batch[0] is end:
                break
            while len(batch) < _PUT_BATCH:
                try:
                    item = inbox.get_nowait()
                except queue_mod.Empty:
                    break
                if item is end:
                    done = True
                    break
                batch.append(item)
            yield from self._put_batch(batch)
        if malformed:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(malformed[0]))

    def PutDiscovered(self, request_iterator, context) -> Iterator[pb.BatchAck]:
        """Batches of discovered URLs (API 2.6), each acknowledged as a whole, in order."""
        for batch in request_iterator:
            statuses: list[int] = [_SKIPPED] * len(batch.items)
            by_crawl: dict[str, list[int]] = {}
            for i, info in enumerate(batch.items):
                try:
                    by_crawl.setdefault(self._crawl_id(info.crawlID), []).append(i)
                except _Skip:
                    pass
            for cid, where in by_crawl.items():
                run = [("", pb.URLItem(discovered=pb.DiscoveredURLItem(info=batch.items[i]))) for i in where]
                try:
                    acks = self._discovered(cid, run)
                    self._keep_keys(cid, [item for _, item in run], acks)
                except Exception:
                    log.exception("PutDiscovered: %d URL(s) of crawl %s failed", len(run), cid)
                    acks = [_FAIL] * len(run)
                for i, status in zip(where, acks, strict=True):
                    statuses[i] = status
            yield pb.BatchAck(ID=batch.ID, statuses=statuses)

    def _put_batch(self, items: list[pb.URLItem]) -> Iterator[pb.AckMessage]:
        """Acks of a batch: consecutive items of one kind and crawl go to the service together."""
        run: list[tuple[str, Any]] = []
        run_key: tuple[str, str] | None = None
        for item in items:
            which = item.WhichOneof("item")
            info = getattr(item, which).info if which else None
            ack_id = item.ID or (info.url if info is not None else "")
            try:
                if info is None:
                    raise _Skip("an item is a discovered or a known URL")
                cid = self._crawl_id(info.crawlID)
                kind = "discovered" if which == "discovered" else (
                    "report" if self._is_report(cid, info) else "schedule")
            except _Skip:
                if run:  # acks in the order of the items
                    yield from self._flush(run_key, run)
                    run, run_key = [], None
                yield pb.AckMessage(ID=ack_id, status=_SKIPPED)
                continue
            if run_key != (kind, cid) and run:
                yield from self._flush(run_key, run)
                run = []
            run_key = (kind, cid)
            run.append((ack_id, item))
        if run:
            yield from self._flush(run_key, run)

    def _has_outcome(self, info: pb.URLInfo) -> bool:
        return any(key in info.metadata for key in (self.keys.status, *self.keys.error_keys()))

    def _is_report(self, cid: str, info: pb.URLInfo) -> bool:
        """A known URL is a visit's report when it carries an outcome and was leased (or gives the
        visit's time): a status kept from an earlier visit (a status dump fed back, a re-seed) is
        not an observation of now."""
        if not self._has_outcome(info):
            return False
        return ("freshcrawl.started_at" in info.metadata or _is_robots_url(info.url)
                or self.service.is_leased(cid, info.url))

    def _keep_known_metadata(self, cid: str, run: list[tuple[str, Any]], acks: list[int]) -> None:
        """A known URL's metadata replaces what the client kept (unless it is only a fetch outcome)."""
        k = self.keys
        outcome_keys = {k.status, k.signature, *k.error_keys()}
        kept = {}
        for (_, item), ack in zip(run, acks, strict=True):
            md = _client_md(item.known.info)
            if ack == _OK and not md.keys() <= outcome_keys:
                kept[normalize_url(item.known.info.url)] = md
        if kept:
            self.service.set_url_metadata(cid, kept, overwrite=True)

    def _flush(self, run_key: tuple[str, str], run: list[tuple[str, Any]]) -> Iterator[pb.AckMessage]:
        kind, cid = run_key
        try:
            if kind == "discovered":
                acks = self._discovered(cid, run)
            else:
                acks = self._reports(cid, run) if kind == "report" else self._schedules(cid, run)
                self._keep_known_metadata(cid, run, acks)
            self._keep_keys(cid, [item for _, item in run], acks)
        except Exception as err:
            msg = _database_error(err)
            if msg is None:
                log.exception("PutURLs: %d item(s) of crawl %s failed", len(run), cid)
            else:  # an outage: the client sends them again
                log.warning("PutURLs: %d item(s) of crawl %s not recorded: %s", len(run), cid, msg)
            acks = [_FAIL] * len(run)
        for (ack_id, _), status in zip(run, acks, strict=True):
            yield pb.AckMessage(ID=ack_id, status=status)

    def _keep_keys(self, cid: str, items: list[pb.URLItem], acks: list[int]) -> None:
        """The queue keys the client set on URLs taken (see ``FrontierService.set_queue_keys``)."""
        pairs = []
        for item, ack in zip(items, acks, strict=True):
            info = getattr(item, item.WhichOneof("item")).info
            if ack == _OK and info.key:
                pairs.append((info.url, info.key))
        if pairs:
            self.service.set_queue_keys(cid, pairs)

    def _discovered(self, cid: str, run: list[tuple[str, Any]]) -> list[int]:
        acks, rows, kept, announced = [], [], {}, []
        for _, item in run:
            info = item.discovered.info
            try:
                url = limits.check_url(info.url, allow_private=self.service.settings.allow_private)
                weight = _float(info, "freshcrawl.weight")
                weight = 1.0 if weight is None else weight
                if weight < 0:
                    raise _Skip(f"freshcrawl.weight must be >= 0; got {weight!r}")
            except ValueError as err:
                log.info("PutURLs: discovered URL skipped: %s", err)
                acks.append(_SKIPPED)
                continue
            acks.append(_OK)
            rows.append((url, weight))
            if md := _client_md(info):
                kept.setdefault(url, md)
            announced.extend(_announced(info, url))
        if rows:
            self.service.add_urls(cid, rows)
        if kept:  # a URL known before keeps its own
            self.service.set_url_metadata(cid, kept, overwrite=False)
        if announced:
            self.service.announce(cid, announced)
        return acks

    def _report(self, known: pb.KnownURLItem) -> Report:
        """A known URL's metadata read as a visit's report (see the module docstring); _Skip when a
        field is malformed or outside :mod:`freshcrawl.frontier.limits`."""
        info, k = known.info, self.keys
        status = self._check_status(info)
        failed = [key for key in k.error_keys() if key in info.metadata]
        if failed:  # an error key wins over a status (the previous visit's, kept)
            status = None
        error = (_first(info, "freshcrawl.error") or "")[:64] or None
        if error is None and failed:
            text = " ".join(_first(info, key) or "" for key in failed).lower()
            error = "timeout" if "timeout" in text else "network"
        date = known.refetchable_from_date
        started_at, elapsed_s, n_bytes, retry_after_s = self._report_fields(known)
        return Report(
            url=info.url, status=status, signature=_first(info, k.signature) or None,
            started_at=started_at,
            elapsed_s=elapsed_s or 0.0,
            n_bytes=n_bytes,
            etag=_first(info, "freshcrawl.etag") or _validator(info, "protocol.etag"),
            last_modified=_first(info, "freshcrawl.last_modified")
            or _validator(info, "protocol.last-modified"),
            retry_after_s=retry_after_s,
            error=None if status is not None else (error or "network"),
            refetch_not_before=float(date) if date else None,
        )

    def _reports(self, cid: str, run: list[tuple[str, Any]]) -> list[int]:
        acks: list[int | None] = [None] * len(run)
        reports, where, extra = [], [], []
        for i, (_, item) in enumerate(run):
            info = item.known.info
            try:
                rep = self._report(item.known)
            except _Skip as err:
                log.info("PutURLs: report of %r skipped: %s", info.url, err)
                acks[i] = _SKIPPED
                continue
            reports.append(rep)
            where.append(i)
            extra.append((item.known.refetchable_from_date, _first(info, "freshcrawl.robots")))
        if reports and not self._exists(cid):
            self.service.crawl(cid, create=True)
        answers = self.service.report(cid, reports) if reports else []
        for i, rep, answer, (date, robots_text) in zip(where, reports, answers, extra, strict=True):
            if answer == "ok":
                if date == 0:  # reported, and never to be fetched again
                    self.service.schedule(cid, rep.url, 0)
                acks[i] = _OK
            elif answer == "unknown-url" and not _is_robots_url(rep.url):
                try:  # a URL the crawl does not hold: added, then its visit recorded
                    self.service.add_urls(cid, [(rep.url, 1.0)])
                    ok = self.service.report(cid, [rep])[0] == "ok"
                    if ok and date == 0:
                        self.service.schedule(cid, rep.url, 0)
                    acks[i] = _OK if ok else _SKIPPED
                except ValueError:
                    acks[i] = _SKIPPED
            elif answer == "unknown-url" and _is_robots_url(rep.url):
                try:
                    self.service.report_robots(cid, rep.url, rep.status, robots_text,
                                               fetched_at=rep.started_at, elapsed_s=rep.elapsed_s,
                                               retry_after_s=rep.retry_after_s)
                    acks[i] = _OK
                except (KeyError, ValueError):
                    acks[i] = _SKIPPED
            else:
                acks[i] = _SKIPPED
        return [a if a is not None else _SKIPPED for a in acks]

    def _schedules(self, cid: str, run: list[tuple[str, Any]]) -> list[int]:
        """Known URLs without a visit's outcome: each is due at its ``refetchable_from_date`` (0:
        never again); one the crawl does not hold is added first (a restarted or re-seeded frontier,
        a status dump fed back). A leased URL reported this way is counted as a report without an
        outcome."""
        acks, silent = [], []
        for _, item in run:
            url, date = item.known.info.url, float(item.known.refetchable_from_date)
            try:
                self._report(item.known)  # a status dump's fields within the same limits
                if self.service.is_leased(cid, url) and not self._has_outcome(item.known.info):
                    silent.append(url)
                ok = self._exists(cid) and self.service.schedule(cid, url, date)
                if not ok:
                    weight = _float(item.known.info, "freshcrawl.weight")
                    self.service.add_urls(cid, [(url, 1.0 if weight is None else weight)])
                    ok = self.service.schedule(cid, url, date)
            except ValueError as err:
                log.info("PutURLs: known URL %r skipped: %s", url, err)
                ok = False
            acks.append(_OK if ok else _SKIPPED)
        if silent:
            self._without_outcome(cid, silent)
        return acks

    @staticmethod
    def _report_fields(known: pb.KnownURLItem) -> tuple[float | None, float | None, int, float | None]:
        """``started_at``, ``elapsed_s``, ``n_bytes`` and ``retry_after_s`` of a known URL's
        metadata, within :mod:`freshcrawl.frontier.limits`; _Skip when one is outside them."""
        info = known.info
        started_at = _float(info, "freshcrawl.started_at")
        elapsed_s = _float(info, "freshcrawl.elapsed_s")
        n_bytes = _float(info, "freshcrawl.n_bytes")
        retry_after_s = _float(info, "freshcrawl.retry_after_s")
        try:
            if started_at is not None:
                limits.check_report_time(started_at, field="freshcrawl.started_at")
            if known.refetchable_from_date:
                limits.check_not_before(float(known.refetchable_from_date), field="refetchable_from_date")
            if elapsed_s is not None:
                elapsed_s = limits.check_duration(max(0.0, elapsed_s), field="freshcrawl.elapsed_s")
            size = limits.check_size(n_bytes or 0, field="freshcrawl.n_bytes")
            if retry_after_s is not None:
                limits.check_retry_after(retry_after_s, field="freshcrawl.retry_after_s")
        except ValueError as err:
            raise _Skip(str(err)) from err
        return started_at, elapsed_s, size, retry_after_s

    def _check_status(self, info: pb.URLInfo) -> int | None:
        """The HTTP status of a known URL's metadata (None when absent); _Skip when malformed."""
        text = _first(info, self.keys.status)
        if text in (None, ""):
            return None
        try:
            status = int(text)
        except ValueError as err:
            raise _Skip(f"{self.keys.status} must be an HTTP status; got {text!r}") from err
        try:
            limits.check_status(status, field=self.keys.status)
        except ValueError as err:
            raise _Skip(str(err)) from err
        return status

    def _without_outcome(self, cid: str, urls: list[str]) -> None:
        total = self.service.note_without_outcome(cid, urls)
        now = time.monotonic()
        if now - self._warned_at >= _WARN_EVERY_S:
            self._warned_at = now
            log.warning(
                "crawl %s: %d report(s) of leased URLs carried no fetch outcome (no %s, no error key), "
                "the last for %s; nothing is learned from them (a StormCrawler client must list %s and "
                "%s in metadata.persist)", cid, total, self.keys.status, urls[-1], self.keys.status,
                self.keys.signature)

    # queues --------------------------------------------------------------------------------------
    def BlockQueueUntil(self, request, context):
        cid = self._existing(request.crawlID, context)
        try:
            self.service.block_queue(cid, request.key, float(request.time))
        except KeyError:
            context.abort(grpc.StatusCode.NOT_FOUND, f"no queue {request.key!r} in crawl {cid!r}")
        return pb.Empty()

    def SetDelay(self, request, context):
        cid = self._existing(request.crawlID, context)
        try:
            limits.check_duration(float(request.delay_requestable), field="delay_requestable")
        except ValueError as err:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        try:
            self.service.set_delay(cid, request.key or None, float(request.delay_requestable))
        except KeyError:
            context.abort(grpc.StatusCode.NOT_FOUND, f"no queue {request.key!r} in crawl {cid!r}")
        return pb.Empty()

    def ListQueues(self, request, context):
        cid = self._existing(request.crawlID, context)
        names = self.service.queues(cid, include_inactive=request.include_inactive)
        size = request.size or 100
        page = names[request.start: request.start + size]
        return pb.QueueList(values=page, total=len(names), start=request.start, size=len(page),
                            crawlID=cid)

    def DeleteQueue(self, request, context):
        cid = self._existing(request.crawlID, context)
        if not request.key:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "DeleteQueue needs a queue key")
        try:
            return pb.Long(value=self.service.delete_queue(cid, request.key))
        except KeyError:
            return pb.Long(value=0)

    def GetStats(self, request, context):
        cid = self._crawl_id(request.crawlID, context)
        try:  # an unknown (or deleted) crawl or queue holds nothing: zero counts
            st = self.service.stats(cid, request.key or None)
        except KeyError:
            return pb.Stats(crawlID=cid)
        return pb.Stats(size=st["size"], inProcess=st["in_process"], counts=st["counts"],
                        numberOfQueues=st["queues"], crawlID=cid)

    # crawls --------------------------------------------------------------------------------------
    def ListCrawls(self, request, context):
        return pb.StringList(values=self.service.listed_crawl_ids())

    def DeleteCrawl(self, request, context):
        cid = self._crawl_id(request.value, context)
        return pb.Long(value=self.service.delete_crawl(cid))

    def SetActive(self, request, context):
        for cid in self.service.crawl_ids():
            try:
                self.service.set_active(cid, request.state)
            except KeyError:  # pragma: no cover - deleted meanwhile
                pass
        return pb.Empty()

    def GetActive(self, request, context):
        return pb.Boolean(state=self.service.crawl(DEFAULT_CRAWL).active)

    # URLs ----------------------------------------------------------------------------------------
    def _item(self, row: dict[str, Any], cid: str, kept: dict[int, dict[str, list[str]]]) -> pb.URLItem:
        done = row["status"] in ("failed", "removed")
        date = 0 if done else max(1, math.ceil(row["next_due"]))
        md = _md(status=row["status"], weight=row["weight"], rate=row["rate"], delta_hat=row["delta_hat"],
                 n_obs=row["n_obs"], etag=row["etag"], last_modified=row["last_modified"],
                 signature=row["signature"])
        info = pb.URLInfo(url=row["url"], key=row["queue"], crawlID=cid, metadata=_merge(kept.get(row["id"]), md))
        return pb.URLItem(known=pb.KnownURLItem(info=info, refetchable_from_date=date), ID=row["url"])

    def GetURLStatus(self, request, context):
        cid = self._existing(request.crawlID, context)
        try:
            row = self.service.url_status(cid, request.url)
        except ValueError as err:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        if row is None or (request.key and request.key != row["queue"]):
            context.abort(grpc.StatusCode.NOT_FOUND, f"no URL {request.url!r} in crawl {cid!r}"
                          + (f", queue {request.key!r}" if request.key else ""))
        return self._item(row, cid, self.service.url_metadata(cid, [row["id"]]))

    def ListURLs(self, request, context):
        cid = self._existing(request.crawlID, context)
        contains = request.filter if request.HasField("filter") else None
        try:
            rows = self.service.list_urls(cid, start=request.start, size=request.size or 100,
                                          queue=request.key or None, contains=contains,
                                          ignore_case=request.ignoreCase)
        except KeyError:  # unknown queue: nothing in it
            rows = []
        kept = self.service.url_metadata(cid, [r["id"] for r in rows]) if rows else {}
        for row in rows:
            yield self._item(row, cid, kept)

    def CountURLs(self, request, context):
        cid = self._existing(request.crawlID, context)
        contains = request.filter if request.HasField("filter") else None
        try:
            n = self.service.count_urls(cid, queue=request.key or None, contains=contains,
                                        ignore_case=request.ignoreCase)
        except KeyError:
            n = 0
        return pb.Long(value=n)


class _Malformed(ValueError):
    """A request message that does not parse (invalid UTF-8 in a string field, bad wire format)."""


class _Undecodable:
    """What the guarded deserializer returns for a message that does not parse."""

    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error


def _malformed_text(err: Exception) -> str:
    return f"the request is not a valid protobuf message (strings must be valid UTF-8): {err}"


class _DecodeGuardInterceptor(grpc.ServerInterceptor):
    """INVALID_ARGUMENT, instead of INTERNAL, for a request message that does not parse.

    grpc answers INTERNAL when a request deserializer raises; this interceptor lets the deserializer
    return a marker instead, and the handler aborts with INVALID_ARGUMENT when it meets one (a
    streaming request's iterator raises :class:`_Malformed`, which PutURLs turns into the abort).
    """

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None or handler.request_deserializer is None:
            return handler
        deserialize = handler.request_deserializer

        def guarded(data: bytes):
            try:
                return deserialize(data)
            except Exception as err:  # noqa: BLE001 - protobuf's DecodeError and its kin
                return _Undecodable(err)

        if handler.request_streaming:
            def items(request_iterator):
                for item in request_iterator:
                    if isinstance(item, _Undecodable):
                        raise _Malformed(_malformed_text(item.error))
                    yield item

            if handler.response_streaming:
                inner = handler.stream_stream

                def behaviour(request_iterator, context):
                    return inner(items(request_iterator), context)

                return handler._replace(request_deserializer=guarded, stream_stream=behaviour)
            inner_su = handler.stream_unary

            def behaviour_su(request_iterator, context):
                try:
                    return inner_su(items(request_iterator), context)
                except _Malformed as err:
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))

            return handler._replace(request_deserializer=guarded, stream_unary=behaviour_su)

        def check(request, context) -> None:
            if isinstance(request, _Undecodable):
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, _malformed_text(request.error))

        if handler.response_streaming:
            inner_us = handler.unary_stream

            def behaviour_us(request, context):
                check(request, context)
                yield from inner_us(request, context)

            return handler._replace(request_deserializer=guarded, unary_stream=behaviour_us)
        inner_uu = handler.unary_unary

        def behaviour_uu(request, context):
            check(request, context)
            return inner_uu(request, context)

        return handler._replace(request_deserializer=guarded, unary_unary=behaviour_uu)


class _TokenInterceptor(grpc.ServerInterceptor):
    """Every call needs the metadata ``authorization: Bearer <token>`` (UNAUTHENTICATED otherwise)."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

    def intercept_service(self, continuation, handler_call_details):
        import hmac

        given = dict(handler_call_details.invocation_metadata or ()).get("authorization", "")
        handler = continuation(handler_call_details)
        if handler is None or hmac.compare_digest(str(given).encode(), self._expected):
            return handler

        def deny(request, context):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "this frontier needs 'authorization: Bearer <token>'")

        def deny_stream(request, context):
            deny(request, context)
            yield  # pragma: no cover - abort raises

        make = {(False, False): grpc.unary_unary_rpc_method_handler,
                (False, True): grpc.unary_stream_rpc_method_handler,
                (True, False): grpc.stream_unary_rpc_method_handler,
                (True, True): grpc.stream_stream_rpc_method_handler}[handler.request_streaming,
                                                                     handler.response_streaming]
        return make(deny_stream if handler.response_streaming else deny,
                    request_deserializer=handler.request_deserializer,
                    response_serializer=handler.response_serializer)


class _ClientCertInterceptor(grpc.ServerInterceptor):
    """Every call must come over a connection that presented a verified client certificate.

    The TLS handshake already refuses a connection without a certificate signed by the client CA
    (``require_client_authentication``); this checks each call's auth context as well, so that no
    call is served on a connection without one (UNAUTHENTICATED).
    """

    @staticmethod
    def _check(context) -> None:
        auth = context.auth_context() or {}
        if auth.get("transport_security_type") != [b"ssl"] or not auth.get("x509_pem_cert"):
            context.abort(grpc.StatusCode.UNAUTHENTICATED,
                          "this frontier needs a client certificate signed by its client CA")

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None:
            return None
        check = self._check
        if handler.response_streaming:
            inner = handler.unary_stream or handler.stream_stream

            def behavior(request, context):
                check(context)
                yield from inner(request, context)
        else:
            inner = handler.unary_unary or handler.stream_unary

            def behavior(request, context):
                check(context)
                return inner(request, context)

        make = {(False, False): grpc.unary_unary_rpc_method_handler,
                (False, True): grpc.unary_stream_rpc_method_handler,
                (True, False): grpc.stream_unary_rpc_method_handler,
                (True, True): grpc.stream_stream_rpc_method_handler}[handler.request_streaming,
                                                                     handler.response_streaming]
        return make(behavior, request_deserializer=handler.request_deserializer,
                    response_serializer=handler.response_serializer)


def _database_error(err: BaseException) -> str | None:
    """The message of an outage error (UNAVAILABLE), or None for any other error."""
    from freshcrawl.errors import DatabaseUnavailableError, WriterLockLostError
    from freshcrawl.store import is_connection_error, reason_of

    if isinstance(err, DatabaseUnavailableError | WriterLockLostError):
        return str(err)
    if is_connection_error(err):
        return f"the crawl database is unavailable ({reason_of(err)})"
    return None


def _abort_if_unavailable(err: BaseException, context: grpc.ServicerContext) -> None:
    """End the call UNAVAILABLE if ``err`` is a database outage; return otherwise (the caller re-raises)."""
    msg = _database_error(err)
    if msg is not None:
        context.abort(grpc.StatusCode.UNAVAILABLE, msg)


class _UnavailableInterceptor(grpc.ServerInterceptor):
    """A call that meets a database outage ends UNAVAILABLE with a one-line message (gRPC's code for
    "try again later"), not UNKNOWN with a traceback in the server log."""

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None:
            return None

        def guarded(behavior):
            def call(request, context):
                try:
                    return behavior(request, context)
                except Exception as err:
                    _abort_if_unavailable(err, context)
                    raise
            return call

        def guarded_stream(behavior):
            def call(request, context):
                try:
                    yield from behavior(request, context)
                except Exception as err:
                    _abort_if_unavailable(err, context)
                    raise
            return call

        kinds = (("unary_unary", grpc.unary_unary_rpc_method_handler, guarded),
                 ("unary_stream", grpc.unary_stream_rpc_method_handler, guarded_stream),
                 ("stream_unary", grpc.stream_unary_rpc_method_handler, guarded),
                 ("stream_stream", grpc.stream_stream_rpc_method_handler, guarded_stream))
        for attr, make, wrap in kinds:
            behavior = getattr(handler, attr)
            if behavior is not None:
                return make(wrap(behavior), request_deserializer=handler.request_deserializer,
                            response_serializer=handler.response_serializer)
        return handler  # pragma: no cover - every handler has one behavior


def serve_grpc(
    service: FrontierService,
    address: str = "127.0.0.1:7071",
    *,
    max_workers: int = 8,
    keys: MetadataKeys | None = None,
    default_lease_s: float = DEFAULT_LEASE_S,
    token: str | None = None,
    tls: ServerTLS | None = None,
    max_message_bytes: int = limits.DEFAULT_MAX_BODY_BYTES,
) -> grpc.Server:
    """Start the URLFrontier API for ``service`` on ``address`` and return the server.

    Parameters
    ----------
    service : FrontierService
        The frontier served.
    address : str, default="127.0.0.1:7071"
        ``host:port`` to listen on (loopback by default; port 0 lets the system choose, see
        ``server.port``).
    max_workers : int, default=8
        Threads serving calls; an open PutURLs stream holds one (and a reader thread).
    keys : MetadataKeys, optional
        Metadata keys of fetch outcomes (StormCrawler's by default).
    default_lease_s : float, default=30.0
        Seconds a URL handed out is held when GetURLs gives no ``delay_requestable``.
    token : str, optional
        When given, every call needs the metadata ``authorization: Bearer <token>`` and is refused
        UNAUTHENTICATED without it (without a token or client certificates, anyone who reaches
        the port may use it).
    tls : ServerTLS, optional
        Serve TLS with its certificate and key (picking up :meth:`ServerTLS.reload` at the next
        connection); with its client CA, mutual TLS: a connection without a client certificate
        signed by that CA fails its handshake. None serves plaintext.
    max_message_bytes : int, default=16777216 (16 MiB)
        Largest request message taken (``grpc.max_receive_message_length``); a larger one is
        refused RESOURCE_EXHAUSTED.

    Returns
    -------
    grpc.Server
        Started; its attribute ``port`` is the port bound. Stop it with ``server.stop(grace)``.

    Raises
    ------
    ValueError
        If ``max_workers`` < 1, ``default_lease_s`` is not > 0 or ``max_message_bytes`` < 1.
    RuntimeError
        If the address cannot be bound.
    """
    if max_workers < 1:
        raise ValueError(f"max_workers must be >= 1; got {max_workers!r}")
    if isinstance(max_message_bytes, bool) or not isinstance(max_message_bytes, int) or max_message_bytes < 1:
        raise ValueError(f"max_message_bytes must be an int >= 1 (bytes); got {max_message_bytes!r}")
    servicer = URLFrontierServicer(service, keys=keys, default_lease_s=default_lease_s)
    interceptors = [_UnavailableInterceptor()]
    interceptors += [] if token is None else [_TokenInterceptor(token)]
    if tls is not None and tls.client_auth:
        interceptors.append(_ClientCertInterceptor())
    interceptors.append(_DecodeGuardInterceptor())
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="urlfrontier"),
                         interceptors=interceptors,
                         options=[("grpc.max_receive_message_length", max_message_bytes)])
    pb_grpc.add_URLFrontierServicer_to_server(servicer, server)
    if tls is None:
        port = server.add_insecure_port(address)
    else:
        port = server.add_secure_port(address, tls.grpc_credentials())
    if not port:
        raise RuntimeError(f"cannot listen on {address!r}")
    server.port = port
    server.start()
    log.info("URLFrontier API on %s (port %d, %s) at %s", address, port,
             "TLS" if tls else "plaintext", time.strftime("%H:%M:%S"))
    return server
