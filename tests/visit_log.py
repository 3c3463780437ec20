"""Helpers of the engine's budget tests: record the visits an environment receives, and measure them
against the budget rule (at most B t visits over the first t days of the window, at most B W + one day
of budget in any window of W days)."""

from __future__ import annotations

import numpy as np


def record_visit_times(env) -> list[np.ndarray]:
    """A list that collects the times (days) of every batch of visits the engine makes to ``env``."""
    seen: list[np.ndarray] = []
    visit = env.visit

    def spy(pages, times, **kw):
        seen.append(np.asarray(times))
        return visit(pages, times, **kw)

    env.visit = spy
    return seen


def max_window_excess(times: np.ndarray, budget: float) -> float:
    """max over closed windows [t_i, t_j] of (visits in it) - B (t_j - t_i)."""
    if times.size == 0:
        return 0.0
    t = np.sort(times)
    j = np.arange(t.size)
    a = (j + 1) - budget * t  # visits up to j
    b = j - budget * t  # visits before i
    return float(np.max(a - np.minimum.accumulate(b)))


def max_prefix_excess(times: np.ndarray, budget: float, start: float) -> float:
    """max over visits j of (visits up to and including j) - B (t_j - start)."""
    if times.size == 0:
        return 0.0
    t = np.sort(times)
    return float(np.max(np.arange(1, t.size + 1) - budget * (t - start)))
