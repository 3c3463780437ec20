"""The engine: budget rule, observations, reproducibility, plan handling."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freshcrawl.environments import PoissonEnvironment, ReplayEnvironment
from freshcrawl.policies import make_policy, policy_names
from freshcrawl.policies.base import Observations, PolicyContext, RatePlan, VisitPlan
from freshcrawl.policies.baselines import make_heritrix, make_uniform
from freshcrawl.simulation import TokenBucket, periodic_visits, simulate
from freshcrawl.traces.history import ChangeHistory
from tests.visit_log import max_prefix_excess, max_window_excess, record_visit_times


class Recorder:
    """A policy that plays given rates (or visits) and records everything it is told."""

    needs_truth = False

    def __init__(self, rates_fn, replan_every=1.0, name="recorder"):
        self.rates_fn = rates_fn
        self.replan_every = replan_every
        self.name = name

    def reset(self, context: PolicyContext) -> None:
        self.context = context
        self.obs: list[Observations] = []
        self.plans: list[tuple[float, np.ndarray]] = []

    def plan(self, now, alive):
        self.plans.append((now, alive.copy()))
        out = self.rates_fn(now, alive, self.context)
        return out if isinstance(out, (RatePlan, VisitPlan)) else RatePlan(out)

    def observe(self, obs):
        self.obs.append(obs)

    def estimated_delta(self):
        return None


def visit_times(policy_rates, n, budget, days, visits, seed, replan=1.0):
    env = PoissonEnvironment(np.ones(n), start=0.0, end=days)
    seen = record_visit_times(env)
    simulate(Recorder(policy_rates, replan_every=replan), env, budget, visits=visits, rng=seed)
    return np.concatenate(seen)


def _within_the_rule(times, budget, start=0.0):
    """The budget rule, up to floating-point rounding of the token counts."""
    slack = 1e-6 * (1.0 + budget)
    assert max_prefix_excess(times, budget, start) <= slack
    assert max_window_excess(times, budget) <= max(budget, 1.0) + slack


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 6),
    st.floats(0.5, 20.0),
    st.integers(0, 2**31 - 1),
    st.sampled_from(["periodic", "poisson"]),
    st.floats(0.3, 3.0),
)
def test_no_prefix_holds_more_than_the_budget(n, budget, seed, visits, replan):
    # rates that change every period, sometimes asking for more than the budget (scaled down)
    def rates(now, alive, ctx):
        r = np.random.default_rng(int(now * 1000) + seed).random(alive.size) ** 3
        return r * budget * 1.5 / max(r.sum(), 1e-12)

    _within_the_rule(visit_times(rates, n, budget, 12.0, visits, seed, replan), budget)


def _random_history(n: int, days: float, seed: int) -> ChangeHistory:
    """n pages, some born or dying within [0, days), Poisson changes of rates from 0.01 to 10 a day."""
    rng = np.random.default_rng(seed)
    born = np.where(rng.random(n) < 0.4, rng.uniform(0.0, days, n), -1.0)
    died = np.where(rng.random(n) < 0.2, born + rng.uniform(0.5, days, n), np.inf)
    rate = np.exp(rng.uniform(np.log(0.01), np.log(10.0), n))
    per_page = []
    for b, d, r in zip(born, died, rate):
        lo, hi = max(b, 0.0), max(min(d, days), max(b, 0.0))
        per_page.append(np.sort(rng.uniform(lo, hi, rng.poisson(r * (hi - lo)))))
    return ChangeHistory(
        pages=np.array([f"h{i % 3}/d{i % 2}/p{i}" for i in range(n)], dtype=object),
        born=born,
        died=died,
        offsets=np.cumsum([0] + [t.size for t in per_page]).astype(np.intp),
        times=np.concatenate(per_page),
        first=-1.0,
        last=days,
    )


@pytest.mark.parametrize("name", policy_names())
@settings(max_examples=6, deadline=None)
@given(
    n=st.integers(1, 8),
    budget=st.floats(0.3, 30.0),
    days=st.floats(1.0, 12.0),
    seed=st.integers(0, 2**31 - 1),
    visits=st.sampled_from(["periodic", "poisson"]),
)
def test_every_policy_keeps_to_the_budget_rule(name, n, budget, days, seed, visits):
    # every registered policy, on pages born and dying within the window
    env = ReplayEnvironment(_random_history(n, days, seed), 0.0, days)
    seen = record_visit_times(env)
    res = simulate(make_policy(name), env, budget, visits=visits, rng=seed)
    times = np.concatenate(seen)
    assert times.size == res.visits <= budget * days + 1e-6
    _within_the_rule(times, budget)


def test_the_budget_rule_on_a_small_example():
    # one page, B = 2 a day, a plan asking for five visits at once at the start of each 1-day period:
    # the bucket starts empty, so they are made when the tokens come (every 1/2 day from 0.5); those
    # still waiting at the period's end are made in the next period, before its own; at the window's end
    # (3 days) the rest are dropped
    env = PoissonEnvironment(np.zeros(1), start=0.0, end=3.0)
    seen = record_visit_times(env)
    pol = Recorder(
        lambda now, alive, ctx: VisitPlan(pages=np.zeros(5, np.intp), times=np.full(5, now))
    )
    res = simulate(pol, env, 2.0, rng=0)
    np.testing.assert_allclose(np.concatenate(seen), [0.5, 1.0, 1.5, 2.0, 2.5])
    assert [o.time.tolist() for o in pol.obs] == [[0.5], [1.0, 1.5], [2.0, 2.5]]
    assert (res.visits, res.deferred, res.dropped) == (5, 5, 10)
    np.testing.assert_array_equal(res.visits_t, [1, 2, 2])


def test_a_visit_waiting_past_its_pages_death_is_not_made():
    # page 0 dies at 0.7: its visit planned at 0.2 would wait for the first token (0.5 at B = 2), the
    # second (1.0) would come after its death
    h = ChangeHistory(
        pages=np.array(["a", "b"], dtype=object),
        born=np.array([-1.0, -1.0]),
        died=np.array([0.7, np.inf]),
        offsets=np.array([0, 0, 0]),
        times=np.array([]),
        first=-1.0,
        last=2.0,
    )
    env = ReplayEnvironment(h, 0.0, 2.0)
    seen = record_visit_times(env)

    def plan(now, alive, ctx):
        if now > 0:
            return VisitPlan(pages=np.array([1]), times=np.array([now + 0.5]))
        return VisitPlan(pages=np.array([0, 0]), times=np.array([0.2, 0.3]))

    res = simulate(Recorder(plan), env, 2.0, rng=0)
    np.testing.assert_allclose(np.concatenate(seen), [0.5, 1.5])
    assert (res.visits, res.dropped) == (2, 1)


def test_periodic_dispatch_spends_the_budget():
    # rates summing to B: periodic visits run at most n ahead of B t over any stretch (each page at most
    # one visit more than its rate's integral), so at most n of them wait at the window's end, and at
    # least B t - n are asked for: B t - 2n <= visits <= B t
    env = PoissonEnvironment(np.ones(5), start=0.0, end=30.0)
    rng = np.random.default_rng(1)
    res = simulate(
        Recorder(lambda now, alive, ctx: rng.dirichlet(np.ones(5)) * 10.0, replan_every=0.7),
        env,
        10.0,
        rng=3,
    )
    assert 300 - 2 * 5 <= res.visits <= 300
    assert res.dropped <= 5


def test_token_bucket_waits_and_bounds():
    full = TokenBucket(capacity=3, rate=2.0, start=0.0, tokens=3.0)
    # three at once from the full bucket, then one every 1/2 day
    np.testing.assert_allclose(full.schedule(np.zeros(6)), [0.0, 0.0, 0.0, 0.5, 1.0, 1.5])
    # a visit asked for while others wait goes after them; one past its deadline takes no token
    np.testing.assert_allclose(
        full.schedule(np.array([1.0, 1.2]), deadline=np.array([2.1, 2.1])), [2.0, np.nan]
    )
    np.testing.assert_allclose(full.schedule(np.array([10.0])), [10.0])  # refilled, up to capacity
    assert full.tokens_ == pytest.approx(2.0)
    empty = TokenBucket(capacity=1, rate=4.0, start=1.0)
    np.testing.assert_allclose(empty.schedule(np.array([1.0, 1.0])), [1.25, 1.5])
    with pytest.raises(ValueError, match="capacity must be >= 1"):
        TokenBucket(capacity=0.5, rate=1.0, start=0.0)
    with pytest.raises(ValueError, match="rate must be finite and > 0"):
        TokenBucket(capacity=1, rate=0.0, start=0.0)
    with pytest.raises(ValueError, match="tokens must be <= capacity"):
        TokenBucket(capacity=1, rate=1.0, start=0.0, tokens=2.0)


def test_periodic_visits_keep_the_phase_across_rate_changes():
    phase = np.array([0.25])
    _, t1 = periodic_visits(np.array([1.0]), phase, np.array([0.0]), np.array([1.0]))
    assert t1.tolist() == [0.75] and phase[0] == pytest.approx(0.25)
    # rate doubles: the missing 0.75 of the integral takes 0.375 days
    _, t2 = periodic_visits(np.array([2.0]), phase, np.array([1.0]), np.array([2.0]))
    np.testing.assert_allclose(t2, [1.375, 1.875])


def test_observations_tau_p_and_first_visit_after_birth():
    # page 0 alive from before the window, page 1 born at 2.5
    h = ChangeHistory(
        pages=np.array(["a", "b"], dtype=object),
        born=np.array([-1.0, 2.5]),
        died=np.array([np.inf, np.inf]),
        offsets=np.array([0, 1, 2]),
        times=np.array([0.5, 3.0]),
        first=-1.0,
        last=10.0,
    )
    env = ReplayEnvironment(h, 0.0, 6.0)
    pol = Recorder(lambda now, alive, ctx: np.where(alive, 1.0, 0.0))
    simulate(pol, env, 2.0, rng=0)
    obs = {
        k: np.concatenate([getattr(o, k) for o in pol.obs])
        for k in ("pages", "time", "changed", "tau", "p")
    }
    assert np.all(
        np.diff(obs["time"]) >= 0
    )  # sorted within each call, and periods follow each other
    t0 = obs["time"][obs["pages"] == 0]
    # page 0 synchronised at 0: its first observation has tau = its first visit time
    assert obs["tau"][obs["pages"] == 0][0] == pytest.approx(t0[0])
    np.testing.assert_allclose(obs["tau"][obs["pages"] == 0][1:], np.diff(t0))
    # the first visit waits for the first token (0.5 days at B = 2, the bucket starts empty) if it is
    # due before; the others come every day
    assert t0[0] >= 0.5 - 1e-12
    np.testing.assert_allclose(np.diff(t0)[1:], 1.0)
    assert np.all(obs["p"] == 1.0)
    # page 1: five visits would fit after 2.5 at rate 1, but the first one is not an observation
    n1 = int((obs["pages"] == 1).sum())
    assert n1 in (2, 3)
    # the one change of page 0 (at 0.5) is reported by its first visit after 0.5, and only there
    ch0 = obs["changed"][obs["pages"] == 0]
    assert ch0.sum() == 1 and ch0[np.searchsorted(t0, 0.5)]
    for o in pol.obs:
        assert np.all(np.diff(o.time) >= 0) and np.all(o.tau > 0)
    assert not pol.plans[0][1][1] and pol.plans[3][1][1]  # born at 2.5: alive from the third period


def test_same_seed_same_result():
    env = PoissonEnvironment(np.geomspace(0.1, 5, 40), start=0.0, end=30.0)
    a = simulate(make_heritrix(None, None), env, 20.0, rng=7, visits="poisson")
    b = simulate(make_heritrix(None, None), env, 20.0, rng=7, visits="poisson")
    c = simulate(make_heritrix(None, None), env, 20.0, rng=8, visits="poisson")
    assert (a.freshness, a.age_days, a.harmonic_staleness, a.visits) == (
        b.freshness,
        b.age_days,
        b.harmonic_staleness,
        b.visits,
    )
    np.testing.assert_array_equal(a.freshness_t, b.freshness_t)
    assert a.freshness != c.freshness


def test_visit_plans_are_used_as_given():
    env = PoissonEnvironment(np.zeros(2), start=0.0, end=2.0)

    def visits(now, alive, ctx):
        return VisitPlan(pages=np.array([1, 0, 1]), times=now + np.array([0.1, 0.2, 0.6]))

    pol = Recorder(visits)
    res = simulate(pol, env, 10.0, rng=0)
    assert res.visits == 6
    obs = pol.obs[1]
    assert obs.pages.tolist() == [1, 0, 1]
    np.testing.assert_allclose(obs.tau, [0.5, 1.0, 0.5])
    np.testing.assert_allclose(obs.p, 1.0 / obs.tau)


@pytest.mark.parametrize(
    ("plan", "match"),
    [
        (RatePlan(np.array([1.0, np.nan])), "not finite and >= 0"),
        (RatePlan(np.array([1.0, -1.0])), "not finite and >= 0"),
        (RatePlan(np.ones(3)), r"shape \(3,\)"),
        (VisitPlan(pages=np.array([0]), times=np.array([5.0])), "outside"),
        (VisitPlan(pages=np.array([0, 1]), times=np.array([0.5, 0.2])), "not sorted"),
        (VisitPlan(pages=np.array([2]), times=np.array([0.5])), "pages outside"),
    ],
)
def test_malformed_plans_are_rejected(plan, match):
    env = PoissonEnvironment(np.ones(2), start=0.0, end=2.0)
    with pytest.raises(ValueError, match=match):
        simulate(Recorder(lambda now, alive, ctx: plan), env, 1.0, rng=0)


@pytest.mark.parametrize(
    ("budget", "visits", "match"),
    [
        (0.0, "periodic", "budget must be finite and > 0"),
        (np.inf, "periodic", "budget"),
        (1.0, "weekly", "visits must be one of"),
    ],
)
def test_bad_arguments(budget, visits, match):
    env = PoissonEnvironment(np.ones(2), start=0.0, end=2.0)
    with pytest.raises(ValueError, match=match):
        simulate(make_uniform(None, None), env, budget, visits=visits, rng=0)


def test_infinite_window_is_rejected():
    with pytest.raises(ValueError, match="window must be finite"):
        simulate(make_uniform(None, None), PoissonEnvironment(np.ones(2)), 1.0, rng=0)


def test_time_series_covers_the_window():
    env = PoissonEnvironment(np.ones(4), start=0.0, end=10.5)
    res = simulate(make_uniform(None, None), env, 8.0, rng=0)
    assert res.t_start[0] == 0.0 and res.t_end[-1] == 10.5 and len(res.t_start) == 11
    np.testing.assert_array_equal(res.t_start[1:], res.t_end[:-1])
    assert res.visits_t.sum() == res.visits


def test_visits_planned_past_the_window_end_are_dropped():
    # the last period is cut short by the window end; a plan for the full period is accepted
    env = PoissonEnvironment(np.zeros(1), start=0.0, end=2.0)
    pol = Recorder(
        lambda now, alive, ctx: VisitPlan(
            pages=np.array([0, 0]), times=now + np.array([0.1, 0.65])
        ),
        replan_every=0.7,
    )
    res = simulate(pol, env, 10.0, rng=0)
    assert res.visits == 5  # 0.1, 0.65, 0.8, 1.35, 1.5 (and not 2.05)


@settings(max_examples=25)
@given(st.integers(1, 5), st.floats(0.5, 10.0), st.integers(0, 2**31 - 1))
def test_bursty_visit_plans_are_held_to_the_budget_by_the_bucket(n, budget, seed):
    # a plan that asks for twice its share, all in a burst at the end of each period
    def burst(now, alive, ctx):
        m = int(np.ceil(2 * budget)) + n
        r = np.random.default_rng(int(now * 1000) + seed)
        times = np.sort(now + 0.9 + 0.1 * r.random(m) * 0.999)
        return VisitPlan(pages=r.integers(0, n, m), times=times)

    _within_the_rule(visit_times(burst, n, budget, 6.0, "periodic", seed), budget)
