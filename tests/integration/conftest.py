"""Fixtures of the integration tests.

The crawl tests run crawler processes for a few seconds and count what they did. On a fresh
install the first plan of such a process compiles the estimator kernels (numba), which
takes longer than the crawl itself; the compiled kernels are cached on disk and shared by every later
process. ``warm_kernels`` makes one small live plan in the test process first, so that every crawler
process the tests start finds the kernels it needs compiled.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def warm_kernels(tmp_path_factory):
    """Plan a tiny live crawl once (learned policy, host caps, observations), compiling what crawls use."""
    from freshcrawl.crawler.outcome import FetchOutcome, FetchRequest, Outcome
    from freshcrawl.frontier import CrawlSettings, Frontier, Visit, parse_url_list
    from freshcrawl.store import open_store

    store = open_store(tmp_path_factory.mktemp("warm") / "crawl.db")
    try:
        n = 60
        urls = [f"http://127.0.0.{2 + k % 3}:9/p{k}" for k in range(n)]
        t = 1_800_000_000.0
        store.add_pages(parse_url_list(urls), now=t)
        frontier = Frontier(store, CrawlSettings(budget=3000.0, min_delay_s=60.0, replan_every_s=1.0), now=t)
        rows = store.pages_by_url([u for u, _, _ in parse_url_list(urls)])
        for round_ in range(6):  # every page: a first copy, then changes and no changes
            t += 600.0
            visits = [Visit(r["id"], r["host_id"], FetchRequest(url), t) for url, r in rows.items()]
            kind = [Outcome.FIRST] + [Outcome.CHANGED, Outcome.UNCHANGED] * 3
            frontier.record([(v, FetchOutcome(v.url, kind[round_] if (round_ + v.page_id) % 2 or not round_
                                              else Outcome.UNCHANGED, "x", t, 0.0, 200, 1, signature="s"))
                             for v in visits])
            frontier.replan(t)
    finally:
        store.close()


@pytest.fixture(scope="session")
def tls_pki(tmp_path_factory):
    """A test CA with a server and a client certificate, and another CA's client (tests/tls_pki.py)."""
    from tests.tls_pki import make_pki

    return make_pki(tmp_path_factory.mktemp("pki"))
