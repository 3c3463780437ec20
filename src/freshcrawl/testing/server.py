"""The test web: pages with known change rates and faults, served on loopback by aiohttp.

:class:`TestWeb` runs an aiohttp server in a background thread with its own event loop. Each host
listens on its own loopback address ``127.0.0.{2+i}`` (the host's name), on a port the OS chooses
unless the :class:`HostSpec` gives one; nothing is ever bound outside 127.0.0.0/8.

Pages change as Poisson processes of known rates (changes per second) from the start of the server
(:class:`freshcrawl.testing.changes.ChangeSchedule`); the version served is the number of changes so
far. The server answers conditional requests (strong ETag per page and version, Last-Modified;
If-None-Match takes precedence over If-Modified-Since, RFC 9110 Sec. 13.2.2), serves robots.txt per
host, applies faults per page (:data:`freshcrawl.testing.specs.FAULT_KINDS`), and logs every request
(:class:`freshcrawl.testing.log.RequestLog`). The truth (change times, versions) and the audits
(freshness, politeness) grade a crawler against that log.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import random
import socket
import struct
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path
from types import TracebackType

import numpy as np
from aiohttp import web
from numpy.typing import ArrayLike, NDArray

from freshcrawl._validation import check_int, check_positive
from freshcrawl.testing import _content
from freshcrawl.testing.audit import FreshnessReport, Violation
from freshcrawl.testing.audit import freshness as _freshness
from freshcrawl.testing.audit import politeness_violations as _politeness
from freshcrawl.testing.changes import ChangeSchedule
from freshcrawl.testing.log import RequestLog, RequestRecord
from freshcrawl.testing.specs import (
    MAX_HOSTS,
    Fault,
    HostSpec,
    Page,
    PageSpec,
    _check_loopback,
    host_name,
)

__all__ = ["HostInfo", "TestWeb"]

_CHUNK = 64 * 1024
_OVERSIZE_CHUNK = (b"<!-- " + b"padding " * ((_CHUNK - 9) // 8)).ljust(_CHUNK - 4, b" ") + b"-->\n"
_ERROR_BODY = {
    404: b"<html><body><h1>404 Not Found</h1></body></html>\n",
    410: b"<html><body><h1>410 Gone</h1></body></html>\n",
    429: b"<html><body><h1>429 Too Many Requests</h1></body></html>\n",
    500: b"<html><body><h1>500 Internal Server Error</h1></body></html>\n",
    503: b"<html><body><h1>503 Service Unavailable</h1></body></html>\n",
    405: b"<html><body><h1>405 Method Not Allowed</h1></body></html>\n",
}


class HostInfo:
    """A running host: name, port, origin and spec.

    Attributes
    ----------
    name : str
        The loopback address, e.g. ``"127.0.0.2"``.
    port : int
        The port it listens on.
    origin : str
        ``http://name:port``.
    spec : HostSpec
        Its robots.txt and faults.
    """

    __slots__ = ("name", "origin", "port", "spec")

    def __init__(self, name: str, port: int, spec: HostSpec) -> None:
        self.name, self.port, self.spec = name, port, spec
        self.origin = f"http://{name}:{port}"

    def __repr__(self) -> str:
        return f"HostInfo({self.origin!r}, robots_fault={self.spec.robots_fault!r})"


class _PageState:
    """Per-page cache of the current version's rendered bodies (only touched on the loop thread)."""

    __slots__ = (
        "etag",
        "html",
        "last_modified",
        "lm_text",
        "next_change",
        "noisy",
        "pdf",
        "png",
        "version",
    )

    def __init__(self) -> None:
        self.version = -1
        self.next_change = -math.inf


class TestWeb:
    """A small web of pages on loopback, for tests, benchmarks and rehearsals of a crawl.

    Parameters
    ----------
    pages : sequence of PageSpec
        The pages (see :func:`freshcrawl.testing.make_pages`); ``(host, path)`` must be unique.
    hosts : int or sequence of HostSpec, default=1
        Number of hosts with default specs, or one spec per host; host i is ``127.0.0.{2+i}``.
    seed : int, default=0
        Seed of the change times, the page texts, the intermittent faults and the noise.
    max_hang_s : float, default=30.0
        Longest a ``timeout`` fault hangs and a ``slow-body`` drips, seconds (> 0). Stopping the
        server ends them at once.
    log_path : str or Path or None, default=None
        Also append every request record to this JSONL file.

    Attributes
    ----------
    seed, max_hang_s : as given
    host_specs : tuple of HostSpec
        One per host.
    started_at : float or None
        Start time (origin of the change times), seconds since the epoch; None before :meth:`start`.
    log : RequestLog
        The request log (see :meth:`requests`).

    Raises
    ------
    TypeError
        If a host is not a :class:`HostSpec`, ``seed`` not an integer or ``max_hang_s`` not a number.
    ValueError
        If a page names an unknown host, two pages share a URL, or a parameter is out of range.

    Notes
    -----
    Validators: ETag ``"<seed>-<page>-<version>"`` (strong); Last-Modified is the HTTP date of the last
    change (of the start before any change), bumped by whole seconds when changes share a second so that
    each version has its own date. If-None-Match (weak comparison, ``*`` matches) takes precedence over
    If-Modified-Since; a 304 carries the validators and no body. ``noisy`` pages send no validators and
    always answer 200. Only GET and HEAD are served (405 otherwise); unknown paths get 404.

    Examples
    --------
    >>> from freshcrawl.testing import make_pages
    >>> with TestWeb(make_pages(4, 2, (0.01, 0.1)), hosts=2, seed=0) as web:
    ...     len(web.urls()), web.urls()[0].startswith("http://127.0.0.2:")
    (4, True)
    """

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        pages: Sequence[PageSpec],
        hosts: int | Sequence[HostSpec] = 1,
        seed: int = 0,
        *,
        max_hang_s: float = 30.0,
        log_path: str | Path | None = None,
    ) -> None:
        if isinstance(hosts, bool):
            raise TypeError(f"hosts must be an int or a sequence of HostSpec; got {hosts!r}")
        if isinstance(hosts, int | np.integer):
            if not 1 <= hosts <= MAX_HOSTS:
                raise ValueError(f"hosts must be in [1, {MAX_HOSTS}]; got {hosts!r}")
            specs = tuple(HostSpec() for _ in range(int(hosts)))
        else:
            specs = tuple(hosts)
            if not 1 <= len(specs) <= MAX_HOSTS:
                raise ValueError(f"hosts must hold 1 to {MAX_HOSTS} HostSpec; got {len(specs)}")
            for k, h in enumerate(specs):
                if not isinstance(h, HostSpec):
                    raise TypeError(f"hosts[{k}] must be a HostSpec; got {h!r}")
        self.host_specs = specs
        self.seed = check_int("seed", seed)
        self.max_hang_s = check_positive("max_hang_s", max_hang_s, unit="seconds")
        names = [host_name(i) for i in range(len(specs))]
        self._host_index = {n: i for i, n in enumerate(names)}
        self._page_specs: tuple[PageSpec, ...] = tuple(pages)
        if not self._page_specs:
            raise ValueError("pages must hold at least one PageSpec; got none")
        self._by_key: dict[tuple[str, str], int] = {}
        for k, p in enumerate(self._page_specs):
            if not isinstance(p, PageSpec):
                raise TypeError(f"pages[{k}] must be a PageSpec; got {p!r}")
            if p.host not in self._host_index:
                raise ValueError(
                    f"pages[{k}].host {p.host!r} is not a host of this web; hosts are {names[0]} .. "
                    f"{names[-1]}"
                )
            if (p.host, p.path) in self._by_key:
                raise ValueError(f"pages[{k}] repeats the page {p.host}{p.path}")
            self._by_key[(p.host, p.path)] = k
        self._faults: dict[int, Fault] = {
            k: p.fault
            for k, p in enumerate(self._page_specs)
            if p.fault is not None  # type: ignore[misc]
        }
        self.log = RequestLog(log_path)
        self.started_at: float | None = None
        self.stopped_at: float | None = None
        self._hosts: tuple[HostInfo, ...] = ()
        self._pages: tuple[Page, ...] = ()
        self._url_index: dict[str, int] = {}
        self._schedule: ChangeSchedule | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._fault_rng = random.Random(f"{self.seed}:faults")
        self._noise_rng = random.Random(f"{self.seed}:noise")

    # --- lifecycle -----------------------------------------------------------------------------
    def start(self) -> TestWeb:
        """Bind every host and start serving in a background thread; returns ``self``.

        Raises
        ------
        RuntimeError
            If already started, or the server failed to start (the cause is chained).
        OSError
            If a host's address or port cannot be bound.
        """
        if self.started_at is not None:
            raise RuntimeError("this TestWeb was already started; make a new one")
        socks = []
        try:
            for i, spec in enumerate(self.host_specs):
                name = _check_loopback("host", host_name(i))
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                socks.append(s)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind((name, int(spec.port)))
                s.listen(1024)
                s.setblocking(False)
        except BaseException:
            for s in socks:
                s.close()
            raise
        self._hosts = tuple(
            HostInfo(host_name(i), s.getsockname()[1], spec)
            for i, (s, spec) in enumerate(zip(socks, self.host_specs, strict=True))
        )
        self._pages = tuple(
            Page(
                index=k,
                url=f"{self._hosts[self._host_index[p.host]].origin}{p.path}",
                host=p.host,
                port=self._hosts[self._host_index[p.host]].port,
                path=p.path,
                rate=p.rate,
                fault=p.fault,  # type: ignore[arg-type]
                weight=p.weight,
            )
            for k, p in enumerate(self._page_specs)
        )
        self._url_index = {p.url: p.index for p in self._pages}
        self._cache = [_PageState() for _ in self._pages]
        self.log.open()
        self.started_at = time.time()
        self._schedule = ChangeSchedule(
            np.array([p.rate for p in self._page_specs]), self.seed, self.started_at
        )
        ready = threading.Event()
        failure: list[BaseException] = []
        self._thread = threading.Thread(
            target=self._run, args=(socks, ready, failure), name="freshcrawl-test-web", daemon=True
        )
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            self.log.close()
            raise RuntimeError("the test web failed to start") from failure[0]
        return self

    def _run(self, socks: list[socket.socket], ready: threading.Event, failure: list) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            try:
                loop.run_until_complete(self._setup(socks))
            except BaseException as err:  # noqa: BLE001 - reported to start()
                failure.append(err)
                for s in socks:
                    s.close()
                return
            finally:
                ready.set()
            loop.run_forever()
        finally:
            try:
                pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
                for t in pending:
                    t.cancel()
                if pending:
                    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                asyncio.set_event_loop(None)
                loop.close()

    async def _setup(self, socks: list[socket.socket]) -> None:
        self._stopping = asyncio.Event()
        server = web.Server(self._handle, access_log=None)
        self._runner = web.ServerRunner(server, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        for s in socks:
            await web.SockSite(self._runner, s).start()

    async def _shutdown(self) -> None:
        self._stopping.set()
        await self._runner.cleanup()

    def stop(self) -> None:
        """Stop serving, end hanging handlers, close the log file; returns within a few seconds.

        Calling it again, or on a web that never started, does nothing.
        """
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            self.log.close()
            return
        try:
            fut = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
            try:
                fut.result(timeout=5.0)
            except Exception:  # noqa: BLE001 - stopping must not fail; the loop is stopped below
                fut.cancel()
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5.0)
        finally:
            self.stopped_at = time.time()
            self.log.close()

    @property
    def running(self) -> bool:
        """Whether the server thread is serving."""
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> TestWeb:  # noqa: PYI034 - start() returns self
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- what is served ------------------------------------------------------------------------
    def _require_started(self) -> ChangeSchedule:
        if self._schedule is None:
            raise RuntimeError("call start() first: URLs and change times exist once the web runs")
        return self._schedule

    @property
    def hosts(self) -> tuple[HostInfo, ...]:
        """The running hosts (empty before :meth:`start`)."""
        return self._hosts

    @property
    def pages(self) -> tuple[Page, ...]:
        """The pages with their URLs.

        Raises
        ------
        RuntimeError
            Before :meth:`start`.
        """
        self._require_started()
        return self._pages

    def urls(self) -> list[str]:
        """Every page's URL, in page order.

        Raises
        ------
        RuntimeError
            Before :meth:`start`.
        """
        self._require_started()
        return [p.url for p in self._pages]

    def page_index(self, url: str | Page) -> int:
        """Index of a page given its URL (a query or fragment is ignored).

        Raises
        ------
        ValueError
            If ``url`` is not a page of this web.
        """
        self._require_started()
        if isinstance(url, Page):
            return url.index
        key = str(url).split("#", 1)[0].split("?", 1)[0]
        try:
            return self._url_index[key]
        except KeyError:
            raise ValueError(f"url {url!r} is not a page of this test web") from None

    def fault(self, url: str | Page) -> Fault | None:
        """The page's current fault."""
        return self._faults.get(self.page_index(url))

    def set_fault(self, url: str | Page, fault: Fault | str | None) -> None:
        """Set (or with None, clear) a page's fault; takes effect for the next request.

        Raises
        ------
        ValueError
            If ``url`` is unknown or ``fault`` is not a valid fault.
        """
        i = self.page_index(url)
        f = Fault.coerce(fault)
        if f is None:
            self._faults.pop(i, None)
        else:
            self._faults[i] = f

    def clear_fault(self, url: str | Page) -> None:
        """Remove a page's fault."""
        self.set_fault(url, None)

    # --- truth -----------------------------------------------------------------------------------
    def change_times(self, url: str | Page, until: float | None = None) -> NDArray[np.float64]:
        """The page's change times up to ``until`` (default now), seconds since the epoch.

        Returns
        -------
        ndarray of float, shape (k,)
            Sorted; times in ``(started_at, until]``.
        """
        schedule = self._require_started()
        t = time.time() if until is None else _finite_time("until", until)
        return schedule.times(self.page_index(url), t)

    def version_at(self, url: str | Page, t: float | None = None) -> int:
        """Content version of the page at ``t`` (default now): its number of changes so far."""
        schedule = self._require_started()
        t = time.time() if t is None else _finite_time("t", t)
        return schedule.version_at(self.page_index(url), t)

    def etag(self, url: str | Page, version: int) -> str:
        """The ETag the page has at ``version`` (with its quotes)."""
        return f'"{self.seed:x}-{self.page_index(url)}-{int(version)}"'

    def main_text(self, url: str | Page, version: int) -> str:
        """Title and paragraphs of the page's main text at ``version``, joined by newlines."""
        title, paras = _content.main_text(self.seed, self.page_index(url), int(version))
        return "\n".join([title, *paras])

    def requests(self) -> list[RequestRecord]:
        """A snapshot of the request log (thread-safe copy), in the order requests ended."""
        return self.log.snapshot()

    # --- audits --------------------------------------------------------------------------------
    def freshness(
        self,
        start: float | None = None,
        end: float | None = None,
        weights: Mapping[str, float] | ArrayLike | None = None,
    ) -> FreshnessReport:
        """Exact time-averaged freshness of every page over ``[start, end]``, from the request log.

        A page's copy is refreshed by a completed GET answered 200 or 304 (not a refused body:
        oversized, gzip bomb) at the request's arrival time; it is fresh from there until the page's
        first change after it, and stale before its first refresh. Integrated exactly by the kernel
        of :mod:`freshcrawl.environments.metrics`.

        Parameters
        ----------
        start : float, optional
            Window start, seconds since the epoch, >= ``started_at``; default ``started_at``.
        end : float, optional
            Window end, seconds since the epoch, > ``start``; default now (or the stop time).
        weights : mapping of url to float, or array of float of shape (n_pages,), optional
            Weights of the mean, >= 0; default the pages' weights. A mapping may leave pages out
            (weight 0).

        Returns
        -------
        FreshnessReport
            Per-page freshness (shape (n_pages,)) and the weighted mean.

        Raises
        ------
        ValueError
            If the window is empty or starts before the server, or the weights are malformed.
        RuntimeError
            Before :meth:`start`.
        """
        schedule = self._require_started()
        assert self.started_at is not None
        s = self.started_at if start is None else _finite_time("start", start)
        e = (self.stopped_at or time.time()) if end is None else _finite_time("end", end)
        if s < self.started_at:
            raise ValueError(
                f"start must be >= the server's start {self.started_at!r} (seconds since the epoch); "
                f"got {s!r}"
            )
        if not e > s:
            raise ValueError(
                f"end must be > start (seconds since the epoch); got start={s!r}, end={e!r}"
            )
        if weights is None:
            w = np.array([p.weight for p in self._pages])
        elif isinstance(weights, Mapping):
            w = np.zeros(len(self._pages))
            for url, value in weights.items():
                w[self.page_index(url)] = float(value)
        else:
            w = np.asarray(weights, dtype=np.float64)
        return _freshness(
            self.requests(), [p.url for p in self._pages], lambda i: schedule.times(i, e), s, e, w
        )

    def politeness_violations(
        self,
        delays: Mapping[str, float] | float = 0.0,
        tolerance_s: float = 0.05,
        *,
        count_robots: bool = True,
    ) -> list[Violation]:
        """Politeness violations in the request log so far.

        Flags requests to a path the host's robots.txt disallows (robots.txt itself excluded; a host
        whose robots.txt answers 5xx or times out is wholly disallowed), two requests to one host
        closer than its delay (the larger of ``delays`` and the Crawl-delay its robots.txt serves),
        and requests to a host before a Retry-After it sent had elapsed (counted from the end of that
        answer).

        Parameters
        ----------
        delays : float or mapping of host name to float, default=0.0
            Minimum seconds between two requests to one host.
        tolerance_s : float, default=0.05
            Slack, seconds.
        count_robots : bool, default=True
            Whether robots.txt requests count in the delay rule.

        Returns
        -------
        list of Violation
            Readable (``str(v)``), in order of arrival; empty for a polite crawl.

        Raises
        ------
        ValueError
            If a delay or the tolerance is negative, or a delay names an unknown host.
        """
        self._require_started()
        return _politeness(
            self.requests(),
            {h.name: h.spec for h in self._hosts},
            delays,
            tolerance_s=tolerance_s,
            count_robots=count_robots,
            t0=self.started_at or 0.0,
        )

    # --- serving -------------------------------------------------------------------------------
    def _state(self, i: int, now: float) -> _PageState:
        st = self._cache[i]
        if now < st.next_change and st.version >= 0:
            return st
        assert self._schedule is not None
        v, lm, nxt = self._schedule.state_at(i, now)
        if v != st.version:
            st.version = v
            st.last_modified = lm
            st.lm_text = formatdate(lm, usegmt=True)
            st.etag = self.etag(self._pages[i], v)
            st.html = st.noisy = st.pdf = st.png = None
        st.next_change = nxt
        return st

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        arrived = time.time()
        transport = request.transport
        sockname = transport.get_extra_info("sockname") if transport is not None else None
        if sockname:
            host, port = sockname[0], int(sockname[1])
        else:  # pragma: no cover - the connection is already gone
            host, _, p = request.host.partition(":")
            port = int(p or 80)
        h = request.headers
        ctx = _Ctx(
            arrived=arrived,
            host=host,
            port=port,
            path=request.path,
            query=request.query_string,
            method=request.method,
            inm=h.get("If-None-Match"),
            ims=h.get("If-Modified-Since"),
            ua=h.get("User-Agent"),
        )
        try:
            if request.method not in ("GET", "HEAD"):
                return await self._send(request, ctx, 405, _ERROR_BODY[405], {"Allow": "GET, HEAD"})
            if ctx.path in ("/robots.txt", "/robots-redirected.txt"):
                return await self._robots(request, ctx)
            if ctx.path in ("/sitemap.xml", "/feed.xml") and (host, ctx.path) not in self._by_key:
                mode = self.host_specs[self._host_index[host]].announce
                if mode is not None:
                    return await self._announce(request, ctx, mode)
            i = self._by_key.get((host, ctx.path))
            if i is None:
                return await self._send(request, ctx, 404, _ERROR_BODY[404])
            ctx.page = i
            fault = self._faults.get(i)
            if fault is not None and (
                fault.probability >= 1.0 or self._fault_rng.random() < fault.probability
            ):
                ctx.fault = fault.kind
                return await self._faulty(request, ctx, i, fault)
            return await self._page(request, ctx, i)
        finally:
            self._finish(ctx)

    def _finish(self, ctx: _Ctx) -> None:
        """Log the request once. Called just before the last bytes go out (or the connection is
        aborted), so that a client that has its answer finds the request in the log."""
        if ctx.logged:
            return
        ctx.logged = True
        self.log.append(
            RequestRecord(
                arrived=ctx.arrived,
                ended=time.time(),
                host=ctx.host,
                port=ctx.port,
                path=ctx.path,
                query=ctx.query,
                method=ctx.method,
                status=ctx.status,
                bytes_sent=ctx.sent,
                if_none_match=ctx.inm,
                if_modified_since=ctx.ims,
                user_agent=ctx.ua,
                version=ctx.version,
                fault=ctx.fault,
                completed=ctx.completed,
                retry_after_until=ctx.retry_until,
                page=ctx.page,
            )
        )

    async def _send(
        self,
        request: web.BaseRequest,
        ctx: _Ctx,
        status: int,
        body: bytes,
        headers: dict[str, str] | None = None,
        content_type: str = "text/html; charset=utf-8",
    ) -> web.StreamResponse:
        resp = web.Response(status=status, body=body, headers=headers)
        if body or status not in (204, 304):
            resp.headers["Content-Type"] = content_type
        ctx.status = status
        if request.method != "HEAD" and status != 304:
            ctx.sent = len(body)
        ctx.completed = True
        self._finish(ctx)
        await resp.prepare(request)
        await resp.write_eof()
        return resp

    def _not_modified(self, ctx: _Ctx, st: _PageState) -> bool:
        if ctx.inm is not None:  # RFC 9110 13.2.2: If-None-Match first, weak comparison
            tags = [t.strip() for t in ctx.inm.split(",")]
            return any(t == "*" or t.removeprefix("W/") == st.etag for t in tags)
        if ctx.ims is not None:
            try:
                since = parsedate_to_datetime(ctx.ims).timestamp()
            except (TypeError, ValueError, IndexError, OverflowError):
                return False  # an invalid date is ignored
            return st.last_modified <= since
        return False

    async def _page(self, request: web.BaseRequest, ctx: _Ctx, i: int) -> web.StreamResponse:
        st = self._state(i, ctx.arrived)
        ctx.version = st.version
        headers = {"ETag": st.etag, "Last-Modified": st.lm_text, "Cache-Control": "no-cache"}
        if self._not_modified(ctx, st):
            return await self._send(request, ctx, 304, b"", headers)
        if st.html is None:
            st.html = b"".join(_content.render_html(self.seed, i, st.version, st.last_modified))
        return await self._send(request, ctx, 200, st.html, headers)

    async def _hang(self, seconds: float) -> bool:
        """Sleep up to ``seconds`` (capped by ``max_hang_s``); True if the server is stopping."""
        try:
            await asyncio.wait_for(self._stopping.wait(), min(seconds, self.max_hang_s))
        except TimeoutError:
            return False
        return True

    def _abort(self, request: web.BaseRequest, ctx: _Ctx, *, reset: bool) -> None:
        self._finish(ctx)
        transport = request.transport
        if transport is None:
            return
        if reset:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:  # pragma: no cover - already closed
                    pass
        transport.abort()

    def _retry_after(self, ctx: _Ctx, fault: Fault, *, as_date: bool) -> dict[str, str]:
        now = time.time()
        if as_date:
            until = float(math.ceil(now + fault.retry_after_s))
            ctx.retry_until = until
            return {"Retry-After": formatdate(until, usegmt=True)}
        secs = math.ceil(fault.retry_after_s)
        ctx.retry_until = now + secs
        return {"Retry-After": str(secs)}

    async def _faulty(
        self, request: web.BaseRequest, ctx: _Ctx, i: int, fault: Fault
    ) -> web.StreamResponse:
        kind = fault.kind
        origin = f"http://{ctx.host}:{ctx.port}"
        if kind in ("404", "410", "500", "429", "503"):
            return await self._send(request, ctx, int(kind), _ERROR_BODY[int(kind)])
        if kind in ("429-seconds", "429-date", "503-seconds"):
            status = int(kind[:3])
            headers = self._retry_after(ctx, fault, as_date=kind.endswith("date"))
            return await self._send(request, ctx, status, _ERROR_BODY[status], headers)
        if kind == "redirect-loop":
            target = ctx.path if ctx.query == "loop=1" else f"{ctx.path}?loop=1"
            return await self._send(request, ctx, 302, b"", {"Location": origin + target})
        if kind == "redirect-ftp":
            return await self._send(
                request, ctx, 301, b"", {"Location": f"ftp://{ctx.host}{ctx.path}"}
            )
        if kind in ("timeout", "reset"):
            if kind == "timeout":
                await self._hang(self.max_hang_s)
            self._abort(request, ctx, reset=True)
            return web.Response(status=500)  # never written: the transport is gone
        st = self._state(i, ctx.arrived)
        ctx.version = st.version
        headers = {"ETag": st.etag, "Last-Modified": st.lm_text}
        if kind in ("pdf", "png"):
            if self._not_modified(ctx, st):
                return await self._send(request, ctx, 304, b"", headers)
            if kind == "pdf":
                if st.pdf is None:
                    st.pdf = _content.render_pdf(self.seed, i, st.version)
                return await self._send(request, ctx, 200, st.pdf, headers, "application/pdf")
            if st.png is None:
                st.png = _content.render_png(self.seed, i, st.version)
            return await self._send(request, ctx, 200, st.png, headers, "image/png")
        if kind == "noisy":
            if st.noisy is None:
                st.noisy = _content.render_html(
                    self.seed, i, st.version, st.last_modified, noisy=True
                )
            tokens = _content.noise(self._noise_rng, time.time())
            parts = st.noisy
            body = b"".join([parts[0], tokens[0], parts[1], tokens[1], parts[2]])
            return await self._send(request, ctx, 200, body, {"Cache-Control": "no-store"})
        # streamed bodies: slow-body, oversized, oversized-chunked, gzip-bomb
        resp = web.StreamResponse(status=200, headers={"Content-Type": "text/html; charset=utf-8"})
        ctx.status = 200
        pause = 0.0
        parts: Iterable[bytes | memoryview]
        if kind == "slow-body":
            if st.html is None:
                st.html = b"".join(_content.render_html(self.seed, i, st.version, st.last_modified))
            body = memoryview(st.html)
            resp.headers.update(headers)
            resp.content_length = len(body)
            step = math.ceil(len(body) / 20)
            parts = [body[k : k + step] for k in range(0, len(body), step)]
            pause = min(fault.duration_s, self.max_hang_s) / max(len(parts) - 1, 1)
        elif kind in ("oversized", "oversized-chunked"):
            if kind == "oversized":
                resp.content_length = fault.size_bytes
            else:
                resp.enable_chunked_encoding()
            n_full, rest = divmod(fault.size_bytes, _CHUNK)
            chunk = memoryview(_OVERSIZE_CHUNK)
            parts = itertools.chain(itertools.repeat(chunk, n_full), [chunk[:rest]] if rest else [])
        else:  # gzip-bomb, built once (in a worker thread: the CRC of 1 GiB takes a moment)
            first, block, n_blocks, tail = await asyncio.get_running_loop().run_in_executor(
                None, _content.gzip_bomb
            )
            resp.headers["Content-Encoding"] = "gzip"
            resp.content_length = len(first) + len(block) * n_blocks + len(tail)
            n_groups, rest = divmod(n_blocks, 64)
            parts = itertools.chain(
                [first],
                itertools.repeat(block * 64, n_groups),
                [block * rest] if rest else [],
                [tail],
            )
        try:
            await resp.prepare(request)
            it = iter(() if request.method == "HEAD" else parts)
            prev = next(it, None)
            for part in it:
                await resp.write(prev)
                ctx.sent += len(prev)
                prev = part
                stopping = await self._hang(pause) if pause else self._stopping.is_set()
                if stopping:
                    self._abort(request, ctx, reset=False)
                    return resp
            # log before the last bytes, so that a client holding the whole body finds the record
            ctx.sent += 0 if prev is None else len(prev)
            ctx.completed = True
            self._finish(ctx)
            if prev is not None:
                await resp.write(prev)
            await resp.write_eof()
        except ConnectionError:  # the client went away
            if not ctx.logged:
                ctx.completed = False
        return resp

    async def _robots(self, request: web.BaseRequest, ctx: _Ctx) -> web.StreamResponse:
        spec = self.host_specs[self._host_index[ctx.host]]
        rf = spec.robots_fault
        ctx.fault = None if rf is None else f"robots-{rf}"
        plain = "text/plain; charset=utf-8"
        if ctx.path == "/robots-redirected.txt":
            if rf != "redirect":
                return await self._send(request, ctx, 404, _ERROR_BODY[404])
            return await self._send(request, ctx, 200, self._robots_txt(spec, ctx), None, plain)
        if rf is None:
            return await self._send(request, ctx, 200, self._robots_txt(spec, ctx), None, plain)
        if rf == "redirect":
            location = f"http://{ctx.host}:{ctx.port}/robots-redirected.txt"
            return await self._send(request, ctx, 301, b"", {"Location": location})
        if rf == "5xx":
            return await self._send(request, ctx, 503, _ERROR_BODY[503])
        if rf == "404":
            return await self._send(request, ctx, 404, _ERROR_BODY[404])
        if rf == "malformed":
            return await self._send(request, ctx, 200, _content.garbage(self.seed), None, plain)
        await self._hang(self.max_hang_s)  # timeout
        self._abort(request, ctx, reset=True)
        return web.Response(status=500)

    @staticmethod
    def _robots_txt(spec: HostSpec, ctx: _Ctx) -> bytes:
        text = spec.robots_txt()
        if spec.announce is not None:
            text += f"Sitemap: http://{ctx.host}:{ctx.port}/sitemap.xml\n"
        return text.encode()

    def announced_time(self, url: str | Page, mode: str, now: float) -> float:
        """The date a host in announce ``mode`` gives a page at ``now`` (see :data:`ANNOUNCE_MODES`)."""
        schedule = self._require_started()
        assert self.started_at is not None
        if mode == "honest":
            times = schedule.times(self.page_index(url), now)
            return float(times[-1]) if times.size else self.started_at
        if mode == "bumped":
            return now
        if mode == "frozen":
            return self.started_at
        return now + 86_400.0

    async def _announce(self, request: web.BaseRequest, ctx: _Ctx, mode: str) -> web.StreamResponse:
        """The host's sitemap or RSS feed over its pages, dated as ``mode`` says; ETag on the body."""
        import hashlib
        from datetime import UTC, datetime

        ctx.fault = f"announce-{mode}"
        pages = [p for p in self._pages if p.host == ctx.host]
        stamps = [self.announced_time(p, mode, ctx.arrived) for p in pages]
        if ctx.path == "/sitemap.xml":
            items = "".join(
                f"<url><loc>{p.url}</loc><lastmod>{datetime.fromtimestamp(t, UTC).isoformat()}</lastmod></url>"
                for p, t in zip(pages, stamps, strict=True)
            )
            body = (
                '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/'
                f'sitemap/0.9">{items}</urlset>\n'
            ).encode()
            kind = "application/xml"
        else:
            items = "".join(
                f"<item><title>{p.path}</title><link>{p.url}</link>"
                f"<pubDate>{formatdate(t, usegmt=True)}</pubDate></item>"
                for p, t in zip(pages, stamps, strict=True)
            )
            body = (
                f'<?xml version="1.0"?>\n<rss version="2.0"><channel><title>{ctx.host}</title>'
                f"<link>http://{ctx.host}:{ctx.port}/</link><description>test web</description>"
                f"{items}</channel></rss>\n"
            ).encode()
            kind = "application/rss+xml"
        etag = '"' + hashlib.sha1(body).hexdigest()[:16] + '"'
        if ctx.inm is not None and any(
            t.strip().removeprefix("W/") == etag for t in ctx.inm.split(",")
        ):
            return await self._send(request, ctx, 304, b"", {"ETag": etag})
        return await self._send(request, ctx, 200, body, {"ETag": etag}, kind)


class _Ctx:
    """What the request log needs to know about one request, filled in as it is served."""

    __slots__ = (
        "arrived",
        "completed",
        "fault",
        "host",
        "ims",
        "inm",
        "logged",
        "method",
        "page",
        "path",
        "port",
        "query",
        "retry_until",
        "sent",
        "status",
        "ua",
        "version",
    )

    def __init__(self, *, arrived, host, port, path, query, method, inm, ims, ua) -> None:
        self.arrived, self.host, self.port, self.path, self.query = arrived, host, port, path, query
        self.method, self.inm, self.ims, self.ua = method, inm, ims, ua
        self.status: int | None = None
        self.sent = 0
        self.version: int | None = None
        self.fault: str | None = None
        self.completed = False
        self.retry_until: float | None = None
        self.page: int | None = None
        self.logged = False


def _finite_time(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{name} must be seconds since the epoch (a number); got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite seconds since the epoch; got {value!r}")
    return v
