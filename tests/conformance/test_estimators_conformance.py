"""Every registered estimator: learn_many == loop of learn_one, k-round updates, pickling, reruns, docs."""

from __future__ import annotations

import inspect
import pickle

import numpy as np
import pytest

import freshcrawl.estimators as E
from freshcrawl.estimators import ESTIMATOR_NAMES, ESTIMATORS, make_batch_estimator, make_estimator

PARAMS = {
    "lln": {"alpha": "sqrt"},
    "sa": {"eta": 0.6},
    "sam": {"eta": 0.8, "beta": 0.5},
    "lln-interval": {"alpha": "log"},
    "sa-interval": {"eta": 0.9},
    "sam-interval": {"eta": 0.8, "beta": 0.5, "omega": 0.5},
    "mle-binned": {"n_bins": 4},
    "mm-binned": {"n_bins": 4},
}


def _history(seed, n_pages=7, n_rounds=60):
    rng = np.random.default_rng(seed)
    tau = rng.exponential(1.0, (n_rounds, n_pages))
    changed = rng.random((n_rounds, n_pages)) < -np.expm1(-1.3 * tau)
    p = rng.uniform(0.5, 3.0, (n_rounds, n_pages))
    # each round visits a random subset of the pages, in random order
    subsets = [rng.permutation(n_pages)[: rng.integers(1, n_pages + 1)] for _ in range(n_rounds)]
    return tau, changed, p, subsets


@pytest.mark.parametrize("name", ESTIMATOR_NAMES)
def test_learn_many_equals_loop_of_learn_one(name):
    tau, changed, p, subsets = _history(1)
    n_pages = tau.shape[1]
    params = PARAMS.get(name, {})
    batch = make_estimator(name, n_pages, **params)
    singles = [make_estimator(name, **params) for _ in range(n_pages)]
    shared = make_estimator(name, n_pages, **params)  # learn_one on each page of one estimator
    for r, pages in enumerate(subsets):
        batch.learn_many(pages, changed[r, pages], tau[r, pages], p[r, pages])
        for j in pages:
            singles[j].learn_one(0, bool(changed[r, j]), tau=float(tau[r, j]), p=float(p[r, j]))
            shared.learn_one(int(j), bool(changed[r, j]), tau=float(tau[r, j]), p=float(p[r, j]))
    np.testing.assert_allclose(
        batch.delta_, [s.predict_one(0) for s in singles], rtol=1e-12, atol=0
    )
    np.testing.assert_array_equal(batch.n_visits_, [s.n_visits_[0] for s in singles])
    np.testing.assert_allclose(shared.delta_, batch.delta_, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(shared.n_visits_, batch.n_visits_)
    np.testing.assert_array_equal(shared.predict_many([3, 0]), shared.delta_[[3, 0]])


@pytest.mark.parametrize("name", ESTIMATOR_NAMES)
def test_k_rounds_in_one_call_equal_k_calls(name):
    tau, changed, p, _ = _history(2, n_rounds=30)
    pages = np.array([0, 2, 3, 6])
    a = make_estimator(name, 7, **PARAMS.get(name, {}))
    b = make_estimator(name, 7, **PARAMS.get(name, {}))
    a.learn_many(pages, changed[:, pages], tau[:, pages], p[:, pages])
    for r in range(30):
        b.learn_many(pages, changed[r, pages], tau[r, pages], p[r, pages])
    np.testing.assert_array_equal(a.delta_, b.delta_)
    np.testing.assert_array_equal(a.n_visits_, b.n_visits_)


@pytest.mark.parametrize("name", ESTIMATOR_NAMES)
def test_pickle_round_trip_and_seeded_rerun(name):
    tau, changed, p, subsets = _history(3)
    runs = []
    for _ in range(2):
        est = make_estimator(name, 7, **PARAMS.get(name, {}))
        for r, pages in enumerate(subsets[:30]):
            est.learn_many(pages, changed[r, pages], tau[r, pages], p[r, pages])
        clone = pickle.loads(pickle.dumps(est))
        for r, pages in enumerate(subsets[30:], start=30):
            est.learn_many(pages, changed[r, pages], tau[r, pages], p[r, pages])
            clone.learn_many(pages, changed[r, pages], tau[r, pages], p[r, pages])
        np.testing.assert_array_equal(est.delta_, clone.delta_)
        runs.append(np.array(est.delta_))
    np.testing.assert_array_equal(runs[0], runs[1])


@pytest.mark.parametrize("name", ESTIMATOR_NAMES)
def test_attributes_follow_the_contract(name):
    est = make_estimator(name, 5)
    assert isinstance(est, E.Estimator) and est.n_pages == 5
    est.learn_many(
        np.array([], dtype=np.intp), np.array([], dtype=bool), np.array([]), np.array([])
    )
    est.learn_many([4, 1], [True, False], [0.5, 2.0], [2.0, 0.5])
    d = est.delta_
    assert d.dtype == np.float64 and d.shape == (5,) and np.all(np.isfinite(d)) and np.all(d >= 0)
    assert est.n_visits_.shape == (5,) and est.n_visits_.tolist() == [0, 1, 0, 0, 1]
    assert type(est.predict_one(4)) is float and est.predict_one(4) == d[4]
    one = make_estimator(name)
    assert isinstance(one, E.Estimator) and one.n_pages == 1 and one.delta_.shape == (1,)


def test_batch_names_are_the_same_objects():
    # the names the batch callers use: make_batch_estimator and update
    assert make_batch_estimator is make_estimator and E.BatchEstimator is E.Estimator
    for cls in set(ESTIMATORS.values()):
        assert cls.update is cls.learn_many


@pytest.mark.parametrize(
    "name",
    ["naive", "lln", "sa", "sam", "naive-interval", "lln-interval", "sa-interval", "sam-interval"],
)
def test_online_state_is_at_most_64_bytes_per_page(name):
    est = make_estimator(name, 1000)
    assert est.state_nbytes / 1000 <= 64


def test_registry_names():
    assert set(ESTIMATOR_NAMES) >= {
        "naive",
        "lln",
        "sa",
        "sam",
        "mle",
        "mm",
        "naive-interval",
        "lln-interval",
        "sa-interval",
        "sam-interval",
    }
    assert all(isinstance(n, str) for n in ESTIMATOR_NAMES) and isinstance(ESTIMATOR_NAMES, tuple)
    assert set(E.CONSISTENT_NAMES) <= set(ESTIMATOR_NAMES)


@pytest.mark.parametrize("cls", sorted(ESTIMATORS.values(), key=lambda c: c.__name__))
def test_public_docstrings_are_numpydoc(cls):
    doc = inspect.getdoc(cls)
    for section in ("Parameters", "Attributes", "Raises", "Examples"):
        assert f"{section}\n--" in doc, f"{cls.__name__} lacks {section}"
    assert ">>>" in doc
    for method in (cls.learn_one, cls.learn_many, cls.predict_one, cls.predict_many):
        assert inspect.getdoc(method)


def test_exports_are_importable():
    for name in E.__all__:
        assert hasattr(E, name), name
