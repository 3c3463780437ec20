"""The live crawl loop: a frontier's due visits through a fetcher, their outcomes back, re-plans on time.

:func:`crawl` runs until its time is up or it is asked to stop; then it lets the visits in flight
finish (each is bounded by the fetcher's timeouts), commits them and returns. It talks to the frontier
through the small interface of :class:`FrontierLike`, so the same loop drives a frontier in this
process or one served to many fetcher processes.

Planning never blocks fetching: a frontier that offers ``prepare_plan``, ``compute_plan`` and
``apply_plan`` (:class:`freshcrawl.frontier.Frontier` does) has its plan computed in a worker thread
(``asyncio.to_thread``) while the loop keeps dispatching visits with the plan in force; the new
plan takes over once it is ready (such a frontier's ``next_replan`` is ``inf`` while a plan is under
way).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from freshcrawl.crawler.outcome import FetchOutcome, RobotsOutcome

__all__ = ["FrontierLike", "ArchiveLike", "CrawlStats", "crawl"]


class FrontierLike(Protocol):
    """What the crawl loop needs of a frontier (:class:`freshcrawl.frontier.Frontier` has it)."""

    next_replan: float

    def due(self, now: float | None = None, limit: int = 64) -> list:
        """Visits (``Visit`` or ``RobotsVisit``) that may start now, marked in flight."""

    def record(self, results: list[tuple[object, FetchOutcome]]) -> None:
        """Commit page visits' outcomes."""

    def record_robots(self, visit: object, out: RobotsOutcome) -> None:
        """Commit a robots.txt fetch."""

    def next_wakeup(self, now: float | None = None) -> float:
        """Earliest time something new may be due, seconds since the epoch."""

    def replan(self, now: float | None = None) -> None:
        """Re-plan the crawl."""


class ArchiveLike(Protocol):
    """What the crawl loop needs of an archive (:class:`freshcrawl.archive.WarcArchive` has it)."""

    def write_visits(self, results: list[tuple[object, FetchOutcome]]) -> list:
        """Write and sync the records of `results`; raise ArchiveError (``n_done``) on failure."""


def _archive_then_record(archive: ArchiveLike, frontier: FrontierLike, batch: list) -> None:
    """Write the batch's records, then commit it; on an archive failure commit what has records."""
    from freshcrawl.errors import ArchiveError

    try:
        archive.write_visits(list(batch))
    except ArchiveError as err:
        if err.n_done:
            frontier.record(list(batch[: err.n_done]))
        raise
    frontier.record(list(batch))


@dataclass
class CrawlStats:
    """What one :func:`crawl` call did.

    Attributes
    ----------
    visits : int
        Page visits whose outcome was committed.
    changes : int
        Visits that found the page changed.
    errors : int
        Visits without information (errors, throttling, robots).
    robots : int
        robots.txt fetches.
    replans : int
        Plans made.
    elapsed_s : float
        Wall-clock seconds.
    """

    visits: int = 0
    changes: int = 0
    errors: int = 0
    robots: int = 0
    replans: int = 0
    elapsed_s: float = 0.0


async def crawl(
    frontier: FrontierLike,
    fetcher,
    *,
    duration_s: float | None = None,
    max_in_flight: int = 64,
    stop: asyncio.Event | None = None,
    on_progress: Callable[[CrawlStats], None] | None = None,
    progress_every_s: float = 0.5,
    clock: Callable[[], float] = time.time,
    archive: ArchiveLike | None = None,
) -> CrawlStats:
    """Crawl until ``duration_s`` has passed or ``stop`` is set; return what was done.

    Parameters
    ----------
    frontier : FrontierLike
        Hands out due visits and takes their outcomes.
    fetcher : freshcrawl.crawler.Fetcher
        An open fetcher (``fetch`` and ``fetch_robots`` coroutines).
    duration_s : float, optional
        Seconds to run; None runs until ``stop`` is set.
    max_in_flight : int, default=64
        Requests in flight at once (over all hosts; each host has at most one).
    stop : asyncio.Event, optional
        Set it (e.g. from a signal handler) to finish the visits in flight, commit and return.
    on_progress : callable, optional
        Called with the running :class:`CrawlStats` every ``progress_every_s`` seconds and at the end.
    archive : ArchiveLike, optional
        Where the copies go (:class:`freshcrawl.archive.WarcArchive`): each batch of outcomes is
        written there, and on disk, before the frontier commits it.

    Raises
    ------
    ValueError
        If ``max_in_flight`` < 1 or ``duration_s`` < 0.
    freshcrawl.errors.ArchiveError
        If the archive cannot be written: the visits of the batch that have their records are
        committed, no other, and the crawl stops (``asyncio.run`` cancels the visits in flight).
    """
    from freshcrawl.frontier import RobotsVisit

    if max_in_flight < 1:
        raise ValueError(f"max_in_flight must be >= 1; got {max_in_flight!r}")
    if duration_s is not None and not duration_s >= 0:
        raise ValueError(f"duration_s must be >= 0 seconds; got {duration_s!r}")
    stop = stop or asyncio.Event()
    stats = CrawlStats()
    threaded = all(hasattr(frontier, name) for name in ("prepare_plan", "compute_plan", "apply_plan"))
    planning: asyncio.Future | None = None
    job = None
    start = clock()
    end = None if duration_s is None else start + duration_s
    tasks: dict[asyncio.Task, object] = {}
    done_pages: list[tuple[object, FetchOutcome]] = []
    last_progress = start

    async def visit(item):
        if isinstance(item, RobotsVisit):
            return await fetcher.fetch_robots(item.origin, hop_delay_s=item.delay_s)
        return await fetcher.fetch(item.request)

    def collect(finished) -> None:
        for task in finished:
            item = tasks.pop(task)
            out = task.result()
            if isinstance(item, RobotsVisit):
                frontier.record_robots(item, out)
                stats.robots += 1
            else:
                done_pages.append((item, out))
        if done_pages:
            if archive is not None:
                _archive_then_record(archive, frontier, done_pages)
            else:
                frontier.record(list(done_pages))
            for _, out in done_pages:
                stats.visits += 1
                stats.changes += out.outcome.value == "changed"
                stats.errors += out.outcome.value == "no-info"
            done_pages.clear()

    def apply_ready() -> None:
        nonlocal planning, job
        if planning is not None and planning.done():
            plan, planning = planning.result(), None
            frontier.apply_plan(job, plan, now=clock())
            job = None
            stats.replans += 1

    while True:
        now = clock()
        if stop.is_set() or (end is not None and now >= end):
            break
        apply_ready()
        if planning is None and now >= frontier.next_replan:
            if threaded:  # the previous plan serves visits until this one is ready
                job = frontier.prepare_plan(now)
                planning = asyncio.ensure_future(asyncio.to_thread(frontier.compute_plan, job))
            else:
                frontier.replan(now)
                stats.replans += 1
        free = max_in_flight - len(tasks)
        if free > 0:
            for item in frontier.due(now, free):
                tasks[asyncio.ensure_future(visit(item))] = item
        wake = min(frontier.next_wakeup(now), frontier.next_replan)
        if end is not None:
            wake = min(wake, end)
        timeout = min(max(wake - clock(), 0.0), 0.25)
        waiting = set(tasks) | ({planning} if planning is not None else set())
        if waiting:
            finished, _ = await asyncio.wait(waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            collect(finished - {planning})
        else:
            try:
                await asyncio.wait_for(stop.wait(), timeout=max(timeout, 0.001))
            except TimeoutError:
                pass
        if on_progress is not None and clock() - last_progress >= progress_every_s:
            stats.elapsed_s = clock() - start
            on_progress(stats)
            last_progress = clock()
    if tasks:  # the visits in flight finish (bounded by the fetcher's timeouts) and are committed
        finished, _ = await asyncio.wait(tasks)
        collect(finished)
    if planning is not None:  # a plan under way is finished and committed (its thread cannot be stopped)
        await asyncio.wait({planning})
        apply_ready()
    stats.elapsed_s = clock() - start
    if on_progress is not None:
        on_progress(stats)
    return stats
