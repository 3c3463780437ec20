"""Pages per second through Scrapy: freshcrawl's scheduler against Scrapy's own, on one loopback web.

Run on purpose (not part of the tests); every server it talks to is one it starts on loopback::

    python benchmarks/bench_scrapy.py --pages 2000 --hosts 100 --seconds 20 --repeats 5

A test web (``freshcrawl test-web``, its own process) serves N pages over H hosts. Each scheduler
runs in its own Scrapy process (``CrawlerProcess``) for ``--seconds``, with 128 requests in flight
and at most one per host (``CONCURRENT_REQUESTS_PER_DOMAIN = 1``, as freshcrawl hands out):

- ``scrapy``: Scrapy's own scheduler, fed the URL list ``--repeats`` times (``dont_filter``), run to
  its end;
- ``freshcrawl``: ``freshcrawl.scrapy.Scheduler`` and ``ObservationMiddleware`` on a SQLite crawl
  holding the same URLs (added beforehand with ``freshcrawl crawl add``), no politeness limit
  (min delay 0) and a budget far above what can be fetched, so every page is always due; every
  visit is a conditional request whose outcome is committed.

Pages per second are the page visits (Scrapy's responses; with freshcrawl's scheduler, the visits
reported to the frontier, robots.txt excluded) over the run's elapsed time as Scrapy counts it. Prints one JSON line per scheduler.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _testweb import test_web  # benchmarks/_testweb.py, beside this script

SPIDER = """
import itertools, json, sys
import scrapy
from scrapy.crawler import CrawlerProcess

urls, settings, repeats = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])

class Bench(scrapy.Spider):
    name = "bench"

    async def start(self):
        # Scrapy's own scheduler: the URL list `repeats` times (0 with freshcrawl's: the crawl has them)
        for url in itertools.islice(itertools.cycle(urls), repeats * len(urls)):
            yield scrapy.Request(url, dont_filter=True)

    def parse(self, response):
        return None

process = CrawlerProcess(settings)
crawler = process.create_crawler(Bench)
process.crawl(crawler)
process.start()
print(json.dumps({k: v for k, v in crawler.stats.get_stats().items() if isinstance(v, (int, float))}))
"""


def run(kind: str, urls: list[str], seconds: float, repeats: int, tmp: Path) -> dict:
    settings = {
        "CONCURRENT_REQUESTS": 128,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
    }
    if kind == "freshcrawl":
        settings["CLOSESPIDER_TIMEOUT"] = seconds
        db = str(tmp / "crawl.db")
        (tmp / "urls.txt").write_text("\n".join(urls) + "\n")
        subprocess.run(
            [sys.executable, "-m", "freshcrawl", "crawl", "add", "--db", db, str(tmp / "urls.txt")],
            check=True,
            capture_output=True,
        )
        settings.update(
            {
                "SCHEDULER": "freshcrawl.scrapy.Scheduler",
                "DOWNLOADER_MIDDLEWARES": {"freshcrawl.scrapy.ObservationMiddleware": 950},
                "FRESHCRAWL_DB": db,
                "FRESHCRAWL_BUDGET": "1e9/day",
                "FRESHCRAWL_MIN_DELAY": 0.0,
                "FRESHCRAWL_REPLAN_EVERY": 10.0,
                "FRESHCRAWL_PREFETCH": 256,
            }
        )
    t0 = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            SPIDER,
            json.dumps(urls),
            json.dumps(settings),
            str(repeats if kind == "scrapy" else 0),
        ],
        capture_output=True,
        text=True,
        timeout=seconds + 600,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{kind}: Scrapy failed: {proc.stderr[-2000:]}")
    wall = time.perf_counter() - t0
    stats = json.loads(proc.stdout.strip().splitlines()[-1])
    if (
        kind == "freshcrawl"
    ):  # visits reported (a 304 is dropped after its report, never "received")
        responses = stats.get("freshcrawl/reported", 0)
    else:
        responses = stats.get("response_received_count", 0)
    elapsed = stats.get("elapsed_time_seconds", wall)
    return {
        "scheduler": kind,
        "pages": responses,
        "elapsed_s": round(elapsed, 1),
        "pages_per_s": round(responses / elapsed, 1),
        "reported": stats.get("freshcrawl/reported"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=2000)
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=20.0, help="Length of the freshcrawl run.")
    ap.add_argument(
        "--repeats", type=int, default=5, help="Times Scrapy's own scheduler gets the list."
    )
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="freshcrawl-bench-scrapy-"))
    with test_web(tmp, args.pages, args.hosts, 3 * args.seconds + 300) as urls:
        for kind in ("scrapy", "freshcrawl"):
            print(json.dumps(run(kind, urls, args.seconds, args.repeats, tmp)), flush=True)


if __name__ == "__main__":
    main()
