"""Scrapy with freshcrawl's scheduler and middleware, crawling the test web: in-process and through serve.

A real ``CrawlerProcess`` runs in a subprocess (a reactor starts once per process) with the two settings
of ``freshcrawl.scrapy`` and a spider that knows nothing of freshcrawl; the test web's own log grades it:
no politeness violation, one report per request, conditional requests sent and their 304s recorded as
"unchanged"; and, beside ``freshcrawl crawl run`` on a copy of the web, pages kept as fresh at the same
budget.
"""

from __future__ import annotations

import json
import resource
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

from freshcrawl.testing import Fault, HostSpec, TestWeb, make_pages

from ..live_crawl import add_urls, crawl_cli, free_port, wait_until_up

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


def _stats(proc: subprocess.Popen, run_s: float = RUN_S) -> dict:
    out, err = proc.communicate(timeout=run_s + 60)
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
    port = free_port()
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
            wait_until_up(server, base + "/status", verify=ssl_context)
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


# ------------------------------------------------------- freshness against crawl run, same budget
#: A web where the plan matters: change rates over two orders of magnitude, on six hosts whose
#: delay caps (20 visits/s) are far above their share of the budget (2/s): no host limits a plan.
#: The three crawls and the server run at once, each on its own copy of the web: at twice this
#: budget a 20 s crawl took 7.3 CPU s with Scrapy and 5.3 with crawl run, start-up included, a
#: fraction of two cores.
FRESH_PAGES, FRESH_HOSTS, FRESH_RATES, FRESH_SEED = 60, 6, (0.01, 1.0), 8
FRESH_BUDGET = 12.0  # visits per second: B / n = 0.2, each page every 5 s on a uniform plan
FRESH_MIN_DELAY_S = 0.05
FRESH_RUN_S = 40.0
#: Seconds after its first request before a crawl is graded: four plan periods. A process's first
#: plan with learned rates loads the estimators' compiled kernels (1.9 s against a median of 8 ms
#: for later plans, on a loaded machine), which stalls it, crawl run, Scrapy and serve alike, for 1
#: to 4 s some 6 to 12 s after its first request: the start-up of a process, not its steady state.
WARMUP_S = 12.0
#: Least length of the graded window, seconds: about four visits per page at B / n, which gives a
#: standard error of the paired difference of 0.012 to 0.017
MIN_WINDOW_S = 12.0


def _fresh_web() -> TestWeb:
    specs = make_pages(FRESH_PAGES, FRESH_HOSTS, FRESH_RATES, seed=FRESH_SEED)
    return TestWeb(specs, hosts=FRESH_HOSTS, seed=FRESH_SEED)


def _race(tmp_path, forms: list[str]) -> tuple[dict[str, TestWeb], dict[str, dict]]:
    """``crawl run`` and one Scrapy crawl per form (``"in-process"``: FRESHCRAWL_DB, ``"serve"``:
    FRESHCRAWL_SERVER), all at once, each on its own test web of the same seed (the same pages and
    change times, counted from each web's start), with the same budget, delay, plan period and
    length; returns the stopped webs, keyed ``"crawl-run"`` and by form, and the Scrapy crawls'
    stats."""
    webs = {name: _fresh_web() for name in ("crawl-run", *forms)}
    procs: dict[str, subprocess.Popen] = {}
    budget, delay = f"{FRESH_BUDGET:g}/s", f"{FRESH_MIN_DELAY_S:g}s"
    try:
        for web in webs.values():
            web.start()
        if "serve" in forms:
            port = free_port()
            procs["server"] = subprocess.Popen(
                [sys.executable, "-m", "freshcrawl", "serve", "--db", str(tmp_path / "served.db"),
                 "--http", f"127.0.0.1:{port}", "--no-grpc", "--budget", budget,
                 "--min-delay", delay, "--replan-every", "3s"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
        run_db = str(tmp_path / "run.db")
        add_urls(run_db, webs["crawl-run"].urls(), tmp_path / "urls.txt")
        if "serve" in forms:
            wait_until_up(procs["server"], f"http://127.0.0.1:{port}/status")
        procs["crawl-run"] = subprocess.Popen(
            crawl_cli("run", "--db", run_db, "--budget", budget, "--for", f"{FRESH_RUN_S:g}s",
                      "--min-delay", delay, "--replan-every", "3s", "--timeout", "5s", "--seed", "1"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        for form in forms:
            if form == "in-process":
                frontier = {
                    "FRESHCRAWL_DB": str(tmp_path / "scrapy.db"),
                    "FRESHCRAWL_BUDGET": budget,
                    "FRESHCRAWL_MIN_DELAY": FRESH_MIN_DELAY_S,
                    "FRESHCRAWL_REPLAN_EVERY": 3,
                    "FRESHCRAWL_SEED": 1,
                }
            else:
                frontier = {"FRESHCRAWL_SERVER": f"http://127.0.0.1:{port}"}
            settings = _settings(**frontier, CLOSESPIDER_TIMEOUT=FRESH_RUN_S, LOG_LEVEL="WARNING")
            procs[form] = _spider(webs[form], settings)
        _, err = procs["crawl-run"].communicate(timeout=FRESH_RUN_S + 60)
        assert procs["crawl-run"].returncode == 0, err[-4000:]
        stats = {form: _stats(procs[form], FRESH_RUN_S) for form in forms}
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.terminate()
                proc.communicate(timeout=30)
        for web in webs.values():
            web.stop()
    return webs, stats


def _window(webs: dict[str, TestWeb]) -> tuple[float, float]:
    """Seconds since the webs' start: from when every crawl has a copy of every page (before its
    first copy a page counts as stale, whatever the crawl's start-up took) and has crawled for
    WARMUP_S, to the end of the first crawl to end."""
    start, end = 0.0, np.inf
    for name, web in webs.items():
        visits = [r for r in web.requests() if r.page is not None and r.refreshes]
        first: dict[int, float] = {}
        for r in visits:
            first.setdefault(r.page, r.arrived - web.started_at)
        assert len(first) == FRESH_PAGES, f"{name}: {len(first)} of {FRESH_PAGES} pages fetched"
        start = max(start, *first.values(), min(first.values()) + WARMUP_S)
        end = min(end, max(r.arrived for r in visits) - web.started_at)
    return start, end


def test_scrapy_keeps_pages_as_fresh_as_crawl_run_at_the_same_budget(tmp_path):
    """Scrapy with freshcrawl's scheduler, in-process and through ``serve``, against ``crawl run``:
    the same test web, budget and length, graded by the web's own freshness (exact, per page)."""
    forms = ["in-process", "serve"]
    cpu0, wall0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    webs, stats = _race(tmp_path, forms)
    cpu1, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic() - wall0
    cpu = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime
    print(f"\ncrawls, server and crawl add: {cpu:.1f} CPU s in {wall:.1f} s")
    for form in forms:  # one lease, one report: no visit lost
        n_pages = sum(r.page is not None for r in webs[form].requests())
        assert stats[form]["freshcrawl/reported"] == n_pages, (form, stats[form])
    start, end = _window(webs)
    assert end - start >= MIN_WINDOW_S, (start, end)
    reports = {
        name: web.freshness(web.started_at + start, web.started_at + end)
        for name, web in webs.items()
    }
    ref = reports["crawl-run"]
    # the budget rule: page k's visits in the window are within one of its planned rate p_k times
    # the window, and the rates sum to the budget, so a crawl that keeps its plan makes B W +- n
    planned = FRESH_BUDGET * (end - start)
    visits = {name: int(r.n_refreshes.sum()) for name, r in reports.items()}
    results = {}
    for form in forms:
        diff = reports[form].freshness - ref.freshness  # paired: the same page, the same changes
        se = diff.std(ddof=1) / np.sqrt(FRESH_PAGES)
        results[form] = (diff.mean(), se)
        print(
            f"\n{form}: freshness {reports[form].mean:.4f}, crawl run {ref.mean:.4f}, paired "
            f"difference {diff.mean():+.4f} (SE {se:.4f}); visits {visits[form]} and "
            f"{visits['crawl-run']}, B W = {planned:.0f}; window [{start:.1f}, {end:.1f}] s"
        )
    for name, n_visits in visits.items():
        assert abs(n_visits - planned) <= FRESH_PAGES, (name, visits, planned)
    for form, (mean, se) in results.items():
        assert mean >= -2 * se, (form, results)
