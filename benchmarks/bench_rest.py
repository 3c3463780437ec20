"""Benchmark of the REST API: leases per second and their latency under concurrent clients.

Run on purpose (not part of the tests); the server is a ``freshcrawl serve`` process it starts on
loopback, the clients are processes of their own::

    python benchmarks/bench_rest.py --db sqlite
    python benchmarks/bench_rest.py --db postgresql
    python benchmarks/bench_rest.py --db sqlite --pages 20000 --hosts 2000 --count 1 --mode lease

Setup: a crawl of ``--pages`` pages over ``--hosts`` hosts, every robots.txt answered (404), no
politeness delay (``--min-delay 0s``) and a budget that visits every page every 2 s, so every page is
due and each host can be leased again as soon as its visit is reported (a saturated frontier: the
worst case for ``lease``, which looks at every due page). ``--clients`` client processes (default 4), each with one keep-alive
HTTP connection, start together and loop over

- ``lease``: ``POST /leases`` (``count`` visits, lease 600 s), nothing reported: each host gives one
  visit, so a run leases at most one page per host;
- ``lease-report`` (default): ``POST /leases``, then ``POST /observations`` with a 200 and a
  signature for each visit leased (the host is free again, the page is planned again),

each for at most ``--requests`` iterations or ``--seconds`` seconds, whichever comes first (bounded
loops; a client stops early when three leases in a row come back empty). Reported: URLs leased per
second over the run (wall clock of the slowest client), lease requests per second, and the latency of
``POST /leases`` (p50, p99, max) and of ``POST /observations``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _pg import pg_database  # benchmarks/_pg.py, beside this script


def _setup(db: str, n_pages: int, n_hosts: int) -> None:
    """Pages over hosts, every robots.txt known (404: no rules), all due now."""
    from sqlalchemy import update

    from freshcrawl.frontier import CrawlSettings
    from freshcrawl.store import open_store
    from freshcrawl.store.schema import hosts

    now = time.time()
    store = open_store(db, create=True)
    try:
        rows = [(f"http://h{k % n_hosts}.bench/p{k}", f"http://h{k % n_hosts}.bench", 1.0) for k in range(n_pages)]
        store.add_pages(rows, now=now - 60)
        with store.engine.begin() as conn:
            conn.execute(update(hosts).values(robots_status=404, robots_text="", robots_fetched_at=now,
                                              robots_why="http-404"))
        # a budget that visits every page every 2 s: all of them are due within 2 s of the first plan,
        # and again 2 s after each visit (a saturated frontier)
        budget = n_pages * 86_400.0 / 2.0
        store.save_settings({"settings": CrawlSettings(budget=budget, min_delay_s=0.0).to_dict()})
    finally:
        store.close()


def _client(base: str, k: int, mode: str, count: int, n_requests: int, seconds: float, start_at: float,
            out: mp.Queue) -> None:
    import httpx

    lease_ms, report_ms, leased = [], [], 0
    with httpx.Client(base_url=base, timeout=60) as c:
        while time.time() < start_at:
            time.sleep(0.001)
        t0 = time.perf_counter()
        empty = 0
        for _ in range(n_requests):
            if time.perf_counter() - t0 > seconds:
                break
            t = time.perf_counter()
            r = c.post("/leases", json={"worker_id": f"bench-{k}", "count": count, "lease_s": 600})
            lease_ms.append(1000 * (time.perf_counter() - t))
            r.raise_for_status()
            got = r.json()["leases"]
            leased += len(got)
            empty = 0 if got else empty + 1
            if empty >= 3:
                break
            if mode == "lease-report" and got:
                t = time.perf_counter()
                r = c.post("/observations", json={"reports": [
                    {"url": x["url"], "status": 200, "signature": "s", "n_bytes": 1000} for x in got]})
                report_ms.append(1000 * (time.perf_counter() - t))
                r.raise_for_status()
        elapsed = time.perf_counter() - t0
    out.put({"lease_ms": lease_ms, "report_ms": report_ms, "leased": leased, "elapsed": elapsed})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bench(kind: str, *, n_pages: int, n_hosts: int, clients: int, mode: str, count: int, n_requests: int,
          seconds: float) -> dict:
    drop = None
    if kind == "sqlite":
        db = str(Path(tempfile.mkdtemp(prefix="freshcrawl-bench-")) / "crawl.db")
    else:
        db, drop = pg_database()
    server = None
    try:
        _setup(db, n_pages, n_hosts)
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [sys.executable, "-m", "freshcrawl", "serve", "--db", db, "--no-grpc", "--http", f"127.0.0.1:{port}",
             "--min-delay", "0s"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "FRESHCRAWL_TOKEN": ""})
        import httpx

        deadline = time.time() + 120
        while True:
            try:
                if httpx.get(base + "/status", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if server.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"serve did not start: {server.stderr.read() if server.poll() is not None else ''}")
            time.sleep(0.2)
        ctx = mp.get_context("spawn")
        out = ctx.Queue()
        time.sleep(3.0)  # the first plan's random phases (within 2 s) have passed: every page is due
        start_at = time.time() + 3.0  # the clients import httpx first, then start together
        procs = [ctx.Process(target=_client, args=(base, k, mode, count, n_requests, seconds, start_at, out))
                 for k in range(clients)]
        for p in procs:
            p.start()
        results = [out.get(timeout=seconds + 120) for _ in procs]
        for p in procs:
            p.join()
        lease_ms = np.concatenate([r["lease_ms"] for r in results])
        report_ms = np.concatenate([r["report_ms"] for r in results]) if mode == "lease-report" else np.empty(0)
        wall = max(r["elapsed"] for r in results)
        leased = sum(r["leased"] for r in results)
        pct = lambda a, q: float(np.percentile(a, q)) if a.size else None  # noqa: E731
        return {
            "db": kind, "mode": mode, "clients": clients, "count": count, "pages": n_pages, "hosts": n_hosts,
            "lease_requests": int(lease_ms.size), "urls_leased": leased, "seconds": round(wall, 2),
            "urls_per_s": round(leased / wall, 1), "lease_requests_per_s": round(lease_ms.size / wall, 1),
            "lease_p50_ms": round(pct(lease_ms, 50), 2), "lease_p99_ms": round(pct(lease_ms, 99), 2),
            "lease_max_ms": round(float(lease_ms.max()), 2),
            "report_p50_ms": None if not report_ms.size else round(pct(report_ms, 50), 2),
            "report_p99_ms": None if not report_ms.size else round(pct(report_ms, 99), 2),
        }
    finally:
        if server is not None and server.poll() is None:
            server.terminate()
            server.wait(timeout=60)
        if drop is not None:
            drop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", choices=["sqlite", "postgresql"], action="append")
    ap.add_argument("--mode", choices=["lease", "lease-report"], default="lease-report")
    ap.add_argument("--pages", type=int, default=50_000)
    ap.add_argument("--hosts", type=int, default=5_000)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--count", type=int, default=10, help="visits asked per lease request")
    ap.add_argument("--requests", type=int, default=2_000, help="most lease requests per client")
    ap.add_argument("--seconds", type=float, default=20.0, help="most seconds per client")
    args = ap.parse_args()
    for kind in args.db or ["sqlite", "postgresql"]:
        res = bench(kind, n_pages=args.pages, n_hosts=args.hosts, clients=args.clients, mode=args.mode,
                    count=args.count, n_requests=args.requests, seconds=args.seconds)
        print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
