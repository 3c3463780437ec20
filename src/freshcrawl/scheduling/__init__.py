"""Dispatch of polls: which page to poll next, given the rates of an allocation.

:func:`edf_schedule` turns rates over pages into a deterministic earliest-deadline-first sequence of polls
(a page with rate x_i is due every 1/x_i); :func:`edf2_choose` is the EDF between two subtrees that
H-TRAA (seed 004) runs at every node of a poll's path; :class:`EDFSchedule` is the schedule returned.
"""

from freshcrawl.scheduling.edf import EDFSchedule, edf2_choose, edf_schedule

__all__ = ["edf_schedule", "edf2_choose", "EDFSchedule"]
