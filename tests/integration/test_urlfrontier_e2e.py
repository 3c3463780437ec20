"""End to end: two fetcher processes crawl the test web through one frontier served over gRPC.

A server process (:func:`serve_grpc` over a :class:`FrontierService`, logging every lease it hands
out) plans the crawl; two ``freshcrawl crawl run --frontier grpc://...`` processes fetch what it hands
out and report back. The test web grades the crawl: politeness (one request per host at a time,
delays, Crawl-delay, robots.txt), freshness against the truth, and no URL fetched twice for one due
time (each lease is one request and one observation). On SQLite and PostgreSQL.
"""

from __future__ import annotations

import collections
import json
import signal
import subprocess
import sys
import time

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
RUN_S = 20.0
WINDOW = (8.0, 19.0)  # seconds after the first request: freshness measured there

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


def test_two_fetchers_share_one_served_frontier(tmp_path, db_url):
    specs = make_pages(N_PAGES, len(HOSTS), RATES, seed=11)
    db, lease_log = db_url, tmp_path / "leases.jsonl"
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(db), str(BUDGET), str(MIN_DELAY_S), str(lease_log)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    fetchers: list[subprocess.Popen] = []
    try:
        port = int(server.stdout.readline())
        with TestWeb(specs, hosts=HOSTS, seed=11) as web:
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
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
            violations = web.politeness_violations(MIN_DELAY_S)
            first = min(r.arrived for r in requests)
            report = web.freshness(first + WINDOW[0], first + WINDOW[1])
    finally:
        for proc in [*fetchers, server]:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()

    assert violations == [], "\n".join(map(str, violations[:10]))
    leases = [json.loads(line) for line in lease_log.read_text().splitlines()]
    page_leases = [x for x in leases if x["kind"] == "page"]
    # both processes fetched; no URL was handed out twice for one due time
    assert len({x["worker"] for x in page_leases}) == 2
    assert len({(x["url"], x["due"]) for x in page_leases}) == len(page_leases)
    # every lease was one request and one observation, and every request came from a lease
    store = open_store(db, create=False)
    try:
        url_of = {r["id"]: r["url"] for r in store.list_urls(size=10 * N_PAGES)}
        observed = collections.Counter(url_of[o["page_id"]] for o in store.observation_log())
        outcomes = collections.Counter(o["outcome"] for o in store.observation_log())
    finally:
        store.close()
    fetched = collections.Counter(f"http://{r.host}:{r.port}{r.path}" for r in requests if r.page is not None)
    leased = collections.Counter(x["url"] for x in page_leases)
    assert fetched == leased == observed
    assert len(fetched) == N_PAGES and sum(fetched.values()) > 0.7 * BUDGET * RUN_S  # the budget is used
    robots_fetched = collections.Counter(r.host for r in requests if r.path == "/robots.txt")
    assert sorted(robots_fetched.values()) == [1] * len(HOSTS)
    assert outcomes["changed"] > 0 and outcomes["unchanged"] > 0 and outcomes["no-info"] == 0

    # freshness against the truth: at least what visiting every page at the uniform rate B/n gives,
    # within the sampling error of the window (the plan learns from a handful of visits per page)
    delta = np.array([p.rate for p in specs])
    f = report.freshness
    se = f.std(ddof=1) / np.sqrt(N_PAGES)
    f_uniform = float(expected_freshness(np.full(N_PAGES, BUDGET / N_PAGES), delta).mean())
    print(f"\nfreshness {f.mean():.3f} (SE {se:.3f}), uniform at B/n predicted {f_uniform:.3f}; "
          f"{sum(fetched.values())} visits, {dict(outcomes)}")
    assert f.mean() > f_uniform - 3 * se - 0.05
