"""Dispatch of polls: which page to poll next, given the rates of an allocation.

:func:`edf_schedule` turns rates over pages into a deterministic earliest-deadline-first sequence of polls
(a page with rate x_i is due every 1/x_i); :func:`edf2_choose` is the EDF between two subtrees that
H-TRAA (seed 004) runs at every node of a poll's path; :class:`EDFSchedule` is the schedule returned.
:func:`periodic_visits` turns rates into the visit times of each page over a stretch of time, keeping
each page's phase across rate changes; :func:`visit_periods` is the time between two visits at a
rate, which both schedules and the live frontier's due times use.
"""

from freshcrawl.scheduling.periodic import periodic_visits, visit_periods

__all__ = ["edf_schedule", "edf2_choose", "EDFSchedule", "periodic_visits", "visit_periods"]


def __getattr__(name: str):
    # the EDF schedule is compiled with numba: loaded on first use, so that the periodic dispatch
    # (simulation, live crawl) does not load numba
    if name in ("EDFSchedule", "edf2_choose", "edf_schedule"):
        from freshcrawl.scheduling import edf

        return getattr(edf, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
