"""Helpers of the REST tests: a real uvicorn server on loopback in a thread, a populated crawl."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import uvicorn

from freshcrawl.frontier import CrawlSettings
from freshcrawl.service import FrontierService

TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def make_service(db: str, **settings) -> FrontierService:
    """A service on ``db`` whose hosts take requests back to back (no politeness delay)."""
    values = dict(budget=10_000.0, min_delay_s=0.0)
    values.update(settings)
    return FrontierService(db, CrawlSettings(**values))


@contextmanager
def running(app, *, limit_concurrency: int | None = None) -> Iterator[str]:
    """Serve ``app`` with uvicorn on 127.0.0.1 (a free port) in a thread; yield its base URL."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", access_log=False,
                            lifespan="off", limit_concurrency=limit_concurrency)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


def populate(base: str, *, n_hosts: int = 3, per_host: int = 4, now: float | None = None) -> list[str]:
    """Add pages, answer every robots.txt, and report three visits of each page's first URL.

    The visits of ``http://hK.test/p0`` are one day apart in the past: a first copy, a changed one
    and an unchanged one, so each has two observations. Returns the URLs added.
    """
    now = time.time() if now is None else now
    urls = [f"http://h{h}.test/p{i}" for h in range(n_hosts) for i in range(per_host)]
    with httpx.Client(base_url=base, headers=AUTH, timeout=30) as c:
        r = c.post("/urls", json={"urls": [{"url": u, "weight": 1.0 + (i % 3)} for i, u in enumerate(urls)]})
        assert r.status_code == 200, r.text
        got = c.post("/leases", json={"worker_id": "setup", "count": n_hosts}).json()["leases"]
        assert {x["kind"] for x in got} == {"robots"}
        for x in got:
            assert c.post("/robots", json={"url": x["url"], "status": 404, "text": None}).status_code == 200
        visits = [  # one batch per visit: a URL is reported at most once per batch
            {"status": 200, "signature": "a", "started_at": now - 3 * 86400, "n_bytes": 100},
            {"status": 200, "signature": "b", "started_at": now - 2 * 86400, "n_bytes": 120},
            {"status": 304, "started_at": now - 1 * 86400},
        ]
        for visit in visits:
            reports = [dict(visit, url=f"http://h{h}.test/p0") for h in range(n_hosts)]
            r = c.post("/observations", json={"reports": reports})
            assert r.status_code == 200 and r.json()["n_ok"] == len(reports), r.text
    return urls


def replan(service: FrontierService, now: float | None = None) -> None:
    """Re-plan the default crawl now (learns from the reports so far)."""
    with service.lock:
        service.crawl(None).frontier.replan(time.time() if now is None else now)
