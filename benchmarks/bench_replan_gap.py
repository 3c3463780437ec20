"""Fetching during a crawl's first re-plan: the longest gap between two fetch starts.

A crawl of the test web (loopback only) with the learned policy and binding host caps, in a fresh
process with an empty numba cache of its own (``NUMBA_CACHE_DIR``: what a fresh install meets), so
the first re-plan pays every compile it needs. The crawl loop computes plans in a worker thread;
``--blocking`` runs them on the event loop instead, for comparison.

    python benchmarks/bench_replan_gap.py [--pages 80] [--hosts 40] [--replan-every 12] [--blocking]

Prints, in seconds: the first plan (made before the loop starts), the first re-plan, the longest gap
between two fetch starts during that re-plan and the fetches started meanwhile. Nothing leaves this
machine: the test web listens on 127.0.0.0/8 and the store is a temporary SQLite file.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def crawl_once(
    folder: Path, n_pages: int, n_hosts: int, blocking: bool, replan_every_s: float
) -> dict:
    """The crawl, in this process; returns the timings."""
    from freshcrawl.crawler.fetcher import Fetcher
    from freshcrawl.crawler.loop import crawl
    from freshcrawl.frontier import CrawlSettings, Frontier, parse_url_list
    from freshcrawl.store import open_store
    from freshcrawl.testing import TestWeb, make_pages

    class Timed(Frontier):
        plan_times: list[tuple[float, float]]

        def compute_plan(self, job):
            t0 = time.monotonic()
            plan = super().compute_plan(job)
            self.__dict__.setdefault("plan_times", []).append((t0, time.monotonic()))
            return plan

    class Blocking:
        """The frontier without the three-step plan: the loop re-plans on the event loop."""

        def __init__(self, frontier: Frontier) -> None:
            self._f = frontier

        def __getattr__(self, name):
            if name in ("prepare_plan", "compute_plan", "apply_plan"):
                raise AttributeError(name)
            return getattr(self._f, name)

    class TimedFetcher(Fetcher):
        starts: list[float]

        async def fetch(self, request):
            self.__dict__.setdefault("starts", []).append(time.monotonic())
            return await super().fetch(request)

    web = TestWeb(make_pages(n_pages, n_hosts, (0.01, 0.1), seed=3), hosts=n_hosts, seed=3).start()
    store = open_store(folder / "crawl.db")
    try:
        store.add_pages(parse_url_list(web.urls()), now=time.time())
        # caps of 86,400 / 0.25 = 345,600 visits/day per host against a budget of 1,000 visits/s
        # (86.4 million a day): binding. By the first re-plan each page has a few observations.
        settings = CrawlSettings(
            budget=86_400.0 * 1000, min_delay_s=0.25, replan_every_s=replan_every_s, seed=1
        )
        t0 = time.monotonic()
        frontier = Timed(store, settings)
        first_plan_s = time.monotonic() - t0
        fetcher = TimedFetcher(total_timeout_s=5.0)
        stop = asyncio.Event()

        async def watch():
            while len(frontier.__dict__.get("plan_times", [])) < 2:
                await asyncio.sleep(0.1)
            await asyncio.sleep(1.0)
            stop.set()

        async def run():
            async with fetcher:
                watcher = asyncio.ensure_future(watch())
                target = Blocking(frontier) if blocking else frontier
                await crawl(target, fetcher, duration_s=600.0, stop=stop, max_in_flight=n_hosts)
                watcher.cancel()

        asyncio.run(run())
    finally:
        store.close()
        web.stop()
    r0, r1 = frontier.plan_times[1]
    during = [t for t in fetcher.starts if r0 <= t <= r1]
    points = [r0, *during, r1]
    gap = max(b - a for a, b in itertools.pairwise(points))
    return {
        "first_plan_s": first_plan_s,
        "first_replan_s": r1 - r0,
        "longest_gap_s": gap,
        "fetches_during": len(during),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=80)
    parser.add_argument("--hosts", type=int, default=40)
    parser.add_argument(
        "--replan-every", type=float, default=12.0, help="seconds before the first re-plan"
    )
    parser.add_argument(
        "--blocking", action="store_true", help="re-plan on the event loop (the old way)"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        got = crawl_once(Path(args.child), args.pages, args.hosts, args.blocking, args.replan_every)
        print(json.dumps(got))
        return
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=str(Path(tmp) / "numba"))
        cmd = [
            sys.executable,
            __file__,
            "--child",
            tmp,
            "--pages",
            str(args.pages),
            "--hosts",
            str(args.hosts),
        ]
        if args.blocking:
            cmd.append("--blocking")
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if done.returncode:
            raise SystemExit(done.stderr)
        got = json.loads(done.stdout.strip().splitlines()[-1])
    mode = "on the event loop" if args.blocking else "in a worker thread"
    print(f"plans {mode}, {args.pages} pages on {args.hosts} hosts, empty numba cache")
    print(f"first plan (before the loop)       {got['first_plan_s']:8.2f} s")
    print(f"first re-plan                       {got['first_replan_s']:8.2f} s")
    print(f"longest gap between fetch starts    {got['longest_gap_s']:8.2f} s")
    print(f"fetches started during the re-plan  {got['fetches_during']:8d}")


if __name__ == "__main__":
    main()
