"""A frontier served by another process, for the project's own fetcher (``crawl run --frontier``).

:class:`RemoteFrontier` speaks the URLFrontier gRPC API to a freshcrawl server (:func:`serve_grpc`)
and has the interface of :class:`~freshcrawl.crawler.loop.FrontierLike`, so the crawl loop runs
unchanged against it and several fetcher processes share one frontier: GetURLs leases due visits (a
visit leased to one fetcher is handed to no other until it is reported or its lease runs out),
PutURLs reports their outcomes. The server plans; this side never re-plans. Its calls carry the
metadata ``freshcrawl-robots: lease``, so that the server hands it each host's robots.txt to fetch
first (other URLFrontier clients enforce robots.txt themselves and get none).

What a report carries (metadata of a known URL, see :mod:`freshcrawl.service.grpc_server`):
``fetch.statusCode`` (when an answer came), ``signature`` (the fetcher's signature of the body, the
one the server compares), ``freshcrawl.error`` (``timeout``, ``connect-error``, ... when no answer
came), ``freshcrawl.etag``, ``freshcrawl.last_modified``, ``freshcrawl.started_at``,
``freshcrawl.elapsed_s``, ``freshcrawl.n_bytes``, ``freshcrawl.retry_after_s``; a robots.txt report
carries its text as ``freshcrawl.robots``.

The calls are blocking gRPC calls made from the crawl loop's event loop: short calls on loopback,
which the loop's timing absorbs.

``grpcs://HOST:PORT`` connects over TLS (:class:`~freshcrawl.service.tls.ClientTLS`: the CA that
signs the server's certificate, and a client certificate for a server that requires mutual TLS);
:meth:`RemoteFrontier.check` makes a first call and turns a certificate failure into one line.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable

import grpc

from freshcrawl.crawler.outcome import FetchOutcome, FetchRequest, RobotsOutcome
from freshcrawl.frontier.frontier import RobotsVisit, Visit, origin_of
from freshcrawl.service.proto import urlfrontier_pb2 as pb
from freshcrawl.service.proto import urlfrontier_pb2_grpc as pb_grpc
from freshcrawl.service.tls import ClientTLS, explain_connect_error

__all__ = ["FrontierConnectError", "RemoteFrontier", "frontier_url_tls", "parse_frontier_url"]

log = logging.getLogger(__name__)

_RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.RESOURCE_EXHAUSTED)


class FrontierConnectError(ConnectionError):
    """The frontier cannot be used: a certificate failed, or it refused the credentials."""


_FORMS = "grpc://HOST:PORT or grpcs://HOST:PORT (TLS)"


def parse_frontier_url(url: str) -> str:
    """``grpc://host:port``, ``grpcs://host:port`` (TLS) or ``host:port`` -> ``host:port``.

    Raises
    ------
    ValueError
        If the scheme is not grpc or grpcs, or the port is missing.

    Examples
    --------
    >>> parse_frontier_url("grpc://127.0.0.1:7071"), parse_frontier_url("grpcs://frontier.lan:7071")
    ('127.0.0.1:7071', 'frontier.lan:7071')
    """
    text = str(url).strip()
    scheme, sep, rest = text.partition("://")
    if not sep:
        rest, scheme = text, "grpc"
    if scheme not in ("grpc", "grpcs"):
        raise ValueError(f"a remote frontier is {_FORMS}; got {url!r}")
    host, _, port = rest.rstrip("/").rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"a remote frontier is {_FORMS}; got {url!r}")
    return f"{host}:{port}"


def frontier_url_tls(url: str) -> bool:
    """Whether a frontier URL asks for TLS (``grpcs://``).

    Examples
    --------
    >>> frontier_url_tls("grpcs://127.0.0.1:7071"), frontier_url_tls("127.0.0.1:7071")
    (True, False)
    """
    return str(url).strip().startswith("grpcs://")


def _md(values: dict[str, object]) -> dict[str, pb.StringList]:
    return {k: pb.StringList(values=[str(v)]) for k, v in values.items() if v is not None}


class RemoteFrontier:
    """The crawl loop's frontier, served by a freshcrawl URLFrontier server.

    Parameters
    ----------
    address : str
        ``grpc://host:port`` or ``host:port`` of the server.
    crawl_id : str, optional
        Crawl ID (None or "": the server's default crawl).
    worker : str, optional
        Name of this fetcher, sent with each call (default ``fetcher-<pid>``).
    lease_s : float, default=120.0
        Seconds a visit handed to this fetcher is held for it (``delay_requestable``); it must exceed
        the longest visit (the fetcher's total timeout), or a slow visit may be handed to another.
    poll_s : float, default=0.25
        Seconds between two asks when nothing was due (:meth:`next_wakeup`).
    timeout_s : float, default=10.0
        Deadline of one call.
    retry_for_s : float, default=30.0
        How long a report is retried while the server is unreachable before :meth:`record` raises.
    token : str, optional
        Sent as ``authorization: Bearer <token>`` with every call (a server started with a token).
    tls : ClientTLS, optional
        CA and client certificate of a ``grpcs://`` frontier (default for grpcs: the system's trust
        store, no client certificate).

    Raises
    ------
    ValueError
        If the address or a duration is malformed, or ``tls`` is given with a ``grpc://`` address.

    Attributes
    ----------
    counts : dict
        ``leased`` visits and ``reported``, ``refused`` (acknowledged SKIPPED or FAIL) reports.
    """

    #: The server plans: the crawl loop never re-plans a remote frontier.
    next_replan = math.inf

    def __init__(self, address: str, crawl_id: str | None = None, worker: str | None = None, *,
                 lease_s: float = 120.0, poll_s: float = 0.25, timeout_s: float = 10.0,
                 retry_for_s: float = 30.0, token: str | None = None,
                 tls: ClientTLS | None = None) -> None:
        import os

        for name, value in (("lease_s", lease_s), ("poll_s", poll_s), ("timeout_s", timeout_s),
                            ("retry_for_s", retry_for_s)):
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be finite and > 0 seconds; got {value!r}")
        self.address = parse_frontier_url(address)
        self.crawl_id = crawl_id or ""
        self.worker = worker or f"fetcher-{os.getpid()}"
        self.lease_s = float(lease_s)
        self.poll_s = float(poll_s)
        self.timeout_s = float(timeout_s)
        self.retry_for_s = float(retry_for_s)
        self.counts = {"leased": 0, "reported": 0, "refused": 0}
        self._warned_at = -math.inf
        if frontier_url_tls(address):
            self.tls: ClientTLS | None = tls or ClientTLS()
            self._channel = grpc.secure_channel(self.address, self.tls.grpc_credentials())
        elif tls is not None:
            raise ValueError(
                f"{address} is plaintext (grpc://): TLS settings go with grpcs://HOST:PORT")
        else:
            self.tls = None
            self._channel = grpc.insecure_channel(self.address)
        self._stub = pb_grpc.URLFrontierStub(self._channel)
        # this fetcher enforces robots.txt through the server: it asks for robots.txt leases
        self._call_md = (("freshcrawl-worker", self.worker), ("freshcrawl-robots", "lease")) + (
            (("authorization", f"Bearer {token}"),) if token else ())

    # lifecycle -----------------------------------------------------------------------------------
    def explain(self, err: grpc.RpcError) -> str | None:
        """One line for a failed call whose cause is TLS or the credentials; None otherwise."""
        code = err.code()
        if code is grpc.StatusCode.UNAUTHENTICATED:
            return f"frontier {self.address} refused the credentials: {err.details()}"
        if code is grpc.StatusCode.UNAVAILABLE:
            return explain_connect_error(err.details() or "", self.address, self.tls)
        return None

    def check(self) -> None:
        """Make one call (ListCrawls) to find certificate and credential failures before crawling.

        A server that cannot be reached at all (connection refused, ...) passes: the crawl loop asks
        again until it answers.

        Raises
        ------
        FrontierConnectError
            If the TLS handshake fails (which certificate, what failed), the server closes a
            plaintext connection (a TLS server), or refuses the token or certificate
            (UNAUTHENTICATED).
        """
        try:
            self._stub.ListCrawls(pb.Local(), timeout=self.timeout_s, metadata=self._call_md)
        except grpc.RpcError as err:
            why = self.explain(err)
            if why is not None:
                raise FrontierConnectError(why) from err

    def close(self) -> None:
        """Close the channel."""
        self._channel.close()

    def __enter__(self) -> RemoteFrontier:  # noqa: PYI034 - a final class
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # FrontierLike --------------------------------------------------------------------------------
    def due(self, now: float | None = None, limit: int = 64) -> list[Visit | RobotsVisit]:
        """Up to ``limit`` visits leased from the server (at most one per host); [] if it is unreachable."""
        if limit <= 0:
            return []
        params = pb.GetParams(max_urls_per_queue=1, max_queues=int(limit),
                              delay_requestable=math.ceil(self.lease_s), crawlID=self.crawl_id)
        out: list[Visit | RobotsVisit] = []
        try:
            for info in self._stub.GetURLs(params, timeout=self.timeout_s, metadata=self._call_md):
                md = {k: v.values[0] for k, v in info.metadata.items() if len(v.values)}
                if md.get("freshcrawl.kind") == "robots":
                    out.append(RobotsVisit(0, origin_of(info.url)))
                else:
                    req = FetchRequest(info.url, md.get("freshcrawl.etag"), md.get("freshcrawl.last_modified"),
                                       md.get("freshcrawl.signature"))
                    out.append(Visit(0, 0, req, float(md.get("freshcrawl.due", time.time()))))
        except grpc.RpcError as err:
            if err.code() not in _RETRYABLE:
                raise
            if time.monotonic() - self._warned_at > 10.0:  # once in a while, not at every poll
                self._warned_at = time.monotonic()
                log.warning("frontier %s: GetURLs failed (%s); asking again", self.address,
                            self.explain(err) or err.code().name)
        self.counts["leased"] += len(out)
        return out

    def record(self, results: list[tuple[object, FetchOutcome]]) -> None:
        """Report page visits' outcomes (one PutURLs stream); retried while the server is unreachable."""
        items = []
        for visit, out in results:
            url = getattr(visit, "url", out.url)
            md = _md({"fetch.statusCode": out.status, "signature": out.signature,
                      "freshcrawl.error": out.why if out.status is None else None,
                      "freshcrawl.etag": out.etag, "freshcrawl.last_modified": out.last_modified,
                      "freshcrawl.started_at": repr(out.started_at), "freshcrawl.elapsed_s": repr(out.elapsed_s),
                      "freshcrawl.n_bytes": out.n_bytes, "freshcrawl.retry_after_s": out.retry_after_s})
            items.append(self._known(url, md, out.started_at + out.elapsed_s))
        self._put(items)

    def record_robots(self, visit: RobotsVisit, out: RobotsOutcome) -> None:
        """Report a robots.txt fetch (its status and text)."""
        md = _md({"fetch.statusCode": out.status, "freshcrawl.robots": out.text,
                  "freshcrawl.error": out.why if out.status is None else None,
                  "freshcrawl.started_at": repr(out.fetched_at), "freshcrawl.elapsed_s": repr(out.elapsed_s),
                  "freshcrawl.retry_after_s": out.retry_after_s})
        self._put([self._known(visit.origin + "/robots.txt", md, out.fetched_at + out.elapsed_s)])

    def next_wakeup(self, now: float | None = None) -> float:
        """When to ask again: ``poll_s`` from now (the server knows what is due, not this side)."""
        return (time.time() if now is None else float(now)) + self.poll_s

    def replan(self, now: float | None = None) -> None:
        """Nothing: the server plans."""

    # helpers -------------------------------------------------------------------------------------
    def _known(self, url: str, md: dict[str, pb.StringList], end: float) -> pb.URLItem:
        # the date is a floor after errors only; the visit's end is no floor at all (never 0: "never")
        info = pb.URLInfo(url=url, crawlID=self.crawl_id, metadata=md)
        return pb.URLItem(known=pb.KnownURLItem(info=info, refetchable_from_date=max(1, int(end))), ID=url)

    def _put(self, items: Iterable[pb.URLItem]) -> None:
        items = list(items)
        if not items:
            return
        give_up = time.monotonic() + self.retry_for_s
        wait = 0.2
        while True:
            try:
                acks = list(self._stub.PutURLs(iter(items), timeout=self.timeout_s, metadata=self._call_md))
                break
            except grpc.RpcError as err:
                # only an unreachable server is retried: after a deadline the reports may have been taken
                if err.code() is not grpc.StatusCode.UNAVAILABLE or time.monotonic() + wait > give_up:
                    raise
                log.warning("frontier %s: PutURLs failed (%s); retrying in %.1fs", self.address,
                            err.code().name, wait)
                time.sleep(wait)
                wait = min(2 * wait, 5.0)
        refused = [a.ID for a in acks if a.status != pb.AckMessage.OK]
        self.counts["reported"] += len(acks) - len(refused)
        self.counts["refused"] += len(refused)
        if refused:
            log.warning("frontier %s refused %d report(s), first %s", self.address, len(refused), refused[0])
