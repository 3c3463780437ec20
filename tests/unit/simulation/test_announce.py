"""Announcements in the replay: pages that announce their changes, planned as completely observed,
against the same policy without them at equal visits."""

from __future__ import annotations

import numpy as np
import pytest

from freshcrawl.environments import PoissonEnvironment, ReplayEnvironment
from freshcrawl.estimators.bursty.priors import gamma_prior
from freshcrawl.policies import PolicyOptions, make_policy
from freshcrawl.policies.baselines import make_uniform
from freshcrawl.simulation import TokenBucket, simulate
from freshcrawl.simulation.announce import AnnouncedChanges, Announcements
from freshcrawl.traces.history import ChangeHistory

DAYS = 40.0


def _history(n_pages: int, days: float, seed: int) -> ChangeHistory:
    """Poisson pages, rates log-uniform over 0.2 to 5 changes per day."""
    rng = np.random.default_rng(seed)
    rates = np.exp(rng.uniform(np.log(0.2), np.log(5.0), n_pages))
    times = [np.sort(rng.uniform(0, days, rng.poisson(r * days))) for r in rates]
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


def _learned():
    return make_policy("learned", PolicyOptions(objective="freshness-periodic", replan_every=1.0))


def test_full_share_of_honest_announcements_beats_none_at_equal_visits():
    env = ReplayEnvironment(_history(120, DAYS, seed=5))
    budget = 120.0  # about two thirds of a visit per change
    diffs = []
    for seed in range(3):
        plain = simulate(_learned(), env, budget, rng=seed)
        ann = simulate(_learned(), env, budget, rng=seed, announce=Announcements(1.0))
        # the engine's rule bounds both; the plan spends the budget with and without
        assert plain.followed == 0 and ann.followed > 0.5 * ann.visits
        for res in (plain, ann):
            assert res.visits <= budget * DAYS + max(budget, 1.0)
        assert ann.visits >= 0.98 * plain.visits, (ann.visits, plain.visits)
        diffs.append(ann.freshness - plain.freshness)
    d = np.array(diffs)
    se = d.std(ddof=1) / np.sqrt(d.size)
    assert d.mean() > 2 * se and d.mean() > 0.05, d


def test_no_share_is_the_run_without_announcements():
    env = ReplayEnvironment(_history(40, 10.0, seed=2))
    plain = simulate(_learned(), env, 30.0, rng=1)
    none = simulate(_learned(), env, 30.0, rng=1, announce=Announcements(0.0))
    assert none.followed == 0 and none.visits == plain.visits
    assert none.freshness == pytest.approx(plain.freshness, abs=1e-12)


def test_announced_changes_late_missed_and_false():
    h = _history(50, 20.0, seed=3)
    lo, hi = np.zeros(50), np.full(50, 20.0)
    n_changes = h.times.shape[0]

    def drawn(**kw):
        spec = Announcements(1.0, **kw)
        return AnnouncedChanges(spec, h.offsets, h.times, lo, hi, np.random.default_rng(0))

    exact = drawn()
    assert exact.pages.all() and exact.page.shape[0] == n_changes
    assert np.array_equal(np.sort(exact.changed_at), np.sort(h.times))
    late = drawn(delay=0.5)
    assert np.allclose(late.received_at - late.changed_at, 0.5)
    missed = drawn(miss=0.3)
    # binomial: 3 standard deviations of the count kept
    sd = np.sqrt(n_changes * 0.3 * 0.7)
    assert abs(missed.page.shape[0] - 0.7 * n_changes) < 3 * sd
    false = drawn(false=0.5)
    n_false = false.page.shape[0] - n_changes
    assert abs(n_false - 0.5 * n_changes) < 3 * np.sqrt(0.5 * n_changes)
    assert np.all(np.diff(false.received_at) >= 0)
    # Δ from the announcements: (n + a) / (T + β) under the gamma prior fitted across the pages
    t = 10.0
    n_t = np.array([int((h.page_times(i) < t).sum()) for i in range(50)], dtype=np.float64)
    m, beta = gamma_prior(n_t, np.full(50, t), np.zeros(50, dtype=np.intp))
    assert np.allclose(exact.delta(t), (n_t + m * beta) / (t + beta))
    # at the start, no time behind any page: the exponential prior of the plan's Δ̂
    assert np.allclose(exact.delta(0.0, np.full(50, 2.0)), 2.0)
    # a follow: every announced change with ρ = 1, none with ρ = 0
    p, times = exact.follow(0.0, 1.0, np.ones(50), np.zeros(50))
    first_day = h.times[(h.times < 1.0)]
    assert p.shape[0] == first_day.shape[0] and np.all(np.diff(times) >= 0)
    assert exact.follow(1.0, 2.0, np.zeros(50), np.zeros(50))[0].size == 0


def test_announce_needs_a_history_and_a_policy_that_plans_with_it():
    with pytest.raises(ValueError, match="replay environment"):
        simulate(
            _learned(),
            PoissonEnvironment([1.0], end=5.0),
            1.0,
            rng=0,
            announce=Announcements(0.5),
        )
    env = ReplayEnvironment(_history(5, 5.0, seed=1))
    with pytest.raises(ValueError, match="cannot plan with announcements"):
        simulate(make_uniform(None, None), env, 1.0, rng=0, announce=Announcements(0.5))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"share": 1.5}, "share"),
        ({"share": 0.5, "delay": -1.0}, "delay"),
        ({"share": 0.5, "miss": 1.0}, "miss"),
        ({"share": 0.5, "false": float("inf")}, "false"),
    ],
)
def test_announcements_are_checked(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Announcements(**kwargs)


def test_bucket_serves_the_visits_first_before_the_others_and_stops_at_until():
    bucket = TokenBucket(capacity=1, rate=1.0, start=0.0)
    first = np.array([False, False, True, False])
    out = bucket.schedule(np.array([0.0, 0.0, 0.5, 0.6]), first=first, until=3.5)
    # tokens at 1, 2, 3: the visit of `first` asked at 0.5 takes the token of 1; the last waits
    assert out.tolist() == [2.0, 3.0, 1.0, np.inf]
    assert bucket.last_ == 3.5 and bucket.tokens_ == pytest.approx(0.5)
    # asked again by the next call; a visit of `first` asked at 3.6 still goes before it
    again = bucket.schedule(np.array([0.6, 3.6]), first=np.array([False, True]))
    assert again.tolist() == [5.0, 4.0]
    with pytest.raises(ValueError, match="until needs first"):
        bucket.schedule(np.array([6.0]), until=7.0)
