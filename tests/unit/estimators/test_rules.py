"""Worked examples of each update rule (values computed by hand from seed 001's equations)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from freshcrawl.estimators import (
    LLN,
    MLE,
    SA,
    SAM,
    LLNInterval,
    MLEBinned,
    MomentMatching,
    MomentMatchingBinned,
    Naive,
    NaiveInterval,
    SAInterval,
    SAMInterval,
    make_estimator,
    mle_path,
    mm_path,
    solve_mle,
    solve_mm,
)


def feed(est, seq, **kw):
    for c in seq:
        est.learn_one(0, c, **kw)
    return est


def test_naive_is_p_times_fraction_changed():
    assert feed(Naive(), [1, 1, 0, 0, 0], p=4.0).predict_one() == pytest.approx(4.0 * 2 / 5)


def test_naive_interval_is_changes_per_day_observed():
    est = NaiveInterval()
    for c, t in [(1, 0.5), (0, 1.0), (1, 2.5)]:
        est.learn_one(0, c, tau=t)
    assert est.predict_one() == pytest.approx(2 / 4.0)


@pytest.mark.parametrize(
    ("alpha", "alpha_k"),
    [("1", 1.0), ("log", math.log(6.0)), ("sqrt", math.sqrt(5.0)), (0.75, 5.0**0.75)],
)
def test_lln_eq1(alpha, alpha_k):
    # k = 5 visits, I_hat = 3, p = 2: x = p I_hat / (k + alpha_k - I_hat), eq. (1)
    est = feed(LLN(alpha=alpha), [1, 0, 1, 1, 0], p=2.0)
    assert est.predict_one() == pytest.approx(2.0 * 3 / (5 + alpha_k - 3))
    assert est.n_visits_.tolist() == [5] and est.n_changed_.tolist() == [3]


def test_lln_all_changed_is_finite():
    est = feed(LLN(), [1] * 10, p=3.0)
    assert est.predict_one() == pytest.approx(3.0 * 10 / 1.0)


def test_sa_eq2_by_hand():
    # y0 = 1, p = 2, eta = 0.5: eta_0 = 1, eta_1 = 2^-0.5
    est = SA(eta=0.5, delta0=1.0)
    est.learn_one(0, 1, p=2.0)  # y1 = 1 + 1 * (1 * 3 - 1) = 3
    assert est.predict_one() == pytest.approx(3.0)
    est.learn_one(0, 0, p=2.0)  # y2 = 3 + 2^-0.5 * (0 - 3)
    assert est.predict_one() == pytest.approx(3.0 - 3.0 / math.sqrt(2.0))


def test_sam_eq3_eq10_by_hand():
    eta, beta, omega, p = 0.75, 0.6, 1.0, 2.0
    est = SAM(eta=eta, beta=beta, omega=omega, delta0=1.0)
    est.learn_one(0, 1, p=p)  # zeta_0 = 0: z1 = 1 + 1 * (3 - 1) = 3
    assert est.predict_one() == pytest.approx(3.0)
    est.learn_one(0, 1, p=p)
    eta1, beta1, beta0 = 2.0**-eta, 2.0**-beta, 1.0
    zeta1 = (beta1 - omega * eta1) / beta0
    z2 = 3.0 + eta1 * (1 * (3.0 + p) - 3.0) + zeta1 * (3.0 - 1.0)
    assert est.predict_one() == pytest.approx(z2)
    est.learn_one(0, 0, p=p)
    eta2, beta2 = 3.0**-eta, 3.0**-beta
    zeta2 = (beta2 - omega * eta2) / beta1
    assert est.predict_one() == pytest.approx(max(0.0, z2 + eta2 * (0.0 - z2) + zeta2 * (z2 - 3.0)))


def test_sam_with_beta_equal_eta_and_omega_one_has_no_momentum():
    # zeta_k = (beta_k - eta_k)/beta_{k-1} = 0 when beta = eta and omega = 1: SAM equals SA (Sec. 2).
    rng = np.random.default_rng(0)
    a, b = SA(eta=0.7), SAM(eta=0.7, beta=0.7, omega=1.0)
    for c in rng.random(200) < 0.4:
        a.learn_one(0, bool(c), p=1.5)
        b.learn_one(0, bool(c), p=1.5)
    assert b.predict_one() == pytest.approx(a.predict_one(), rel=1e-12)


def test_sam_projection_keeps_estimate_nonnegative():
    est = SAM(eta=1.0, beta=0.3, omega=1.0, delta0=50.0)
    for c in [1, 1, 0, 0, 0, 0, 0]:
        est.learn_one(0, c, p=100.0)
        assert est.predict_one() >= 0.0


def test_sa_interval_by_hand():
    est = SAInterval(eta=0.5, delta0=1.0)
    est.learn_one(0, 0, tau=2.0, p=0.5)  # y = 1 + 1 * 1.5 * (0 - 1 + e^-2), projected at 0
    assert est.predict_one() == pytest.approx(max(0.0, 1 + 1.5 * (math.exp(-2.0) - 1)))
    est = SAInterval(eta=0.5, delta0=1.0)
    est.learn_one(0, 1, tau=0.5, p=2.0)  # y = 1 + 1 * 3 * e^-0.5
    assert est.predict_one() == pytest.approx(1 + 3 * math.exp(-0.5))
    # p defaults to 1/tau
    a, b = SAInterval(), SAInterval()
    a.learn_one(0, 1, tau=0.25)
    b.learn_one(0, 1, tau=0.25, p=4.0)
    assert a.predict_one() == b.predict_one()


def test_sa_interval_mean_drift_equals_eq2_under_poisson_visits():
    # E over tau ~ Exp(p) of (y + p)(Δ/(Δ+p)... ): (y+p)(E[1 - e^{-Δτ}] - E[1 - e^{-yτ}]) = p(Δ - y)/(Δ + p)
    y, delta, p = 2.0, 5.0, 3.0
    e_i = delta / (delta + p)
    e_miss = p / (p + y)
    assert (y + p) * (e_i - 1 + e_miss) == pytest.approx(p * (delta - y) / (delta + p))


def test_sam_interval_first_step_matches_sa_interval():
    a, b = SAInterval(), SAMInterval()
    a.learn_one(0, 1, tau=1.0, p=1.0)
    b.learn_one(0, 1, tau=1.0, p=1.0)
    assert a.predict_one() == b.predict_one()


def test_lln_interval_by_hand():
    est = LLNInterval(delta0=1.0)
    est.learn_one(0, 1, tau=1.0)  # n0 = 0: num = g(1) = 1/(e - 1); den = alpha * mean tau = 1
    g1 = 1.0 / math.expm1(1.0)
    assert est.predict_one() == pytest.approx(g1)
    est.learn_one(
        0, 0, tau=2.0
    )  # num unchanged; T0 = 2, n0 = 1, mean tau 1.5: den = 2 + (2 + 1.5) / 2
    assert est.predict_one() == pytest.approx(g1 / 3.75)
    x = est.predict_one()
    est.learn_one(0, 1, tau=0.5)  # num += g(x * 0.5); den = 2 + (2 + 3.5/3) / 2
    g2 = (x * 0.5) / math.expm1(x * 0.5)
    assert est.predict_one() == pytest.approx((g1 + g2) / (2 + (2 + 3.5 / 3) / 2))


def test_lln_interval_reduces_to_eq1_when_estimate_times_tau_is_small():
    # periodic τ: x = Σ I g(x τ) / ((n0 + alpha) τ); with g -> 1 that is eq. (1) with p = 1/τ.
    tau = 0.01
    seq = [0] * 100 + [1, 0, 1] + [0] * 100
    a = LLNInterval()
    us = []
    for c in seq:
        us.append(a.predict_one() * tau)
        a.learn_one(0, c, tau=tau)
    b = feed(LLN(), seq, p=1.0 / tau)
    # g(u) lies in [1 - u/2, 1], so the numerator (two changes) is off by at most max(u)/2 relatively
    assert a.predict_one() == pytest.approx(b.predict_one(), rel=max(us) / 2)
    assert a.predict_one() <= b.predict_one()


# --- MLE and moment matching ----------------------------------------------------------------------


def test_mle_closed_form_for_equal_intervals():
    # equal τ: n_c τ/(e^{Δτ}-1) = n_u τ  ->  Δ = log(1 + n_c/n_u)/τ
    changed = [1, 1, 1, 0, 0]
    assert solve_mle(changed, [0.5] * 5) == pytest.approx(math.log(1 + 3 / 2) / 0.5, rel=1e-12)
    assert solve_mm(changed, [0.5] * 5) == pytest.approx(math.log(5 / 2) / 0.5, rel=1e-12)


def test_mle_root_satisfies_eq15_for_unequal_intervals():
    rng = np.random.default_rng(4)
    tau = rng.exponential(0.7, 300)
    changed = rng.random(300) < -np.expm1(-2.0 * tau)
    d = solve_mle(changed, tau)
    lhs = np.sum(changed * tau / np.expm1(d * tau))
    rhs = np.sum(~changed * tau)
    assert lhs == pytest.approx(rhs, rel=1e-10)
    m = solve_mm(changed, tau)
    assert np.sum(np.exp(-m * tau)) == pytest.approx(np.sum(~changed), rel=1e-10)


def test_degenerate_histories_have_documented_values():
    assert solve_mle([], []) == 1.0 and solve_mm([], [], delta0=2.5) == 2.5
    assert solve_mle([0, 0, 0], [1.0, 2.0, 3.0]) == 0.0
    assert solve_mm([0, 0, 0], [1.0, 2.0, 3.0]) == 0.0
    # every visit changed: one pseudo-visit of mean length without change (MLE), n0 = 1/2 (MM)
    assert solve_mle([1], [2.0]) == pytest.approx(math.log(2) / 2.0)
    assert solve_mm([1], [2.0]) == pytest.approx(math.log(2) / 2.0)
    d = solve_mle([1, 1, 1], [1.0, 1.0, 1.0])  # 3/(e^Δ - 1) = 1
    assert d == pytest.approx(math.log(4.0))
    for est in (MLE(), MomentMatching(), MLEBinned(), MomentMatchingBinned()):
        assert est.predict_one() == 1.0
        est.learn_one(0, 1, tau=1.0)
        assert np.isfinite(est.predict_one()) and est.predict_one() > 0


def test_mle_path_matches_repeated_solves():
    rng = np.random.default_rng(8)
    tau = rng.exponential(1.0, 60)
    changed = rng.random(60) < 0.5
    expected = [solve_mle(changed[: k + 1], tau[: k + 1]) for k in range(60)]
    np.testing.assert_allclose(mle_path(changed, tau), expected, rtol=1e-9)
    expected = [solve_mm(changed[: k + 1], tau[: k + 1]) for k in range(60)]
    np.testing.assert_allclose(mm_path(changed, tau), expected, rtol=1e-9)


def test_binned_equals_exact_when_intervals_repeat():
    # periodic visits with re-planned periods: fewer distinct intervals than slots -> exact
    rng = np.random.default_rng(1)
    tau = rng.choice([0.1, 0.5, 2.0, 3.0], 500)
    changed = rng.random(500) < -np.expm1(-1.3 * tau)
    for exact, binned in ((MLE(), MLEBinned()), (MomentMatching(), MomentMatchingBinned())):
        for c, t in zip(changed, tau):
            exact.learn_one(0, bool(c), tau=float(t))
            binned.learn_one(0, bool(c), tau=float(t))
        assert binned.predict_one() == pytest.approx(exact.predict_one(), rel=1e-9)


def test_binned_state_does_not_grow_with_visits():
    est = make_estimator("mle-binned", 3, n_bins=8)
    before = est.state_nbytes
    rng = np.random.default_rng(2)
    tau = rng.exponential(1.0, (5000, 3))
    est.learn_many(np.arange(3), rng.random((5000, 3)) < 0.5, tau)
    assert est.state_nbytes == before
    assert np.all(np.isfinite(est.delta_))


def test_binned_close_to_exact_under_poisson_intervals():
    # Poisson intervals fill every slot, so slots merge; two-moment slots keep the root close to the
    # exact MLE. Bound: within 1% here, far below the estimator's own sd (about 2% at k = 4000).
    rng = np.random.default_rng(3)
    tau = rng.exponential(1 / 3.0, 4000)
    changed = rng.random(4000) < -np.expm1(-5.0 * tau)
    est = MLEBinned()
    for c, t in zip(changed, tau):
        est.learn_one(0, bool(c), tau=float(t))
    assert est.predict_one() == pytest.approx(solve_mle(changed, tau), rel=0.01)


def test_exact_batch_solves_lazily_and_matches_solve_mle():
    est = MLE(2)
    est.learn_many([0, 1], [1, 0], tau=[1.0, 2.0])
    est.learn_many([0], [0], tau=[1.0])
    est.learn_many([0, 1], [[1, 1], [0, 1]], tau=[[0.5, 1.0], [2.0, 1.0]])
    np.testing.assert_allclose(
        est.delta_,
        [solve_mle([1, 0, 1, 0], [1.0, 1.0, 0.5, 2.0]), solve_mle([0, 1, 1], [2.0, 1.0, 1.0])],
    )
    np.testing.assert_array_equal(est.n_visits_, [4, 3])


@pytest.mark.parametrize(("cls", "solve"), [(MLE, solve_mle), (MomentMatching, solve_mm)])
def test_exact_forms_read_one_page_at_a_time(cls, solve):
    # pages 0 and 2 are stale after the updates; reading one re-solves it from its own visits only
    est = cls(3)
    est.learn_many([2, 0], [1, 0], tau=[1.0, 2.0])
    est.learn_one(0, 1, tau=0.5)
    est.learn_many([0, 2], [[0, 0], [1, 1]], tau=[[1.0, 3.0], [2.0, 0.5]])
    assert est.predict_one(2) == solve([1, 0, 1], [1.0, 3.0, 0.5])
    np.testing.assert_array_equal(
        est.predict_many([0, 1, 0]),
        [solve([0, 1, 0, 1], [2.0, 0.5, 1.0, 2.0]), 1.0, solve([0, 1, 0, 1], [2.0, 0.5, 1.0, 2.0])],
    )
    np.testing.assert_array_equal(est.delta_, est.predict_many([0, 1, 2]))


def test_prior_before_any_visit():
    for name in (
        "naive",
        "lln",
        "sa",
        "sam",
        "mle",
        "mm",
        "lln-interval",
        "sa-interval",
        "sam-interval",
        "mle-binned",
    ):
        est = make_estimator(name, 4, delta0=0.3)
        assert est.delta_.tolist() == [0.3] * 4
