"""Exponential forgetting of the binned MLE / moment matching (``half_life``)."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from freshcrawl.estimators import (
    FORGETTING_NAMES,
    MLEBinned,
    MomentMatchingBinned,
    make_estimator,
)


def periodic_flags(rng, rates, tau, n_pages):
    """Changed flags of periodic visits every ``tau`` days: rates (n_visits,) -> flags (n_visits, n_pages)."""
    q = -np.expm1(-np.asarray(rates)[:, None] * tau)
    return rng.random((len(rates), n_pages)) < q


def feed(est, flags, tau):
    pages = np.arange(flags.shape[1])
    est.learn_many(pages, flags, tau=np.full(flags.shape, tau))
    return est.delta_.copy()


def test_weighted_closed_form_under_periodic_visits():
    # equal intervals: eq. (15) weighted by w_j gives ln(1 + W_changed / W_unchanged) / tau exactly
    flags = np.array([1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 1, 1], dtype=bool)
    tau, h = 2.0, 5.0
    est = MLEBinned(half_life=h)
    for c in flags:
        est.learn_one(0, bool(c), tau=tau)
    age = tau * np.arange(flags.size)[::-1]  # days before the last visit
    w = 2.0 ** (-age / h)
    assert est.predict_one() == pytest.approx(
        math.log1p(w[flags].sum() / w[~flags].sum()) / tau, rel=1e-12
    )
    assert est.n_eff_[0] == pytest.approx(w.sum(), rel=1e-12)
    # moment matching: W_unchanged = W e^{-Δτ} gives the same value for equal intervals
    mm = MomentMatchingBinned(half_life=h)
    for c in flags:
        mm.learn_one(0, bool(c), tau=tau)
    assert mm.predict_one() == pytest.approx(est.predict_one(), rel=1e-10)


@pytest.mark.parametrize("cls", [MLEBinned, MomentMatchingBinned])
def test_no_forgetting_is_the_plain_estimator_and_a_huge_half_life_its_limit(cls):
    rng = np.random.default_rng(3)
    tau = rng.exponential(1.0, 200)
    flags = rng.random(200) < -np.expm1(-0.7 * tau)
    plain, inf_h, huge = cls(), cls(half_life=None), cls(half_life=1e12)
    for c, t in zip(flags, tau):
        for e in (plain, inf_h, huge):
            e.learn_one(0, bool(c), tau=float(t))
    assert inf_h.predict_one() == plain.predict_one()
    assert huge.predict_one() == pytest.approx(plain.predict_one(), rel=1e-8)
    assert plain.n_eff_[0] == 200.0


@pytest.mark.parametrize("name", FORGETTING_NAMES)
def test_batch_equals_streaming_and_pickles(name):
    rng = np.random.default_rng(5)
    n, k = 7, 40
    tau = rng.exponential(2.0, (k, n))
    flags = rng.random((k, n)) < 0.4
    batch = make_estimator(name, n, half_life=10.0)
    batch.learn_many(np.arange(n), flags, tau=tau)
    for j in range(n):
        one = make_estimator(name, half_life=10.0)
        for r in range(k):
            one.learn_one(0, bool(flags[r, j]), tau=float(tau[r, j]))
        assert one.predict_one() == pytest.approx(batch.delta_[j], rel=1e-12)
        if hasattr(batch, "n_eff_"):
            assert one.n_eff_[0] == pytest.approx(batch.n_eff_[j], rel=1e-12)
    clone = pickle.loads(pickle.dumps(batch))
    clone.learn_many([0], [True], tau=[1.0])
    batch.learn_many([0], [True], tau=[1.0])
    np.testing.assert_array_equal(clone.delta_, batch.delta_)


def test_tracks_a_switched_rate_and_the_default_does_not():
    # 400 pages visited daily; Δ = 0.2/day for 1000 days, then 1.0/day for 300 days (10 half-lives)
    rng = np.random.default_rng(2024)
    n, tau, h = 400, 1.0, 30.0
    before, after = 0.2, 1.0
    rates = np.r_[np.full(1000, before), np.full(300, after)]
    flags = periodic_flags(rng, rates, tau, n)
    forget = feed(MLEBinned(n, half_life=h), flags, tau)
    plain = feed(MLEBinned(n), flags, tau)

    # With equal intervals the estimate is -ln(1 - q̂)/τ, q̂ the weighted fraction of changed visits.
    # Weights r^j, r = 2^{-τ/h}: effective sample size (Σw)²/Σw² = (1 + r)/(1 - r).
    r = 2.0 ** (-tau / h)
    n_ess = (1 + r) / (1 - r)
    q = -math.expm1(-after * tau)
    se_page = math.sqrt(q / (1 - q) / n_ess) / tau  # delta method: g'(q) = 1/(1-q)
    bias = 0.5 * q / (1 - q) / n_ess / tau  # second order: g''(q) var(q̂) / 2
    # what is left of the old regime after 300 days weighs 2^-10 of the memory; bound its pull by that
    leftover = 2.0**-10 * (after - before)
    tol = 5 * se_page / math.sqrt(n) + leftover  # 5 standard errors of the mean over n pages
    assert abs(forget.mean() - (after + bias)) <= tol

    # the default keeps every visit: it converges to the rate of the pooled change fraction
    q_pool = (1000 * -math.expm1(-before * tau) + 300 * q) / 1300
    pooled = -math.log1p(-q_pool) / tau
    se_pool = math.sqrt(q_pool / (1 - q_pool) / 1300) / tau
    assert (
        abs(plain.mean() - pooled)
        <= 5 * se_pool / math.sqrt(n) + 0.5 * q_pool / (1 - q_pool) / 1300
    )
    assert pooled < 0.4 * after  # far from the current rate


def test_consistent_on_stationary_poisson_pages_within_its_effective_sample():
    # Poisson visits of rate p, Poisson changes of rate Δ, forever the same: the forgetting estimate is
    # unbiased to first order, with the variance of its effective sample size.
    rng = np.random.default_rng(11)
    n, p, delta, h, k = 300, 1.0, 0.5, 20.0, 400
    tau = rng.exponential(1.0 / p, (k, n))
    flags = rng.random((k, n)) < -np.expm1(-delta * tau)
    est = MLEBinned(n, half_life=h)
    est.learn_many(np.arange(n), flags, tau=tau)
    # weights 2^{-age/h} over Poisson visits: E Σw = p h/ln 2, E Σw² = p h/(2 ln 2) -> n_ess = 2 p h/ln 2
    n_ess = 2 * p * h / math.log(2)
    # Fisher information of one visit, E_τ[τ² e^{-Δτ}/(1 - e^{-Δτ})], by quadrature over τ ~ Exp(p)
    t = np.linspace(1e-6, 40.0 / p, 400_001)
    dens = p * np.exp(-p * t) * t**2 * np.exp(-delta * t) / -np.expm1(-delta * t)
    info = float(np.sum(dens) * (t[1] - t[0]))
    var_page = 1.0 / (n_ess * info)
    # 5 standard errors of the mean over n pages, plus a second-order (O(variance)) bias allowance
    tol = 5 * math.sqrt(var_page / n) + var_page / delta
    assert abs(est.delta_.mean() - delta) <= tol
    # and each page keeps about n_eff = p h / ln 2 visits of memory
    assert est.n_eff_.mean() == pytest.approx(
        p * h / math.log(2), rel=5 / math.sqrt(n * p * h / math.log(2))
    )


def test_degenerate_histories_stay_finite():
    est = MLEBinned(half_life=1.0)
    est.learn_one(0, False, tau=50.0)  # one unchanged visit, then it decays to almost nothing
    for _ in range(20):
        est.learn_one(0, True, tau=1.0)
    # less than one weighted unchanged visit: topped up to one mean-length pseudo-visit, as when there is none
    all_changed = MLEBinned()
    for _ in range(20):
        all_changed.learn_one(0, True, tau=1.0)
    assert (
        math.isfinite(est.predict_one())
        and 0.0 < est.predict_one() <= 2 * all_changed.predict_one()
    )
    mm = MomentMatchingBinned(half_life=1.0)
    mm.learn_one(0, False, tau=50.0)
    for _ in range(20):
        mm.learn_one(0, True, tau=1.0)
    assert math.isfinite(mm.predict_one()) and mm.predict_one() > 0.0
    # every old slot decays away (FORGET_FLOOR): the state never fills with dead intervals
    one = MomentMatchingBinned(1, half_life=0.01, n_bins=2)
    for t in (1.0, 10.0, 100.0, 1000.0):
        one.learn_many([0], [False], tau=[t])
    assert one.delta_[0] == 0.0 and one.n_eff_[0] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"half_life": 0.0}, ValueError, r"half_life must be finite and > 0 days .*got 0.0"),
        ({"half_life": -3}, ValueError, r"half_life must be finite and > 0 days .*got -3"),
        (
            {"half_life": float("nan")},
            ValueError,
            r"half_life must be finite and > 0 days .*got nan",
        ),
        (
            {"half_life": float("inf")},
            ValueError,
            r"half_life must be finite and > 0 days .*got inf",
        ),
        (
            {"half_life": "30d"},
            TypeError,
            r"half_life must be a number of days > 0 or None; got str '30d'",
        ),
    ],
)
def test_bad_half_life(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        MLEBinned(3, **kwargs)
    with pytest.raises(exc, match=match):
        MomentMatchingBinned(**kwargs)


def test_registry_half_life():
    assert make_estimator("lln", 2, half_life=None).n_pages == 2
    with pytest.raises(
        ValueError,
        match=r"supported by mle-binned, mm-binned, sa-interval only; got half_life=30 for estimator 'lln'",
    ):
        make_estimator("lln", 2, half_life=30)
    with pytest.raises(ValueError, match=r"supported by .* for estimator 'sa'"):
        make_estimator("sa", half_life=1.0)
    assert make_estimator("mm-binned", half_life=7).half_life == 7.0
    assert make_estimator("sa-interval", 2, half_life=7).half_life == 7.0
    with pytest.raises(ValueError, match=r"half_life must be finite and > 0 days"):
        make_estimator("sa-interval", half_life=-1.0)


def test_sa_interval_with_a_step_floor_tracks_a_switched_rate():
    # the same switch as above; SA-interval with the floor γ = 1 - 2^{-τ/h} on its step
    rng = np.random.default_rng(7)
    n, tau, h = 400, 1.0, 30.0
    before, after = 0.2, 1.0
    p = 1.0 / tau
    flags = periodic_flags(rng, np.r_[np.full(1000, before), np.full(300, after)], tau, n)
    shape = flags.shape
    kw = {"tau": np.full(shape, tau), "p": np.full(shape, p)}
    forget = make_estimator("sa-interval", n, half_life=h)
    forget.learn_many(np.arange(n), flags, **kw)
    plain = make_estimator("sa-interval", n)
    plain.learn_many(np.arange(n), flags, **kw)
    # linearised constant-step recursion around Δ: slope a = (Δ + p) τ e^{-Δτ}, increment noise
    # (Δ + p)² q (1 - q): stationary variance γ σ² / (2a) = γ (Δ + p) q / (2τ)
    gamma = -math.expm1(-math.log(2) * tau / h)
    q = -math.expm1(-after * tau)
    a = (after + p) * tau * (1 - q)
    var = gamma * (after + p) * q / (2 * tau)
    # the old regime decays like (1 - γ a)^k over the 300 visits since the switch
    leftover = (1 - gamma * a) ** 300 * (after - before)
    # 5 standard errors of the mean over n pages, a second-order (O(variance)) bias allowance, the leftover
    tol = 5 * math.sqrt(var / n) + var / after + leftover
    assert abs(forget.delta_.mean() - after) <= tol
    # the spread across pages is the predicted stationary one (chi-square: 5 standard errors of a variance)
    assert abs(forget.delta_.var() / var - 1) <= 5 * math.sqrt(2 / n)
    # the decreasing steps (η_k = (k+1)^-0.75, below 0.006 after 1000 visits) have not caught up after
    # 300 visits: far outside the band the forgetting estimate is held to
    assert after - plain.delta_.mean() > 4 * tol
