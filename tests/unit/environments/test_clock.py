"""Clocks."""

from __future__ import annotations

import time

import pytest

from freshcrawl.environments import Clock, SimulatedClock, WallClock
from freshcrawl.units import SECONDS_PER_DAY


def test_simulated_clock_jumps_and_never_goes_back():
    clock = SimulatedClock(3.0)
    assert isinstance(clock, Clock)
    clock.wait_until(3.0)
    clock.wait_until(7.25)
    assert clock.now() == 7.25
    with pytest.raises(ValueError, match=r"t must be >= the current time 7.25 days; got 7.0"):
        clock.wait_until(7.0)


def test_wall_clock_reads_days_since_the_epoch_and_waits():
    clock = WallClock(max_sleep_s=0.01)
    assert isinstance(clock, Clock)
    assert abs(clock.now() - time.time() / SECONDS_PER_DAY) < 1.0 / SECONDS_PER_DAY
    target = clock.now() + 0.02 / SECONDS_PER_DAY
    clock.wait_until(target)
    assert clock.now() >= target
    with pytest.raises(ValueError, match="max_sleep_s must be finite and >= 0"):
        WallClock(max_sleep_s=-1.0)
