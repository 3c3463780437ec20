"""Helpers of the engine's budget tests: record the visits an environment receives, and measure them
against the budget guarantee (every window of W days holds at most B W + n_pages visits)."""

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
