"""Property tests: whatever the 0/1 sequence and positive intervals, estimates are finite and >= 0."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from freshcrawl.estimators import (
    ESTIMATOR_NAMES,
    FORGETTING_NAMES,
    make_estimator,
    solve_mle,
    solve_mm,
)

# any positive interval a float can hold, and visit rates far beyond any crawler's
intervals = st.floats(min_value=1e-300, max_value=1e300, allow_nan=False, allow_infinity=False)
rates = st.floats(min_value=1e-100, max_value=1e100, allow_nan=False, allow_infinity=False)
visits = st.lists(st.tuples(st.booleans(), intervals, rates), min_size=0, max_size=40)


@given(visits=visits, name=st.sampled_from(ESTIMATOR_NAMES), delta0=st.floats(0.0, 1e3))
def test_streaming_estimates_finite_and_nonnegative(visits, name, delta0):
    est = make_estimator(name, delta0=delta0)
    assert est.predict_one(0) == delta0
    for changed, tau, p in visits:
        est.learn_one(0, changed, tau=tau, p=p)
        assert np.isfinite(est.predict_one(0)) and est.predict_one(0) >= 0.0
    assert est.n_visits_.tolist() == [len(visits)]


@given(
    data=st.data(),
    name=st.sampled_from(ESTIMATOR_NAMES),
    n_pages=st.integers(1, 6),
    n_rounds=st.integers(1, 8),
)
def test_batch_estimates_finite_and_nonnegative(data, name, n_pages, n_rounds):
    est = make_estimator(name, n_pages)
    for _ in range(n_rounds):
        pages = data.draw(
            st.lists(st.integers(0, n_pages - 1), unique=True, min_size=0, max_size=n_pages)
        )
        m = len(pages)
        changed = data.draw(st.lists(st.booleans(), min_size=m, max_size=m))
        tau = data.draw(st.lists(intervals, min_size=m, max_size=m))
        p = data.draw(st.lists(rates, min_size=m, max_size=m))
        est.learn_many(
            np.array(pages, dtype=np.intp),
            np.array(changed, dtype=bool),
            np.array(tau),
            np.array(p),
        )
        d = est.delta_
        assert np.all(np.isfinite(d)) and np.all(d >= 0)


@given(st.lists(st.tuples(st.booleans(), intervals), min_size=1, max_size=60))
def test_offline_roots_are_finite_and_ordered_by_evidence(obs):
    changed = np.array([c for c, _ in obs])
    tau = np.array([t for _, t in obs])
    for solve in (solve_mle, solve_mm):
        d = solve(changed, tau)
        assert np.isfinite(d) and d >= 0
        assert (d == 0) == (not changed.any())
        # one more unchanged visit can only lower the estimate
        assert solve(np.append(changed, False), np.append(tau, tau.mean())) <= d * (1 + 1e-9)


# half-lives from far below to far above any interval the strategies draw in ordinary units
half_lives = st.floats(min_value=1e-6, max_value=1e12, allow_nan=False, allow_infinity=False)


@given(visits=visits, name=st.sampled_from(FORGETTING_NAMES), half_life=half_lives)
def test_forgetting_estimates_finite_and_nonnegative(visits, name, half_life):
    est = make_estimator(name, half_life=half_life)
    for changed, tau, p in visits:
        est.learn_one(0, changed, tau=tau, p=p)
        assert np.isfinite(est.predict_one(0)) and est.predict_one(0) >= 0.0
        if hasattr(
            est, "n_eff_"
        ):  # the newest visit weighs 1, older ones less: 1 <= n_eff <= n_visits
            assert 1.0 <= est.n_eff_[0] <= est.n_visits_[0] * (1 + 1e-12)
    if visits and not any(c for c, _, _ in visits) and name != "sa-interval":
        assert est.predict_one(0) == 0.0  # likelihood forms: no change seen -> 0


@given(
    data=st.data(),
    name=st.sampled_from(FORGETTING_NAMES),
    half_life=half_lives,
    n_rounds=st.integers(1, 8),
)
def test_forgetting_batch_estimates_finite_and_nonnegative(data, name, half_life, n_rounds):
    n_pages = 4
    est = make_estimator(name, n_pages, half_life=half_life)
    for _ in range(n_rounds):
        pages = data.draw(
            st.lists(st.integers(0, n_pages - 1), unique=True, min_size=0, max_size=n_pages)
        )
        m = len(pages)
        changed = data.draw(st.lists(st.booleans(), min_size=m, max_size=m))
        tau = data.draw(st.lists(intervals, min_size=m, max_size=m))
        est.learn_many(np.array(pages, dtype=np.intp), np.array(changed, dtype=bool), np.array(tau))
        d = est.delta_
        assert np.all(np.isfinite(d)) and np.all(d >= 0)
        if hasattr(est, "n_eff_"):
            assert np.all(est.n_eff_ <= est.n_visits_ * (1 + 1e-12))
