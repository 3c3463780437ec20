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

Database outages. When the frontier raises :class:`~freshcrawl.errors.DatabaseUnavailableError`
(its store retried and gave up), the loop pauses: no new visit starts, the visits in flight finish
and their outcomes wait in memory (at most ``max_in_flight`` of them), and the commit is tried again
with capped, jittered back-off. The first commit that succeeds ends the outage and fetching resumes.
One log line marks the start of an outage and one its end (logger ``freshcrawl.crawl``), and
:class:`CrawlStats` counts them. An outage longer than ``give_up_s`` ends the crawl with a
``DatabaseUnavailableError`` naming the database.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from freshcrawl.crawler.outcome import FetchOutcome, RobotsOutcome
from freshcrawl.errors import DatabaseUnavailableError

__all__ = ["ArchiveLike", "CrawlStats", "FrontierLike", "crawl"]

log = logging.getLogger("freshcrawl.crawl")

#: Longest wait between two tries to commit during an outage, seconds.
OUTAGE_PROBE_MAX_S = 5.0


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
    outages : int
        Database outages lived through (fetching paused until the database answered again).
    outage_s : float
        Seconds spent in those outages.
    pending : int
        Outcomes waiting in memory for the database (0 outside an outage).
    """

    visits: int = 0
    changes: int = 0
    errors: int = 0
    robots: int = 0
    replans: int = 0
    elapsed_s: float = 0.0
    outages: int = 0
    outage_s: float = 0.0
    pending: int = 0


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
    give_up_s: float = 600.0,
    watchdog: Callable[[], None] | None = None,
    watchdog_every_s: float = 1.0,
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
    give_up_s : float, default=600.0
        Seconds of a database outage after which the crawl stops (the outcomes still in memory are
        lost; their requests were made, and a restarted crawl waits a host's delay before its first).
    watchdog : callable, optional
        Called every ``watchdog_every_s`` seconds and before resuming after an outage: the writer
        lock's check (:meth:`freshcrawl.store.writer.WriterLock.ensure`). It may raise
        ``DatabaseUnavailableError`` (an outage) or another error, which ends the crawl at once.

    Raises
    ------
    ValueError
        If ``max_in_flight`` < 1 or ``duration_s`` < 0.
    freshcrawl.errors.ArchiveError
        If the archive cannot be written: the visits of the batch that have their records are
        committed, no other, and the crawl stops (``asyncio.run`` cancels the visits in flight).
    DatabaseUnavailableError
        If a database outage lasts longer than ``give_up_s`` seconds.
    WriterLockLostError
        (from ``watchdog``) If another process took the crawl database's writer lock.
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
    done_robots: list[tuple[object, RobotsOutcome]] = []
    last_progress = start
    outage_since: float | None = None
    probe_wait = 0.0
    next_probe = 0.0
    next_watch = start
    last_error: list[DatabaseUnavailableError] = []

    async def visit(item):
        if isinstance(item, RobotsVisit):
            return await fetcher.fetch_robots(item.origin, hop_delay_s=item.delay_s)
        return await fetcher.fetch(item.request)

    def collect(finished) -> None:
        for task in finished:
            item = tasks.pop(task)
            out = task.result()
            if isinstance(item, RobotsVisit):
                done_robots.append((item, out))
            else:
                done_pages.append((item, out))
        stats.pending = len(done_pages) + len(done_robots)

    def commit() -> None:
        """Commit the outcomes waiting (each call all or nothing); DatabaseUnavailableError if down."""
        if watchdog is not None and outage_since is not None:
            watchdog()
        while done_robots:
            frontier.record_robots(*done_robots[0])
            done_robots.pop(0)
            stats.robots += 1
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
        if outage_since is not None and hasattr(frontier, "ping"):
            frontier.ping()  # nothing was waiting: the outage ends when the database answers
        stats.pending = 0

    def outage_began(err: DatabaseUnavailableError) -> None:
        nonlocal outage_since, probe_wait, next_probe
        last_error[:] = [err]
        if outage_since is None:
            # the store retried before it gave up: the outage began when its first try did
            outage_since = clock() - (max(0.0, time.time() - err.since) if err.since is not None else 0.0)
            stats.outages += 1
            log.warning("database outage: %s; fetching paused, %d outcome(s) kept in memory", err,
                        len(done_pages) + len(done_robots) + len(tasks))
            probe_wait = 0.5
        next_probe = clock() + probe_wait * (0.5 + 0.5 * random.random())
        probe_wait = min(2 * probe_wait, OUTAGE_PROBE_MAX_S)

    def outage_ended() -> None:
        nonlocal outage_since
        if outage_since is not None:
            lasted = clock() - outage_since
            stats.outage_s += lasted
            outage_since = None
            log.warning("database back after %.1f s; fetching resumed", lasted)

    def try_commit() -> bool:
        try:
            commit()
        except DatabaseUnavailableError as err:
            outage_began(err)
            return False
        outage_ended()
        return True

    def apply_ready() -> None:
        """The plan computed in the worker thread takes over (committed); a plan that failed is
        dropped, the one in force stays and the next comes at ``next_replan``."""
        nonlocal planning, job
        if planning is not None and planning.done():
            task, done_job, planning, job = planning, job, None, None
            try:
                plan = task.result()
            except Exception:
                frontier.cancel_plan(done_job)
                raise
            frontier.apply_plan(done_job, plan, now=clock())
            stats.replans += 1

    while True:
        now = clock()
        if stop.is_set() or (end is not None and now >= end):
            break
        if outage_since is not None:
            if now - outage_since > give_up_s:
                n = len(done_pages) + len(done_robots)
                raise DatabaseUnavailableError(
                    f"gave up after a database outage of {now - outage_since:.0f} s (the limit is "
                    f"{give_up_s:.0f} s; {n} outcome(s) not committed): {last_error[0]}")
            if now >= next_probe:
                try_commit()
        elif done_pages or done_robots:
            try_commit()
        if outage_since is None and watchdog is not None and now >= next_watch:
            next_watch = now + watchdog_every_s
            try:
                watchdog()
            except DatabaseUnavailableError as err:
                outage_began(err)
        if outage_since is None:
            try:
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
            except DatabaseUnavailableError as err:
                outage_began(err)
        if outage_since is None:
            wake = min(frontier.next_wakeup(now), frontier.next_replan)
        else:
            wake = next_probe
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
    if done_pages or done_robots:
        deadline = clock() + (give_up_s if outage_since is None else max(0.0, give_up_s - (clock() - outage_since)))
        while not try_commit():
            if clock() >= deadline:
                raise DatabaseUnavailableError(
                    f"stopped with {len(done_pages) + len(done_robots)} outcome(s) not committed: the "
                    f"database stayed unavailable for {give_up_s:.0f} s")
            await asyncio.sleep(max(0.0, next_probe - clock()))
    if planning is not None:  # a plan under way is finished and committed (its thread cannot be stopped)
        await asyncio.wait({planning})
        try:
            apply_ready()
        except DatabaseUnavailableError as err:  # the plan in force stays; the next run plans again
            log.warning("the last plan was not committed: %s", err)
    stats.elapsed_s = clock() - start
    if on_progress is not None:
        on_progress(stats)
    return stats
