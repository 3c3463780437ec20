"""Bursts and dormancy (two-state MMPP), group priors, age profiles and co-change detection, on
synthetic pages."""

from __future__ import annotations

import numpy as np
import pytest

from freshcrawl.estimators import make_batch_estimator
from freshcrawl.estimators.bursty import (
    AGE_EDGES,
    AgeProfile,
    CoChangeAccumulator,
    MMPPParams,
    detect_cochanges,
    fit_mmpp,
    gamma_prior,
    group_prior,
    mmpp_mean_rate,
    mmpp_propagate,
    mmpp_step,
    sample_mmpp_visits,
    shrink,
)


def test_filter_is_poisson_when_both_states_change_alike():
    p = MMPPParams(0.7, 0.7, 0.3, 0.1)
    tau = np.array([0.1, 1.0, 5.0])
    pi = np.array([0.0, 0.5, 1.0])
    new, ll, pc = mmpp_step(pi, p, np.array([True, False, True]), tau)
    np.testing.assert_allclose(pc, 1 - np.exp(-0.7 * tau), rtol=1e-12)
    np.testing.assert_allclose(
        ll, np.log([1 - np.exp(-0.07), np.exp(-0.7), 1 - np.exp(-3.5)]), rtol=1e-10
    )
    # the state then only follows the switching: the outcome carries no information about it
    np.testing.assert_allclose(new, mmpp_propagate(pi, p, tau), atol=1e-12)


def test_a_change_makes_the_active_state_likelier_and_quiet_the_dormant_one():
    p = MMPPParams(2.0, 0.02, 0.1, 0.05)
    pi = np.full(2, 1 / 3)
    new, _, _ = mmpp_step(pi, p, np.array([True, False]), np.array([1.0, 1.0]))
    assert new[0] > 0.9 and new[1] < pi[1]
    # and the expected rate ahead follows
    r = mmpp_mean_rate(new, p, 1.0)
    assert r[0] > 2 * float(p.mean_rate) and r[1] < float(p.mean_rate)


def test_filter_probabilities_sum_to_one_over_outcomes():
    rng = np.random.default_rng(0)
    p = MMPPParams(
        rng.uniform(0.5, 5, 50),
        rng.uniform(0, 0.5, 50),
        rng.uniform(0.01, 1, 50),
        rng.uniform(0.01, 1, 50),
    )
    pi = rng.random(50)
    tau = rng.exponential(2.0, 50)
    _, l1, _ = mmpp_step(pi, p, np.ones(50, bool), tau)
    _, l0, _ = mmpp_step(pi, p, np.zeros(50, bool), tau)
    np.testing.assert_allclose(np.exp(l1) + np.exp(l0), 1.0, rtol=1e-9)


def test_relative_parameters_keep_the_long_run_rate():
    base = np.array([0.001, 0.1, 10.0])
    p = MMPPParams.relative(base, burst=4.0, active_share=0.2, changes_per_burst=3.0)
    np.testing.assert_allclose(p.mean_rate, base, rtol=1e-12)
    np.testing.assert_allclose(p.lam_a / p.s_ad, 3.0)  # changes per active spell
    with pytest.raises(ValueError, match="active_share"):
        MMPPParams.relative(base, burst=4.0, active_share=1.0, changes_per_burst=3.0)


def test_fit_recovers_the_parameters_of_bursty_pages():
    # 300 pages x 80 daily visits = 24,000 observations; tolerance 4 standard errors (observed information)
    true = MMPPParams(1.0, 0.03, 0.1, 0.04)
    changed = sample_mmpp_visits(true, 300, 1.0, 80, rng=7)
    fit = fit_mmpp(changed, 1.0)
    est = np.array([fit.params.lam_a, fit.params.lam_d, fit.params.s_ad, fit.params.s_da])
    truth = np.array([true.lam_a, true.lam_d, true.s_ad, true.s_da])
    assert fit.success
    assert np.all(fit.se < 0.5 * truth)  # the sample is informative about every parameter
    assert np.all(np.abs(est - truth) <= 4 * fit.se), (est, truth, fit.se)


def test_fit_on_poisson_pages_finds_one_rate():
    # Poisson pages (λ_A = λ_D = 0.3): the fitted long-run rate is within 4 SE of the MLE's binomial SE
    true = MMPPParams(0.3, 0.3, 0.1, 0.1)
    changed = sample_mmpp_visits(true, 200, 1.0, 50, rng=3)
    fit = fit_mmpp(changed, 1.0)
    q = changed.mean()
    se_rate = np.sqrt(q / (1 - q) / changed.size)  # delta method on -log(1 - q)
    assert (
        abs(float(fit.params.mean_rate) - 0.3) <= 4 * se_rate * 1.5
    )  # 1.5: the mixture's extra freedom


def test_group_prior_starts_a_new_page_from_its_group_and_own_data_wins():
    rng = np.random.default_rng(11)
    n_groups, per = 20, 30
    m = np.exp(rng.normal(np.log(0.2), 1.0, n_groups))
    groups = np.repeat(np.arange(n_groups), per)
    delta = rng.gamma(4.0, m[groups] / 4.0)  # rates spread around the group's mean (CV 0.5)
    k = 60
    est = make_batch_estimator("mle-binned", groups.size)
    tau = 1.0 / np.maximum(m[groups], 0.05)  # visits every ~1/m days: Δτ around 1
    pages = np.arange(groups.size)
    for _ in range(k):
        changed = rng.random(groups.size) < 1 - np.exp(-delta * tau)
        est.update(pages, changed, tau, 1.0 / tau)
    observed = np.ones(groups.size, bool)
    observed[::per] = False  # one page of each group never seen
    prior = group_prior(est.delta_, observed, groups, prior_pages=0.0)
    # the prior of the unseen page is its group's mean rate, within 4 SE of the 29 seen pages' spread
    sel = observed
    for g in range(n_groups):
        d = est.delta_[sel & (groups == g)]
        se = d.std(ddof=1) / np.sqrt(d.size)
        mean_true = delta[sel & (groups == g)].mean()
        assert abs(prior[g * per] - mean_true) <= 4 * se + 1e-12
    # a page's own estimate dominates as its visits grow: weight k/(k + k0) on its own
    b = shrink(est.delta_, np.full(groups.size, k), prior, 2.0)
    np.testing.assert_allclose(b, (k * est.delta_ + 2.0 * prior) / (k + 2.0))
    assert np.all(
        np.abs(shrink(est.delta_, np.full(groups.size, 1e9), prior, 2.0) - est.delta_) < 1e-6
    )


def test_cochanges_are_found_where_a_sweep_hit_and_nowhere_else():
    rng = np.random.default_rng(5)
    n_groups, per, share = 50, 40, 0.5
    groups = np.repeat(np.arange(n_groups), per)
    rate, tau = 0.02, 1.0
    p = np.full(groups.size, 1 - np.exp(-rate * tau))
    changed = rng.random(groups.size) < p
    swept = np.arange(0, n_groups, 5)  # 10 groups had a sweep hitting half their pages
    hit = np.isin(groups, swept) & (rng.random(groups.size) < share)
    changed |= hit
    prev = np.zeros(groups.size)
    found = detect_cochanges(groups, changed, p, prev, n_groups=n_groups)
    assert set(found.groups.tolist()) == set(
        swept.tolist()
    )  # z = 4: a false alarm has P < 1e-4 a group
    # share: (C - E)/(V - E), binomial SE sqrt(f(1 - f)/V)
    se = np.sqrt(share * (1 - share) / per)
    assert np.all(np.abs(found.share - share) <= 4 * se)
    np.testing.assert_allclose(found.since, 0.0)


def test_the_accumulator_pools_small_batches_until_a_group_can_be_tested():
    acc = CoChangeAccumulator(2, min_visits=8)
    g = np.array([0, 0])
    for k in range(3):  # 6 visits of group 0, all changed: not yet tested
        out = acc.add(g, np.ones(2, bool), np.full(2, 0.05), np.array([k, k + 0.5]))
        assert out.groups.size == 0
    out = acc.add(g, np.ones(2, bool), np.full(2, 0.05), np.array([3.0, 3.5]))
    assert out.groups.tolist() == [0] and out.since.tolist() == [3.5]
    np.testing.assert_allclose(out.share, (8 - 0.4) / (8 - 0.4))
    assert (
        acc.add(g, np.zeros(2, bool), np.full(2, 0.05), np.zeros(2)).groups.size == 0
    )  # sums restarted


def test_gamma_prior_recovers_the_spread_of_rates():
    # rates Gamma(a=2, beta=20 days): mean 0.1/day; 2,000 pages seen 50 days each
    rng = np.random.default_rng(2)
    n, a, beta = 2000, 2.0, 20.0
    delta = rng.gamma(a, 1.0 / beta, n)
    t = np.full(n, 50.0)
    c = rng.poisson(delta * t).astype(float)
    m, b = gamma_prior(c, t, np.zeros(n, dtype=np.intp))
    assert abs(m[0] - a / beta) <= 4 * np.sqrt((a / beta) / t.sum() + (a / beta**2) / n)
    # beta = m / V; V's relative SE ~ sqrt(2/n) (1 + m/(V T)) for a gamma mixture of Poissons: 4 SE
    v = a / beta**2
    rel = np.sqrt(2.0 / n) * (1 + (a / beta) / (v * 50.0)) * 2
    assert abs(b[0] / beta - 1) <= 4 * rel
    # a page seen 50 days: its posterior mean weighs its own rate by T/(T + beta)
    w = 50.0 / (50.0 + b[0])
    assert 0.5 < w < 0.9


def test_no_cochange_on_independent_poisson_pages():
    rng = np.random.default_rng(9)
    groups = np.repeat(np.arange(200), 25)
    p = rng.uniform(0.01, 0.5, groups.size)
    changed = rng.random(groups.size) < p
    found = detect_cochanges(groups, changed, p, np.zeros(groups.size), n_groups=200)
    assert found.groups.size == 0


def _life_cycle_visits(rng, rates, ages, tau, m):
    """m visits of τ days at each of ``ages`` (bin midpoints), the page changing at ``rates``."""
    age = np.repeat(ages, m)
    changed = rng.random(age.size) < 1.0 - np.exp(-np.repeat(rates, m) * tau)
    return age, changed


def test_age_profile_recovers_a_piecewise_constant_rate_of_age():
    # pages changing at 1/(1 + age) per day, visited every τ = 0.5 days: every bin's C/E estimates
    # (1 - e^(-hτ))/τ (exact for changed intervals per day); tolerance: 4 binomial SE of m visits
    rng = np.random.default_rng(5)
    lo, hi = AGE_EDGES[:-1], np.append(AGE_EDGES[1:-1], 2048.0)
    mid = np.sqrt(np.maximum(lo, 1 / 48) * hi)
    h = 1.0 / (1.0 + mid)
    tau, m = 0.5, 4000
    age, changed = _life_cycle_visits(rng, h, mid, tau, m)
    prof = AgeProfile(1, prior_changes=1e-9)
    prof.add(np.zeros(age.size, np.intp), age, changed, np.full(age.size, tau))
    got = prof.rate(np.zeros(mid.size, np.intp), mid)
    q = 1.0 - np.exp(-h * tau)
    np.testing.assert_array_less(np.abs(got - q / tau), 4.0 * np.sqrt(q * (1 - q) / m) / tau)
    # the rate falls with age by more than 100x over the bins, as the pages' does
    assert got[0] / got[-1] > 100


def test_age_profile_pools_groups_and_a_groups_own_bins_win():
    rng = np.random.default_rng(6)
    mid = np.array([0.5, 100.0])
    prof = AgeProfile(3, prior_changes=2.0)
    # group 0: many visits at both ages, young pages change 20x faster; group 1: old pages only;
    # group 2: nothing yet
    for g, rates, m in ((0, np.array([0.4, 0.02]), 20000), (1, np.array([0.0, 0.02]), 20000)):
        age, changed = _life_cycle_visits(rng, rates, mid, 1.0, m)
        keep = age > 1 if g == 1 else np.ones(age.size, bool)
        prof.add(np.full(keep.sum(), g), age[keep], changed[keep], np.ones(keep.sum()))
    table = prof.table()
    q = 1.0 - np.exp(-np.array([0.4, 0.02]))
    se = 4.0 * np.sqrt(q * (1 - q) / 20000)
    k = prof.bins(mid)
    np.testing.assert_array_less(np.abs(table[0, k] - q), se + 1e-3)  # own data (prior: 2 changes)
    # a group never seen young starts young pages at the pooled young rate (group 0's, here)
    assert abs(table[1, k[0]] - table[0, k[0]]) < 0.01 * table[0, k[0]]
    np.testing.assert_allclose(table[2], table[3])  # no data: the pooled profile, like no group
    assert prof.rate(np.array([-1]), np.array([np.nan]))[0] == table[3, -1]  # unknown age: last bin
    with pytest.raises(ValueError, match="edges"):
        AgeProfile(1, edges=[1.0, 2.0])
    with pytest.raises(ValueError, match="prior_changes"):
        AgeProfile(1, prior_changes=0.0)
