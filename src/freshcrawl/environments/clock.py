"""Clocks: the simulated clock of the engine; a live crawler supplies a wall-clock one.

Times are days; a clock's origin is its own (the simulation uses days since the unix epoch for
replayed histories and days since 0 for synthetic pages).
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

from freshcrawl._validation import check_nonnegative
from freshcrawl.units import SECONDS_PER_DAY

__all__ = ["Clock", "SimulatedClock", "WallClock"]


@runtime_checkable
class Clock(Protocol):
    """Tells the time and waits for a later one, in days."""

    def now(self) -> float:
        """Current time, days."""

    def wait_until(self, t: float) -> None:
        """Return once the time is at least ``t`` (days)."""


class SimulatedClock:
    """A clock that jumps: ``wait_until(t)`` sets the time to ``t`` at once.

    Parameters
    ----------
    start : float, default=0.0
        Initial time, days.

    Raises
    ------
    ValueError
        If ``wait_until`` is asked to go back in time.

    Examples
    --------
    >>> clock = SimulatedClock(10.0)
    >>> clock.wait_until(12.5)
    >>> clock.now()
    12.5
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)

    def now(self) -> float:
        """Current simulated time, days."""
        return self._now

    def wait_until(self, t: float) -> None:
        """Jump to ``t`` days; ``t`` must not be earlier than :meth:`now`."""
        if not t >= self._now:
            raise ValueError(f"t must be >= the current time {self._now} days; got {t!r}")
        self._now = float(t)


class WallClock:
    """The real clock, in days since the unix epoch (what a live crawler runs on).

    Parameters
    ----------
    max_sleep_s : float, default=60.0
        Longest single sleep in seconds (the clock re-checks the time after it).
    """

    def __init__(self, max_sleep_s: float = 60.0) -> None:
        self.max_sleep_s = check_nonnegative("max_sleep_s", max_sleep_s, unit="seconds")

    def now(self) -> float:
        """Current time, days since the unix epoch."""
        return time.time() / SECONDS_PER_DAY

    def wait_until(self, t: float) -> None:
        """Sleep until the time is at least ``t`` days since the epoch."""
        while (left := (t - self.now()) * SECONDS_PER_DAY) > 0:
            time.sleep(min(left, self.max_sleep_s))
