"""Consistency of the estimators by simulation, with tolerances derived from the number of runs.

Each test runs R independent pages (the pages of one batch estimator) for K visits, and compares the mean
of the R final estimates with its target within 5 standard errors (sample sd / sqrt(R)). K is chosen so
that the known transient (the drift factor p/(Δ + p) of eq. (2), the α_k/k term of eq. (1)) is far below
one standard error; it is not a tuned tolerance. Given the intervals, Poisson changes make each I an
independent Bernoulli(1 - e^{-Δτ}), which is how observations are drawn.
"""

from __future__ import annotations

import numpy as np
import pytest

from freshcrawl.estimators import make_estimator, solve_mle

Z = 5.0  # standard errors allowed


def _final(delta, sampler, n_visits, n_runs, specs, seed, chunk=50_000):
    """Final estimates (n_runs,) of each (name, params) after n_visits visits drawn by ``sampler``."""
    rng = np.random.default_rng(seed)
    ests = {key: make_estimator(name, n_runs, **params) for key, (name, params) in specs.items()}
    pages = np.arange(n_runs)
    done = 0
    while done < n_visits:
        k = min(chunk, n_visits - done)
        tau, p = sampler(rng, done, k, n_runs)
        changed = rng.random((k, n_runs)) < -np.expm1(-delta * tau)
        for est in ests.values():
            est.learn_many(pages, changed, tau, p)
        done += k
    return {key: np.asarray(est.delta_, dtype=float).copy() for key, est in ests.items()}


def _assert_near(x, target, label):
    se = x.std(ddof=1) / np.sqrt(x.size)
    assert np.all(np.isfinite(x)) and np.all(x >= 0), label
    assert abs(x.mean() - target) <= Z * se, (
        f"{label}: mean {x.mean():.5g} vs {target:.5g}, se {se:.3g}"
    )


def poisson(p):
    def sampler(rng, start, k, n):
        return rng.exponential(1.0 / p, (k, n)), np.full((k, n), p)

    return sampler


def periodic(tau0):
    def sampler(rng, start, k, n):
        return np.full((k, n), tau0), np.full((k, n), 1.0 / tau0)

    return sampler


def replanned(taus, every, seed=7):
    """Periodic visits whose period is re-drawn from ``taus`` every ``every`` visits (per page)."""
    plan_rng = np.random.default_rng(seed)
    plans = {}

    def sampler(rng, start, k, n):
        blocks = np.arange(start, start + k) // every
        out = np.empty((k, n))
        for b in np.unique(blocks):
            if b not in plans:
                plans[b] = plan_rng.choice(taus, size=n)
            out[blocks == b] = plans[b]
        return out, 1.0 / out

    return sampler


POISSON_SETTINGS = [(5.0, 3.0), (500.0, 3.0), (500.0, 50.0), (1.11, 0.5)]


@pytest.mark.parametrize(("delta", "p"), POISSON_SETTINGS)
def test_paper_lln_and_mle_consistent_under_poisson_visits(delta, p):
    n_runs, n_visits = 100, 20_000
    rng = np.random.default_rng(11)
    tau = rng.exponential(1.0 / p, (n_visits, n_runs))
    changed = rng.random((n_visits, n_runs)) < -np.expm1(-delta * tau)
    lln = make_estimator("lln", n_runs)
    lln.learn_many(np.arange(n_runs), changed, tau, np.full_like(tau, p))
    _assert_near(lln.delta_, delta, "lln")
    mle = np.array([solve_mle(changed[:, r], tau[:, r]) for r in range(n_runs)])
    _assert_near(mle, delta, "mle")
    naive = make_estimator("naive", n_runs)
    naive.learn_many(np.arange(n_runs), changed, tau, np.full_like(tau, p))
    # Naive's known bias (Sec. 3.4): it tends to p Δ / (Δ + p), far from Δ.
    _assert_near(naive.delta_, p * delta / (delta + p), "naive")
    assert naive.delta_.mean() < 0.7 * delta


@pytest.mark.parametrize(("delta", "p"), POISSON_SETTINGS)
def test_paper_sa_and_sam_consistent_under_poisson_visits(delta, p):
    # SA's drift is scaled by p/(Δ+p) (Theorem 2's proof): at Δ/p = 167 the paper's η = 0.75 needs ~1e10
    # visits, so that setting uses η = 0.5 (Fig. 5(b)'s best) and SAM Fig. 3's η = 0.8, β = 0.5.
    slow = delta / p > 100
    n_visits = 1_000_000 if slow else 200_000
    specs = {
        "sa": ("sa", {"eta": 0.5} if slow else {}),
        "sam": ("sam", {"eta": 0.8, "beta": 0.5} if slow else {}),
    }
    out = _final(delta, poisson(p), n_visits, 40, specs, seed=3)
    for key, x in out.items():
        _assert_near(x, delta, key)


@pytest.mark.parametrize(("delta", "p"), [(5.0, 3.0), (500.0, 50.0), (1.11, 0.5)])
def test_interval_forms_consistent_under_poisson_visits(delta, p):
    specs = {
        n: (n, {})
        for n in ("lln-interval", "sa-interval", "sam-interval", "mm", "mle-binned", "mm-binned")
    }
    sa_like = {"sa-interval", "sam-interval"}
    out = _final(
        delta, poisson(p), 20_000, 100, {k: v for k, v in specs.items() if k not in sa_like}, seed=5
    )
    out |= _final(
        delta, poisson(p), 200_000, 40, {k: v for k, v in specs.items() if k in sa_like}, seed=6
    )
    for key, x in out.items():
        _assert_near(x, delta, key)


CONSISTENT = ("lln-interval", "sa-interval", "sam-interval", "mle", "mm", "mle-binned", "mm-binned")


@pytest.mark.parametrize("delta_tau", [0.1, 1.0, 3.0])
def test_interval_forms_consistent_under_periodic_visits(delta_tau):
    delta = 2.0
    out = _final(
        delta,
        periodic(delta_tau / delta),
        20_000,
        100,
        {n: (n, {}) for n in CONSISTENT + ("lln",)},
        seed=9,
    )
    for key in CONSISTENT:
        _assert_near(out[key], delta, key)
    # The paper's LLN inverts E[I] = Δ/(Δ+p); periodic visits give E[I] = 1 - e^{-Δτ}, so with p = 1/τ it
    # converges to (e^{Δτ} - 1)/τ (the pitfall of docs/design.md). Show the bias, do not hide it.
    tau0 = delta_tau / delta
    lln = out["lln"]
    _assert_near(lln, np.expm1(delta_tau) / tau0, "lln limit")
    se = lln.std(ddof=1) / np.sqrt(lln.size)
    assert lln.mean() - delta > 10 * se


def test_interval_forms_consistent_when_period_is_replanned():
    delta = 1.5
    taus = np.array([0.1, 0.6, 2.0]) / delta
    out = _final(
        delta,
        replanned(taus, every=5),
        20_000,
        100,
        {n: (n, {}) for n in CONSISTENT + ("lln", "sa")},
        seed=13,
        chunk=5_000,
    )
    for key in CONSISTENT:
        _assert_near(out[key], delta, key)
    sa = out["sa"]
    assert abs(sa.mean() - delta) > 10 * sa.std(ddof=1) / np.sqrt(sa.size)
    # The paper's LLN takes p of the latest plan, so its limit jumps with each re-plan: its error is
    # dominated by that bias, not by noise.
    rmse = {k: np.sqrt(np.mean((out[k] - delta) ** 2)) for k in ("lln", "lln-interval")}
    assert rmse["lln"] > 5 * rmse["lln-interval"]
