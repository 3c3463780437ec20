"""Replaying a history with announcements: exact freshness, equal visits, and what they are worth."""

from __future__ import annotations

import numpy as np
import pytest

from freshcrawl.simulation.announcements import _freshness, replay_announcements
from freshcrawl.traces.history import ChangeHistory


def _history(n_pages: int, rate: float, days: float, seed: int) -> ChangeHistory:
    rng = np.random.default_rng(seed)
    times = [np.sort(rng.uniform(0, days, rng.poisson(rate * days))) for _ in range(n_pages)]
    offsets = np.concatenate(([0], np.cumsum([t.shape[0] for t in times])))
    return ChangeHistory(
        np.array([f"p{i}" for i in range(n_pages)], dtype=object),
        np.zeros(n_pages),
        np.full(n_pages, np.inf),
        offsets,
        np.concatenate(times),
        0.0,
        days,
    )


def test_exact_freshness():
    changes = np.array([2.0, 5.0, 6.0])
    # synced at 0: fresh [0, 2); visit at 3 fresh [3, 5); visit at 7 fresh [7, 10)
    assert _freshness(changes, np.array([3.0, 7.0]), 0.0, 10.0) == pytest.approx(0.7)
    assert _freshness(changes[:0], np.empty(0), 0.0, 10.0) == 1.0
    assert _freshness(changes, np.empty(0), 0.0, 10.0) == pytest.approx(0.2)


def test_announcing_pages_are_fresh_at_equal_visits():
    h = _history(200, rate=1.0, days=100.0, seed=3)
    budget = 100.0  # half a visit per change
    r = replay_announcements(h, start=0.0, end=100.0, budget=budget, share=0.5, rng=0)
    assert r.n_pages == 200 and 60 < r.complete.sum() < 140
    # both plans spend the budget: visits within a few percent of B x window (the draws of ρ, phases)
    assert abs(r.visits_without - budget * 100) < 0.02 * budget * 100
    assert abs(r.visits_with - r.visits_without) < 0.05 * budget * 100
    diff = r.freshness_with - r.freshness_without
    # most announcing pages follow every change (ρ = 1: always fresh), the others give up some of
    # their visits to them, and the whole gains: about +0.08 here (a deterministic seed)
    assert np.mean(r.freshness_with[r.complete] == 1.0) > 0.5
    assert diff[~r.complete].mean() < 0 < diff[r.complete].mean()
    assert diff.mean() > 0.03
    # no share announcing: the same plan, freshness equal up to the phases drawn
    r0 = replay_announcements(h, start=0.0, end=100.0, budget=budget, share=0.0, rng=0)
    d0 = r0.freshness_with - r0.freshness_without
    assert abs(d0.mean()) < 3 * d0.std(ddof=1) / np.sqrt(200) + 1e-9


def test_late_or_missing_announcements_are_worth_less():
    h = _history(200, rate=1.0, days=100.0, seed=4)
    kw = {"start": 0.0, "end": 100.0, "budget": 100.0, "share": 1.0, "rng": 1}
    exact = replay_announcements(h, **kw).freshness_with.mean()
    late = replay_announcements(h, delay_days=0.2, **kw).freshness_with.mean()
    missed = replay_announcements(h, miss=0.3, **kw).freshness_with.mean()
    assert exact > late and exact > missed


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"share": 1.5}, "share"),
        ({"miss": 1.0}, "miss"),
        ({"delay_days": -1.0}, "delay_days"),
        ({"budget": 0.0}, "budget"),
        ({"end": 0.0}, "end must be > start"),
    ],
)
def test_bad_arguments(kwargs, match):
    h = _history(3, rate=1.0, days=10.0, seed=0)
    args = {"start": 0.0, "end": 10.0, "budget": 1.0, "share": 0.5} | kwargs
    with pytest.raises(ValueError, match=match):
        replay_announcements(h, **args)
