"""End to end: two fetcher processes crawl the test web through one frontier served over gRPC.

A server process (:func:`serve_grpc` over a :class:`FrontierService`) plans the crawl; two
``freshcrawl crawl run --frontier grpc://...`` processes fetch what it hands out and report back. The test web grades the crawl: politeness (one request per host at a time,
delays, Crawl-delay, robots.txt), freshness against the truth, and no URL fetched twice for one due
time (each lease is one request and one observation). On SQLite with a small server script that
logs its leases, on PostgreSQL with ``freshcrawl serve`` itself.
"""

from __future__ import annotations

import collections
import itertools
import json
import signal
import socket
import subprocess
import sys

import grpc
import numpy as np

from freshcrawl.frontier.report import expected_freshness
from freshcrawl.service.proto import urlfrontier_pb2 as pb
from freshcrawl.service.proto import urlfrontier_pb2_grpc as pb_grpc
from freshcrawl.store import open_store
from freshcrawl.testing import HostSpec, TestWeb, make_pages

N_PAGES, RATES = 60, (0.01, 0.5)  # changes per second, log-uniform
HOSTS = [HostSpec(crawl_delay=0.5), HostSpec(), HostSpec(), HostSpec(crawl_delay=0.25)]
BUDGET = 6.0  # visits per second: uniform visits each page every 10 s
MIN_DELAY_S = 0.05
RUN_S = 16.0
WINDOW = (7.0, 15.0)  # seconds after the first request: freshness measured there

SERVER = r"""
import json, signal, sys, threading, time
from freshcrawl.frontier import CrawlSettings
from freshcrawl.service import FrontierService
from freshcrawl.service.grpc_server import serve_grpc

db, budget, min_delay, lease_log = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
service = FrontierService(db, CrawlSettings(budget=budget * 86400, min_delay_s=min_delay, replan_every_s=3.0,
                                            seed=1))
lease, out = service.lease, open(lease_log, "w")

def logged(crawl_id, worker, count, **kw):
    with service.lock:  # leases are taken under the lock: the log is in their order
        leases = lease(crawl_id, worker, count, **kw)
        for x in leases:
            out.write(json.dumps(dict(url=x.url, kind=x.kind, due=x.due, worker=worker, at=time.time())) + "\n")
        out.flush()
    return leases

service.lease = logged
server = serve_grpc(service, "127.0.0.1:0")
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
print(server.port, flush=True)
while not stop.wait(0.5):
    service.replan_all()
server.stop(5).wait()
service.close()
out.close()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _crawl(server: subprocess.Popen, port: int, specs) -> dict:
    """Seed the served frontier with the test web's URLs, run two fetchers, stop the server; grade."""
    fetchers: list[subprocess.Popen] = []
    try:
        with TestWeb(specs, hosts=HOSTS, seed=11) as web:
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                grpc.channel_ready_future(channel).result(timeout=60)
                stub = pb_grpc.URLFrontierStub(channel)
                items = [pb.URLItem(discovered=pb.DiscoveredURLItem(info=pb.URLInfo(url=u))) for u in web.urls()]
                acks = list(stub.PutURLs(iter(items), timeout=30))
                assert [a.status for a in acks] == [pb.AckMessage.OK] * N_PAGES
            for _ in range(2):
                fetchers.append(subprocess.Popen(
                    [sys.executable, "-m", "freshcrawl", "crawl", "run", "--frontier", f"grpc://127.0.0.1:{port}",
                     "--for", f"{RUN_S}s", "--timeout", "5s"],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
            for proc in fetchers:
                _, err = proc.communicate(timeout=RUN_S + 30)
                assert proc.returncode == 0, err
            server.send_signal(signal.SIGTERM)
            _, err = server.communicate(timeout=30)
            assert server.returncode == 0, err
            requests = web.requests()
            first = min(r.arrived for r in requests)
            return {"requests": requests, "violations": web.politeness_violations(MIN_DELAY_S),
                    "freshness": web.freshness(first + WINDOW[0], first + WINDOW[1]).freshness}
    finally:
        for proc in [*fetchers, server]:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


def _check(db: str, specs, run: dict) -> collections.Counter:
    """Politeness, each request one observation, requests of one URL never overlapping, freshness."""
    assert run["violations"] == [], "\n".join(map(str, run["violations"][:10]))
    requests = run["requests"]
    store = open_store(db, create=False)
    try:
        url_of = {r["id"]: r["url"] for r in store.list_urls(size=10 * N_PAGES)}
        log = store.observation_log()
    finally:
        store.close()
    observed = collections.Counter(url_of[o["page_id"]] for o in log)
    outcomes = collections.Counter(o["outcome"] for o in log)
    pages = [r for r in requests if r.page is not None]
    fetched = collections.Counter(f"http://{r.host}:{r.port}{r.path}" for r in pages)
    assert fetched == observed  # every request reported once, every report a request
    assert len(fetched) == N_PAGES and sum(fetched.values()) > 0.7 * BUDGET * RUN_S  # the budget is used
    by_url = collections.defaultdict(list)
    for r in pages:
        by_url[r.path, r.port].append(r)
    for visits in by_url.values():  # a URL is fetched again only after its previous visit ended
        visits.sort(key=lambda r: r.arrived)
        assert all(b.arrived >= a.ended for a, b in itertools.pairwise(visits))
    robots_fetched = collections.Counter(r.host for r in requests if r.path == "/robots.txt")
    assert sorted(robots_fetched.values()) == [1] * len(HOSTS)
    assert outcomes["changed"] > 0 and outcomes["unchanged"] > 0 and outcomes["no-info"] == 0
    # freshness against the truth: at least what visiting every page at the uniform rate B/n gives,
    # within the sampling error of the window (the plan learns from a handful of visits per page)
    delta = np.array([p.rate for p in specs])
    f = run["freshness"]
    se = f.std(ddof=1) / np.sqrt(N_PAGES)
    f_uniform = float(expected_freshness(np.full(N_PAGES, BUDGET / N_PAGES), delta).mean())
    print(f"\nfreshness {f.mean():.3f} (SE {se:.3f}), uniform at B/n predicted {f_uniform:.3f}; "
          f"{sum(fetched.values())} visits, {dict(outcomes)}")
    assert f.mean() > f_uniform - 3 * se - 0.05
    return fetched


def test_two_fetchers_share_one_served_frontier_and_no_lease_is_fetched_twice(tmp_path):
    """SQLite; a server that logs every lease: no URL is handed out twice for one due time."""
    specs = make_pages(N_PAGES, len(HOSTS), RATES, seed=11)
    db, lease_log = str(tmp_path / "crawl.db"), tmp_path / "leases.jsonl"
    server = subprocess.Popen([sys.executable, "-c", SERVER, db, str(BUDGET), str(MIN_DELAY_S), str(lease_log)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline())
    except ValueError:
        server.kill()
        raise AssertionError(server.communicate()[1]) from None
    fetched = _check(db, specs, _crawl(server, port, specs))
    leases = [json.loads(line) for line in lease_log.read_text().splitlines()]
    page_leases = [x for x in leases if x["kind"] == "page"]
    assert len({x["worker"] for x in page_leases}) == 2  # both processes fetched
    assert len({(x["url"], x["due"]) for x in page_leases}) == len(page_leases)  # one lease per due time
    assert collections.Counter(x["url"] for x in page_leases) == fetched  # each lease one request


def test_two_fetchers_through_freshcrawl_serve(pg_url):
    """PostgreSQL; the frontier is 'freshcrawl serve' (REST and gRPC in one process)."""
    specs = make_pages(N_PAGES, len(HOSTS), RATES, seed=11)
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "freshcrawl", "serve", "--db", pg_url, "--http", f"127.0.0.1:{_free_port()}",
         "--grpc", f"127.0.0.1:{port}", "--budget", f"{BUDGET}/s", "--min-delay", f"{MIN_DELAY_S}s",
         "--replan-every", "3s"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _check(pg_url, specs, _crawl(server, port, specs))
