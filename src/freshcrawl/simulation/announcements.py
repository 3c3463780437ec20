"""Replaying a real change history with announcements: what completely observed pages are worth.

A share of the pages announce their changes (their true change times from the history, optionally
late or with some changes not announced); the others are observed only at visits. Both cases are
planned by the same allocation at the same budget (Kolobov et al., NeurIPS 2019, the mixed problem of
LambdaCrawl: ``observed_completely`` of :func:`freshcrawl.allocation.allocate`) on the true rates of
the window (the oracle of the design's "Measuring freshness on a replayed history"), and freshness
is the exact time average on the real change times, so the difference is the value of the
announcements themselves, at equal visits.

Without announcements each page is visited periodically at its rate p_i with a random phase. With
them, a completely observed page is visited at each announced change (its time plus the delay) with
probability ρ_i = p_i / Δ_i, Δ_i the rate of its announced changes; the others as before.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from freshcrawl._validation import check_interval, check_positive
from freshcrawl.traces.history import ChangeHistory

__all__ = ["AnnouncementReplay", "replay_announcements"]


@dataclass(frozen=True, slots=True)
class AnnouncementReplay:
    """Freshness with and without announcements on one history, window and seed.

    Attributes
    ----------
    n_pages : int
        Pages alive over the whole window.
    freshness_without, freshness_with : ndarray of float, shape (n_pages,)
        Each page's time-averaged freshness over the window, fraction in [0, 1].
    visits_without, visits_with : int
        Visits made in the window.
    complete : ndarray of bool, shape (n_pages,)
        The pages that announce.
    """

    n_pages: int
    freshness_without: NDArray[np.float64]
    freshness_with: NDArray[np.float64]
    visits_without: int
    visits_with: int
    complete: NDArray[np.bool_]


def _freshness(
    changes: NDArray[np.float64], visits: NDArray[np.float64], start: float, end: float
) -> float:
    """Exact fraction of [start, end] a copy synced at ``start`` and refreshed at ``visits`` is fresh."""
    refresh = np.concatenate(([start], np.sort(visits[(visits > start) & (visits < end)])))
    nxt = np.append(refresh[1:], end)
    padded = np.append(changes, np.inf)  # no change after the last one
    first_change = padded[np.searchsorted(changes, refresh, side="right")]
    fresh = np.minimum(first_change, nxt) - refresh
    return float(np.clip(fresh, 0.0, None).sum() / (end - start))


def replay_announcements(
    history: ChangeHistory,
    *,
    start: float,
    end: float,
    budget: float,
    share: float,
    delay_days: float = 0.0,
    miss: float = 0.0,
    objective: str = "freshness-periodic",
    rng: np.random.Generator | int | None = None,
) -> AnnouncementReplay:
    """Plan and replay ``history`` over ``[start, end]`` with a share of pages announcing, and without.

    Parameters
    ----------
    history : ChangeHistory
        Real change times (days since the epoch).
    start, end : float
        The window, days since the epoch; pages alive over all of it are replayed.
    budget : float
        B, visits per day (> 0).
    share : float
        Fraction in [0, 1] of the pages that announce (drawn at random).
    delay_days : float, default=0.0
        Days from a change to its announcement reaching the crawler (>= 0).
    miss : float, default=0.0
        Probability in [0, 1) that a change is not announced.
    objective : str, default="freshness-periodic"
        Objective of the allocation (a freshness or the harmonic objective).
    rng : numpy.random.Generator or int or None
        The share, the announcements missed, the phases and the follow draws.

    Returns
    -------
    AnnouncementReplay

    Raises
    ------
    ValueError
        If the window is empty, no page is alive over it, or a parameter is out of range.
    """
    budget = check_positive("budget", budget, unit="visits/day")
    share = check_interval("share", share, low=0.0, high=1.0, closed="both")
    miss = check_interval("miss", miss, low=0.0, high=1.0, closed="left")
    if not (np.isfinite(delay_days) and delay_days >= 0):
        raise ValueError(f"delay_days must be finite and >= 0 days; got {delay_days!r}")
    if not end > start:
        raise ValueError(
            f"end must be > start (days since the epoch); got start={start!r}, end={end!r}"
        )
    from freshcrawl.allocation import allocate

    gen = np.random.default_rng(rng)
    alive = np.flatnonzero((history.born <= start) & (history.died >= end))
    if alive.size == 0:
        raise ValueError(
            f"no page of the history is alive over [{start!r}, {end!r}] (days since the epoch)"
        )
    span = end - start
    changes = []
    for i in alive:
        t = history.page_times(int(i))
        changes.append(t[(t > start) & (t <= end)])
    n = alive.size
    delta = np.array([c.shape[0] / span for c in changes])
    complete = gen.random(n) < share
    announced = [
        c[gen.random(c.shape[0]) >= miss] if complete[k] else c[:0] for k, c in enumerate(changes)
    ]
    delta_ann = np.array([a.shape[0] / span for a in announced])

    def periodic(p: NDArray[np.float64]) -> list[NDArray[np.float64]]:
        out = []
        for k in range(n):
            if p[k] <= 0:
                out.append(np.empty(0))
                continue
            period = 1.0 / p[k]
            out.append(start + period * gen.random() + period * np.arange(int(span * p[k]) + 1))
        return out

    plain = allocate(delta, budget, objective=objective).p
    visits0 = periodic(plain)
    f0 = np.array([_freshness(changes[k], visits0[k], start, end) for k in range(n)])
    n0 = sum(int(((v > start) & (v < end)).sum()) for v in visits0)

    mixed_complete = complete & (delta_ann > 0)
    d = np.where(mixed_complete, delta_ann, delta)
    p = allocate(d, budget, objective=objective, observed_completely=mixed_complete).p
    visits1 = periodic(np.where(mixed_complete, 0.0, p))
    for k in np.flatnonzero(mixed_complete):
        rho = min(1.0, p[k] / d[k])
        follow = announced[k][gen.random(announced[k].shape[0]) < rho]
        visits1[k] = follow + delay_days
    f1 = np.array([_freshness(changes[k], visits1[k], start, end) for k in range(n)])
    n1 = sum(int(((v > start) & (v < end)).sum()) for v in visits1)
    return AnnouncementReplay(n, f0, f1, n0, n1, complete)
