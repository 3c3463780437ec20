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

The simulation kernels below are numba-compiled helpers used by the poll loops of
:mod:`freshcrawl.learning.htraa` and :mod:`freshcrawl.learning.polling_policies`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import NDArray

from freshcrawl._validation import check_interval, check_nonnegative, check_positive, check_rng
from freshcrawl.learning.htraa import htraa_feedback, htraa_leaf_shares, htraa_pick
from freshcrawl.learning.polling_policies import _estimate, _proportional

__all__ = [
    "zipf_update_probabilities",
    "detection_probability",
    "expected_detections_per_poll",
    "ZipfEnvironment",
    "PollingRun",
    "simulate_htraa",
    "simulate_estimator",
]


def _check_n_pages(n_pages: object) -> int:
    if isinstance(n_pages, bool) or not isinstance(n_pages, (int, np.integer)):
        raise TypeError(f"n_pages must be an int number of pages; got {type(n_pages).__name__} {n_pages!r}")
    if n_pages < 1:
        raise ValueError(f"n_pages must be >= 1 page; got {n_pages!r}")
    return int(n_pages)


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
        if isinstance(perturbations, bool) or not isinstance(perturbations, (int, np.integer)) or perturbations < 0:
            raise ValueError(f"perturbations must be an int >= 0 (number of swaps); got {perturbations!r}")
        self.perturbations = int(perturbations)
        if switch_every is not None and (
            isinstance(switch_every, bool) or not isinstance(switch_every, (int, np.integer)) or switch_every < 1
        ):
            raise ValueError(f"switch_every must be None or an int >= 1 (polls between switches); got {switch_every!r}")
        self.switch_every = None if switch_every is None else int(switch_every)
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


@dataclass(frozen=True, slots=True)
class PollingRun:
    """Learning curve of a policy in a :class:`ZipfEnvironment`.

    Attributes
    ----------
    polls : ndarray of int64, shape (n_checkpoints,)
        Polls made at each checkpoint.
    value : ndarray of float, shape (n_checkpoints,)
        Expected detected changes per poll of the policy's allocation at the checkpoint, in the
        environment's state at that moment (exact, d_i(x_i) of Sec. 4.1).
    detected : ndarray of float, shape (n_checkpoints,)
        Realised fraction of the polls since the previous checkpoint that detected a change (NaN where
        no poll was made).
    update_prob : ndarray of float, shape (n_checkpoints, n_pages) or None
        Update probabilities at each checkpoint, recorded for switching environments only.
    seconds : float
        Wall-clock seconds of the compiled loop.
    """

    polls: NDArray[np.int64]
    value: NDArray[np.float64]
    detected: NDArray[np.float64]
    update_prob: NDArray[np.float64] | None
    seconds: float


def _checkpoints(n_polls: int, checkpoints) -> NDArray[np.int64]:
    if isinstance(n_polls, bool) or not isinstance(n_polls, (int, np.integer)) or n_polls < 0:
        raise ValueError(f"n_polls must be an int >= 0; got {n_polls!r}")
    if checkpoints is None:
        checkpoints = np.unique(np.geomspace(1, max(n_polls, 1), 60).astype(np.int64))
        checkpoints = np.concatenate([[0], checkpoints[checkpoints <= n_polls]])
    cp = np.asarray(checkpoints, dtype=np.int64)
    if cp.ndim != 1 or cp.size == 0 or np.any(np.diff(cp) <= 0) or cp[0] < 0 or cp[-1] > n_polls:
        raise ValueError(f"checkpoints must be strictly increasing poll counts in [0, {n_polls}]; got {checkpoints!r}")
    return cp


def _env_arrays(env: ZipfEnvironment):
    with np.errstate(divide="ignore"):
        log1m_u = np.log1p(-env.update_prob_)
    return (
        log1m_u,
        np.zeros(env.n_pages),
        np.zeros(env.n_pages),
        env.page_at_rank_.copy(),
    )


def _finish_env(env: ZipfEnvironment, log1m_u, page_at_rank) -> None:
    env.update_prob_[:] = -np.expm1(log1m_u)
    env.page_at_rank_[:] = page_at_rank


def simulate_htraa(
    env: ZipfEnvironment,
    htraa,
    n_polls: int,
    *,
    checkpoints=None,
    record_update_prob: bool | None = None,
) -> PollingRun:
    """Run an H-TRAA for `n_polls` polls in `env`: EDF pick, environment draw, feedback on the path.

    The loop is one numba-compiled function over polls; poll k happens at time step ``k / c``. The
    hierarchy (``htraa``, a :class:`freshcrawl.learning.htraa.HTRAA` over ``env.n_pages`` materials and
    the same capacity) and the environment (switches, if any) are left in their final state.

    Parameters
    ----------
    env : ZipfEnvironment
        The environment; switches every ``env.switch_every`` polls if set.
    htraa : HTRAA
        The learner, over ``env.n_pages`` materials.
    n_polls : int
        Polls to make, >= 0.
    checkpoints : array_like of int, optional
        Strictly increasing poll counts in [0, n_polls] at which to evaluate the allocation; by default
        60 log-spaced counts.
    record_update_prob : bool, optional
        Keep the update probabilities at each checkpoint; defaults to True for switching environments.

    Returns
    -------
    PollingRun

    Raises
    ------
    ValueError
        If the sizes or capacities of `env` and `htraa` differ, or `n_polls`/`checkpoints` are invalid.

    Examples
    --------
    >>> from freshcrawl.learning.htraa import HTRAA
    >>> env = ZipfEnvironment(64, 0.9, 1.5, rng=0)
    >>> run = simulate_htraa(env, HTRAA(64, rng=0), 200_000, checkpoints=[0, 200_000])
    >>> bool(run.value[-1] > run.value[0])      # learned better than the uniform start
    True
    """
    if htraa.n_materials != env.n_pages or htraa.capacity != env.capacity:
        raise ValueError(
            f"htraa must have env.n_pages={env.n_pages} materials and capacity {env.capacity}; "
            f"got {htraa.n_materials} and {htraa.capacity}"
        )
    cp = _checkpoints(n_polls, checkpoints)
    if record_update_prob is None:
        record_update_prob = env.switch_every is not None
    log1m_u, acc_log, acc_time, page_at_rank = _env_arrays(env)
    value = np.empty(cp.size)
    detected = np.empty(cp.size)
    hist = np.empty((cp.size if record_update_prob else 0, env.n_pages))
    t0 = time.perf_counter()
    _htraa_loop(
        htraa.state_, htraa.share, htraa.n_states, htraa.n_leaves, htraa.mode_code,
        htraa.deadline_,
        log1m_u, acc_log, acc_time, page_at_rank, env.rank_cdf_, env.capacity,
        env.switch_every or 0, int(n_polls), cp, value, detected, hist, htraa.take_seed(),
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    _finish_env(env, log1m_u, page_at_rank)
    return PollingRun(cp, value, detected, hist if record_update_prob else None, seconds)


@numba.njit(cache=True)
def _value_of_leaves(alloc, n_leaves, log1m_u, capacity):  # pragma: no cover - compiled
    tot = 0.0
    for i in range(log1m_u.shape[0]):
        x = alloc[n_leaves + i]
        if x > 0.0:
            tot += -x * math.expm1(log1m_u[i] / x)
    return tot / capacity


@numba.njit(cache=True)
def _htraa_loop(
    state, share, n_states, n_leaves, mode, deadline,
    log1m_u, acc_log, acc_time, page_at_rank, rank_cdf, capacity,
    switch_every, n_polls, cp, value, detected, hist, seed,
):  # pragma: no cover - compiled  # fmt: skip
    if seed >= 0:
        np.random.seed(seed)
    n_real = log1m_u.shape[0]
    alloc = np.empty(2 * n_leaves)
    ci = 0
    hits = 0
    since = 0
    for k in range(n_polls + 1):
        while ci < cp.shape[0] and cp[ci] == k:
            htraa_leaf_shares(state, share, n_leaves, capacity, alloc)
            value[ci] = _value_of_leaves(alloc, n_leaves, log1m_u, capacity)
            detected[ci] = hits / since if since > 0 else np.nan
            if hist.shape[0] > 0:
                for i in range(n_real):
                    hist[ci, i] = -math.expm1(log1m_u[i])
            hits = 0
            since = 0
            ci += 1
        if k == n_polls:
            break
        t = k / capacity
        leaf = htraa_pick(state, share, deadline, n_leaves)
        if leaf < n_real:
            v = env_poll(leaf, t, log1m_u, acc_log, acc_time)
        else:
            v = False  # zero-value padding material
        hits += v
        since += 1
        htraa_feedback(state, share, n_states, n_leaves, leaf, v, mode)
        if switch_every > 0 and (k + 1) % switch_every == 0:
            env_switch(t, log1m_u, acc_log, acc_time, page_at_rank, rank_cdf)


def simulate_estimator(env: ZipfEnvironment, n_polls: int, *, checkpoints=None, seed: int = 0) -> PollingRun:
    """Run the Estimator policy's uniform estimation phase in `env`, evaluating it at every checkpoint.

    Polls go round-robin (the EDF order of the uniform allocation), so each page is polled every
    ``T = n/c`` time steps. At checkpoint t, ``value`` is the expected detected changes per poll of the
    proportional policy applied to the estimates from the first t polls
    (:func:`freshcrawl.learning.polling_policies.estimate_update_prob`), in the environment's state at t:
    the Estimator's performance as a function of the length of its estimation phase (seed 004, Figs. 6-10).

    Examples
    --------
    >>> env = ZipfEnvironment(64, 0.3, 1.5, rng=0)
    >>> run = simulate_estimator(env, 50_000, checkpoints=[64, 50_000], seed=1)
    >>> bool(run.value[-1] > run.value[0])
    True
    """
    cp = _checkpoints(n_polls, checkpoints)
    record = env.switch_every is not None
    log1m_u, acc_log, acc_time, page_at_rank = _env_arrays(env)
    value = np.empty(cp.size)
    detected = np.empty(cp.size)
    hist = np.empty((cp.size if record else 0, env.n_pages))
    t0 = time.perf_counter()
    _estimator_loop(
        log1m_u, acc_log, acc_time, page_at_rank, env.rank_cdf_, env.capacity,
        env.switch_every or 0, int(n_polls), cp, value, detected, hist, int(seed),
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    _finish_env(env, log1m_u, page_at_rank)
    return PollingRun(cp, value, detected, hist if record else None, seconds)


@numba.njit(cache=True)
def _estimator_loop(
    log1m_u, acc_log, acc_time, page_at_rank, rank_cdf, capacity,
    switch_every, n_polls, cp, value, detected, hist, seed,
):  # pragma: no cover - compiled  # fmt: skip
    np.random.seed(seed)
    n = log1m_u.shape[0]
    changes = np.zeros(n)
    polls = np.zeros(n)
    period = n / capacity
    ci = 0
    hits = 0
    since = 0
    for k in range(n_polls + 1):
        while ci < cp.shape[0] and cp[ci] == k:
            uhat = _estimate(changes, polls, period)
            x = _proportional(uhat, capacity)
            tot = 0.0
            for i in range(n):
                if x[i] > 0.0:
                    tot += -x[i] * math.expm1(log1m_u[i] / x[i])
            value[ci] = tot / capacity
            detected[ci] = hits / since if since > 0 else np.nan
            if hist.shape[0] > 0:
                for i in range(n):
                    hist[ci, i] = -math.expm1(log1m_u[i])
            hits = 0
            since = 0
            ci += 1
        if k == n_polls:
            break
        t = k / capacity
        i = k % n
        v = env_poll(i, t, log1m_u, acc_log, acc_time)
        polls[i] += 1.0
        if v:
            changes[i] += 1.0
            hits += 1
        since += 1
        if switch_every > 0 and (k + 1) % switch_every == 0:
            env_switch(t, log1m_u, acc_log, acc_time, page_at_rank, rank_cdf)
