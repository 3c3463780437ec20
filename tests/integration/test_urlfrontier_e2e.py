"""End to end: two fetcher processes crawl the test web through one frontier served over gRPC.

A server process plans the crawl; two ``freshcrawl crawl run --frontier grpc://...`` processes
fetch what it hands out and report back. The test web grades the crawl: politeness (one request per
host at a time, delays, Crawl-delay, robots.txt), no URL fetched twice for one due time (each lease
is one request and one observation), and freshness against the truth.

- SQLite, a small server script (:func:`serve_grpc` over a :class:`FrontierService`) that logs its
  leases: a short crawl, every lease checked.
- PostgreSQL, ``freshcrawl serve`` itself: the crawl of the live recrawler's freshness test
  (``test_crawl_live.py``, on a slower clock), served, against a uniform crawl of the same pages
  run beside it: the served learned crawl keeps the pages fresher than uniform by more than three
  standard errors of the paired per-page difference, and close to the oracle.
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
import pytest

from freshcrawl.allocation import allocate
from freshcrawl.frontier.report import expected_freshness
from freshcrawl.service.proto import urlfrontier_pb2 as pb
from freshcrawl.service.proto import urlfrontier_pb2_grpc as pb_grpc
from freshcrawl.store import open_store
from freshcrawl.testing import HostSpec, TestWeb, make_pages
from freshcrawl.units import SECONDS_PER_DAY

from ..warc_checks import check_structure, read_records, warcio_check

pytestmark = pytest.mark.realtime  # graded on the wall clock: run alone (scripts/test.sh)

N_PAGES, RATES = 60, (0.01, 0.5)  # changes per second, log-uniform
HOSTS = [HostSpec(crawl_delay=0.5), HostSpec(), HostSpec(), HostSpec(crawl_delay=0.25)]
BUDGET = 6.0  # visits per second: uniform visits each page every 10 s
MIN_DELAY_S = 0.05
RUN_S = 16.0
WINDOW = (7.0, 15.0)  # seconds after the first request: freshness measured there

#: the live recrawler's freshness test (test_crawl_live.py: 300 pages, rates over three orders of
#: magnitude, each page visited every 2 s by uniform, about 7 visits per page when the window opens),
#: on a clock 1.5 times slower (every rate / 1.5, every duration * 1.5: the same Δτ, so the same
#: freshness) and over 30 hosts instead of 6: a served visit waits for a GetURLs and a PutURLs round
#: trip before its host is free again, and two fetchers, the server and a uniform crawl beside them
#: keep about 100 visits/s on this 2-core machine (at 150/s on 6 hosts they kept 40-70% of it, with
#: another process loading one core)
SLOW = 1.5
LIVE = dict(n_pages=300, hosts=[HostSpec()] * 30, rates=(0.002 / SLOW, 2.0 / SLOW), budget=150.0 / SLOW,
            min_delay_s=0.01, run_s=48.0 * SLOW, window=(15.0 * SLOW, 46.0 * SLOW))

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


def _crawl(server: subprocess.Popen, port: int, web: TestWeb, *, run_s: float, window, min_delay_s: float,
           beside=None, warc=None) -> dict:
    """Seed the served frontier with the (started) test web's URLs, run two fetchers, stop the server;
    grade. ``beside()``, if given, starts another crawl process with the fetchers."""
    fetchers: list[subprocess.Popen] = []
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=60)
            stub = pb_grpc.URLFrontierStub(channel)
            items = [pb.URLItem(discovered=pb.DiscoveredURLItem(info=pb.URLInfo(url=u))) for u in web.urls()]
            acks = list(stub.PutURLs(iter(items), timeout=30))
            assert [a.status for a in acks] == [pb.AckMessage.OK] * len(items)
        if beside is not None:
            fetchers.append(beside())
        for _ in range(2):
            fetchers.append(subprocess.Popen(
                [sys.executable, "-m", "freshcrawl", "crawl", "run", "--frontier", f"grpc://127.0.0.1:{port}",
                 "--for", f"{run_s}s", "--timeout", "5s", *(["--warc", str(warc)] if warc else [])],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for proc in fetchers:
            _, err = proc.communicate(timeout=run_s + 60)
            assert proc.returncode == 0, err
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=30)
        assert server.returncode == 0, err
        requests = web.requests()
        first = min(r.arrived for r in requests if r.page is not None)
        return {"requests": requests, "violations": web.politeness_violations(min_delay_s),
                "freshness": web.freshness(first + window[0], first + window[1]).freshness}
    finally:
        for proc in [*fetchers, server]:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


def _check(db: str, specs, run: dict, *, n_hosts: int, budget: float, run_s: float) -> collections.Counter:
    """Politeness, each request one observation, requests of one URL never overlapping."""
    assert run["violations"] == [], "\n".join(map(str, run["violations"][:10]))
    requests = run["requests"]
    store = open_store(db, create=False)
    try:
        url_of = {r["id"]: r["url"] for r in store.list_urls(size=10 * len(specs))}
        log = store.observation_log()
    finally:
        store.close()
    observed = collections.Counter(url_of[o["page_id"]] for o in log)
    outcomes = collections.Counter(o["outcome"] for o in log)
    pages = [r for r in requests if r.page is not None]
    fetched = collections.Counter(f"http://{r.host}:{r.port}{r.path}" for r in pages)
    print(f"\n{sum(fetched.values())} visits of {len(fetched)} pages, {dict(outcomes)}")
    assert fetched == observed  # every request reported once, every report a request
    assert len(fetched) == len(specs) and sum(fetched.values()) > 0.7 * budget * run_s  # the budget is used
    by_url = collections.defaultdict(list)
    for r in pages:
        by_url[r.path, r.port].append(r)
    for visits in by_url.values():  # a URL is fetched again only after its previous visit ended
        visits.sort(key=lambda r: r.arrived)
        assert all(b.arrived >= a.ended for a, b in itertools.pairwise(visits))
    robots_fetched = collections.Counter(r.host for r in requests if r.path == "/robots.txt")
    assert sorted(robots_fetched.values()) == [1] * n_hosts
    assert outcomes["changed"] > 0 and outcomes["unchanged"] > 0 and outcomes["no-info"] == 0
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
    with TestWeb(specs, hosts=HOSTS, seed=11) as web:
        run = _crawl(server, port, web, run_s=RUN_S, window=WINDOW, min_delay_s=MIN_DELAY_S,
                     warc=tmp_path / "warc")
    fetched = _check(db, specs, run, n_hosts=len(HOSTS), budget=BUDGET, run_s=RUN_S)
    # both fetchers wrote their own WARC files in one directory: valid, one main record per request
    warcio_check(tmp_path / "warc")
    records = read_records(tmp_path / "warc")
    check_structure(tmp_path / "warc", records)
    assert len({r["file"].split("-")[3] for r in records}) == 2  # two writer processes
    main_records = collections.Counter(r["url"] for r in records if r["type"] in ("response", "revisit"))
    assert main_records == fetched
    leases = [json.loads(line) for line in lease_log.read_text().splitlines()]
    page_leases = [x for x in leases if x["kind"] == "page"]
    assert len({x["worker"] for x in page_leases}) == 2  # both processes fetched
    assert len({(x["url"], x["due"]) for x in page_leases}) == len(page_leases)  # one lease per due time
    assert collections.Counter(x["url"] for x in page_leases) == fetched  # each lease one request
    # freshness: no worse than visiting every page at the uniform rate B/n (a short crawl: the plan
    # has a few visits per page to learn from), within the sampling error of the window
    delta = np.array([p.rate for p in specs])
    f = run["freshness"]
    f_uniform = float(expected_freshness(np.full(N_PAGES, BUDGET / N_PAGES), delta).mean())
    assert f.mean() > f_uniform - 3 * f.std(ddof=1) / np.sqrt(N_PAGES) - 0.05, (f.mean(), f_uniform)


def test_two_fetchers_through_freshcrawl_serve_keep_pages_fresher_than_uniform(pg_url, tmp_path):
    """PostgreSQL; the frontier is 'freshcrawl serve' (REST and gRPC in one process), its crawl the live
    recrawler's freshness test, against a uniform crawl (``crawl run --policy uniform``) of another
    web with the same pages and change times, run at the same time."""
    n, budget, run_s, window = LIVE["n_pages"], LIVE["budget"], LIVE["run_s"], LIVE["window"]
    specs = make_pages(n, len(LIVE["hosts"]), LIVE["rates"], seed=5)
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "freshcrawl", "serve", "--db", pg_url, "--http", f"127.0.0.1:{_free_port()}",
         "--grpc", f"127.0.0.1:{port}", "--budget", f"{budget}/s", "--min-delay", f"{LIVE['min_delay_s']}s",
         "--replan-every", "3s"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    uniform_db = str(tmp_path / "uniform.db")
    webs = [TestWeb(specs, hosts=LIVE["hosts"], seed=5) for _ in range(2)]  # same pages, same change times
    try:
        for web in webs:
            web.start()
        served_web, uniform_web = webs
        urls = tmp_path / "uniform.txt"
        urls.write_text("\n".join(uniform_web.urls()) + "\n")
        added = subprocess.run([sys.executable, "-m", "freshcrawl", "crawl", "add", "--db", uniform_db, str(urls)],
                               capture_output=True, text=True, timeout=60, check=False)
        assert added.returncode == 0, added.stderr

        def uniform() -> subprocess.Popen:
            return subprocess.Popen(
                [sys.executable, "-m", "freshcrawl", "crawl", "run", "--db", uniform_db, "--policy", "uniform",
                 "--budget", f"{budget}/s", "--for", f"{run_s}s", "--replan-every", "3s",
                 "--min-delay", f"{LIVE['min_delay_s']}s", "--timeout", "5s", "--seed", "1"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        run = _crawl(server, port, served_web, run_s=run_s, window=window, min_delay_s=LIVE["min_delay_s"],
                     beside=uniform)
        first = min(r.arrived for r in uniform_web.requests() if r.page is not None)
        f_u = uniform_web.freshness(first + window[0], first + window[1]).freshness
        assert uniform_web.politeness_violations(LIVE["min_delay_s"]) == []
    finally:
        for web in webs:
            web.stop()
    _check(pg_url, specs, run, n_hosts=len(LIVE["hosts"]), budget=budget, run_s=run_s)

    # both webs have the same change times (same pages and seed, times from each web's start): compare
    # page by page, as the live recrawler's test does
    f_l = run["freshness"]
    diff = f_l - f_u
    se_diff = diff.std(ddof=1) / np.sqrt(n)
    d_day = np.array([p.rate for p in specs]) * SECONDS_PER_DAY
    oracle = allocate(d_day, budget * SECONDS_PER_DAY, objective="freshness-periodic")
    f_oracle = float(expected_freshness(oracle.p, d_day).mean())
    f_uniform_pred = float(expected_freshness(np.full(n, budget * SECONDS_PER_DAY / n), d_day).mean())
    se_l, se_u = f_l.std(ddof=1) / np.sqrt(n), f_u.std(ddof=1) / np.sqrt(n)
    print(f"served learned {f_l.mean():.4f} (SE {se_l:.4f}), uniform {f_u.mean():.4f} (SE {se_u:.4f}), paired "
          f"difference {diff.mean():.4f} (SE {se_diff:.4f}); predicted: oracle {f_oracle:.4f}, "
          f"uniform {f_uniform_pred:.4f}")
    assert abs(f_u.mean() - f_uniform_pred) < 3 * se_u + 0.01  # the uniform crawl kept its budget
    assert diff.mean() > 3 * se_diff, (diff.mean(), se_diff)
    assert f_l.mean() < f_oracle + 3 * se_l
    gain = f_oracle - f_uniform_pred
    assert f_l.mean() > f_oracle - 0.5 * gain - 3 * se_l, (f_l.mean(), f_oracle, gain)
