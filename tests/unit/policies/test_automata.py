"""H-TRAA as a recrawl policy on the policy interface (``freshcrawl simulate --policy htraa``)."""

from __future__ import annotations

import numpy as np
import pytest

from freshcrawl.errors import UnknownNameError
from freshcrawl.policies import Observations, Policy, PolicyContext, PolicyOptions, VisitPlan, make_policy
from freshcrawl.policies.automata import HTRAAPolicy, make_htraa


def _context(n, budget=10.0, seed=0):
    return PolicyContext(n_pages=n, budget=budget, start=0.0, weights=np.ones(n), rng=np.random.default_rng(seed))


def test_registry_builds_it():
    pol = make_policy("htraa:ri", PolicyOptions(replan_every=0.5, extra={"n_states": 40}))
    assert isinstance(pol, Policy)
    assert (pol.name, pol.replan_every, pol.n_states, pol.needs_truth) == ("htraa:ri", 0.5, 40, False)
    assert make_htraa(None, PolicyOptions()).name == "htraa"
    with pytest.raises(UnknownNameError, match="unknown update mode 'xx'"):
        make_htraa("xx", PolicyOptions())


def test_plan_spends_the_budget_evenly_over_the_period():
    pol = HTRAAPolicy(replan_every=2.0)
    pol.reset(_context(5, budget=7.5))
    plans = [pol.plan(2.0 * k, np.ones(5, dtype=bool)) for k in range(4)]
    assert [len(p.pages) for p in plans] == [15, 15, 15, 15]
    for k, p in enumerate(plans):
        assert isinstance(p, VisitPlan)
        assert np.all(np.diff(p.times) > 0)
        assert p.times[0] >= 2.0 * k and p.times[-1] < 2.0 * (k + 1)
        assert p.pages.max() < 5  # the three padding leaves of the 8-leaf tree are never visited


def test_fractional_budget_is_carried_over():
    pol = HTRAAPolicy(replan_every=1.0)
    pol.reset(_context(3, budget=2.5))
    assert [len(pol.plan(float(k), np.ones(3, dtype=bool)).pages) for k in range(4)] == [2, 3, 2, 3]


def test_dead_pages_are_not_visited():
    pol = HTRAAPolicy()
    pol.reset(_context(4, budget=40.0))
    alive = np.array([True, False, True, False])
    pages = pol.plan(0.0, alive).pages
    assert len(pages) == 40 and set(pages.tolist()) == {0, 2}
    assert len(pol.plan(1.0, np.zeros(4, dtype=bool)).pages) == 0


def test_observations_shift_the_budget_towards_changing_pages():
    pol = HTRAAPolicy(n_states=50)
    pol.reset(_context(4, budget=8.0))
    for k in range(300):
        plan = pol.plan(float(k), np.ones(4, dtype=bool))
        changed = plan.pages == 0  # page 0 changes between any two visits, the others never
        m = len(plan.pages)
        pol.observe(Observations(plan.pages, plan.times, changed, np.ones(m), np.ones(m)))
    rates = pol.allocation()
    assert rates.sum() == pytest.approx(8.0)
    assert rates[0] > 0.5 * 8.0


def test_plan_before_reset_and_bad_alive():
    pol = HTRAAPolicy()
    with pytest.raises(RuntimeError, match=r"reset\(context\) must be called"):
        pol.plan(0.0, np.ones(2, dtype=bool))
    pol.reset(_context(3))
    with pytest.raises(ValueError, match=r"alive must have shape \(3,\); got \(2,\)"):
        pol.plan(0.0, np.ones(2, dtype=bool))


def test_bad_construction():
    with pytest.raises(ValueError, match="n_states must be >= 2"):
        HTRAAPolicy(n_states=1)
    with pytest.raises(ValueError, match="replan_every must be finite and > 0 days"):
        HTRAAPolicy(replan_every=0.0)
