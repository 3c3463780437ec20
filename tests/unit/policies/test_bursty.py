"""``learned-bursty``: the Policy protocol, the budget guarantee, host caps, Poisson and bursty pages."""

from __future__ import annotations

import numpy as np
import pytest

from freshcrawl.environments import PoissonEnvironment, ReplayEnvironment
from freshcrawl.estimators.bursty import MMPPParams
from freshcrawl.policies import POLICY_FACTORIES, Policy, PolicyContext, PolicyOptions, make_policy
from freshcrawl.policies.base import Observations
from freshcrawl.policies.bursty import BurstyConfig, BurstyPolicy, prefix_groups
from freshcrawl.simulation import simulate
from freshcrawl.traces.history import ChangeHistory
from tests.visit_log import max_prefix_excess, max_window_excess, record_visit_times


def _ctx(n=6, budget=6.0, **kw):
    return PolicyContext(
        n_pages=n, budget=budget, start=0.0, weights=np.ones(n), rng=np.random.default_rng(0), **kw
    )


def _obs(pages, changed, t=1.0, tau=1.0):
    pages = np.asarray(pages, dtype=np.intp)
    m = pages.size
    return Observations(
        pages, np.full(m, t), np.asarray(changed, bool), np.full(m, tau), np.full(m, 1.0 / tau)
    )


def test_registered_and_a_policy():
    assert "learned-bursty" in POLICY_FACTORIES
    pol = make_policy("learned-bursty")
    assert isinstance(pol, Policy) and pol.name == "learned-bursty"
    assert pol.replan_every == pytest.approx(0.25)
    assert make_policy(
        "learned-bursty", PolicyOptions(replan_every=2.0)
    ).replan_every == pytest.approx(0.5)
    with pytest.raises(ValueError, match="burst must be >= 1"):
        BurstyConfig(burst=0.5)
    with pytest.raises(ValueError, match="subdivide must be >= 1"):
        make_policy("learned-bursty", PolicyOptions(extra={"subdivide": 0.5}))
    with pytest.raises(TypeError, match="BurstyConfig"):
        BurstyPolicy({"burst": 2.0})
    pol = make_policy("learned-bursty", PolicyOptions(extra={"reserve_days": 5.0, "groups": None}))
    assert pol.config == BurstyConfig(reserve_days=5.0)


def test_update_context_keeps_what_was_learned_and_checks_the_pages():
    pol = make_policy("learned-bursty")
    pol.reset(_ctx())
    pol.observe(_obs([0, 1, 2, 3, 4, 5], [True, True, False, False, False, False]))
    before = pol.estimated_delta().copy()
    pi = pol.pi_active_.copy()
    pol.update_context(_ctx(budget=12.0))
    np.testing.assert_array_equal(pol.estimated_delta(), before)
    np.testing.assert_array_equal(pol.pi_active_, pi)
    pol.plan(1.0, np.ones(6, bool))
    rates = pol.rates_
    assert rates.sum() == pytest.approx(12.0)
    assert rates[0] > rates[2]  # changed pages are planned higher
    with pytest.raises(ValueError, match="n_pages must stay 6"):
        pol.update_context(_ctx(n=7))


def test_host_caps_hold():
    n = 40
    hosts = np.repeat(np.arange(4), 10)
    caps = np.array([1.0, 2.0, np.inf, 50.0])
    pol = make_policy("learned-bursty")
    pol.reset(_ctx(n=n, budget=30.0, hosts=hosts, host_caps=caps))
    pol.plan(0.0, np.ones(n, bool))
    first = pol.rates_  # nothing observed yet
    assert np.all(np.bincount(hosts, weights=first) <= caps * (1 + 1e-9) + 1e-12)
    assert first.sum() == pytest.approx(30.0)  # hosts 2 and 3 take what 0 and 1 cannot
    rng = np.random.default_rng(1)
    pol.observe(_obs(np.arange(n), rng.random(n) < 0.5))
    pol.plan(1.0, np.ones(n, bool))
    rates = pol.rates_
    per_host = np.bincount(hosts, weights=rates)
    assert np.all(per_host <= caps * (1 + 1e-9) + 1e-12)
    assert rates.sum() <= 30.0 * (1 + 1e-9)


@pytest.mark.parametrize("seed", [0, 1])
def test_budget_guarantee_holds_with_follow_up_visits(seed):
    hist = _history(60, 60.0, seed, births=0.3, sweeps=0.5)
    env = ReplayEnvironment(hist, 0.0, 60.0)
    seen = record_visit_times(env)
    res = simulate(make_policy("learned-bursty"), env, 8.0, rng=seed)
    assert res.dropped == 0
    times = np.concatenate(seen)
    assert max_prefix_excess(times, 8.0, 0.0) <= 1e-6
    assert max_window_excess(times, 8.0) <= 8.0 + 1e-6


@pytest.mark.parametrize("reserve", [0.5, 2.0])
def test_the_budget_is_spent_after_a_sweep_resets_every_page_at_once(reserve):
    # 80 slow pages (0.02 changes a day) all change at day 10: the follow-ups visit them within hours,
    # which restarts every page's rate integral together. Periodic dispatch alone fell 18 visits (4.5
    # days of budget) behind on these pages; here the visits made up to the end of any plan stay within
    # reserve_days B + 1 of B t (the budget left unspent is spent early beyond the reserve)
    n, days, budget = 80, 60.0, 4.0
    rng = np.random.default_rng(5)
    per_page = [
        np.sort(np.append(rng.uniform(0, days, rng.poisson(0.02 * days)), 10.0)) for _ in range(n)
    ]
    hist = ChangeHistory(
        pages=np.array([f"site/g{i % 4}/p{i}" for i in range(n)], dtype=object),
        born=np.full(n, -1.0),
        died=np.full(n, np.inf),
        offsets=np.cumsum([0] + [len(t) for t in per_page]).astype(np.intp),
        times=np.concatenate(per_page),
        first=-1.0,
        last=days,
    )
    env = ReplayEnvironment(hist, 0.0, days)
    seen = record_visit_times(env)
    pol = make_policy("learned-bursty", PolicyOptions(extra={"reserve_days": reserve}))
    res = simulate(pol, env, budget, rng=1)
    times = np.sort(np.concatenate(seen))
    assert res.dropped == 0
    plans = np.arange(0.0, days, pol.replan_every)
    planned = np.searchsorted(times, plans + pol.replan_every)  # visits before each plan's end
    assert np.all(planned >= budget * (plans + pol.replan_every) - reserve * budget - 1), (
        budget * (plans + pol.replan_every) - planned
    ).max()
    assert max_prefix_excess(times, budget, 0.0) <= 1e-6
    assert max_window_excess(times, budget) <= budget + 1e-6


def test_poisson_pages_no_worse_than_learned_within_one_percent_of_the_oracle():
    # three seeds of 300 pages: the mean paired difference, within 1% of the oracle and two
    # standard errors of that difference over the seeds
    rng = np.random.default_rng(3)
    delta = np.exp(rng.normal(np.log(0.3), 1.2, 300))
    env = PoissonEnvironment(delta, start=0.0, end=200.0)
    fresh = {
        p: np.array([simulate(make_policy(p), env, 60.0, rng=seed).freshness for seed in (4, 5, 6)])
        for p in ("learned-bursty", "learned", "oracle")
    }
    diff = fresh["learned-bursty"] - fresh["learned"]
    se = diff.std(ddof=1) / np.sqrt(diff.size)
    assert diff.mean() >= -0.01 * fresh["oracle"].mean() - 2 * se, fresh


def _history(n, days, seed, *, burst=None, births=0.0, group_rates=None, sweeps=0.0, n_groups=10):
    """Synthetic pages in ``n_groups`` groups: Poisson at rates lognormal around their group's rate
    (``group_rates``, default 0.2/day for all), or a two-state MMPP (``burst`` = (κ, φ, changes per
    burst)); a share ``births`` of the pages born during the first half; ``sweeps`` sweeps a day over
    the whole window, each hitting half of one random group."""
    rng = np.random.default_rng(seed)
    groups = np.arange(n) % n_groups
    gr = np.full(n_groups, 0.2) if group_rates is None else np.asarray(group_rates, dtype=float)
    base = gr[groups] * np.exp(rng.normal(0.0, 0.5, n))
    born = np.where(rng.random(n) < births, rng.uniform(0, days / 2, n), -1.0)
    per_page = []
    for i in range(n):
        if burst is None:
            out = np.cumsum(rng.exponential(1.0 / base[i], int(base[i] * days * 2 + 20)))
        else:
            p = MMPPParams.relative(
                base[i], burst=burst[0], active_share=burst[1], changes_per_burst=burst[2]
            )
            t, active, out = 0.0, rng.random() < burst[1], []
            while t < days:
                t1 = min(t + rng.exponential(1.0 / float(p.s_ad if active else p.s_da)), days)
                lam = float(p.lam_a if active else p.lam_d)
                out.extend(rng.uniform(t, t1, rng.poisson(lam * (t1 - t))).tolist())
                t, active = t1, not active
            out = np.array(out)
        per_page.append(list(out[out < days]))
    for t in np.sort(rng.uniform(0, days, rng.poisson(sweeps * days))):
        g = rng.integers(n_groups)
        for i in np.flatnonzero((groups == g) & (rng.random(n) < 0.5)):
            per_page[i].append(t)
    times, offsets = [], [0]
    for i in range(n):
        ts = np.unique(np.array(per_page[i]))
        times.extend(ts[ts > max(born[i], 0.0)].tolist())
        offsets.append(len(times))
    return ChangeHistory(
        pages=np.array([f"site/g{groups[i]}/p{i}" for i in range(n)], dtype=object),
        born=born,
        died=np.full(n, np.inf),
        offsets=np.array(offsets, dtype=np.intp),
        times=np.array(times),
        first=-1.0,
        last=float(days),
    )


def _fresh(
    hist, days, budget, seed, policies=("learned-bursty", "learned", "nutch", "uniform", "oracle")
):
    env = ReplayEnvironment(hist, 0.0, days)
    groups = prefix_groups(hist.pages)
    return {
        p: simulate(
            make_policy(p, PolicyOptions(extra={"groups": groups})), env, budget, rng=seed
        ).freshness
        for p in policies
    }


def test_cold_start_from_the_group_beats_learned_and_the_crawlers():
    # groups that differ by 100x, a third of the pages born in the window; two seeds, paired
    rates = np.geomspace(0.005, 0.5, 10)
    hist = _history(400, 200.0, 1, births=0.35, group_rates=rates)
    for seed in (0, 1):
        f = _fresh(hist, 200.0, 40.0, seed)
        assert f["learned-bursty"] > max(f["learned"], f["nutch"], f["uniform"]), f


def test_a_cochange_raises_the_pages_of_its_group_not_visited_since():
    n = 40
    groups = np.arange(n) // 20  # two groups of 20
    pol = BurstyPolicy(groups=groups)
    pol.reset(_ctx(n=n, budget=8.0))
    pol.observe(
        _obs(np.arange(10, n), np.zeros(n - 10, bool), t=8.0, tau=8.0)
    )  # quiet, seen at day 8
    pol.observe(_obs(np.arange(10), np.zeros(10, bool), t=10.0, tau=2.0))  # quiet, seen at day 10
    # at day 20, 10 pages of group 0 are seen changed over the 10 days since their previous visit
    pol.observe(_obs(np.arange(10), np.ones(10, bool), t=20.0, tau=10.0))
    assert pol.n_cochanges_ == 1
    assert np.all(pol.pending_[10:20] > 0.5) and np.all(pol.pending_[20:] == 0)
    pol.plan(20.0, np.ones(n, bool))
    rates = pol.rates_
    assert rates[10:20].min() > rates[20:].max()  # follow-up visits for the rest of group 0


def test_sweeps_over_groups_no_worse_than_learned():
    hist = _history(400, 200.0, 2, group_rates=np.full(20, 0.01), sweeps=0.1, n_groups=20)
    f = _fresh(hist, 200.0, 100.0, 0, policies=("learned-bursty", "learned", "oracle"))
    assert f["learned-bursty"] >= f["learned"] - 0.01 * f["oracle"], f


def test_mmpp_pages_no_worse_than_learned():
    # the burst model is not a gain on these pages (README); it must not be a loss either
    hist = _history(300, 300.0, 5, burst=(4.0, 0.2, 5.0))
    f = _fresh(hist, 300.0, 30.0, 0, policies=("learned-bursty", "learned", "oracle"))
    assert f["learned-bursty"] >= f["learned"] - 0.01 * f["oracle"], f


def test_the_live_frontier_plans_with_it(tmp_path):
    from freshcrawl.frontier import CrawlSettings, Frontier, parse_url_list
    from freshcrawl.store import open_store

    t0 = 1_800_000_000.0
    store = open_store(tmp_path / "c.db")
    urls = ["http://a.test/1", "http://a.test/2", "http://b.test/x/3"]
    store.add_pages(parse_url_list(urls), now=t0)
    try:
        f = Frontier(store, CrawlSettings(budget=2400.0, policy="learned-bursty"), now=t0)
        assert 0 < f.rate[:3].sum() <= 2400.0 * (1 + 1e-12)
        assert f.rate[3:].sum() == 0
        f.replan(t0 + 3600.0)
        assert 0 < f.rate[:3].sum() <= 2400.0 * (1 + 1e-12)
        # its plans are visits for a quarter of the frontier's period: the next plan comes when they run out
        assert f.next_replan == pytest.approx(t0 + 3600.0 + 900.0)
    finally:
        store.close()


def test_a_page_never_observed_starts_from_its_groups_rate_at_its_age():
    # 20 pages born at day 0 change in their second day of life, 20 old pages do not; a new page
    # born at day 9.25 and an old one, both never visited, are planned at day 10 (ages 1.25 and 1010
    # at the middle of the next day): the new one at the young pages' rate, the old one at the old's
    born = np.concatenate([np.full(20, 0.0), np.full(20, -1000.0), [-1000.0, 9.25]])
    rates = {}
    for age_prior in (True, False):
        pol = BurstyPolicy(BurstyConfig(age_prior=age_prior, gamma_prior=False, prior_visits=2.0))
        pol.reset(_ctx(n=42, budget=4.0, born=born))
        pol.observe(_obs(np.arange(20), np.ones(20, bool), t=1.5, tau=0.5))
        pol.observe(_obs(np.arange(20, 40), np.zeros(20, bool), t=1.5, tau=0.5))
        rates[age_prior] = pol.base_rate(10.0)
    young, old = rates[True][41], rates[True][40]
    assert young > 20 * old > 0
    # (changed intervals + 2 pseudo changes) / (days + 2 / pooled rate): 20 of 20 half-day intervals
    pooled = (20 + 2) / (20 + 2)  # the profile's pooled rate: 20 changes in 20 page-days
    h_bin = (20 + 2) / (10 + 2 / pooled)
    assert young == pytest.approx((20 + 2) / (10 + 2 / h_bin))
    # without the age prior both start from the group's mean estimate
    assert rates[False][41] == pytest.approx(rates[False][40])
