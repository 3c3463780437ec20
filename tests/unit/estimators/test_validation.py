"""Bad input: every error names the argument, the expectation with its unit, and what was received."""

from __future__ import annotations

import numpy as np
import pytest

from freshcrawl.errors import InvalidObservation, UnknownNameError
from freshcrawl.estimators import (
    ESTIMATOR_NAMES,
    LLN,
    SA,
    SAM,
    MLEBinned,
    SAInterval,
    make_estimator,
    solve_mle,
)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"changed": 1, "tau": -1.0, "p": 1.0},
            r"tau must be finite and > 0 days since the previous visit; got -1.0",
        ),
        ({"changed": 1, "tau": 0.0, "p": 1.0}, r"tau must be finite and > 0 days.*got 0.0"),
        ({"changed": 1, "tau": float("nan"), "p": 1.0}, r"tau must be finite.*nan"),
        (
            {"changed": 1, "tau": 1.0, "p": float("inf")},
            r"p must be finite and > 0 visits per day; got inf",
        ),
        ({"changed": 2, "tau": 1.0, "p": 1.0}, r"changed must be 0/1.*got 2"),
        ({"changed": 0.5, "tau": 1.0, "p": 1.0}, r"changed must be 0/1.*got 0.5"),
    ],
)
@pytest.mark.parametrize("name", ESTIMATOR_NAMES)
def test_streaming_rejects_bad_observations(name, kwargs, match):
    est = make_estimator(name)
    with pytest.raises(InvalidObservation, match=match):
        est.learn_one(0, **kwargs)
    assert est.n_visits_.tolist() == [0] and est.predict_one() == 1.0


def test_missing_required_argument():
    with pytest.raises(TypeError, match=r"needs p \(visits per day\)"):
        LLN().learn_one(0, True, tau=1.0)
    with pytest.raises(TypeError, match=r"needs tau \(days since the previous visit\)"):
        SAInterval().learn_one(0, True, p=1.0)
    with pytest.raises(TypeError, match="real number"):
        SA().learn_one(0, True, p="3")
    # the same rule for a batch: a paper form needs p even when tau is given
    with pytest.raises(TypeError, match=r"LLN.learn_many needs p \(visits per day\)"):
        make_estimator("lln", 2).learn_many([0], [True], tau=[1.0])


def test_learn_one_and_predict_one_check_the_page():
    est = make_estimator("sa", 3)
    with pytest.raises(InvalidObservation, match=r"page must be in \[0, 3\); got 3"):
        est.learn_one(3, True, p=1.0)
    with pytest.raises(InvalidObservation, match=r"page must be in \[0, 3\); got -1"):
        est.learn_one(-1, True, p=1.0)
    with pytest.raises(TypeError, match=r"page must be an integer page index; got float 1.0"):
        est.learn_one(1.0, True, p=1.0)
    assert est.n_visits_.tolist() == [0, 0, 0]
    with pytest.raises(IndexError, match=r"page must be in \[0, 3\); got -1"):
        est.predict_one(-1)
    with pytest.raises(IndexError, match=r"pages must be in \[0, 3\); got 0 .. 3"):
        est.predict_many([0, 3])
    with pytest.raises(
        TypeError, match=r"pages must be an array of integer page indices; got dtype float64"
    ):
        est.predict_many([0.5])


@pytest.mark.parametrize(
    ("cls", "kwargs", "match"),
    [
        (SA, {"eta": 0.0}, r"eta must be in \(0.0, 1.0\]; got 0.0"),
        (SA, {"eta": 1.5}, r"eta must be in \(0.0, 1.0\]; got 1.5"),
        (SAM, {"beta": float("nan")}, "beta must not be NaN"),
        (SAM, {"omega": -1.0}, r"omega must be finite and > 0; got -1.0"),
        (
            LLN,
            {"alpha": "cube"},
            r"alpha must be '1', 'log', 'sqrt' or a power in \[0, 1\); got 'cube'",
        ),
        (LLN, {"alpha": 1.0}, r"alpha must be in \[0.0, 1.0\)"),
        (SA, {"delta0": -1.0}, r"delta0 must be finite and >= 0 changes per day; got -1.0"),
        (SA, {"delta0": float("inf")}, r"delta0 must be finite and >= 0 changes per day; got inf"),
        (MLEBinned, {"n_bins": 1}, r"n_bins must be >= 2"),
        (MLEBinned, {"bin_ratio": 1.0}, r"bin_ratio must be > 1"),
    ],
)
def test_bad_parameters(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls(**kwargs)


@pytest.mark.parametrize(
    ("args", "exc", "match"),
    [
        (
            ([0, 1], [1], [1.0, 1.0], [1.0, 1.0]),
            InvalidObservation,
            r"changed must have shape \(2,\) or \(k, 2\)",
        ),
        (
            ([0, 1], [1, 0], [1.0], [1.0, 1.0]),
            InvalidObservation,
            r"tau must have shape \(2,\) like changed; got \(1,\)",
        ),
        (
            ([0, 1], [1, 0], [1.0, 1.0], [1.0, 2.0, 3.0]),
            InvalidObservation,
            r"p must have shape \(2,\)",
        ),
        (
            ([0, 5], [1, 0], [1.0, 1.0], [1.0, 1.0]),
            InvalidObservation,
            r"pages must be in \[0, 4\); entry 1 is 5",
        ),
        (
            ([0, -1], [1, 0], [1.0, 1.0], [1.0, 1.0]),
            InvalidObservation,
            r"pages must be in \[0, 4\)",
        ),
        (
            ([0, 1], [1, 0], [1.0, -2.0], [1.0, 1.0]),
            InvalidObservation,
            r"tau must be finite and > 0 days since the previous visit; 1 of 2 entries are not, first at index 1 \(-2.0\)",
        ),
        (
            ([0, 1], [1, 0], [np.nan, 1.0], [1.0, 1.0]),
            InvalidObservation,
            r"tau must be finite.*first at index 0 \(nan\)",
        ),
        (
            ([0, 1], [1, 0], [1.0, 1.0], [0.0, 1.0]),
            InvalidObservation,
            r"p must be finite and > 0 visits per day; 1 of 2",
        ),
        (
            ([0, 1], [1, 2], [1.0, 1.0], [1.0, 1.0]),
            InvalidObservation,
            r"changed must be 0 or 1; 1 of 2 entries are not, first at index 1 \(2\)",
        ),
        (
            ([0, 1], [1.0, np.nan], [1.0, 1.0], [1.0, 1.0]),
            InvalidObservation,
            r"changed must be 0 or 1.*nan",
        ),
        (
            ([2, 1, 2], [1, 0, 1], [1.0] * 3, [1.0] * 3),
            ValueError,
            r"pages must be distinct within one update.*page 2",
        ),
        (
            ([0.5, 1.0], [1, 0], [1.0, 1.0], [1.0, 1.0]),
            TypeError,
            r"pages must be an array of integers",
        ),
    ],
)
@pytest.mark.parametrize("name", ESTIMATOR_NAMES)
def test_batch_rejects_bad_observations_and_changes_nothing(name, args, exc, match):
    est = make_estimator(name, 4)
    before = np.array(est.delta_).copy()
    with pytest.raises(exc, match=match):
        est.learn_many(*args)
    np.testing.assert_array_equal(est.delta_, before)
    np.testing.assert_array_equal(est.n_visits_, 0)


def test_bad_entry_in_a_later_round_is_located():
    est = make_estimator("sa", 2)
    with pytest.raises(InvalidObservation, match=r"first at row 1, index 0 \(-1.0\)"):
        est.learn_many(
            [0, 1], [[1, 0], [1, 1]], [[1.0, 1.0], [-1.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]]
        )
    assert est.n_visits_.tolist() == [0, 0]


def test_unknown_name_lists_known_names():
    with pytest.raises(
        UnknownNameError, match=r"unknown estimator 'lnn'; known: naive, lln, sa, sam, mle, mm"
    ):
        make_estimator("lnn", 3)
    with pytest.raises(UnknownNameError, match="sa-interval"):
        make_estimator("nope")


def test_bad_n_pages():
    with pytest.raises(ValueError, match=r"n_pages must be >= 1; got 0"):
        make_estimator("sa", 0)
    with pytest.raises(TypeError, match=r"n_pages must be an int >= 1; got float 2.0"):
        make_estimator("sa", 2.0)


def test_offline_solver_errors():
    with pytest.raises(InvalidObservation, match=r"same length; got shapes \(2,\) and \(3,\)"):
        solve_mle([1, 0], [1.0, 1.0, 1.0])
    with pytest.raises(
        InvalidObservation, match=r"tau must be finite and > 0 days.*first at index 1 \(0.0\)"
    ):
        solve_mle([1, 0], [1.0, 0.0])
    with pytest.raises(
        InvalidObservation, match=r"changed must be 0 or 1; first offender at index 0 \(3\)"
    ):
        solve_mle([3, 0], [1.0, 1.0])
