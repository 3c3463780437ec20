"""The empirical-Bayes posterior of change rates (:mod:`freshcrawl.estimators.posterior`)."""

from __future__ import annotations

import numpy as np
import pytest

from freshcrawl.estimators.posterior import RatePosterior, page_posterior


def periodic_visits(delta, tau, k, rng):
    """k periodic visits τ apart to pages of rates Δ: (pages, changed, tau) in time order."""
    n = delta.shape[0]
    changed = rng.random((k, n)) < -np.expm1(-delta * tau)
    pages = np.tile(np.arange(n), k)
    return pages, changed.ravel(), np.full(n * k, tau)


def test_posterior_mean_is_exact_on_a_known_prior():
    """One page, a Gamma(2, 2) prior (m = 1, V = 0.5): the grid posterior equals the quadrature."""
    changed = np.array([True, False, True])
    tau = np.array([0.5, 1.0, 2.0])
    got = page_posterior(changed, tau, 1.0, 0.5)
    d = np.linspace(1e-6, 40.0, 400_001)
    dens = d * np.exp(-2 * d) * (-np.expm1(-0.5 * d)) * np.exp(-1.0 * d) * (-np.expm1(-2.0 * d))
    mean = (d * dens).sum() / dens.sum()
    var = (d * d * dens).sum() / dens.sum() - mean**2
    assert got["mean"] == pytest.approx(mean, rel=2e-3)
    assert got["sd"] == pytest.approx(var**0.5, rel=5e-3)
    assert got["low"] < got["mean"] < got["high"]
    assert 0.0 < got["learned"] < 1.0


def test_few_visits_lean_on_the_prior_many_on_the_page():
    """Rates spread over two decades: after 2 visits a page's posterior mean is closer to the pooled
    mean than its own data; after 200 it is within 3 posterior sds of its true rate."""
    rng = np.random.default_rng(3)
    n = 2000
    delta = np.exp(rng.uniform(np.log(0.02), np.log(2.0), n))
    post = RatePosterior(n)
    pages, changed, tau = periodic_visits(delta, 1.0, 2, rng)
    post.update(pages, changed, tau)
    post.fit()
    m = post.prior_mean_[0]
    # the pooled mean, fitted from 2 visits a page
    assert abs(m - delta.mean()) < 0.25 * delta.mean()
    raw = post.changes_ / (post.changed_days_ + post.unchanged_days_)  # the page's own c/T
    assert np.median(np.abs(post.mean_ - m) / np.maximum(np.abs(raw - m), 1e-12)) < 0.5
    more = RatePosterior(n)
    pages, changed, tau = periodic_visits(delta, 1.0, 200, rng)
    more.update(pages, changed, tau)
    more.fit()
    z = (more.mean_ - delta) / more.sd_
    assert np.mean(np.abs(z) < 3) > 0.97
    # and the posterior means beat the pages' own maximum-likelihood rates in mean squared error early
    # with equal intervals of 1 day the maximum-likelihood rate is −log(1 − c/k); infinite when c = k
    c, k = post.changes_, post.n_visits_
    with np.errstate(divide="ignore"):
        mle = -np.log1p(-c / k)
    finite = np.isfinite(mle)
    err_post = np.mean((post.mean_[finite] - delta[finite]) ** 2)
    assert err_post < np.mean((mle[finite] - delta[finite]) ** 2)


def test_groups_get_their_own_prior():
    """Two hosts whose pages change at 0.1 and at 2 per day: each host's prior mean follows its pages."""
    rng = np.random.default_rng(4)
    n = 400
    groups = np.repeat([0, 1], n // 2)
    delta = np.where(groups == 0, 0.1, 2.0)
    post = RatePosterior(n)
    pages, changed, tau = periodic_visits(delta, 0.5, 5, rng)
    post.update(pages, changed, tau)
    post.fit(groups)
    post.fit(groups)  # warm-started: the EM goes on from the last fit
    # 5 visits a page, about 50 changes on the slow host: its prior is an order of magnitude below the
    # fast host's, each near its pages' rate (shrunk a little towards the crawl's by 3 pseudo-pages)
    assert 0.08 < post.prior_mean_[0] < 0.25
    assert post.prior_mean_[-1] == pytest.approx(2.0, rel=0.25)
    assert np.all(post.mean_[groups == 0] < post.mean_[groups == 1].min())


def test_forgetting_decays_the_statistics():
    post = RatePosterior(1, half_life=1.0)
    post.update([0, 0], [True, False], [1.0, 1.0])
    np.testing.assert_allclose(
        [post.changes_[0], post.changed_days_[0], post.unchanged_days_[0], post.n_visits_[0]],
        [0.5, 0.5, 1.0, 1.5],
    )


def test_unobserved_pages_get_the_prior_and_quantiles_are_ordered():
    post = RatePosterior(3)
    post.update([0, 1], [True, False], [1.0, 1.0])
    post.fit(q=0.9)
    assert post.mean_[2] == pytest.approx(post.prior_mean_[2], rel=0.05)
    assert (post.quantile_ >= post.mean_ * 0.9).all()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_pages": 0}, "n_pages"),
        ({"n_pages": 2, "n_grid": 4}, "n_grid"),
        ({"n_pages": 2, "prior_pages": -1.0}, "prior_pages"),
        ({"n_pages": 2, "half_life": 0.0}, "half_life"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RatePosterior(**kwargs)


def test_bad_observations_and_priors():
    post = RatePosterior(2)
    with pytest.raises(ValueError, match="tau must be finite and > 0"):
        post.update([0], [True], [0.0])
    with pytest.raises(ValueError, match="pages must lie in 0..1"):
        post.update([2], [True], [1.0])
    with pytest.raises(ValueError, match="q must lie in"):
        post.fit(q=1.0)
    with pytest.raises(ValueError, match="prior mean and variance"):
        page_posterior([True], [1.0], 0.0, 1.0)
