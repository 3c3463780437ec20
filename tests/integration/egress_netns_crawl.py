"""A crawl whose pages redirect to private and metadata addresses, run inside a network namespace.

Run by ``test_egress.py`` as ``unshare --net sh -c 'ip link set lo up && python <this file> DIR
[--allow-private]'``: the namespace has loopback only, so nothing can leave the machine whatever
happens. A web server on 127.0.0.1 serves robots.txt (404) and pages that redirect (302) to
10.0.0.1, 169.254.169.254, metadata.google.internal and [fd00::1]; the crawl loop runs over a
SQLite store in DIR for a few seconds. An audit hook counts every ``socket.connect`` to an address
outside loopback. Prints one JSON line: the observations recorded per page (``why``) and the
connect attempts outside loopback.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import sys
import time
from pathlib import Path

TARGETS = {
    "p10": "http://10.0.0.1/x",
    "pmeta": "http://169.254.169.254/latest/meta-data/",
    "pname": "http://metadata.google.internal/computeMetadata/v1/",
    "pv6": "http://[fd00::1]/x",
}


def _outside_loopback(address: object) -> bool:
    if not isinstance(address, tuple) or not address or not isinstance(address[0], str):
        return False
    try:
        return not ipaddress.ip_address(address[0].split("%", 1)[0]).is_loopback
    except ValueError:
        return True


async def main(directory: Path, allow_private: bool) -> dict:
    from aiohttp import web

    from freshcrawl.crawler.fetcher import Fetcher
    from freshcrawl.crawler.loop import crawl
    from freshcrawl.frontier import CrawlSettings, Frontier, parse_url_list
    from freshcrawl.store import open_store

    attempts: list[str] = []

    def audit(event: str, args: tuple) -> None:
        if event == "socket.connect" and _outside_loopback(args[1]):
            attempts.append(str(args[1]))

    sys.addaudithook(audit)

    async def robots(request: web.Request) -> web.Response:
        return web.Response(status=404)

    async def page(request: web.Request) -> web.Response:
        raise web.HTTPFound(TARGETS[request.match_info["name"]])

    app = web.Application()
    app.router.add_get("/robots.txt", robots)
    app.router.add_get("/{name}", page)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    urls = [f"http://127.0.0.1:{port}/{name}" for name in TARGETS]
    store = open_store(directory / "crawl.db")
    try:
        store.add_pages(parse_url_list(urls), now=time.time())
        settings = CrawlSettings(
            budget=86_400.0 * 50,
            min_delay_s=0.0,
            replan_every_s=3600.0,
            allow_private=allow_private,
        )
        frontier = Frontier(store, settings)
        fetcher = Fetcher(
            connect_timeout_s=2.0,
            read_timeout_s=2.0,
            total_timeout_s=4.0,
            allow_private=allow_private,
        )
        async with fetcher:
            await crawl(frontier, fetcher, duration_s=3.0)
        rows = store.observation_log()
        by_id = {r["id"]: r["url"] for r in (store.page_by_url(u) for u in urls)}
        why: dict[str, list[str]] = {}
        for r in rows:
            why.setdefault(by_id[r["page_id"]].rsplit("/", 1)[1], []).append(r["why"])
    finally:
        store.close()
        await runner.cleanup()
    return {"why": why, "attempts": attempts}


if __name__ == "__main__":
    result = asyncio.run(main(Path(sys.argv[1]), "--allow-private" in sys.argv[2:]))
    print(json.dumps(result))
