"""The numbers ``crawl status`` and ``crawl explain`` show."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chi2

from freshcrawl.frontier.report import delta_interval, expected_freshness


def test_expected_freshness_matches_the_periodic_formula():
    p = np.array([1.0, 2.0, 0.0, 3.0])
    d = np.array([1.0, 0.5, 1.0, 0.0])
    want = [(1 - np.exp(-1)), 4 * (1 - np.exp(-0.25)), 0.0, 1.0]
    np.testing.assert_allclose(expected_freshness(p, d), want, rtol=1e-15)


def loglik(d, changed, tau):
    return np.log(-np.expm1(-d * tau[changed])).sum() - d * tau[~changed].sum()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_delta_interval_ends_cut_the_likelihood_at_the_chi2_level(seed):
    rng = np.random.default_rng(seed)
    tau = rng.uniform(0.2, 2.0, 60)
    changed = rng.random(60) < -np.expm1(-1.3 * tau)
    lo, hi = delta_interval(changed, tau)
    from freshcrawl.estimators.mle import solve_mle

    mle = solve_mle(changed, tau)
    top = loglik(mle, changed, tau)
    cut = chi2.ppf(0.95, 1) / 2
    assert lo < mle < hi
    assert loglik(lo, changed, tau) == pytest.approx(top - cut, abs=1e-8)
    assert loglik(hi, changed, tau) == pytest.approx(top - cut, abs=1e-8)


def test_delta_interval_coverage_is_near_95_percent():
    # 400 pages with Δ = 1, 40 periodic visits each: the interval covers Δ in about 95% of them;
    # the binomial standard error at n = 400 is 1.1%, so 4 standard errors allow 90.6%-99.4%.
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(400):
        tau = np.full(40, 0.7)
        changed = rng.random(40) < -np.expm1(-1.0 * tau)
        lo, hi = delta_interval(changed, tau)
        hits += lo <= 1.0 <= hi
    assert 0.906 <= hits / 400 <= 0.994


def test_delta_interval_degenerate_cases():
    tau = np.array([1.0, 2.0, 1.0])
    assert delta_interval(np.zeros(3, bool), tau) == (0.0, pytest.approx(chi2.ppf(0.95, 1) / 2 / 4.0))
    lo, hi = delta_interval(np.ones(3, bool), tau)
    assert hi == np.inf and lo > 0
    assert np.isnan(delta_interval(np.zeros(0, bool), np.zeros(0))).all()
