"""Planning never blocks fetching: a slow re-plan runs beside the crawl, not in front of it.

A crawl of the test web whose frontier takes over 2 s of CPU to compute its first re-plan (pure
Python, holding the GIL between switches, like a compile): the longest gap between two fetch starts
while that plan is computed stays under a second, the old plan keeps serving visits meanwhile, and
the new plan is applied once ready.
"""

from __future__ import annotations

import asyncio
import itertools
import time

from freshcrawl.crawler.fetcher import Fetcher
from freshcrawl.crawler.loop import crawl
from freshcrawl.frontier import CrawlSettings, Frontier, parse_url_list
from freshcrawl.store import open_store
from freshcrawl.testing import TestWeb, make_pages

SLOW_PLAN_S = 2.5


class SlowPlanFrontier(Frontier):
    """A frontier whose re-plans (not the first plan) burn ``SLOW_PLAN_S`` seconds of CPU first."""

    def __init__(self, *args, **kwargs) -> None:
        self.plan_times: list[tuple[float, float]] = []
        self._slow = False
        super().__init__(*args, **kwargs)
        self._slow = True

    def compute_plan(self, job):
        t0 = time.monotonic()
        if self._slow:
            x = 0
            while time.monotonic() - t0 < SLOW_PLAN_S:
                x += sum(i * i for i in range(1000))
        plan = super().compute_plan(job)
        self.plan_times.append((t0, time.monotonic()))
        return plan


class TimedFetcher(Fetcher):
    """The real fetcher, noting when each visit starts."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.starts: list[float] = []

    async def fetch(self, request):
        self.starts.append(time.monotonic())
        return await super().fetch(request)


def test_a_slow_replan_does_not_stall_fetching(tmp_path):
    web = TestWeb(make_pages(200, 20, (0.01, 0.1), seed=3), hosts=20, seed=3).start()
    store = open_store(tmp_path / "crawl.db")
    try:
        store.add_pages(parse_url_list(web.urls()), now=time.time())
        settings = CrawlSettings(
            budget=86_400.0 * 100, min_delay_s=0.02, replan_every_s=1.5, seed=1
        )
        frontier = SlowPlanFrontier(store, settings)
        fetcher = TimedFetcher(total_timeout_s=5.0)

        async def run():
            async with fetcher:
                return await crawl(frontier, fetcher, duration_s=6.0, max_in_flight=20)

        stats = asyncio.run(run())
    finally:
        store.close()
        web.stop()
    assert stats.replans >= 1
    t0, t1 = frontier.plan_times[1]  # the first re-plan ([0] is the frontier's first plan)
    assert t1 - t0 >= SLOW_PLAN_S
    during = [t for t in fetcher.starts if t0 <= t <= t1]
    assert len(during) >= 20, f"only {len(during)} visits started during a {t1 - t0:.1f} s plan"
    points = [t0, *during, t1]
    gap = max(b - a for a, b in itertools.pairwise(points))
    assert gap < 1.0, f"fetching stalled {gap:.2f} s during a {t1 - t0:.1f} s re-plan"


def test_a_served_lease_that_finds_a_plan_due_wakes_the_planner_and_does_not_wait_for_it(tmp_path):
    from freshcrawl.service import FrontierService

    settings = CrawlSettings(budget=86_400.0, min_delay_s=0.0, replan_every_s=60.0, seed=1)
    urls = [(f"http://127.0.0.1:9/page/{i}", 1.0) for i in range(50)]
    for background in (True, False):
        service = FrontierService(
            str(tmp_path / f"crawl-{background}.db"), settings, background_planning=background
        )
        try:
            service.add_urls(None, urls)
            planned = service.crawl_info(None).planned_at
            later = time.time() + 2 * settings.replan_every_s  # a plan is due
            service.lease(None, "w", 5, now=later)
            if background:
                # the lease was answered with the plan in force and asked the planner for a new one
                assert service.plan_wanted.is_set()
                assert service.crawl_info(None, now=later).planned_at == planned
                assert service.replan_all(now=later) == 1
            else:
                assert not service.plan_wanted.is_set()
            assert service.crawl_info(None, now=later).planned_at == later
        finally:
            service.close()
