"""Benchmark of the URLFrontier gRPC API: PutURLs and GetURLs messages per second on loopback.

Run on purpose (not part of the tests); the server is a process of its own on 127.0.0.1::

    python benchmarks/bench_grpc.py --db sqlite
    python benchmarks/bench_grpc.py --db postgresql --hosts 5000 --pages-per-host 4

The server (:func:`freshcrawl.service.grpc_server.serve_grpc` over a fresh crawl database, no host
delay, a budget far above what is asked so that every page is due, a plan every 2 s as ``serve``
makes them) runs in its own process; the client
streams over one channel. Every loop is bounded: it stops when its messages are sent or the frontier
has nothing more to hand out. Measured, in messages per second (one message = one URL):

``put discovered``
    PutURLs of N = hosts x pages-per-host new URLs in one stream, every ack received.
``get robots``
    GetURLs (max_queues = ``--get-batch``) until every host's robots.txt came (they come first).
``put robots``
    PutURLs of those robots.txt answers (404: everything allowed).
``get pages``
    GetURLs until one page per host came (a host is leased until its page is reported).
``put reports``
    PutURLs of a fetch outcome (status 200, a signature) for each page handed out: observations.
``cycle``
    ``--rounds`` rounds of GetURLs then PutURLs reports of what came: a fetcher's loop, URLs per second.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _pg import pg_database  # benchmarks/_pg.py, beside this script

SERVER = r"""
import signal, sys, threading
from freshcrawl.frontier import CrawlSettings
from freshcrawl.service import FrontierService
from freshcrawl.service.grpc_server import serve_grpc


service = FrontierService(sys.argv[1], CrawlSettings(budget=1e9, min_delay_s=0.0, replan_every_s=2.0))
server = serve_grpc(service, "127.0.0.1:0", max_workers=8)
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
print(server.port, flush=True)
while not stop.wait(0.5):  # as 'serve' would: plans on time (reported pages are due again at once)
    service.replan_all()
server.stop(5).wait()
service.close()
"""


def run(kind: str, n_hosts: int, per_host: int, get_batch: int, rounds: int) -> dict[str, tuple[int, float]]:
    import grpc

    from freshcrawl.service.proto import urlfrontier_pb2 as pb
    from freshcrawl.service.proto import urlfrontier_pb2_grpc as pb_grpc

    drop = None
    if kind == "postgresql":
        db, drop = pg_database()
    else:
        db = str(Path(tempfile.mkdtemp(prefix="freshcrawl-bench-")) / "crawl.db")
    server = subprocess.Popen([sys.executable, "-c", SERVER, db], stdout=subprocess.PIPE, text=True)
    out: dict[str, tuple[int, float]] = {}
    try:
        port = int(server.stdout.readline())
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.URLFrontierStub(channel)

            # a fetcher that enforces robots.txt through the server (as `crawl run --frontier` does)
            ROBOTS = (("freshcrawl-robots", "lease"),)

            def put(items) -> int:
                acks = list(stub.PutURLs(iter(items), timeout=600))
                bad = sum(a.status != pb.AckMessage.OK for a in acks)
                assert bad == 0, f"{bad} item(s) refused"
                return len(acks)

            def get_all(expected: int, limit_calls: int = 100_000) -> list:
                got, empty_since = [], None
                for _ in range(limit_calls):  # bounded: stops when all came, or nothing for 2 s
                    batch = list(stub.GetURLs(pb.GetParams(max_queues=get_batch, max_urls_per_queue=1, delay_requestable=600),
                                              timeout=600, metadata=ROBOTS))
                    got += batch
                    if len(got) >= expected:
                        break
                    if batch:
                        empty_since = None
                    elif empty_since is None:
                        empty_since = time.perf_counter()
                    elif time.perf_counter() - empty_since > 2.0:
                        break
                return got

            def known(url: str, **md) -> pb.URLItem:
                meta = {k: pb.StringList(values=[str(v)]) for k, v in md.items()}
                return pb.URLItem(known=pb.KnownURLItem(info=pb.URLInfo(url=url, metadata=meta),
                                                        refetchable_from_date=int(time.time())))

            def timed(name: str, fn):
                t0 = time.perf_counter()
                result = fn()
                n = result if isinstance(result, int) else len(result)
                out[name] = (n, time.perf_counter() - t0)
                return result

            urls = [f"http://h{h}.example/p{k}" for h in range(n_hosts) for k in range(per_host)]
            timed("put discovered", lambda: put(
                pb.URLItem(discovered=pb.DiscoveredURLItem(info=pb.URLInfo(url=u))) for u in urls))
            robots = timed("get robots", lambda: get_all(n_hosts))
            timed("put robots", lambda: put(known(i.url, **{"fetch.statusCode": 404}) for i in robots))
            pages = timed("get pages", lambda: get_all(n_hosts))
            timed("put reports", lambda: put(known(i.url, **{"fetch.statusCode": 200, "signature": "s1"})
                                             for i in pages))

            def cycle() -> int:
                n = 0
                for r in range(rounds):
                    batch = list(stub.GetURLs(pb.GetParams(max_queues=get_batch, max_urls_per_queue=1, delay_requestable=600),
                                              timeout=600, metadata=ROBOTS))
                    if not batch:
                        break
                    put(known(i.url, **{"fetch.statusCode": 200, "signature": f"s{r}"}) for i in batch)
                    n += len(batch)
                return n

            time.sleep(2.5)  # a plan: the budget is far above what is asked, every page due again at once
            timed("cycle", cycle)
    finally:
        server.terminate()
        server.communicate(timeout=60)
        if drop is not None:
            drop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", choices=["sqlite", "postgresql"], action="append")
    ap.add_argument("--hosts", type=int, default=2000)
    ap.add_argument("--pages-per-host", type=int, default=5)
    ap.add_argument("--get-batch", type=int, default=256, help="max_queues of one GetURLs call")
    ap.add_argument("--rounds", type=int, default=20, help="rounds of the GetURLs + PutURLs cycle")
    args = ap.parse_args()
    for kind in args.db or ["sqlite", "postgresql"]:
        res = run(kind, args.hosts, args.pages_per_host, args.get_batch, args.rounds)
        print(f"\n{kind}: {args.hosts:,} hosts x {args.pages_per_host} pages, GetURLs max_queues {args.get_batch}")
        print("| step | messages | seconds | messages/s |")
        print("|---|---:|---:|---:|")
        for name, (n, s) in res.items():
            print(f"| {name} | {n:,} | {s:.2f} | {n / s:,.0f} |")


if __name__ == "__main__":
    main()
