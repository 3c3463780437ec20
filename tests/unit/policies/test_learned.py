"""The learned policy, proportional and the oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshcrawl.allocation import allocate
from freshcrawl.environments import PoissonEnvironment
from freshcrawl.errors import UnknownNameError
from freshcrawl.policies import PolicyOptions, make_policy
from freshcrawl.policies.base import Observations, PolicyContext
from freshcrawl.policies.learned import DEFAULT_ESTIMATOR, LearnedPolicy, split_rounds
from freshcrawl.simulation import simulate


def context(n, budget=10.0, true_delta=None):
    return PolicyContext(
        n_pages=n,
        budget=budget,
        start=0.0,
        weights=np.ones(n),
        rng=np.random.default_rng(0),
        true_delta=true_delta,
    )


@given(st.lists(st.integers(0, 5), max_size=40))
def test_split_rounds_hold_each_page_once_and_keep_order(pages):
    pages = np.array(pages, dtype=np.intp)
    rounds = split_rounds(pages)
    seen = np.concatenate(rounds) if rounds else np.empty(0, dtype=np.intp)
    assert sorted(seen.tolist()) == list(range(pages.size))
    for r in rounds:
        assert np.unique(pages[r]).size == r.size
    # the k-th visit of a page lands in round k
    for page in set(pages.tolist()):
        positions = np.flatnonzero(pages == page)
        got = [next(k for k, r in enumerate(rounds) if pos in r) for pos in positions]
        assert got == list(range(positions.size))


def test_names_and_default_estimator():
    assert make_policy("learned").name == f"learned:{DEFAULT_ESTIMATOR}"
    assert make_policy("learned:lln").name == "learned:lln"
    assert make_policy("proportional").name == "proportional"
    with pytest.raises(UnknownNameError, match="unknown estimator 'nope'"):
        make_policy("learned:nope")


def test_unobserved_pages_get_the_default_rate_and_the_rest_is_allocated():
    pol = make_policy("learned", PolicyOptions(default_rate=1.0))
    pol.reset(context(4, budget=10.0))
    alive = np.array([True, True, True, False])
    np.testing.assert_allclose(pol.plan(0.0, alive).rates, [1.0, 1.0, 1.0, 0.0])
    pol.observe(
        Observations(
            pages=np.array([0, 1]),
            time=np.array([1.0, 1.0]),
            changed=np.array([True, False]),
            tau=np.array([1.0, 1.0]),
            p=np.array([1.0, 1.0]),
        )
    )
    rates = pol.plan(1.0, alive).rates
    assert rates[2] == 1.0 and rates[3] == 0.0
    assert rates[:2].sum() == pytest.approx(9.0)
    assert rates[0] > rates[1] > 0  # the page seen changing gets more; the other keeps the floor
    assert rates[1] >= 0.05 * 9.0 / 2 - 1e-12


def test_default_rate_is_budget_over_alive_pages():
    pol = make_policy("learned")
    pol.reset(context(5, budget=10.0))
    np.testing.assert_allclose(
        pol.plan(0.0, np.array([1, 1, 1, 1, 0], bool)).rates, [2.5] * 4 + [0.0]
    )


def test_shrinkage_towards_the_mean_of_observed_pages():
    pol = LearnedPolicy("naive-interval", prior="mean", prior_visits=2.0)
    pol.reset(context(3))
    pol.observe(
        Observations(
            pages=np.array([0, 1]),
            time=np.array([1.0, 1.0]),
            changed=np.array([True, False]),
            tau=np.array([1.0, 1.0]),
            p=np.array([1.0, 1.0]),
        )
    )
    raw = pol.estimated_delta()
    mean = raw[:2].mean()
    np.testing.assert_allclose(pol.planning_delta()[:2], (raw[:2] + 2 * mean) / 3)


def test_proportional_rates_follow_the_estimates():
    pol = make_policy("proportional", PolicyOptions(extra={"explore": 0.0}))
    pol.reset(context(2, budget=4.0))
    alive = np.ones(2, bool)
    pol.observe(
        Observations(
            pages=np.array([0, 1]),
            time=np.array([1.0, 1.0]),
            changed=np.array([True, False]),
            tau=np.array([1.0, 1.0]),
            p=np.array([1.0, 1.0]),
        )
    )
    d = pol.planning_delta()
    np.testing.assert_allclose(pol.plan(1.0, alive).rates, 4.0 * d / d.sum())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(explore=1.0), "explore must be in"),
        (dict(replan_every=0.0), "replan_every must be finite and > 0"),
        (dict(prior_visits=-1.0), "prior_visits must be finite and >= 0"),
        (dict(rule="best"), "rule must be"),
    ],
)
def test_bad_learned_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LearnedPolicy(**kwargs)


def test_oracle_needs_the_truth():
    pol = make_policy("oracle")
    assert pol.needs_truth
    with pytest.raises(ValueError, match="true_delta"):
        pol.reset(context(2))


R = 8  # replicates


def test_oracle_freshness_matches_the_allocation_objective():
    # heterogeneous Poisson pages, periodic visits: each replicate's freshness vs the predicted
    # sum_i w_i f(p_i; Δ_i) / sum_i w_i, within 5 standard errors estimated from the replicates
    rng = np.random.default_rng(11)
    delta = np.exp(rng.normal(np.log(0.5), 1.0, 200))
    budget = 150.0
    env = PoissonEnvironment(delta, start=0.0, end=100.0)
    res = [simulate(make_policy("oracle"), env, budget, rng=s) for s in range(R)]
    alloc = allocate(delta, budget, objective="freshness-periodic")
    p, d = alloc.p, delta
    f = np.where(p > 0, (p / d) * (1 - np.exp(-d / np.where(p > 0, p, 1.0))), 0.0)
    predicted = f.mean()
    fr = np.array([r.freshness for r in res])
    se = fr.std(ddof=1) / np.sqrt(R)
    assert abs(fr.mean() - predicted) < 5 * se, (fr.mean(), predicted, se)


def test_learned_beats_uniform_and_approaches_the_oracle_on_poisson_pages():
    rng = np.random.default_rng(12)
    delta = np.exp(rng.normal(np.log(0.3), 1.2, 200))
    env = PoissonEnvironment(delta, start=0.0, end=150.0)
    runs = {
        name: np.array([simulate(make_policy(name), env, 100.0, rng=s).freshness for s in range(4)])
        for name in ("uniform", "learned", "oracle")
    }
    diff = runs["learned"] - runs["uniform"]
    se = diff.std(ddof=1) / 2
    assert diff.mean() > 5 * se
    assert runs["learned"].mean() > 0.9 * runs["oracle"].mean()


def test_estimates_are_nan_for_pages_never_observed():
    pol = make_policy("learned")
    pol.reset(context(3))
    pol.observe(
        Observations(
            pages=np.array([1]),
            time=np.array([1.0]),
            changed=np.array([False]),
            tau=np.array([1.0]),
            p=np.array([1.0]),
        )
    )
    est = pol.estimated_delta()
    assert np.isnan(est[0]) and np.isnan(est[2]) and np.isfinite(est[1]) and est[1] >= 0


def test_options_extra_reach_the_policy():
    pol = make_policy("learned:sa", PolicyOptions(extra={"explore": 0.2, "prior_visits": 0.0}, replan_every=2.0))
    assert (pol.estimator, pol.explore, pol.prior_visits, pol.replan_every) == ("sa", 0.2, 0.0, 2.0)


def test_half_life_from_the_name_the_options_and_inf():
    pol = make_policy("learned:mle-binned@90d")
    assert (pol.name, pol.estimator, pol.half_life) == ("learned:mle-binned@90d", "mle-binned", 90.0)
    assert make_policy("learned:mm-binned@2.5").half_life == 2.5
    assert make_policy("learned:mle-binned@inf").half_life is None
    pol = make_policy("learned", PolicyOptions(extra={"half_life": 30.0}))
    assert (pol.name, pol.half_life) == (f"learned:{DEFAULT_ESTIMATOR}@30d", 30.0)
    # a run-wide half-life is ignored by estimators that cannot forget; the name overrides it
    assert make_policy("learned:lln", PolicyOptions(extra={"half_life": 30.0})).half_life is None
    assert make_policy("learned:mle-binned@inf", PolicyOptions(extra={"half_life": 30.0})).half_life is None
    pol.reset(context(3))
    assert pol.estimator_.half_life == 30.0


@pytest.mark.parametrize(
    ("spec", "exc", "match"),
    [
        ("learned:mle-binned@soon", UnknownNameError, r"expected <estimator>@<half-life>d.*got 'mle-binned@soon'"),
        ("learned:lln@30d", ValueError, r"half_life .* needs an estimator in mle-binned, mm-binned, sa-interval; got half_life=30.0 with 'lln'"),
        ("learned:mle-binned@0d", ValueError, r"half_life must be finite and > 0 days"),
        ("learned:mle-binned@nan", ValueError, r"half_life must be finite and > 0 days"),
    ],
)
def test_bad_half_life_specs(spec, exc, match):
    with pytest.raises(exc, match=match):
        make_policy(spec)


def test_shrinkage_counts_effective_visits_with_forgetting():
    pol = LearnedPolicy("mle-binned", prior="mean", prior_visits=2.0, half_life=1.0)
    pol.reset(context(2))
    for t, changed in ((1.0, [True, False]), (2.0, [False, False])):
        pol.observe(
            Observations(
                pages=np.array([0, 1]),
                time=np.array([t, t]),
                changed=np.array(changed),
                tau=np.array([1.0, 1.0]),
                p=np.array([1.0, 1.0]),
            )
        )
    k = pol.estimator_.n_eff_
    np.testing.assert_allclose(k, [1.5, 1.5])  # the first visit weighs 1/2 a half-life later
    raw = pol.estimated_delta()
    np.testing.assert_allclose(raw, [np.log(1.5), 0.0])
    np.testing.assert_allclose(pol.planning_delta(), (k * raw + 2 * raw.mean()) / (k + 2))


@pytest.mark.parametrize("seed", range(8))
def test_learned_plan_keeps_every_host_within_its_cap(seed):
    """Random pages, hosts, caps and partial observations: no host over its cap, budget never exceeded,
    and the whole budget spent whenever the caps leave room for it."""
    from freshcrawl.policies import Observations, PolicyContext, make_policy

    rng = np.random.default_rng(seed)
    n, n_hosts = 200, 7
    hosts = rng.integers(-1 if seed % 2 else 0, n_hosts, n)
    caps = np.where(rng.random(n_hosts) < 0.7, rng.uniform(1, 30, n_hosts), np.inf)
    budget = 120.0
    ctx = PolicyContext(n_pages=n, budget=budget, start=0.0, weights=rng.uniform(0.5, 2, n),
                        rng=np.random.default_rng(0), hosts=hosts, host_caps=caps)
    policy = make_policy("learned")
    policy.reset(ctx)
    seen = rng.choice(n, 120, replace=False)
    policy.observe(Observations(seen, np.ones(120), rng.random(120) < 0.4, rng.uniform(0.1, 1, 120),
                                np.ones(120)))
    alive = rng.random(n) < 0.9
    rates = policy.plan(1.0, alive).rates
    assert (rates[~alive] == 0).all() and (rates >= 0).all()
    on = hosts >= 0
    per_host = np.bincount(hosts[on], weights=rates[on], minlength=n_hosts)
    assert (per_host <= caps * (1 + 1e-9) + 1e-12).all()
    room = (alive & ~on).any() or np.isinf(caps[np.unique(hosts[alive & on])]).any()
    capacity = np.inf if room else caps[np.unique(hosts[alive & on])].sum()
    assert rates.sum() == pytest.approx(min(budget, capacity), rel=1e-9)
    # the same caps through update_context give the same plan; the estimator's state is kept
    policy.update_context(ctx)
    np.testing.assert_array_equal(policy.plan(1.0, alive).rates, rates)
    with pytest.raises(ValueError, match="n_pages must stay 200"):
        policy.update_context(PolicyContext(n_pages=201, budget=budget, start=0.0, weights=np.ones(201),
                                            rng=np.random.default_rng(0)))


def test_the_default_plans_on_the_gamma_posterior_mean():
    """``prior="gamma"`` (the default): the plan's Δ is the posterior mean of
    :class:`~freshcrawl.estimators.posterior.RatePosterior` fed the same visits, grouped by host."""
    from freshcrawl.estimators.posterior import RatePosterior

    rng = np.random.default_rng(2)
    n = 50
    hosts = np.arange(n) % 3
    ctx = PolicyContext(n_pages=n, budget=100.0, start=0.0, weights=np.ones(n),
                        rng=np.random.default_rng(0), hosts=hosts, host_caps=np.full(3, np.inf))
    pol = make_policy("learned")
    assert pol.prior == "gamma"
    pol.reset(ctx)
    obs = Observations(np.tile(np.arange(n), 4), np.repeat(np.arange(1.0, 5.0), n),
                       rng.random(4 * n) < 0.4, np.full(4 * n, 0.5), np.full(4 * n, 2.0))
    pol.observe(obs)
    ref = RatePosterior(n)
    ref.update(obs.pages, obs.changed, obs.tau)
    ref.fit(hosts)
    np.testing.assert_allclose(pol.planning_delta(), ref.mean_, rtol=1e-12)
    np.testing.assert_allclose(pol.rate_uncertainty()["sd"], ref.sd_, rtol=1e-12)
    assert pol.plan(5.0, np.ones(n, bool)).rates.sum() == pytest.approx(100.0)
    assert make_policy("learned", PolicyOptions(extra={"prior": "mean"})).rate_uncertainty() is None


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"prior": "flat"}, UnknownNameError, "prior must be one of gamma, mean, none"),
        ({"plan_quantile": 1.0}, ValueError, "plan_quantile must lie in"),
        ({"prior": "mean", "plan_quantile": 0.7}, ValueError, "needs prior='gamma'"),
    ],
)
def test_bad_prior_settings(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        LearnedPolicy(**kwargs)
