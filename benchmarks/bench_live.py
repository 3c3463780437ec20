"""Benchmarks of the live recrawler: fetch throughput, re-planning 10^6 pages, memory per page.

Run on purpose (not part of the tests); every server it talks to is one it starts on loopback::

    python benchmarks/bench_live.py fetch --db sqlite --seconds 20
    python benchmarks/bench_live.py fetch --db postgresql --seconds 20
    python benchmarks/bench_live.py replan --pages 1000000
    python benchmarks/bench_live.py memory --pages 100000 --pages 1000000

``fetch``: a test web (``freshcrawl test-web``, its own process, so the crawler has a core of its own)
of N pages over H hosts on 127.0.0.2-254, a crawl with no politeness limit (min delay 0, one request
at a time per host, 128 in flight) and a budget far above what can be fetched, so every page is always
due: visits committed per second. ``replan``: a store of N pages on 1,000 hosts built in one process;
another process opens the frontier (loads pages, replays the log, plans), feeds 10% of the pages an
observation and re-plans (estimates, allocation with host caps, next due times, the write-back):
seconds and the process's peak resident memory. ``memory``: the peak resident memory of a frontier
over N pages, less that of the interpreter with the same modules loaded, per page.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _pg import pg_database  # benchmarks/_pg.py, beside this script
from _testweb import test_web  # benchmarks/_testweb.py, beside this script


def bench_fetch(kind: str, seconds: float, n_pages: int, n_hosts: int) -> dict:
    from freshcrawl.crawler.fetcher import Fetcher
    from freshcrawl.crawler.loop import crawl
    from freshcrawl.frontier import CrawlSettings, Frontier, parse_url_list
    from freshcrawl.store import open_store

    tmp = Path(tempfile.mkdtemp(prefix="freshcrawl-bench-"))
    drop = None
    with test_web(tmp, n_pages, n_hosts, seconds + 60) as urls:
        try:
            db, drop = (str(tmp / "crawl.db"), None) if kind == "sqlite" else pg_database()
            store = open_store(db)
            store.add_pages(parse_url_list(urls), now=time.time())
            settings = CrawlSettings(budget=1e9, min_delay_s=0.0, replan_every_s=10.0)
            frontier = Frontier(store, settings)

            async def run():
                async with Fetcher(read_timeout_s=10.0) as fetcher:
                    return await crawl(frontier, fetcher, duration_s=seconds, max_in_flight=128)

            stats = asyncio.run(run())
            counts = store.counts()["observations"]
            store.close()
            return {"benchmark": "fetch", "db": kind, "pages": n_pages, "hosts": n_hosts, "seconds": stats.elapsed_s,
                    "visits": stats.visits, "visits_per_s": stats.visits / stats.elapsed_s, "replans": stats.replans,
                    "robots": stats.robots, "committed": sum(counts.values())}
        finally:
            if drop is not None:
                drop()


_BUILD = """
import sys, time
from freshcrawl.store import open_store
n = int(sys.argv[1]); st = open_store(sys.argv[2]); chunk = 200_000
for lo in range(0, n, chunk):
    rows = [(f"http://h{i % 1000}.test/p{i}", f"http://h{i % 1000}.test", 1.0) for i in range(lo, min(n, lo + chunk))]
    st.add_pages(rows, now=time.time())
"""

_REPLAN = """
import json, resource, sys, time
import numpy as np
from freshcrawl.frontier import CrawlSettings, Frontier
from freshcrawl.store import open_store
n = int(sys.argv[1]); st = open_store(sys.argv[2])
t = time.perf_counter(); f = Frontier(st, CrawlSettings(budget=2.0 * n, min_delay_s=10.0)); t_open = time.perf_counter() - t
rng = np.random.default_rng(0); now = time.time()
seen = rng.choice(n, n // 10, replace=False)
f._pending = [(int(k), now, bool(c), 0.5, 2.0) for k, c in zip(seen, rng.random(seen.size) < 0.3)]
f.n_obs[seen] += 1
times = []
for k in range(3):
    t = time.perf_counter(); f.replan(now + 1 + k); times.append(time.perf_counter() - t)
print(json.dumps({"open_s": t_open, "replan_s": times,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

_BASELINE = """
import json, resource
import freshcrawl.frontier, freshcrawl.store, freshcrawl.allocation, freshcrawl.estimators, numba
print(json.dumps({"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def bench_replan(n_pages: int) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="freshcrawl-bench-"))
    db = str(tmp / "crawl.db")
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", _BUILD, str(n_pages), db], check=True)
    build_s = time.perf_counter() - t
    out = subprocess.run([sys.executable, "-c", _REPLAN, str(n_pages), db], check=True, capture_output=True, text=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    base = json.loads(subprocess.run([sys.executable, "-c", _BASELINE], check=True, capture_output=True,
                                     text=True).stdout.strip().splitlines()[-1])
    return {"benchmark": "replan", "pages": n_pages, "build_s": build_s, **res,
            "baseline_rss_mb": base["peak_rss_mb"],
            "bytes_per_page": (res["peak_rss_mb"] - base["peak_rss_mb"]) * 2**20 / n_pages}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    f = sub.add_parser("fetch")
    f.add_argument("--db", choices=["sqlite", "postgresql"], default="sqlite")
    f.add_argument("--seconds", type=float, default=20.0)
    f.add_argument("--pages", type=int, default=5000)
    f.add_argument("--hosts", type=int, default=200)
    r = sub.add_parser("replan")
    r.add_argument("--pages", type=int, action="append")
    args = ap.parse_args()
    if args.what == "fetch":
        print(json.dumps(bench_fetch(args.db, args.seconds, args.pages, args.hosts)))
    else:
        for n in args.pages or [1_000_000]:
            print(json.dumps(bench_replan(n)), flush=True)


if __name__ == "__main__":
    main()
