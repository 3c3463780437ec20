"""A loopback web server with every fault the fetcher must survive, run in a background thread.

Only 127.0.0.1 is used. The aiohttp application serves pages whose content, ETag and
Last-Modified the tests set, throttling and error statuses, timeouts, slow and oversized bodies, a
gzip bomb, redirect chains and loops, noisy markup and robots.txt variants; three raw TCP servers
reset the connection, answer with something that is not HTTP, and cut a body short.
"""

from __future__ import annotations

import asyncio
import gzip
import secrets
import socket
import struct
import threading
import time
import zlib
from dataclasses import dataclass, field

import pytest
from aiohttp import web

NOISY_MAIN = (
    "<article><h1>Quarterly report</h1>"
    "<p>Revenue grew by four percent over the quarter, driven by the new subscription plans "
    "and a steady renewal rate among existing customers in every region.</p>"
    "<p>Costs stayed flat, and the board expects the same trend over the next two quarters.</p>"
    "</article>"
)


def noisy_page() -> str:
    """The same main text wrapped in markup that differs on every request."""
    token = secrets.token_hex(16)
    return (
        "<!doctype html><html><head><title>Report</title>"
        f"<script>var session='{token}'; var t={time.time()!r};</script></head><body>"
        f"<nav><a href='/?sid={token}'>Home</a></nav>"
        f"<div class='ad'><img src='/ad/{token}.png'></div>"
        f"{NOISY_MAIN}"
        f"<form method='post'><input type='hidden' name='csrf' value='{token}'></form>"
        f"<!-- rendered at {time.time_ns()} -->"
        "</body></html>"
    )


@dataclass
class Page:
    body: bytes
    content_type: str = "text/html; charset=utf-8"
    etag: str | None = None
    last_modified: str | None = None


@dataclass
class LoopbackServer:
    """State shared with the tests; handlers run on the server thread's event loop."""

    pages: dict[str, Page] = field(default_factory=dict)
    robots: tuple[int, bytes, dict[str, str]] = (200, b"User-agent: *\nDisallow:\n", {})
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    bomb_bytes_sent: int = 0
    port: int = 0
    reset_port: int = 0
    garbage_port: int = 0
    cut_port: int = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def headers_of(self, path: str) -> dict[str, str]:
        """Headers of the last request for `path`."""
        return next(h for p, h in reversed(self.requests) if p == path)

    # ----------------------------------------------------------------------- server thread
    def start(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._setup(), self._loop).result(timeout=10)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._teardown(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    async def _setup(self) -> None:
        self._stopping = asyncio.Event()
        app = web.Application(middlewares=[self._record])
        app.router.add_get("/page/{name}", self._page)
        app.router.add_get("/noisy", self._noisy)
        app.router.add_get("/status/{code}", self._status)
        app.router.add_get("/sleep", self._sleep)
        app.router.add_get("/slow-body", self._slow_body)
        app.router.add_get("/big-declared", self._big_declared)
        app.router.add_get("/big-chunked", self._big_chunked)
        app.router.add_get("/bomb", self._bomb)
        app.router.add_get("/bad-gzip", self._bad_gzip)
        app.router.add_get("/redirect/chain/{n}", self._chain)
        app.router.add_get("/redirect/loop-{side}", self._loop_redirect)
        app.router.add_get("/redirect/to", self._redirect_to)
        app.router.add_get("/robots.txt", self._robots)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        self._raw = []
        for name, handler in (
            ("reset_port", self._reset),
            ("garbage_port", self._garbage),
            ("cut_port", self._cut),
        ):
            server = await asyncio.start_server(handler, "127.0.0.1", 0)
            self._raw.append(server)
            setattr(self, name, server.sockets[0].getsockname()[1])

    async def _teardown(self) -> None:
        self._stopping.set()
        for server in self._raw:
            server.close()
            await server.wait_closed()
        await self._runner.cleanup()

    async def _pause(self, seconds: float) -> bool:
        """Sleep up to `seconds`; False when the server is stopping."""
        try:
            await asyncio.wait_for(self._stopping.wait(), seconds)
        except TimeoutError:
            return True
        return False

    # --------------------------------------------------------------------------- handlers
    @web.middleware
    async def _record(self, request: web.Request, handler):
        self.requests.append((request.path, dict(request.headers)))
        return await handler(request)

    async def _page(self, request: web.Request) -> web.StreamResponse:
        page = self.pages.get(request.match_info["name"])
        if page is None:
            raise web.HTTPNotFound()
        headers = {}
        if page.etag:
            headers["ETag"] = page.etag
        if page.last_modified:
            headers["Last-Modified"] = page.last_modified
        if page.etag and request.headers.get("If-None-Match") == page.etag:
            return web.Response(status=304, headers=headers)
        if (
            page.last_modified
            and "If-None-Match" not in request.headers
            and request.headers.get("If-Modified-Since") == page.last_modified
        ):
            return web.Response(status=304, headers=headers)
        headers["Content-Type"] = page.content_type
        return web.Response(body=page.body, headers=headers)

    async def _noisy(self, request: web.Request) -> web.Response:
        return web.Response(text=noisy_page(), content_type="text/html")

    async def _status(self, request: web.Request) -> web.Response:
        headers = {}
        if "retry_after" in request.query:
            headers["Retry-After"] = request.query["retry_after"]
        return web.Response(status=int(request.match_info["code"]), headers=headers, text="status")

    async def _sleep(self, request: web.Request) -> web.Response:
        await self._pause(3.0)
        return web.Response(text="late")

    async def _slow_body(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        for _ in range(100):  # 10 bytes every 50 ms: never idle long, never done soon
            try:
                await response.write(b"x" * 10)
            except (ConnectionError, RuntimeError):
                break
            if not await self._pause(0.05):
                break
        return response

    async def _big_declared(self, request: web.Request) -> web.Response:
        return web.Response(body=b"a" * 4096, content_type="text/plain")

    async def _big_chunked(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        for _ in range(64):
            try:
                await response.write(b"b" * 4096)
            except (ConnectionError, RuntimeError):
                break
        return response

    async def _bomb(self, request: web.Request) -> web.StreamResponse:
        """1 GiB of zeros, gzipped on the fly (about 1 MiB on the wire), until the client leaves."""
        response = web.StreamResponse(
            headers={"Content-Type": "text/html", "Content-Encoding": "gzip"}
        )
        response.enable_chunked_encoding()
        await response.prepare(request)
        compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
        zeros = bytes(1024 * 1024)
        try:
            for _ in range(1024):
                if self._stopping.is_set():
                    break
                chunk = compressor.compress(zeros)
                if chunk:
                    await response.write(chunk)
                    self.bomb_bytes_sent += len(chunk)
            await response.write(compressor.flush())
        except (ConnectionError, RuntimeError):
            pass
        return response

    async def _bad_gzip(self, request: web.Request) -> web.Response:
        body = gzip.compress(b"<html><body>fine</body></html>")
        return web.Response(
            body=body[:10] + b"\xff" * 40,
            headers={"Content-Type": "text/html", "Content-Encoding": "gzip"},
        )

    async def _chain(self, request: web.Request) -> web.Response:
        n = int(request.match_info["n"])
        if n == 0:
            return web.Response(
                text="<html><body><p>end of the chain</p></body></html>", content_type="text/html"
            )
        raise web.HTTPFound(f"/redirect/chain/{n - 1}")

    async def _loop_redirect(self, request: web.Request) -> web.Response:
        other = "b" if request.match_info["side"] == "a" else "a"
        raise web.HTTPMovedPermanently(f"/redirect/loop-{other}")

    async def _redirect_to(self, request: web.Request) -> web.Response:
        if "location" not in request.query:
            return web.Response(status=302, text="no location")
        return web.Response(status=307, headers={"Location": request.query["location"]})

    async def _robots(self, request: web.Request) -> web.Response:
        status, body, headers = self.robots
        return web.Response(
            status=status, body=body, headers={"Content-Type": "text/plain", **headers}
        )

    # ---------------------------------------------------------------------- raw servers
    async def _reset(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()

    async def _garbage(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"THIS IS NOT HTTP AT ALL\r\n\r\n")
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    async def _cut(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n"
        )
        writer.write(b"only ten b")
        await writer.drain()
        writer.close()
        await writer.wait_closed()


@pytest.fixture(scope="module")
def server():
    """A started :class:`LoopbackServer`, stopped after the module's tests."""
    srv = LoopbackServer()
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture()
def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


__all__ = ["LoopbackServer", "Page", "NOISY_MAIN", "noisy_page"]
