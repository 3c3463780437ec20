"""Uniform and the crawler schedules: exact interval updates and rates scaled to the budget."""

from __future__ import annotations

import numpy as np
import pytest

from freshcrawl.errors import UnknownNameError
from freshcrawl.policies import PolicyOptions, make_policy
from freshcrawl.policies.base import Observations, PolicyContext
from freshcrawl.policies.baselines import HERITRIX, NUTCH, STORMCRAWLER, AdaptiveIntervalPolicy

HOUR = 1 / 24


def context(n, budget=10.0):
    return PolicyContext(
        n_pages=n, budget=budget, start=0.0, weights=np.ones(n), rng=np.random.default_rng(0)
    )


def observe(policy, pages, changed):
    pages = np.asarray(pages)
    policy.observe(
        Observations(
            pages=pages,
            time=np.arange(pages.size, dtype=float) + 1,
            changed=np.asarray(changed),
            tau=np.ones(pages.size),
            p=np.ones(pages.size),
        )
    )


def test_uniform_splits_the_budget_over_alive_pages():
    pol = make_policy("uniform")
    pol.reset(context(4, budget=6.0))
    rates = pol.plan(0.0, np.array([True, False, True, True])).rates
    np.testing.assert_array_equal(rates, [2.0, 0.0, 2.0, 2.0])
    assert pol.estimated_delta() is None


@pytest.mark.parametrize(
    ("name", "start", "changed", "unchanged"),
    [
        ("nutch", 30.0, 30.0 * 0.8, 30.0 * 1.4),
        ("stormcrawler", 1.0, 0.5 * 1.0 + 0.5 * HOUR, 1.5),
        ("heritrix", 1.0, 1.0 / 1.5, 1.5),
    ],
)
def test_one_update_from_the_shipped_start(name, start, changed, unchanged):
    pol = make_policy(name)
    pol.reset(context(2))
    np.testing.assert_allclose(pol.interval_, [start, start])
    observe(pol, [0, 1], [True, False])
    np.testing.assert_allclose(pol.interval_, [changed, unchanged])


@pytest.mark.parametrize(
    ("name", "params"), [("nutch", NUTCH), ("stormcrawler", STORMCRAWLER), ("heritrix", HERITRIX)]
)
def test_intervals_stay_within_the_shipped_bounds(name, params):
    pol = make_policy(name)
    pol.reset(context(2))
    observe(pol, [0] * 200, [True] * 200)
    observe(pol, [1] * 200, [False] * 200)
    np.testing.assert_allclose(pol.interval_, [params["i_min"], params["i_max"]])


def test_shipped_bounds_are_those_of_the_crawlers():
    assert (NUTCH["i_min"] * 86400, NUTCH["i_max"]) == pytest.approx((60.0, 365.0))
    assert (STORMCRAWLER["i_min"], STORMCRAWLER["i_max"]) == pytest.approx((HOUR, 14.0))
    assert (HERITRIX["i_min"], HERITRIX["i_max"], HERITRIX["initial"]) == pytest.approx(
        (HOUR, 28.0, 1.0)
    )


def test_repeated_observations_of_one_page_apply_in_order():
    pol = make_policy("stormcrawler")
    pol.reset(context(1))
    observe(pol, [0, 0, 0], [False, True, False])
    i = 1.0 * 1.5
    i = 0.5 * i + 0.5 * HOUR
    assert pol.interval_[0] == pytest.approx(i * 1.5)


def test_rates_are_inverse_intervals_scaled_to_the_budget():
    pol = make_policy("heritrix")
    pol.reset(context(3, budget=9.0))
    observe(pol, [0, 1], [True, False])
    rates = pol.plan(1.0, np.array([True, True, False])).rates
    inv = np.array([1.5, 1 / 1.5, 0.0])
    np.testing.assert_allclose(rates, 9.0 * inv / inv.sum())
    assert rates.sum() == pytest.approx(9.0)


@pytest.mark.parametrize("spec", ["uniform:x", "nutch:fast", "heritrix:1", "stormcrawler:a"])
def test_baselines_take_no_argument(spec):
    with pytest.raises(UnknownNameError, match="takes no ':' argument"):
        make_policy(spec)


def test_replan_period_comes_from_the_options():
    assert make_policy("nutch", PolicyOptions(replan_every=0.25)).replan_every == 0.25


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(i_min=2.0, i_max=1.0), "i_max must be >= i_min"),
        (dict(initial=0.0), "initial must be finite and > 0"),
        (dict(changed_min=-1.0), "changed_min must be finite and >= 0"),
    ],
)
def test_bad_schedule_parameters(kwargs, match):
    params = dict(NUTCH) | kwargs
    with pytest.raises(ValueError, match=match):
        AdaptiveIntervalPolicy("x", **params)
