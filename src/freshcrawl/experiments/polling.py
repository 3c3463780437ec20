"""Poll loops of seed 004's experiments: a learner polls a :class:`~freshcrawl.environments.zipf.ZipfEnvironment`.

Each loop is one compiled pass over the polls (pick a page, draw the environment's answer, feed it back,
record the learning curve at checkpoints): :func:`simulate_htraa` for H-TRAA (EDF pick down the tree,
feedback to the automata on the path), :func:`simulate_estimator` for the Estimator policy (round robin,
then proportional on the estimated update probabilities). Used by :mod:`freshcrawl.experiments.automata`
and the benchmarks.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import NDArray

from freshcrawl._validation import check_int
from freshcrawl.environments.zipf import ZipfEnvironment, env_poll, env_switch
from freshcrawl.learning.htraa import htraa_feedback, htraa_leaf_shares, htraa_pick
from freshcrawl.learning.polling_policies import proportional_kernel, update_prob_kernel

__all__ = ["PollingRun", "simulate_htraa", "simulate_estimator"]


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
    n_polls = check_int("n_polls", n_polls)
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
    learner = (htraa.state_, htraa.share, htraa.n_states, htraa.n_leaves, htraa.mode_code, htraa.deadline_)
    return _run(_htraa_loop, learner, env, n_polls, cp, record_update_prob, htraa.take_seed())


def _run(loop, learner: tuple, env: ZipfEnvironment, n_polls: int, cp: NDArray[np.int64], record: bool,
         seed: int) -> PollingRun:
    """Run a compiled poll ``loop`` (its learner's state arrays first) on ``env`` and time it."""
    log1m_u, acc_log, acc_time, page_at_rank = _env_arrays(env)
    value = np.empty(cp.size)
    detected = np.empty(cp.size)
    hist = np.empty((cp.size if record else 0, env.n_pages))
    t0 = time.perf_counter()
    loop(
        *learner, log1m_u, acc_log, acc_time, page_at_rank, env.rank_cdf_, env.capacity,
        env.switch_every or 0, int(n_polls), cp, value, detected, hist, int(seed),
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    _finish_env(env, log1m_u, page_at_rank)
    return PollingRun(cp, value, detected, hist if record else None, seconds)


@numba.njit(cache=True)
def _checkpoint(ci, val, hits, since, value, detected, hist, log1m_u):  # pragma: no cover - compiled
    """Checkpoint ``ci`` of a poll loop: the policy's value, the share of the polls since the previous
    checkpoint that found a change, and (when ``hist`` has rows) every page's change probability now.
    Returns ``ci + 1``."""
    value[ci] = val
    detected[ci] = hits / since if since > 0 else np.nan
    if hist.shape[0] > 0:
        for i in range(log1m_u.shape[0]):
            hist[ci, i] = -math.expm1(log1m_u[i])
    return ci + 1


@numba.njit(cache=True)
def _detections_per_poll(x, log1m_u, capacity):  # pragma: no cover - compiled
    """:func:`~freshcrawl.environments.zipf.expected_detections_per_poll` inside the compiled poll loops,
    from log(1 - u) and without its checks: page i gets ``x[i]`` of the ``capacity`` polls per step."""
    tot = 0.0
    for i in range(log1m_u.shape[0]):
        if x[i] > 0.0:
            tot += -x[i] * math.expm1(log1m_u[i] / x[i])
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
            val = _detections_per_poll(alloc[n_leaves:n_leaves + n_real], log1m_u, capacity)
            ci = _checkpoint(ci, val, hits, since, value, detected, hist, log1m_u)
            hits = since = 0
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
    return _run(_estimator_loop, (), env, n_polls, cp, env.switch_every is not None, seed)


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
            x = proportional_kernel(update_prob_kernel(changes, polls, period), capacity)
            val = _detections_per_poll(x, log1m_u, capacity)
            ci = _checkpoint(ci, val, hits, since, value, detected, hist, log1m_u)
            hits = since = 0
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
