"""The web-polling environment of seed 004, Sec. 4.3.1: Zipf-like update probabilities.

Time is discrete; a time step is the environment's unit of time. The page of rank k is updated in a time
step with probability ``u_k = q_k(α, β) = α / k^β`` (the seed calls this the update probability; the
probability that the page stays *unchanged* in a step, written q_i inside d_i(x_i) in Sec. 1, is
``1 − u_k``). Polling a page reveals only whether it was updated at least once since its previous poll, so a
page polled every 1/x_i steps reveals a change with probability

    d_i(x_i) = 1 − (1 − u_i)^(1/x_i)                               (seed 004, Sec. 1 and 4.1)

and an allocation x (polls per step, Σ x_i = capacity) detects ``Σ x_i d_i(x_i)`` changes per step.

Two ways of making the environment harder, both from Sec. 4.3:

- *perturbations* (Sec. 4.3.1): swap the update probabilities of a uniformly drawn page and the page
  after it in the ranking, 10^3 ... 10^6 times, which hides the spatial structure the hierarchy can use;
- *switching* (Sec. 4.3.4): every r polls, a rank sampled from the current Zipf distribution swaps its
  page with the page of the next rank.

The compiled helpers ``env_poll`` and ``env_switch`` draw a poll's outcome and apply a switch; the poll
loops that run learners against this environment are in :mod:`freshcrawl.experiments.polling`.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numpy.typing import NDArray

from freshcrawl._validation import check_int, check_interval, check_nonnegative, check_positive, check_rng

__all__ = [
    "zipf_update_probabilities",
    "detection_probability",
    "expected_detections_per_poll",
    "ZipfEnvironment",
    "env_poll",
    "env_switch",
]


def _check_n_pages(n_pages: object) -> int:
    return check_int("n_pages", n_pages, low=1, what=" (pages)")


def _check_alpha_beta(alpha: object, beta: object) -> tuple[float, float]:
    a = check_interval("alpha", alpha, low=0.0, high=1.0, unit="(update probability of the rank-1 page per step)")
    b = check_nonnegative("beta", beta, unit="(Zipf skew exponent)")
    return a, b


def zipf_update_probabilities(n_pages: int, alpha: float, beta: float) -> NDArray[np.float64]:
    """Update probability per time step of the pages ranked 1..n, ``q_k(α, β) = α / k^β``.

    Parameters
    ----------
    n_pages : int
        Number of pages n; must be >= 1.
    alpha : float
        Update probability of the rank-1 page per time step; must be in [0, 1].
    beta : float
        Skew of the distribution; must be finite and >= 0 (0 gives equal probabilities).

    Returns
    -------
    ndarray of float, shape (n_pages,)
        Entry k-1 is the probability that the page of rank k is updated in one time step.

    Raises
    ------
    ValueError
        If `n_pages` < 1, `alpha` is outside [0, 1] or `beta` < 0 (NaN and inf included).
    TypeError
        If `n_pages` is not an int.

    References
    ----------
    .. [1] Granmo, Oommen, "Learning Automata-based Solutions to the Optimal Web Polling Problem
       Modelled as a Nonlinear Fractional Knapsack Problem", Sec. 4.3.1 (seed 004).

    Examples
    --------
    The three environments of the seed: 0.76, 2.0 and 2.3 updates per time step at 512 pages.

    >>> [round(float(zipf_update_probabilities(512, a, b).sum()), 2)
    ...  for a, b in [(0.3, 1.5), (0.3, 1.0), (0.9, 1.5)]]
    [0.76, 2.04, 2.27]
    """
    n = _check_n_pages(n_pages)
    a, b = _check_alpha_beta(alpha, beta)
    return a / np.arange(1, n + 1, dtype=np.float64) ** b


def detection_probability(x: NDArray[np.float64], update_prob: NDArray[np.float64]) -> NDArray[np.float64]:
    """Probability that a poll detects a change, ``d_i(x_i) = 1 − (1 − u_i)^(1/x_i)``.

    Parameters
    ----------
    x : ndarray of float, shape (n,)
        Polling frequency of each page, polls per time step; must be >= 0 (0 gives d = 0).
    update_prob : ndarray of float, shape (n,)
        Update probability u_i of each page per time step, in [0, 1].

    Returns
    -------
    ndarray of float, shape (n,)
        d_i(x_i), in [0, 1].

    Raises
    ------
    ValueError
        If the shapes differ, or an entry is NaN, infinite or out of range.

    References
    ----------
    .. [1] Seed 004, Sec. 1 and 4.1.

    Examples
    --------
    The seed's example: a page unchanged with probability 0.5 per step, polled every 3rd or 2nd step.

    >>> detection_probability(np.array([1 / 3, 1 / 2]), np.array([0.5, 0.5])).round(3).tolist()
    [0.875, 0.75]
    """
    x, u = _check_x_u(x, update_prob)
    out = np.zeros_like(x)
    pos = x > 0
    with np.errstate(divide="ignore"):  # u = 1 gives log(0) = -inf and d = 1
        out[pos] = -np.expm1(np.log1p(-u[pos]) / x[pos])
    return out


def expected_detections_per_poll(
    x: NDArray[np.float64], update_prob: NDArray[np.float64], capacity: float = 1.0
) -> float:
    """Expected number of changes detected per poll, ``Σ x_i d_i(x_i) / c``.

    Parameters
    ----------
    x : ndarray of float, shape (n,)
        Polling frequency of each page, polls per time step, >= 0; scaled to sum to `capacity`.
    update_prob : ndarray of float, shape (n,)
        Update probability u_i of each page per time step, in [0, 1].
    capacity : float, default=1.0
        Polls per time step c; must be finite and > 0.

    Returns
    -------
    float
        Expected detected changes per poll (the quantity on the y axis of Figs. 5-12 of seed 004).

    Raises
    ------
    ValueError
        If `capacity` <= 0, `x` sums to 0, or an array is invalid.

    Examples
    --------
    Uniform polling in the (α, β) = (0.3, 1.5) environment of 512 pages:

    >>> u = zipf_update_probabilities(512, 0.3, 1.5)
    >>> round(expected_detections_per_poll(np.ones(512), u), 4)
    0.1227
    """
    c = check_positive("capacity", capacity, unit="polls per time step")
    x, u = _check_x_u(x, update_prob)
    total = float(x.sum())
    if not total > 0:
        raise ValueError(f"x must have a positive sum (polls per time step); got sum {total!r}")
    x = x * (c / total)
    return float(np.sum(x * detection_probability(x, u)) / c)


def _check_x_u(x, update_prob):
    x = np.asarray(x, dtype=np.float64)
    u = np.asarray(update_prob, dtype=np.float64)
    if x.shape != u.shape or x.ndim != 1:
        raise ValueError(f"x and update_prob must be 1-d arrays of the same shape; got {x.shape} and {u.shape}")
    if not np.all(np.isfinite(x)) or np.any(x < 0):
        i = int(np.flatnonzero(~(np.isfinite(x) & (x >= 0)))[0])
        raise ValueError(
            f"x must be finite and >= 0 polls per time step; first offender at index {i} ({x[i].item()!r})"
        )
    if not np.all((u >= 0) & (u <= 1)):
        i = int(np.flatnonzero(~((u >= 0) & (u <= 1)))[0])
        raise ValueError(f"update_prob must be in [0, 1] per time step; first offender at index {i} ({u[i].item()!r})")
    return x, u


class ZipfEnvironment:
    """n pages with update probabilities α/k^β per time step, perturbed and switching (seed 004, 4.3.1).

    Page ``i`` (0-based) starts at rank ``i + 1``. Perturbations are applied once, in the constructor.

    Parameters
    ----------
    n_pages : int
        Number of pages n; must be >= 1.
    alpha : float
        Update probability of the rank-1 page per time step, in [0, 1].
    beta : float
        Skew exponent, finite and >= 0.
    capacity : float, default=1.0
        Polls per time step c; must be finite and > 0.
    perturbations : int, default=0
        Number of swaps of a uniformly drawn page with its successor in the ranking; >= 0.
    switch_every : int or None, default=None
        Polls r between two switches of a dynamic environment (Sec. 4.3.4); None for a static one.
    rng : numpy.random.Generator, int or None
        Randomness for the perturbations.

    Attributes
    ----------
    update_prob_ : ndarray of float, shape (n_pages,)
        Current update probability u_i of each page per time step.
    page_at_rank_ : ndarray of intp, shape (n_pages,)
        Page holding rank k+1.
    rank_cdf_ : ndarray of float, shape (n_pages,)
        Cumulative Zipf distribution over ranks, used to sample the rank that switches.

    Raises
    ------
    ValueError
        If an argument is out of range (message names it and the value).

    References
    ----------
    .. [1] Seed 004, Sec. 4.3.1 (environment, perturbations) and 4.3.4 (switching).

    Examples
    --------
    >>> env = ZipfEnvironment(512, 0.3, 1.5, perturbations=1000, rng=1)
    >>> round(float(env.update_prob_.sum()), 2)
    0.76
    >>> bool(np.array_equal(np.sort(env.update_prob_), np.sort(zipf_update_probabilities(512, 0.3, 1.5))))
    True
    """

    def __init__(
        self,
        n_pages: int,
        alpha: float,
        beta: float,
        *,
        capacity: float = 1.0,
        perturbations: int = 0,
        switch_every: int | None = None,
        rng: np.random.Generator | int | None = None,
    ) -> None:
        self.n_pages = _check_n_pages(n_pages)
        self.alpha, self.beta = _check_alpha_beta(alpha, beta)
        self.capacity = check_positive("capacity", capacity, unit="polls per time step")
        self.perturbations = check_int("perturbations", perturbations, what=" (number of swaps)")
        self.switch_every = None if switch_every is None else check_int(
            "switch_every", switch_every, low=1, what=" (polls between switches)")
        rng = check_rng(rng)
        by_rank = zipf_update_probabilities(self.n_pages, self.alpha, self.beta)
        self.page_at_rank_ = np.arange(self.n_pages, dtype=np.intp)
        if self.perturbations and self.n_pages > 1:
            ks = rng.integers(0, self.n_pages - 1, size=self.perturbations)
            _apply_swaps(self.page_at_rank_, ks)
        self.update_prob_ = np.empty(self.n_pages)
        self.update_prob_[self.page_at_rank_] = by_rank
        w = by_rank[:-1] if self.n_pages > 1 else by_rank
        tot = w.sum()
        self.rank_cdf_ = np.cumsum(w) / tot if tot > 0 else np.linspace(1.0 / w.size, 1.0, w.size)

    def updates_per_step(self) -> float:
        """Expected number of page updates per time step, ``Σ u_i``."""
        return float(self.update_prob_.sum())

    def switch(self, rng: np.random.Generator | int | None = None) -> tuple[int, int]:
        """Apply one switch of Sec. 4.3.4 and return the two pages that exchanged ranks.

        A rank k is drawn from the current Zipf distribution (restricted to ranks with a successor) and
        its page swaps rank, hence update probability, with the page of rank k+1.
        """
        rng = check_rng(rng)
        if self.n_pages < 2:
            return (0, 0)
        k = int(np.searchsorted(self.rank_cdf_, rng.random(), side="right"))
        k = min(k, self.n_pages - 2)
        a, b = int(self.page_at_rank_[k]), int(self.page_at_rank_[k + 1])
        self.page_at_rank_[k], self.page_at_rank_[k + 1] = b, a
        self.update_prob_[a], self.update_prob_[b] = self.update_prob_[b], self.update_prob_[a]
        return a, b

    def expected_detections_per_poll(self, x: NDArray[np.float64]) -> float:
        """Expected detected changes per poll of allocation `x` (polls per step) in the current state."""
        return expected_detections_per_poll(x, self.update_prob_, self.capacity)


@numba.njit(cache=True)
def _apply_swaps(page_at_rank, ks):  # pragma: no cover - compiled
    for k in ks:
        a = page_at_rank[k]
        page_at_rank[k] = page_at_rank[k + 1]
        page_at_rank[k + 1] = a


# ---------------------------------------------------------------------------------------------
# Kernel helpers (numba): the environment state is a handful of flat arrays.
#   log1m_u[i]   log(1 − u_i), −inf for u_i = 1
#   acc_log[i]   log-probability that page i stayed unchanged from its previous poll to acc_time[i]
#   acc_time[i]  time step up to which acc_log[i] is accounted
# ---------------------------------------------------------------------------------------------


@numba.njit(cache=True, inline="always")
def env_poll(i, t, log1m_u, acc_log, acc_time):  # pragma: no cover - compiled
    """Poll page i at time t (steps): draw whether it changed since its previous poll, reset it."""
    dt = t - acc_time[i]
    lg = acc_log[i]
    if dt > 0.0:
        lg += dt * log1m_u[i]
    acc_log[i] = 0.0
    acc_time[i] = t
    # changed with probability 1 - exp(lg)
    return np.random.random() >= math.exp(lg)


@numba.njit(cache=True, inline="always")
def env_switch(t, log1m_u, acc_log, acc_time, page_at_rank, rank_cdf):  # pragma: no cover - compiled
    """One switch of Sec. 4.3.4 at time t: a Zipf-sampled rank swaps its page with the next rank."""
    n = page_at_rank.shape[0]
    if n < 2:
        return
    k = np.searchsorted(rank_cdf, np.random.random(), side="right")
    if k > n - 2:
        k = n - 2
    a = page_at_rank[k]
    b = page_at_rank[k + 1]
    for j in (a, b):
        dt = t - acc_time[j]
        if dt > 0.0:
            acc_log[j] += dt * log1m_u[j]
        acc_time[j] = t
    tmp = log1m_u[a]
    log1m_u[a] = log1m_u[b]
    log1m_u[b] = tmp
    page_at_rank[k] = b
    page_at_rank[k + 1] = a


# ---------------------------------------------------------------------------------------------
# Poll loops: one compiled loop over polls (scheduler pick, environment draw, learning update).
# ---------------------------------------------------------------------------------------------
