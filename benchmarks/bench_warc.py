"""Benchmark of keeping the copies: fetches per second with and without ``--warc``, and the bytes
an unchanged visit adds to the archive.

Run on purpose (not part of the tests); every server it talks to is one it starts on loopback::

    python benchmarks/bench_warc.py --seconds 20 --pages 2000 --hosts 100

A test web (``freshcrawl test-web``, its own process) of N pages over H hosts, a crawl on SQLite
with no politeness limit (min delay 0, one request at a time per host, 128 in flight) and a budget
far above what can be fetched, so every page is always due; the same crawl is run three ways, each
on a fresh database: no copies, ``--keep-latest`` and ``--warc``. Reported: visits committed per
second, the outcomes, and for the WARC run the bytes written per record kind (a revisit record of an
unchanged visit with its request record, against a response with its request) read back from the
files with warcio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

from _testweb import test_web  # benchmarks/_testweb.py, beside this script


def _record_sizes(directory: Path) -> dict:
    """Compressed bytes per record kind in the WARC files of `directory`; a visit is its main record
    (response or revisit) plus the request record that follows it."""
    from warcio.archiveiterator import ArchiveIterator

    sizes: dict[str, list[int]] = {"response": [], "revisit": [], "request": [], "warcinfo": []}
    total = 0
    for path in sorted(directory.glob("*.warc.gz")):
        total += path.stat().st_size
        with open(path, "rb") as fh:
            it = ArchiveIterator(fh)
            for record in it:
                kind = record.rec_type
                record.content_stream().read()
                it.read_to_end()
                sizes.setdefault(kind, []).append(it.get_record_length())
    mean = {k: (sum(v) / len(v) if v else None) for k, v in sizes.items()}
    req = mean["request"] or 0.0
    return {
        "files": len(list(directory.glob("*.warc.gz"))),
        "bytes": total,
        "records": {k: len(v) for k, v in sizes.items()},
        "mean_record_bytes": mean,
        "bytes_per_unchanged_visit": None if mean["revisit"] is None else mean["revisit"] + req,
        "bytes_per_changed_visit": None if mean["response"] is None else mean["response"] + req,
    }


def run_once(mode: str, urls: list[str], seconds: float, work: Path) -> dict:
    from freshcrawl.archive import LatestCopies, WarcArchive
    from freshcrawl.crawler.fetcher import Fetcher
    from freshcrawl.crawler.loop import crawl
    from freshcrawl.frontier import CrawlSettings, Frontier, parse_url_list
    from freshcrawl.store import open_store

    work.mkdir()
    store = open_store(str(work / "crawl.db"))
    store.add_pages(parse_url_list(urls), now=time.time())
    frontier = Frontier(store, CrawlSettings(budget=1e9, min_delay_s=0.0, replan_every_s=10.0))
    archive = None
    if mode == "warc":
        archive = WarcArchive(work / "warc").open()
    elif mode == "keep-latest":
        archive = LatestCopies(work / "latest").open()

    async def go():
        async with Fetcher(read_timeout_s=10.0, keep_copy=archive is not None) as fetcher:
            return await crawl(
                frontier, fetcher, duration_s=seconds, max_in_flight=128, archive=archive
            )

    try:
        stats = asyncio.run(go())
    finally:
        if archive is not None:
            archive.close()
    outcomes = Counter(o["outcome"] for o in store.observation_log())
    store.close()
    row = {
        "mode": mode,
        "seconds": stats.elapsed_s,
        "visits": stats.visits,
        "visits_per_s": stats.visits / stats.elapsed_s,
        "outcomes": dict(outcomes),
    }
    if mode == "warc":
        row["warc"] = _record_sizes(work / "warc")
    if mode == "keep-latest":
        row["latest_bytes"] = sum(
            p.stat().st_size for p in (work / "latest").rglob("*") if p.is_file()
        )
    return row


def bench_write(n_visits: int, body_bytes: int) -> dict:
    """CPU seconds per visit that WarcArchive.write_visits spends (gzip, digests, fsync per batch of
    64), for changed visits (response + request) and for unchanged ones (revisit + request), on
    synthetic captures of HTML-like bodies: the archive's cost without the network or the load."""
    import random

    from freshcrawl.archive import WarcArchive
    from freshcrawl.crawler.capture import HttpCapture
    from freshcrawl.crawler.outcome import FetchOutcome, Outcome

    rng = random.Random(0)
    words = [
        w.encode()
        for w in [
            "the",
            "river",
            "council",
            "market",
            "station",
            "library",
            "opened",
            "closed",
            "news",
            "page",
        ]
    ]

    def capture(k: int, version: int) -> FetchOutcome:
        r = random.Random(k * 1000 + version)
        body = (
            b"<html><body>"
            + b" ".join(r.choice(words) for _ in range(body_bytes // 6))
            + b"</body></html>"
        )
        head = f"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        url = f"http://127.0.0.2:8000/page/{k}"
        cap = HttpCapture(
            url, b"GET /page/%d HTTP/1.1\r\nHost: 127.0.0.2:8000\r\n\r\n" % k, head, body, 200
        )
        return FetchOutcome(
            url, Outcome.CHANGED, "x", time.time(), 0.01, 200, len(body), capture=cap
        )

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        archive = WarcArchive(tmp).open()
        for label, version in (("changed", 0), ("unchanged", 0), ("changed_again", 1)):
            batch = [(None, capture(k, version)) for k in range(n_visits)]
            rng.shuffle(batch)
            size0 = archive.counts["bytes"]
            t = time.process_time()
            w = time.perf_counter()
            for lo in range(0, n_visits, 64):
                archive.write_visits(batch[lo : lo + 64])
            out[label] = {
                "cpu_ms_per_visit": 1000 * (time.process_time() - t) / n_visits,
                "wall_ms_per_visit": 1000 * (time.perf_counter() - w) / n_visits,
                "bytes_per_visit": (archive.counts["bytes"] - size0) / n_visits,
            }
        archive.close()
    return {"benchmark": "write", "visits": n_visits, "body_bytes": body_bytes, **out}


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--pages", type=int, default=2000)
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--modes", default="none,keep-latest,warc")
    ap.add_argument(
        "--write-only",
        type=int,
        default=0,
        metavar="N",
        help="Only time WarcArchive.write_visits on N synthetic visits (no crawl).",
    )
    args = ap.parse_args()
    if args.write_only:
        print(json.dumps(bench_write(args.write_only, 4000)))
        return
    tmp = Path(tempfile.mkdtemp(prefix="freshcrawl-bench-warc-"))
    modes = args.modes.split(",")
    try:
        with test_web(tmp, args.pages, args.hosts, len(modes) * (args.seconds + 60)) as urls:
            for k, mode in enumerate(modes):
                print(json.dumps(run_once(mode, urls, args.seconds, tmp / f"{k}-{mode}")), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
