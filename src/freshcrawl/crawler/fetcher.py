"""The fetcher: one due visit in, one :class:`~freshcrawl.crawler.outcome.FetchOutcome` out.

:class:`Fetcher` speaks HTTP (aiohttp), sends conditional requests, follows redirects itself (each
hop is checked: http and https only, no loops, at most ``max_redirects``), caps the body it reads,
computes the content signature and sorts everything a server or the network can do into an
:class:`~freshcrawl.crawler.outcome.Outcome` and an :class:`~freshcrawl.crawler.outcome.ErrorKind`.
Every connection obeys the egress policy (:mod:`freshcrawl.crawler.egress`): each hop's host is
checked before the request, each resolved address before the connection is opened (a resolver that
drops forbidden addresses, and a socket factory that refuses them), so neither a redirect nor a name
that resolves to a private or metadata address (DNS rebinding included) reaches one. Loopback is
reached only by a visit whose URL's own host is loopback. It fetches robots.txt (RFC 9309) but
leaves its interpretation to
:class:`~freshcrawl.crawler.robots.RobotsRules`, and knows nothing of policies or schedules: which
URL to fetch, when, and whether robots.txt allows it is the frontier's business.

How a final response becomes an outcome::

    answer                              outcome     error       why
    304 to a conditional request        UNCHANGED   -           not-modified
    2xx, no previous signature          FIRST       -           first-copy
    2xx, signature equal / different    UNCHANGED / CHANGED     same-signature / new-signature
    2xx, body over max_bytes            NO_INFO     CONTENT     too-large
    2xx, content coding broken          NO_INFO     CONTENT     undecodable
    429, 503                            NO_INFO     THROTTLED   http-429, http-503 (+ retry_after_s)
    other 5xx                           NO_INFO     SERVER      http-<status>
    4xx, other 3xx, unexpected 304      NO_INFO     PAGE        http-<status>, unexpected-304
    redirect loop / too many / off-web  NO_INFO     PAGE        redirect-loop, too-many-redirects,
                                                                bad-scheme, bad-redirect
    host or address refused by the      NO_INFO     PAGE        egress-blocked (no connection is
    egress policy (any hop)                                     attempted)
    timeout (connect, read or total)    NO_INFO     NETWORK     timeout
    refused, DNS, reset, cut-off body   NO_INFO     NETWORK     connect-error, dns-error, reset,
                                                                incomplete-body
    not HTTP at all                     NO_INFO     SERVER      bad-response
"""

from __future__ import annotations

import asyncio
import contextvars
import datetime
import email.utils
import math
import time
from types import TracebackType
from typing import Self

import aiohttp
from aiohttp.http_exceptions import ContentEncodingError
from yarl import URL

from freshcrawl import __version__
from freshcrawl._validation import check_int, check_positive
from freshcrawl.crawler.capture import (
    ACCEPT_ENCODING,
    HttpCapture,
    UndecodableContent,
    decode_content,
)
from freshcrawl.crawler.capture import request_head as _request_head
from freshcrawl.crawler.capture import response_head as _response_head
from freshcrawl.crawler.egress import (
    METADATA_HOSTS,
    EgressBlocked,
    EgressResolver,
    address_verdict,
    egress_socket_factory,
    is_loopback_host,
    loopback_allowed,
)
from freshcrawl.crawler.outcome import (
    ErrorKind,
    FetchOutcome,
    FetchRequest,
    Outcome,
    RobotsOutcome,
    classify,
)
from freshcrawl.crawler.signature import SIGNATURE_MODES
from freshcrawl.crawler.signature import signature as compute_signature
from freshcrawl.crawler.urls import HTTP_SCHEMES, normalize_url
from freshcrawl.errors import UnknownNameError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "ROBOTS_MAX_BYTES",
    "ROBOTS_MAX_REDIRECTS",
    "Fetcher",
    "default_user_agent",
    "parse_retry_after",
]

#: Default cap on a page's body, in bytes after content decoding (10 MiB).
DEFAULT_MAX_BYTES = 10 * 1024 * 1024

#: Bytes of robots.txt read; the rest is ignored (RFC 9309 Sec. 2.5 asks for at least 500 KiB).
ROBOTS_MAX_BYTES = 500 * 1024
#: Decoded bytes of a kept body (``FetchRequest.keep_body``: a sitemap or a feed) read at the most, the
#: sitemap protocol's 50 MB (sitemaps.org) if the fetcher's own cap is lower; a longer body is kept up
#: to one byte past it, so that its reader reports the cut, instead of being refused as too large.
KEPT_BODY_MAX_BYTES = 52_428_800

#: Redirects followed for robots.txt (RFC 9309 Sec. 2.3.1.2: at least five).
ROBOTS_MAX_REDIRECTS = 5

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_CHUNK_BYTES = 64 * 1024


def default_user_agent(contact_url: str | None = None) -> str:
    """The User-Agent freshcrawl sends unless told otherwise.

    Parameters
    ----------
    contact_url : str or None, default=None
        A page telling site owners who runs the crawl and how to reach them; strongly advised
        for any crawl of other people's sites.

    Returns
    -------
    str
        ``freshcrawl/<version> (+<contact_url>)``, or ``freshcrawl/<version>`` without a contact.

    Examples
    --------
    >>> default_user_agent("https://example.org/bot").startswith("freshcrawl/")
    True
    >>> default_user_agent("https://example.org/bot").endswith(" (+https://example.org/bot)")
    True
    """
    token = f"freshcrawl/{__version__}"
    return f"{token} (+{contact_url})" if contact_url else token


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait according to a Retry-After header (RFC 9110 Sec. 10.2.3).

    Parameters
    ----------
    value : str or None
        The header's value: delta-seconds (``"120"``) or an HTTP-date
        (``"Wed, 21 Oct 2015 07:28:00 GMT"``).
    now : float or None, default=None
        The current time in seconds since the epoch, to which a date is compared; None reads the
        clock (``time.time()``).

    Returns
    -------
    float or None
        Seconds from `now`, never negative (a date in the past gives 0.0); None when `value` is
        None, empty or neither form.

    Examples
    --------
    >>> parse_retry_after("120")
    120.0
    >>> parse_retry_after("Thu, 01 Jan 1970 00:01:40 GMT", now=40.0)
    60.0
    >>> parse_retry_after("Thu, 01 Jan 1970 00:01:40 GMT", now=1000.0)
    0.0
    >>> parse_retry_after("soon") is None
    True
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if text.isascii() and text.isdigit():
        return float(int(text))
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # "-0000" or no zone: HTTP dates are GMT
        when = when.replace(tzinfo=datetime.UTC)
    try:
        seconds = when.timestamp() - (time.time() if now is None else now)
    except (OverflowError, OSError, ValueError):
        return None
    return max(0.0, seconds) if math.isfinite(seconds) else None



#: The timeout of the visit in progress (per task), extended by the politeness waits between hops.
_deadline: contextvars.ContextVar[asyncio.Timeout] = contextvars.ContextVar("freshcrawl_fetch_deadline")
#: When the visit's first request was sent (its headers written): appended to by the session's trace
#: hook, read by :meth:`Fetcher.fetch` as the visit's ``started_at``, so that a host's politeness
#: delay runs from the request itself, not from before the connection and name resolution.
_sent_at: contextvars.ContextVar[list[float]] = contextvars.ContextVar("freshcrawl_fetch_sent_at")


async def _note_headers_sent(session, context, params) -> None:  # aiohttp trace signature
    sent = _sent_at.get(None)
    if sent is not None and not sent:
        sent.append(time.time())


def _trace_config() -> aiohttp.TraceConfig:
    trace = aiohttp.TraceConfig()
    trace.on_request_headers_sent.append(_note_headers_sent)
    return trace

class _Refused(Exception):
    """A redirect the fetcher will not follow; caught inside this module only."""

    def __init__(self, why: str, status: int | None, url: str) -> None:
        super().__init__(why)
        self.why, self.status, self.url = why, status, url


def _egress_blocked(err: BaseException | None) -> bool:
    """Whether `err` comes from the egress policy (the exception or one of its causes)."""
    seen = 0
    while err is not None and seen < 10:
        if isinstance(err, EgressBlocked) or "refused by the egress policy" in str(err):
            return True
        err = err.__cause__ or getattr(err, "os_error", None) or err.__context__
        seen += 1
    return False


def _hop_refused(url: str, *, loopback_ok: bool) -> bool:
    """Whether the egress policy refuses a hop to `url` before any look-up (its host alone)."""
    try:
        host = (URL(url).raw_host or "").lower().rstrip(".")
    except (ValueError, TypeError):
        return False  # the request fails on its own
    if host in METADATA_HOSTS:
        return True
    if is_loopback_host(host):
        return not loopback_ok
    try:
        why = address_verdict(host)
    except ValueError:
        return False  # a name: its addresses are checked when it is resolved
    return why is not None


def _network_failure(err: BaseException) -> tuple[ErrorKind, str]:
    """ErrorKind and ``why`` of an exception raised by aiohttp, asyncio or the OS."""
    if _egress_blocked(err):
        return ErrorKind.PAGE, "egress-blocked"
    if isinstance(err, TimeoutError):  # asyncio.timeout and aiohttp's own timeouts
        return ErrorKind.NETWORK, "timeout"
    if isinstance(err, aiohttp.ClientPayloadError):
        cause = err.__cause__
        if isinstance(cause, ContentEncodingError) or "content-encoding" in str(err).lower():
            return ErrorKind.CONTENT, "undecodable"
        return ErrorKind.NETWORK, "incomplete-body"
    if isinstance(err, aiohttp.ClientConnectorDNSError):
        return ErrorKind.NETWORK, "dns-error"
    if isinstance(err, aiohttp.ClientConnectorError):
        return ErrorKind.NETWORK, "connect-error"
    if isinstance(err, (aiohttp.ServerDisconnectedError, ConnectionResetError)):
        return ErrorKind.NETWORK, "reset"
    if isinstance(err, aiohttp.ClientResponseError):  # a reply that does not parse as HTTP
        return ErrorKind.SERVER, "bad-response"
    if isinstance(err, aiohttp.InvalidURL):
        return ErrorKind.PAGE, "bad-url"
    if isinstance(err, aiohttp.ClientOSError):
        cause = err.__cause__ if err.__cause__ is not None else err
        if isinstance(cause, ConnectionResetError) or getattr(err, "errno", None) == 104:
            return ErrorKind.NETWORK, "reset"
        return ErrorKind.NETWORK, "os-error"
    if isinstance(err, aiohttp.ClientError):
        return ErrorKind.NETWORK, "client-error"
    return ErrorKind.NETWORK, "os-error"  # any other OSError


#: What fetch() and fetch_robots() turn into outcomes instead of raising.
_FAILURES = (TimeoutError, aiohttp.ClientError, OSError)


async def _read_capped(response: aiohttp.ClientResponse, max_bytes: int) -> tuple[bytes, bool]:
    """Read at most `max_bytes` decoded bytes; also say whether the body goes on past them."""
    chunks: list[bytes] = []
    total = 0
    while total < max_bytes:
        chunk = await response.content.read(min(_CHUNK_BYTES, max_bytes - total))
        if not chunk:
            return b"".join(chunks), False
        chunks.append(chunk)
        total += len(chunk)
    # exactly max_bytes read: one more byte tells a body of max_bytes from a longer one
    more = await response.content.read(1)
    return b"".join(chunks), bool(more)


def _peer(response: aiohttp.ClientResponse) -> str | None:
    """The IP address of the server that sent `response`, while its connection is open."""
    conn = response.connection
    transport = None if conn is None else conn.transport
    peer = None if transport is None else transport.get_extra_info("peername")
    return str(peer[0]) if peer else None


def _capture(
    response: aiohttp.ClientResponse, url: str, payload: bytes, peer: str | None = None
) -> HttpCapture:
    """The exchange of `response` (headers as sent and received, `payload` as received)."""
    info = response.request_info
    return HttpCapture(
        url=url,
        request_head=_request_head(info.method, info.url, info.headers),
        response_head=_response_head(
            response.version, response.status, response.reason, response.raw_headers
        ),
        payload=payload,
        status=response.status,
        content_type=response.headers.get("Content-Type"),
        peer=peer if peer is not None else _peer(response),
    )


class Fetcher:
    """Fetches pages and robots.txt over HTTP(S); never raises for what a server or network does.

    Use it as an async context manager (or call :meth:`start` and :meth:`close`); it holds one
    ``aiohttp.ClientSession`` for its life. Cookies are not kept (each visit is anonymous, so
    pages do not change with a session), proxies from the environment are not used, and the
    body is read decompressed, in chunks, up to `max_bytes`.

    Parameters
    ----------
    user_agent : str or None, default=None
        The User-Agent header; None gives :func:`default_user_agent` of `contact_url`.
    contact_url : str or None, default=None
        Contact page put in the default User-Agent (ignored when `user_agent` is given).
    signature : {"raw", "text"}, default="raw"
        Signature mode, see :func:`freshcrawl.crawler.signature.signature`.
    max_bytes : int, default=10485760 (10 MiB)
        Largest body accepted, in bytes after content decoding (gzip, deflate, br). A response
        whose Content-Length exceeds it is refused before reading; otherwise reading stops as soon
        as the decoded body passes it, so a compression bomb is never inflated in full.
    connect_timeout_s : float, default=10.0
        Seconds allowed to open a TCP (and TLS) connection.
    read_timeout_s : float, default=30.0
        Seconds allowed between two reads from the socket (headers or body).
    total_timeout_s : float, default=60.0
        Seconds allowed for a whole visit: every redirect hop, waiting for a connection, headers
        and body. A slow trickle that never trips `read_timeout_s` ends here.
    max_redirects : int, default=5
        Redirects followed per visit; one more is ``too-many-redirects``. 0 follows none.
    limit_per_host : int, default=1
        Simultaneous connections to one host (``TCPConnector(limit_per_host=...)``).
    allow_private : bool, default=False
        Lift the egress policy: private, link-local, reserved and metadata addresses are reached,
        and loopback from any URL (an intranet crawl).
    session : aiohttp.ClientSession or None, default=None
        A session to use instead of creating one; the caller then owns it (and its connector
        settings), :meth:`close` leaves it open, and it must keep ``auto_decompress=True``. Each
        hop's host is still checked against the egress policy, but resolved addresses are checked
        only by a session this fetcher creates.
    keep_copy : bool, default=False
        Attach the HTTP exchange of each 2xx and 304 answer to its outcome
        (:class:`~freshcrawl.crawler.capture.HttpCapture`, for a WARC archive): the body is then
        read as received (content coding kept, at most `max_bytes` bytes) and decoded by
        :func:`~freshcrawl.crawler.capture.decode_content` for the signature, with the same cap.

    Raises
    ------
    TypeError
        If a count is not an int.
    ValueError
        If a timeout is not finite and > 0, `max_bytes` or `limit_per_host` is < 1,
        `max_redirects` is < 0, or `user_agent` holds a line break.
    UnknownNameError
        (a ValueError) If `signature` is not ``"raw"`` or ``"text"``.

    Examples
    --------
    >>> import asyncio
    >>> async def visit():
    ...     async with Fetcher(contact_url="https://example.org/bot", total_timeout_s=5) as f:
    ...         return await f.fetch(FetchRequest("ftp://example.org/file"))
    >>> result = asyncio.run(visit())
    >>> result.outcome, result.error, result.why
    (<Outcome.NO_INFO: 'no-info'>, <ErrorKind.PAGE: 'page'>, 'bad-scheme')
    """

    def __init__(
        self,
        *,
        user_agent: str | None = None,
        contact_url: str | None = None,
        signature: str = "raw",
        max_bytes: int = DEFAULT_MAX_BYTES,
        connect_timeout_s: float = 10.0,
        read_timeout_s: float = 30.0,
        total_timeout_s: float = 60.0,
        max_redirects: int = 5,
        limit_per_host: int = 1,
        allow_private: bool = False,
        session: aiohttp.ClientSession | None = None,
        keep_copy: bool = False,
    ) -> None:
        if signature not in SIGNATURE_MODES:
            allowed = ", ".join(map(repr, SIGNATURE_MODES))
            raise UnknownNameError(f"signature must be one of {allowed}; got {signature!r}")
        self.user_agent = user_agent if user_agent is not None else default_user_agent(contact_url)
        if not self.user_agent or "\r" in self.user_agent or "\n" in self.user_agent:
            raise ValueError(f"user_agent must be a non-empty single line; got {self.user_agent!r}")
        self.contact_url = contact_url
        self.signature = signature
        self.max_bytes = check_int("max_bytes", max_bytes, low=1)
        self.connect_timeout_s = check_positive("connect_timeout_s", connect_timeout_s, unit="s")
        self.read_timeout_s = check_positive("read_timeout_s", read_timeout_s, unit="s")
        self.total_timeout_s = check_positive("total_timeout_s", total_timeout_s, unit="s")
        self.max_redirects = check_int("max_redirects", max_redirects)
        self.limit_per_host = check_int("limit_per_host", limit_per_host, low=1)
        self.allow_private = bool(allow_private)
        self.keep_copy = bool(keep_copy)
        self._session = session
        self._owns_session = session is None
        self._timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=self.connect_timeout_s, sock_read=self.read_timeout_s
        )

    # ----------------------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        """Create the session (no-op when one was injected or already created)."""
        if self._session is None:
            connector = aiohttp.TCPConnector(
                limit_per_host=self.limit_per_host,
                resolver=EgressResolver(allow_private=self.allow_private),
                socket_factory=egress_socket_factory(self.allow_private),
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=self._timeout,
                cookie_jar=aiohttp.DummyCookieJar(),
                trust_env=False,
                auto_decompress=True,
                headers={"User-Agent": self.user_agent},
                trace_configs=[_trace_config()],
            )
            # aiohttp sends an idempotent request a second time, at once, when the connection fails
            # (reset, disconnect): a second request to the host with no delay. A visit is one request
            # (plus the redirect hops it follows); a failure is an outcome, and the frontier retries.
            self._session._retry_connection = False

    async def close(self) -> None:
        """Close the session if this fetcher created it; safe to call twice."""
        if self._session is not None and self._owns_session:
            session, self._session = self._session, None
            await session.close()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def _require_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            raise RuntimeError(
                "Fetcher has no open session: "
                "use `async with Fetcher(...)` or `await fetcher.start()`"
            )
        return self._session

    # ------------------------------------------------------------------------------ requests
    async def _open(
        self, url: str, headers: dict[str, str], max_redirects: int, hop_delay_s: float = 0.0
    ) -> tuple[aiohttp.ClientResponse, str]:
        """GET `url`, following redirects hop by hop; return the final response (open) and URL.

        Waits `hop_delay_s` seconds before each hop after the first (politeness between the
        requests of one visit). Raises _Refused for a redirect not to follow, and aiohttp/OS errors
        as they come.
        """
        session = self._require_session()
        current = url
        try:
            seen = {normalize_url(url)}
        except ValueError:
            seen = {url}
        try:
            loopback_ok = is_loopback_host(URL(url).raw_host or "")
        except (ValueError, TypeError):
            loopback_ok = False
        # read by the resolver and the socket factory of this task's connections
        loopback_allowed.set(loopback_ok)
        status: int | None = None
        for hop in range(max_redirects + 1):
            if not self.allow_private and _hop_refused(current, loopback_ok=loopback_ok):
                raise _Refused("egress-blocked", status, current)
            if hop and hop_delay_s > 0:
                deadline = _deadline.get(None)
                if deadline is not None and deadline.when() is not None:
                    deadline.reschedule(deadline.when() + hop_delay_s)  # the wait is not the server's time
                await asyncio.sleep(hop_delay_s)
            response = await session.get(
                current, headers=headers, allow_redirects=False, timeout=self._timeout,
                auto_decompress=not self.keep_copy,
            )
            location = response.headers.get("Location")
            if response.status not in _REDIRECT_STATUSES or location is None:
                return response, current
            status = response.status
            response.release()
            try:
                target = URL(current).join(URL(location.strip()))
            except (ValueError, TypeError):
                raise _Refused("bad-redirect", status, current) from None
            if target.scheme not in HTTP_SCHEMES:
                raise _Refused("bad-scheme", status, current)
            try:
                nxt = normalize_url(str(target))
            except ValueError:
                raise _Refused("bad-redirect", status, current) from None
            if target.raw_user is not None or target.raw_password is not None:
                raise _Refused("bad-redirect", status, current)  # credentials are never sent
            if nxt in seen:
                raise _Refused("redirect-loop", status, current)
            if hop == max_redirects:
                raise _Refused("too-many-redirects", status, current)
            seen.add(nxt)
            current = nxt
        raise AssertionError("unreachable")  # pragma: no cover

    def _headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = {"User-Agent": self.user_agent}
        if extra:
            headers.update(extra)
        return headers

    async def fetch(self, request: FetchRequest) -> FetchOutcome:
        """Visit one page and say what the visit tells.

        Sends If-None-Match (`request.etag`) and If-Modified-Since (`request.last_modified`)
        when known, follows redirects, reads the body up to `max_bytes` and compares its
        signature with `request.signature` (see the module docstring for every case).

        Parameters
        ----------
        request : FetchRequest
            The due visit.

        Returns
        -------
        FetchOutcome
            ``started_at`` is the epoch time the first request was sent, ``elapsed_s`` the seconds
            until the body was read or the visit failed (signature work excluded), ``n_bytes``
            the decoded body bytes read (at most `max_bytes`), ``final_url`` the URL after
            redirects when it differs from ``request.url``. For a redirect that is not followed
            (loop, too many, off http(s)), ``status`` is that redirect's status and ``final_url``
            the URL that answered with it.

        Raises
        ------
        RuntimeError
            If the fetcher has no open session (not started, or closed).
        """
        self._require_session()
        started_at = time.time()
        t0 = time.perf_counter()
        status: int | None = None
        final_url: str | None = None
        n_bytes = 0

        def no_info(kind: ErrorKind, why: str, **fields: object) -> FetchOutcome:
            fields.setdefault("status", status)
            fields.setdefault("final_url", final_url)
            fields.setdefault("n_bytes", n_bytes)
            return FetchOutcome(
                url=request.url,
                outcome=Outcome.NO_INFO,
                why=why,
                started_at=started_at,
                elapsed_s=time.perf_counter() - t0,
                error=kind,
                **fields,  # type: ignore[arg-type]
            )

        try:
            target = URL(request.url)
            scheme, host = target.scheme, target.raw_host
        except (ValueError, TypeError):
            return no_info(ErrorKind.PAGE, "bad-url")
        if scheme not in HTTP_SCHEMES:
            return no_info(ErrorKind.PAGE, "bad-scheme")
        if not host:
            return no_info(ErrorKind.PAGE, "bad-url")

        conditional: dict[str, str] = {}
        if request.etag:
            conditional["If-None-Match"] = request.etag
        if request.last_modified:
            conditional["If-Modified-Since"] = request.last_modified
        extra = dict(conditional)
        if self.keep_copy:
            extra["Accept-Encoding"] = ACCEPT_ENCODING

        body = b""
        content_type: str | None = None
        etag = last_modified = None
        capture: HttpCapture | None = None
        try:
            hop_delay = max(0.0, float(request.hop_delay_s))
            async with asyncio.timeout(self.total_timeout_s) as deadline:
                _deadline.set(deadline)
                sent: list[float] = []
                _sent_at.set(sent)
                response, url = await self._open(
                    request.url, self._headers(extra), self.max_redirects, hop_delay
                )
                if sent:  # the politeness delay runs from when the request went out
                    started_at = sent[0]
                final_url = url if url != request.url else None
                complete = False
                try:
                    status = response.status
                    if not 200 <= status < 300:
                        complete = True  # the body is not read; release() decides about reuse
                        retry = parse_retry_after(response.headers.get("Retry-After"))
                        outcome, kind, why = classify(
                            status, None, request.signature, conditional=bool(conditional)
                        )
                        if kind is not None:
                            retry_after_s = None if status == 304 else retry
                            return no_info(kind, why, retry_after_s=retry_after_s)
                        return FetchOutcome(  # a 304 to a conditional request
                            url=request.url,
                            outcome=outcome,
                            why=why,
                            started_at=started_at,
                            elapsed_s=time.perf_counter() - t0,
                            status=status,
                            etag=request.etag,
                            last_modified=request.last_modified,
                            signature=request.signature,
                            final_url=final_url,
                            capture=_capture(response, url, b"") if self.keep_copy else None,
                        )
                    # a kept body over the cap is kept up to one byte past it (see KEPT_BODY_MAX_BYTES)
                    keep = request.keep_body
                    cap = max(self.max_bytes, KEPT_BODY_MAX_BYTES) if keep else self.max_bytes
                    read_cap = cap + 1 if keep else cap  # a kept body: one byte past, to tell the cut
                    length = response.content_length
                    if length is not None and length > cap and not keep:
                        return no_info(ErrorKind.CONTENT, "too-large")
                    peer = _peer(response) if self.keep_copy else None
                    body, too_large = await _read_capped(response, read_cap)
                    n_bytes = len(body)
                    if too_large and not keep:
                        return no_info(ErrorKind.CONTENT, "too-large")
                    complete = not too_large
                    if self.keep_copy:
                        capture = _capture(response, url, body, peer)
                        try:
                            body, too_large = decode_content(
                                body, response.headers.get("Content-Encoding"), read_cap
                            )
                        except UndecodableContent:
                            return no_info(ErrorKind.CONTENT, "undecodable")
                        n_bytes = len(body)
                        if too_large and not keep:
                            return no_info(ErrorKind.CONTENT, "too-large")
                    content_type = response.headers.get("Content-Type")
                    etag = response.headers.get("ETag")
                    last_modified = response.headers.get("Last-Modified")
                finally:
                    if complete:
                        response.release()
                    else:  # stop the transfer: the connection is not reused
                        response.close()
        except _Refused as refused:
            return no_info(
                ErrorKind.PAGE,
                refused.why,
                status=refused.status,
                final_url=refused.url if refused.url != request.url else None,
            )
        except _FAILURES as err:
            kind, why = _network_failure(err)
            return no_info(kind, why)

        elapsed_s = time.perf_counter() - t0
        if self.signature == "raw":
            sig = compute_signature(body, content_type, "raw")
        else:  # text extraction is CPU work: keep it off the event loop
            sig = await asyncio.to_thread(compute_signature, body, content_type, self.signature)
        outcome, _, why = classify(status, sig, request.signature, conditional=bool(conditional))
        return FetchOutcome(
            url=request.url,
            outcome=outcome,
            why=why,
            started_at=started_at,
            elapsed_s=elapsed_s,
            status=status,
            n_bytes=n_bytes,
            etag=etag,
            last_modified=last_modified,
            signature=sig,
            final_url=final_url,
            capture=capture,
            body=body if request.keep_body else None,
        )

    async def fetch_robots(self, origin: str, *, hop_delay_s: float = 0.0) -> RobotsOutcome:
        """Fetch ``<origin>/robots.txt`` as RFC 9309 asks.

        Follows up to :data:`ROBOTS_MAX_REDIRECTS` redirects (to any http(s) origin), reads at
        most :data:`ROBOTS_MAX_BYTES` of the body and ignores the rest (cut at the last complete
        line), and decodes it as UTF-8 with replacement characters.

        Parameters
        ----------
        origin : str
            ``scheme://host[:port]`` (a path, query or fragment is ignored).
        hop_delay_s : float, default=0.0
            Seconds to wait before following a redirect (the host's politeness delay).

        Returns
        -------
        RobotsOutcome
            ``status`` None when unreachable (network error, timeout, too many redirects, a
            redirect loop or a redirect off http(s)), with ``why`` saying which. ``text`` is set
            for a 2xx answer only. Feed it to :class:`~freshcrawl.crawler.robots.RobotsRules`.

        Raises
        ------
        ValueError
            If `origin` is not an http(s) URL with a host.
        RuntimeError
            If the fetcher has no open session.
        """
        try:
            parsed = URL(origin.strip())
            ok = parsed.scheme in HTTP_SCHEMES and bool(parsed.raw_host)
        except (ValueError, TypeError, AttributeError) as err:
            raise ValueError(
                f"origin must be scheme://host[:port] with http(s); got {origin!r}"
            ) from err
        if not ok:
            raise ValueError(f"origin must be scheme://host[:port] with http(s); got {origin!r}")
        hop_delay = max(0.0, float(hop_delay_s))
        normalised_origin = str(parsed.origin())
        self._require_session()
        fetched_at = time.time()
        t0 = time.perf_counter()

        def result(
            status: int | None, text: str | None, why: str, retry: float | None = None
        ) -> RobotsOutcome:
            return RobotsOutcome(
                origin=normalised_origin,
                status=status,
                text=text,
                fetched_at=fetched_at,
                elapsed_s=time.perf_counter() - t0,
                why=why,
                retry_after_s=retry,
            )

        try:
            async with asyncio.timeout(self.total_timeout_s) as deadline:
                _deadline.set(deadline)
                response, _ = await self._open(
                    normalised_origin + "/robots.txt", self._headers(), ROBOTS_MAX_REDIRECTS, hop_delay
                )
                complete = False
                try:
                    status = response.status
                    if not 200 <= status < 300:
                        complete = True
                        retry = parse_retry_after(response.headers.get("Retry-After"))
                        return result(status, None, f"http-{status}", retry)
                    body, truncated = await _read_capped(response, ROBOTS_MAX_BYTES)
                    complete = not truncated
                finally:
                    if complete:
                        response.release()
                    else:
                        response.close()
        except _Refused as refused:
            return result(None, None, refused.why)
        except _FAILURES as err:
            return result(None, None, _network_failure(err)[1])
        if truncated and b"\n" in body:
            body = body[: body.rindex(b"\n") + 1]
        return result(status, body.decode("utf-8", errors="replace"), "ok")
