"""Scrapy with freshcrawl's scheduler and middleware, crawling the test web: in-process and through serve.

A real ``CrawlerProcess`` runs in a subprocess (a reactor starts once per process) with the two settings
of ``freshcrawl.scrapy`` and a spider that knows nothing of freshcrawl; the test web's own log grades it:
no politeness violation, one report per request, conditional requests sent and their 304s recorded as
"unchanged".
"""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
import time

import httpx
import pytest

from freshcrawl.testing import HostSpec, TestWeb, make_pages

pytestmark = pytest.mark.realtime  # graded on the wall clock (politeness delays)

N_PAGES, N_HOSTS = 24, 3
MIN_DELAY_S = 0.2
RUN_S = 6

SPIDER = """
import json, sys
import scrapy
from scrapy.crawler import CrawlerProcess

urls, settings = json.loads(sys.argv[1]), json.loads(sys.argv[2])

class Plain(scrapy.Spider):
    name = "plain"
    start_urls = urls

    def parse(self, response):
        yield {"url": response.url, "status": response.status}

process = CrawlerProcess(settings)
crawler = process.create_crawler(Plain)
process.crawl(crawler)
process.start()
print(json.dumps({k: v for k, v in crawler.stats.get_stats().items() if k.startswith(("freshcrawl/", "item_"))}))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _settings(**extra) -> dict:
    return {
        "SCHEDULER": "freshcrawl.scrapy.Scheduler",
        "DOWNLOADER_MIDDLEWARES": {"freshcrawl.scrapy.ObservationMiddleware": 950},
        "CLOSESPIDER_TIMEOUT": RUN_S,
        "ROBOTSTXT_OBEY": True,
        "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False,
        "DOWNLOAD_TIMEOUT": 5,
        **extra,
    }


def _run_spider(web: TestWeb, settings: dict) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", SPIDER, json.dumps(web.urls()), json.dumps(settings)],
        capture_output=True,
        text=True,
        timeout=RUN_S + 60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _web() -> TestWeb:
    hosts = [HostSpec(), HostSpec(disallow=["/page/1"]), HostSpec(crawl_delay=0.5)]
    return TestWeb(make_pages(N_PAGES, N_HOSTS, (0.05, 0.5), seed=3), hosts=hosts, seed=3)


def _grade(web: TestWeb, stats: dict, observations: list[dict]) -> None:
    records = web.requests()
    pages = [r for r in records if r.path != "/robots.txt"]
    assert pages, "no page was fetched"
    violations = web.politeness_violations(MIN_DELAY_S)
    assert violations == [], "\n".join(map(str, violations[:10]))
    # one lease, one report: every page request is one observation (no redirects on this web)
    assert stats["freshcrawl/reported"] == len(pages) == len(observations)
    assert stats["freshcrawl/leased"] >= stats["freshcrawl/reported"]
    conditional = [r for r in pages if r.if_none_match or r.if_modified_since]
    assert conditional, "no conditional request was sent"
    n_304 = sum(r.status == 304 for r in pages)
    assert n_304 > 0
    not_modified = [o for o in observations if o["why"] == "not-modified"]
    assert len(not_modified) == n_304
    assert all(o["outcome"] == "unchanged" for o in not_modified)
    assert any(o["outcome"] == "changed" for o in observations)
    # with ROBOTSTXT_OBEY, Scrapy's own robots.txt fetch answers the frontier's: one request per host
    n_robots = sum(r.path == "/robots.txt" for r in records)
    assert n_robots == stats["freshcrawl/robots"] == N_HOSTS


def _observations(db: str) -> list[dict]:
    """Page visits recorded in the crawl database (robots.txt disallows, made without a request, left out)."""
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        rows = conn.execute("SELECT outcome, why FROM observations").fetchall()
    return [dict(r) for r in rows if r["why"] != "robots"]


def test_scrapy_in_process_frontier(tmp_path):
    db = str(tmp_path / "crawl.db")
    with _web() as web:
        stats = _run_spider(
            web,
            _settings(
                FRESHCRAWL_DB=db,
                FRESHCRAWL_BUDGET=f"{N_PAGES * 0.5}/s",
                FRESHCRAWL_MIN_DELAY=MIN_DELAY_S,
                FRESHCRAWL_REPLAN_EVERY=3,
            ),
        )
        observations = _observations(db)
        _grade(web, stats, observations)
    assert stats["freshcrawl/discovered"] == N_PAGES
    assert stats["freshcrawl/robots"] >= N_HOSTS


def test_scrapy_through_serve(tmp_path):
    db = str(tmp_path / "served.db")
    port = _free_port()
    with _web() as web:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "freshcrawl",
                "serve",
                "--db",
                db,
                "--http",
                f"127.0.0.1:{port}",
                "--no-grpc",
                "--budget",
                f"{N_PAGES * 0.5}/s",
                "--min-delay",
                f"{MIN_DELAY_S}s",
                "--replan-every",
                "3s",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(100):  # at most 20 s for the server to answer
                try:
                    httpx.get(base + "/status", timeout=1.0)
                    break
                except httpx.TransportError:
                    time.sleep(0.2)
            stats = _run_spider(web, _settings(FRESHCRAWL_SERVER=base))
        finally:
            server.terminate()
            server.communicate(timeout=30)
        observations = _observations(db)
        _grade(web, stats, observations)
