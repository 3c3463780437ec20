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

from freshcrawl.testing import Fault, HostSpec, TestWeb, make_pages

pytestmark = pytest.mark.realtime  # graded on the wall clock (politeness delays)

N_PAGES, N_HOSTS = 24, 3
MIN_DELAY_S = 0.2
RUN_S = 10

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


def _spider(web: TestWeb, settings: dict) -> subprocess.Popen:
    argv = [sys.executable, "-c", SPIDER, json.dumps(web.urls()), json.dumps(settings)]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _stats(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=RUN_S + 60)
    assert proc.returncode == 0, err[-4000:]
    assert "Traceback" not in err, err[-4000:]
    return json.loads(out.strip().splitlines()[-1])


#: faults of some pages (page i is on host i % 3): throttling with Retry-After, a reset, a 404 and a
#: hang the server ends after 2 s, all "no information" for the estimators
FAULTS = {
    3: Fault("503-seconds", retry_after_s=2.0),
    6: Fault("reset"),
    4: Fault("404"),
    9: Fault("timeout", probability=0.5),
}


def _web() -> TestWeb:
    hosts = [HostSpec(), HostSpec(disallow=["/page/1"]), HostSpec(crawl_delay=0.5)]
    web = TestWeb(
        make_pages(N_PAGES, N_HOSTS, (0.05, 0.5), seed=3), hosts=hosts, seed=3, max_hang_s=2.0
    )
    return web


def _set_faults(web: TestWeb) -> None:
    urls = web.urls()
    for i, fault in FAULTS.items():
        web.set_fault(urls[i], fault)


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
    assert any(o["outcome"] == "changed" for o in observations), stats
    # the faults are visits without information, reported as such
    assert {"http-503", "http-404"} & {o["why"] for o in observations}
    # (the reset and the hang are reported likewise when a 10 s crawl reaches them; it need not)
    network = [
        o for o in observations if o["outcome"] == "no-info" and not o["why"].startswith("http-")
    ]
    assert all(o["error"] for o in network), network  # each names its kind of failure
    assert all(o["outcome"] == "no-info" for o in observations if o["why"].startswith("http-"))
    # with ROBOTSTXT_OBEY, Scrapy's own robots.txt fetch answers the frontier's: one request per host
    n_robots = sum(r.path == "/robots.txt" for r in records)
    assert n_robots == stats["freshcrawl/robots"] == N_HOSTS


def _observations(db: str) -> list[dict]:
    """Page visits recorded in the crawl database (robots.txt disallows, made without a request, left out)."""
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        rows = conn.execute("SELECT outcome, why, error FROM observations").fetchall()
    return [dict(r) for r in rows if r["why"] != "robots"]


def test_scrapy_in_process_and_through_serve_over_mutual_tls(tmp_path, tls_pki):
    """Both forms at once (each crawl on its own test web): an in-process frontier on SQLite, and
    ``freshcrawl serve`` over mutual TLS with a token, reached with the FRESHCRAWL_TLS_* settings."""
    local_db, served_db = str(tmp_path / "crawl.db"), str(tmp_path / "served.db")
    port = _free_port()
    token = "scrapy-test-token"
    token_file = tmp_path / "token"
    token_file.write_text(token)
    budget = f"{N_PAGES * 0.5}/s"
    procs: list[subprocess.Popen] = []
    with _web() as local_web, _web() as served_web:
        _set_faults(local_web)
        _set_faults(served_web)
        try:
            server = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "freshcrawl",
                    "serve",
                    "--db",
                    served_db,
                    "--http",
                    f"127.0.0.1:{port}",
                    "--no-grpc",
                    "--budget",
                    budget,
                    "--min-delay",
                    f"{MIN_DELAY_S}s",
                    "--replan-every",
                    "3s",
                    "--token-file",
                    str(token_file),
                    "--tls-cert",
                    str(tls_pki.server_cert),
                    "--tls-key",
                    str(tls_pki.server_key),
                    "--client-ca",
                    str(tls_pki.ca_file),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            procs.append(server)
            local = _spider(
                local_web,
                _settings(
                    FRESHCRAWL_DB=local_db,
                    FRESHCRAWL_BUDGET=budget,
                    FRESHCRAWL_MIN_DELAY=MIN_DELAY_S,
                    FRESHCRAWL_REPLAN_EVERY=3,
                ),
            )
            procs.append(local)
            base = f"https://127.0.0.1:{port}"
            ssl_context = tls_pki.client_tls().ssl_context()
            for _ in range(150):  # at most 30 s for the server to answer
                try:
                    httpx.get(base + "/status", timeout=1.0, verify=ssl_context)
                    break
                except httpx.TransportError:
                    assert server.poll() is None, server.communicate()[1][-4000:]
                    time.sleep(0.2)
            served = _spider(
                served_web,
                _settings(
                    FRESHCRAWL_SERVER=base,
                    FRESHCRAWL_TOKEN=token,
                    FRESHCRAWL_TLS_CA=str(tls_pki.ca_file),
                    FRESHCRAWL_TLS_CERT=str(tls_pki.client_cert),
                    FRESHCRAWL_TLS_KEY=str(tls_pki.client_key),
                ),
            )
            procs.append(served)
            local_stats, served_stats = _stats(local), _stats(served)
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.terminate()
                    proc.communicate(timeout=30)
        _grade(local_web, local_stats, _observations(local_db))
        _grade(served_web, served_stats, _observations(served_db))
    assert local_stats["freshcrawl/discovered"] == N_PAGES
