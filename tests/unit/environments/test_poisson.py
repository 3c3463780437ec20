"""Synthetic Poisson pages: simulated freshness against the closed forms.

Each check runs R independent replicates (seeds 0..R-1) and compares their mean with the formula,
within 5 standard errors estimated from the replicates themselves (s / sqrt(R)).
"""

from __future__ import annotations

import numpy as np
import pytest

from freshcrawl.environments import PoissonEnvironment
from freshcrawl.policies.baselines import make_uniform
from freshcrawl.simulation import simulate

R = 12  # replicates
N_PAGES = 50
DAYS = 200.0


def replicate(delta: float, p: float, visits: str):
    env = PoissonEnvironment(np.full(N_PAGES, delta), start=0.0, end=DAYS)
    runs = [
        simulate(make_uniform(None, None), env, p * N_PAGES, visits=visits, rng=s) for s in range(R)
    ]
    return {
        k: np.array([getattr(r, k) for r in runs])
        for k in ("freshness", "age_days", "harmonic_staleness")
    }


def close(samples: np.ndarray, expected: float) -> None:
    se = samples.std(ddof=1) / np.sqrt(samples.size)
    assert abs(samples.mean() - expected) < 5 * se, (samples.mean(), expected, se)


@pytest.mark.parametrize(("delta", "p"), [(1.0, 2.0), (3.0, 1.0)])
def test_periodic_visits_match_cho_garcia_molina(delta, p):
    out = replicate(delta, p, "periodic")
    close(out["freshness"], (p / delta) * (1 - np.exp(-delta / p)))
    # mean age over an interval T = 1/p: (1/T) int_0^T (t - (1 - e^{-Δt})/Δ) dt
    T = 1 / p
    close(out["age_days"], T / 2 - 1 / delta + (1 - np.exp(-delta * T)) / (delta**2 * T))


@pytest.mark.parametrize(("delta", "p"), [(1.0, 2.0), (3.0, 1.0)])
def test_poisson_visits_match_p_over_p_plus_delta(delta, p):
    out = replicate(delta, p, "poisson")
    close(out["freshness"], p / (p + delta))
    # Kolobov et al.: E[H(n)] = -log(p / (p + Δ)) under Poisson visits
    close(out["harmonic_staleness"], -np.log(p / (p + delta)))
    # age: n(t) changes since the last visit; E[age] = Δ / (p (p + Δ))
    close(out["age_days"], delta / (p * (p + delta)))


def test_static_pages_stay_fresh():
    env = PoissonEnvironment(np.zeros(3), start=0.0, end=10.0)
    res = simulate(make_uniform(None, None), env, 3.0, rng=0)
    assert (res.freshness, res.age_days, res.harmonic_staleness, res.changes_detected) == (
        1.0,
        0.0,
        0.0,
        0.0,
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(delta=[1.0, -1.0]), r"delta must be >= 0.0 changes per day; 1 of 2"),
        (dict(delta=[np.inf]), "delta must be finite"),
        (dict(delta=[1.0], weights=[1.0, 2.0]), r"weights must have shape \(1,\)"),
        (dict(delta=[1.0], start=5.0, end=5.0), "end - start must be > 0"),
        (dict(delta=[]), "non-empty"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PoissonEnvironment(**kwargs)
