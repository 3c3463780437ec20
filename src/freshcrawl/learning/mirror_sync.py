"""Synchronization bandits: MirrorSync, AsyncMirrorSync and AsyncPSGDSync (seed 003).

The agent plays each arm k in *sync mode* periodically at rate r_k (a play resets the arm's cost
process) and, with probability ε per inter-sync interval, once more in *probe mode* at a uniform time inside
the interval (a play that only looks). Lemma 2 turns the two costs seen in one interval into an unbiased
estimate of ∂J/∂r_k, and mirror descent with the log barrier (Alg. 1) moves r inside

    K_ε = {r ∈ [r_min, r_max / (1 + ε)]^K : Σ_k r_k = B / (1 + ε)},

so that sync plays use B / (1 + ε) of the budget and probes the remaining ε B / (1 + ε) in expectation.

Every update step is an exact Bregman projection computed by a one-dimensional safeguarded Newton
iteration on the multiplier of the sum constraint (compiled with numba): O(K) per iteration.

Time is in the instance's time unit (days when arms are pages); rates in plays per time unit.

References
----------
.. [1] Kolobov, Bubeck, Zimmert, "Online Learning for Active Cache Synchronization", ICML 2020 (seed 003):
   Lemma 2, Alg. 1 (MirrorSync, ScheduleArmPlays lines 27-40, MirrorDescentStep lines 42-45), Alg. 2
   (AsyncMirrorSync), Sec. 8 (AsyncPSGDSync), App. B and C (hyperparameters).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

from freshcrawl._validation import check_int, check_array, check_interval, check_positive, check_rng
from freshcrawl.errors import InfeasibleAllocation, InvalidObservation
from freshcrawl.learning.sync_costs import SyncCostProcess, policy_cost

__all__ = [
    "SyncProblem",
    "ArmSchedule",
    "SyncRunResult",
    "gradient_sample",
    "schedule_arm_plays",
    "mirror_descent_step",
    "log_barrier_projection",
    "projected_sgd_step",
    "MirrorSync",
    "AsyncMirrorSync",
    "AsyncPSGDSync",
]

#: Relative slack when deciding whether a sync play falls on or before a boundary (rounding of j / r).
_TIME_SLACK = 1e-9


# --------------------------------------------------------------------------------------------------
# Numeric kernels: the two projections onto {x in [lo, hi]^n : sum x = total}
# --------------------------------------------------------------------------------------------------


@njit(cache=True)
def _bracketed_newton_step(nu, f, slope, a, b):  # pragma: no cover - compiled
    """One safeguarded Newton step on a non-increasing f(ν) with its root in [a, b].

    Shrinks the bracket with the sign of f, then takes ν - f/slope if it stays inside, else bisects.
    Returns (ν, a, b, done); done when the bracket has collapsed to rounding (ν is then kept).
    """
    if f > 0.0:
        a = nu
    else:
        b = nu
    if b - a <= 1e-15 * max(1.0, abs(a), abs(b)):
        return nu, a, b, True
    if slope < 0.0:
        cand = nu - f / slope
        if a < cand < b:
            return cand, a, b, False
    return 0.5 * (a + b), a, b, False


@njit(cache=True)
def _log_barrier_projection(d, total, lo, hi, tol, max_iter):  # pragma: no cover - compiled
    """x_k = clip(1 / (d_k + ν), lo, hi) (x_k = hi where d_k + ν ≤ 1/hi) with Σ x = total.

    Σ x(ν) is continuous and non-increasing in ν; bracket [1/hi - max d, 1/lo - min d] holds the root.
    Newton steps (derivative -Σ_free x_k²) are taken when they stay inside the bracket, else bisection.
    Returns (x, ν, iterations).
    """
    n = d.shape[0]
    inv_hi = 1.0 / hi
    inv_lo = 1.0 / lo
    dmin = d[0]
    dmax = d[0]
    for k in range(1, n):
        if d[k] < dmin:
            dmin = d[k]
        if d[k] > dmax:
            dmax = d[k]
    a = inv_hi - dmax  # every x_k = hi: sum >= total
    b = inv_lo - dmin  # every x_k = lo: sum <= total
    nu = 0.0
    if nu <= a or nu >= b:
        nu = 0.5 * (a + b)
    it = 0
    while it < max_iter:
        it += 1
        s = 0.0
        ds = 0.0
        for k in range(n):
            t = d[k] + nu
            if t <= inv_hi:
                s += hi
            elif t >= inv_lo:
                s += lo
            else:
                xk = 1.0 / t
                s += xk
                ds -= xk * xk
        f = s - total
        if abs(f) <= tol * total:
            break
        nu, a, b, done = _bracketed_newton_step(nu, f, ds, a, b)
        if done:
            break
    x = np.empty(n)
    s = 0.0
    w = 0.0
    for k in range(n):
        t = d[k] + nu
        if t <= inv_hi:
            x[k] = hi
        elif t >= inv_lo:
            x[k] = lo
        else:
            x[k] = min(hi, max(lo, 1.0 / t))
            w += x[k] * x[k]
        s += x[k]
    # Polish: hand the last rounding residual to the free coordinates (a Newton step in ν).
    if w > 0.0:
        c = (total - s) / w
        for k in range(n):
            if lo < x[k] < hi:
                x[k] = min(hi, max(lo, x[k] + c * x[k] * x[k]))
    return x, nu, it


@njit(cache=True)
def _euclidean_projection(y, total, lo, hi, tol, max_iter):  # pragma: no cover - compiled
    """x_k = clip(y_k - ν, lo, hi) with Σ x = total (Euclidean projection); returns (x, ν, iterations)."""
    n = y.shape[0]
    ymin = y[0]
    ymax = y[0]
    for k in range(1, n):
        if y[k] < ymin:
            ymin = y[k]
        if y[k] > ymax:
            ymax = y[k]
    a = ymin - hi  # every x_k = hi
    b = ymax - lo  # every x_k = lo
    nu = 0.0
    if nu <= a or nu >= b:
        nu = 0.5 * (a + b)
    it = 0
    while it < max_iter:
        it += 1
        s = 0.0
        n_free = 0
        for k in range(n):
            v = y[k] - nu
            if v >= hi:
                s += hi
            elif v <= lo:
                s += lo
            else:
                s += v
                n_free += 1
        f = s - total
        if abs(f) <= tol * total:
            break
        nu, a, b, done = _bracketed_newton_step(nu, f, -float(n_free), a, b)
        if done:
            break
    x = np.empty(n)
    s = 0.0
    n_free = 0
    for k in range(n):
        x[k] = min(hi, max(lo, y[k] - nu))
        s += x[k]
        if lo < x[k] < hi:
            n_free += 1
    if n_free > 0:
        c = (total - s) / n_free
        for k in range(n):
            if lo < x[k] < hi:
                x[k] = min(hi, max(lo, x[k] + c))
    return x, nu, it


@njit(cache=True)
def _close_intervals(next_sync, cur_is_sample, r, t_now, slack, counts, last_sync):  # pragma: no cover
    """Close every running interval that ends by t_now, then whole periods 1/r_k (AsyncMirrorSync).

    Fills counts (Lemma 2 intervals closed per arm) and last_sync (NaN where nothing closed), moves
    next_sync to the end of each arm's new running interval; returns the number of sync plays.
    """
    n_sync = 0
    limit = t_now * slack
    for k in range(r.shape[0]):
        if next_sync[k] <= limit:
            span = (t_now - next_sync[k]) * r[k]
            more = 0
            if span > 0.0:
                more = int(math.floor(span * slack + 1e-9))
            counts[k] = more + (1 if cur_is_sample[k] else 0)
            last_sync[k] = next_sync[k] + more / r[k]
            next_sync[k] = last_sync[k] + 1.0 / r[k]
            cur_is_sample[k] = True
            n_sync += 1 + more
        else:
            counts[k] = 0
            last_sync[k] = np.nan
    return n_sync


@njit(cache=True)
def _local_update(r, g_sum, counts, last_sync, next_sync, cur_is_sample, u, epsilon, eta, lo, hi, t_now,
                  euclidean, tol, max_iter):  # pragma: no cover
    """Alg. 2 lines 25-38 on the arms with samples: mean gradient / |A_i|, local step, re-schedule.

    Returns (number of arms updated, number of "sync now" plays).
    """
    n = r.shape[0]
    m = 0
    for k in range(n):
        if counts[k] > 0:
            m += 1
    if m == 0:
        return 0, 0
    idx = np.empty(m, dtype=np.int64)
    j = 0
    total = 0.0
    for k in range(n):
        if counts[k] > 0:
            idx[j] = k
            j += 1
            total += r[k]
    z = np.empty(m)
    for j in range(m):
        k = idx[j]
        g = g_sum[k] / counts[k] / m
        z[j] = r[k] - eta * g if euclidean else 1.0 / r[k] + eta * g
    if euclidean:
        x, _, _ = _euclidean_projection(z, total, lo, hi, tol, max_iter)
    else:
        x, _, _ = _log_barrier_projection(z, total, lo, hi, tol, max_iter)
    n_now = 0
    for j in range(m):
        k = idx[j]
        r[k] = x[j]
        if u[k] < epsilon:
            next_sync[k] = t_now + 1.0 / x[j]
            cur_is_sample[k] = True
            n_now += 1
        else:
            next_sync[k] = max(last_sync[k] + 1.0 / x[j], t_now)
            cur_is_sample[k] = False
    return m, n_now


_PROJ_TOL = 1e-13
_PROJ_MAX_ITER = 200


def log_barrier_projection(
    d: NDArray[np.float64], total: float, lo: float, hi: float
) -> NDArray[np.float64]:
    """The Bregman projection of a log-barrier mirror step onto ``{x ∈ [lo, hi]^n : Σ x = total}``.

    Returns ``x_k = clip(1 / (d_k + ν), lo, hi)`` with the one multiplier ν that makes
    ``Σ x = total`` (relative precision 1e-13), found by a safeguarded Newton iteration (Alg. 1
    lines 42-45, seed 003).
    A mirror step from rates r with gradient g and learning rate η has ``d = 1/r + η g``
    (:func:`mirror_descent_step` is that step with its inputs checked).

    Parameters
    ----------
    d : ndarray of float, shape (n,)
        Dual point, time units per play (finite).
    total : float
        Σ x, plays per time unit, in ``[n lo, n hi]``.
    lo, hi : float
        Bounds, ``0 < lo < hi < inf``, plays per time unit.

    Returns
    -------
    ndarray of float, shape (n,)
        Rates x, plays per time unit.

    Notes
    -----
    Nothing is checked (callers that check once call it at every step); out-of-range inputs give an
    undefined result rather than an error.

    Examples
    --------
    >>> log_barrier_projection(np.array([0.5, 1.0]), 2.0, 0.1, 5.0).round(6).tolist()
    [1.236068, 0.763932]
    """
    x, _, _ = _log_barrier_projection(
        d, float(total), float(lo), float(hi), _PROJ_TOL, _PROJ_MAX_ITER
    )
    return x


def _check_box(n: int, total: float, lo: float, hi: float) -> None:
    if not (0.0 < lo < hi) or not math.isfinite(hi):
        raise ValueError(f"rate bounds must satisfy 0 < r_lo < r_hi < inf plays per time unit; got r_lo={lo!r}, r_hi={hi!r}")
    if not (n * lo * (1 - 1e-12) <= total <= n * hi * (1 + 1e-12)):
        raise InfeasibleAllocation(
            f"total must be in [n * r_lo, n * r_hi] = [{n * lo!r}, {n * hi!r}] plays per time unit for n={n} arms; "
            f"got {total!r}"
        )


def mirror_descent_step(
    r: ArrayLike, g: ArrayLike, eta: float, *, total: float, r_lo: float, r_hi: float
) -> NDArray[np.float64]:
    """One log-barrier mirror-descent step with exact Bregman projection (Alg. 1 lines 42-45, seed 003).

    Returns ``argmin_{x ∈ K} η <x, g> + Σ_k [-log(x_k / r_k) + x_k / r_k - 1]`` over
    ``K = {x ∈ [r_lo, r_hi]^n : Σ x = total}``. Stationarity gives ``x_k = 1 / (1/r_k + η g_k + ν)`` clipped
    to the box, with one multiplier ν found by a safeguarded Newton iteration.

    Parameters
    ----------
    r : ndarray of float, shape (n,)
        Current rates, plays per time unit, all > 0.
    g : ndarray of float, shape (n,)
        Gradient estimate, cost units per (plays per time unit).
    eta : float
        Learning rate η > 0.
    total : float
        Σ x, plays per time unit; must lie in ``[n r_lo, n r_hi]``.
    r_lo, r_hi : float
        Box bounds, ``0 < r_lo < r_hi``, plays per time unit.

    Returns
    -------
    ndarray of float, shape (n,)
        New rates, plays per time unit; ``Σ = total`` to relative precision 1e-13.

    Raises
    ------
    ValueError
        If shapes differ, ``r`` has an entry that is not finite and > 0, ``g`` is not finite, ``eta`` is not
        finite and > 0, or the bounds are not ``0 < r_lo < r_hi < inf``.
    InfeasibleAllocation
        If ``total`` is outside ``[n r_lo, n r_hi]``.

    Examples
    --------
    >>> x = mirror_descent_step([1.0, 1.0], [-1.0, 0.0], 0.5, total=2.0, r_lo=0.1, r_hi=5.0)
    >>> x.round(6).tolist()    # the arm with the negative gradient gains rate
    [1.236068, 0.763932]
    >>> round(float(x.sum()), 12)
    2.0
    """
    r = check_array("r", r, low=0.0, low_inclusive=False, unit="plays per time unit")
    g = check_array("g", g, shape=r.shape)
    eta = check_positive("eta", eta)
    _check_box(r.size, total, r_lo, r_hi)
    d = 1.0 / r + eta * g
    x, _, _ = _log_barrier_projection(d, float(total), float(r_lo), float(r_hi), _PROJ_TOL, _PROJ_MAX_ITER)
    return x


def projected_sgd_step(
    r: ArrayLike, g: ArrayLike, eta: float, *, total: float, r_lo: float, r_hi: float
) -> NDArray[np.float64]:
    """One projected SGD step: the Euclidean projection of ``r - η g`` onto K (AsyncPSGDSync, Sec. 8 of seed 003).

    ``K = {x ∈ [r_lo, r_hi]^n : Σ x = total}``; the projection is ``clip(r - η g - ν, r_lo, r_hi)`` with one
    multiplier ν (safeguarded Newton on a piecewise-linear function: exact after finitely many steps).

    Parameters and Raises are those of :func:`mirror_descent_step`.

    Returns
    -------
    ndarray of float, shape (n,)
        New rates, plays per time unit.

    Examples
    --------
    >>> projected_sgd_step([1.0, 1.0], [-1.0, 0.0], 0.5, total=2.0, r_lo=0.1, r_hi=5.0).tolist()
    [1.25, 0.75]
    """
    r = check_array("r", r, low=0.0, low_inclusive=False, unit="plays per time unit")
    g = check_array("g", g, shape=r.shape)
    eta = check_positive("eta", eta)
    _check_box(r.size, total, r_lo, r_hi)
    x, _, _ = _euclidean_projection(r - eta * g, float(total), float(r_lo), float(r_hi), _PROJ_TOL, _PROJ_MAX_ITER)
    return x


def gradient_sample(
    c_probe: ArrayLike, c_sync: ArrayLike, r: ArrayLike, epsilon: float
) -> NDArray[np.float64]:
    """GradJSample of Alg. 1 (lines 23-25): ``(ĉ^(ε) - ĉ) / (ε r_k)`` for an interval that had a probe.

    This estimates ``∂J_k/∂r_k = C̄_k(1/r_k) - c̄_k(1/r_k) / r_k`` of one arm; Lemma 2's estimator of
    ``∂J/∂r_k`` (with J the mean over K arms) is this divided by K, and 0 for an interval without a probe.

    Parameters
    ----------
    c_probe, c_sync : ndarray of float, shape (m,)
        Costs seen by the probe play (at a uniform time in the interval) and the closing sync play.
    r : ndarray of float, shape (m,)
        Sync rate of the interval, plays per time unit (interval length 1 / r).
    epsilon : float
        Probe probability ε in (0, 1).

    Returns
    -------
    ndarray of float, shape (m,)
        Gradient samples, cost units per (plays per time unit).

    Examples
    --------
    >>> gradient_sample([0.0], [1.0], [2.0], 0.05).tolist()
    [-10.0]
    """
    return (np.asarray(c_probe, float) - np.asarray(c_sync, float)) / (epsilon * np.asarray(r, float))


# --------------------------------------------------------------------------------------------------
# Problem description and schedules
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SyncProblem:
    """Constraints of a synchronization-bandit instance (Problem 1 and K_ε of Alg. 1, seed 003).

    Parameters
    ----------
    n_arms : int
        K ≥ 1.
    budget : float
        B, the total play rate (sync and probe), plays per time unit; ``K r_min <= B <= K r_max``.
    r_min, r_max : float
        Per-arm sync-rate bounds, plays per time unit, ``0 < r_min < r_max``.
    epsilon : float
        ε in (0, 1): probe probability per interval and the budget share ε / (1 + ε) kept for probes.
        K_ε is non-empty only when ``B >= (1 + ε) K r_min``.

    Raises
    ------
    ValueError
        If a value is out of range (the message names it and what was received).
    InfeasibleAllocation
        If B is outside ``[K r_min, K r_max]`` or K_ε is empty.

    Examples
    --------
    >>> prob = SyncProblem(100, 40.0, 0.025, 3.0, 0.05)
    >>> round(prob.sync_budget, 4), round(prob.r_hi, 4)      # B/(1+ε), r_max/(1+ε)
    (38.0952, 2.8571)
    """

    n_arms: int
    budget: float
    r_min: float
    r_max: float
    epsilon: float

    def __post_init__(self) -> None:
        n = self.n_arms
        check_int("n_arms", n, low=1, what=" (K, the number of arms)")
        check_interval("epsilon", self.epsilon, low=0.0, high=1.0, closed="neither")
        r_min = check_positive("r_min", self.r_min, unit="plays per time unit")
        r_max = check_positive("r_max", self.r_max, unit="plays per time unit")
        if r_min >= r_max:
            raise ValueError(f"r_min must be < r_max = {r_max!r} plays per time unit; got r_min={r_min!r}")
        budget = check_positive("budget", self.budget, unit="plays per time unit")
        if not (n * r_min <= budget <= n * r_max):
            raise InfeasibleAllocation(
                f"budget B must be in [K r_min, K r_max] = [{n * r_min!r}, {n * r_max!r}] plays per time unit "
                f"for K={n}; got {budget!r}"
            )
        if budget / (1.0 + self.epsilon) < n * r_min * (1 - 1e-12):
            raise InfeasibleAllocation(
                f"budget B must be >= (1 + epsilon) K r_min = {(1 + self.epsilon) * n * r_min!r} plays per time unit "
                f"so that sync plays at rate >= r_min leave room for probes (K_epsilon is empty); got {budget!r}"
            )

    @property
    def sync_budget(self) -> float:
        """B / (1 + ε): the total sync rate on K_ε, plays per time unit."""
        return self.budget / (1.0 + self.epsilon)

    @property
    def r_hi(self) -> float:
        """r_max / (1 + ε): the upper bound of K_ε, plays per time unit."""
        return self.r_max / (1.0 + self.epsilon)

    def initial_rates(self) -> NDArray[np.float64]:
        """argmin of the log barrier over K_ε (Alg. 1 line 3): every arm at B / ((1 + ε) K)."""
        return np.full(self.n_arms, self.sync_budget / self.n_arms)


@dataclass(frozen=True, slots=True)
class ArmSchedule:
    """Plays produced by ScheduleArmPlays for several arms, one row per inter-sync interval.

    Attributes
    ----------
    arm : ndarray of intp, shape (n,)
        Arm of each interval; rows are grouped by arm, in time order.
    start : ndarray of float, shape (n,)
        Time of the sync play that opens the interval.
    sync_time : ndarray of float, shape (n,)
        Time of the sync play that closes it: ``start + 1 / r_arm``.
    probe : ndarray of bool, shape (n,)
        Whether a probe play was inserted (probability ε).
    probe_time : ndarray of float, shape (n,)
        Probe time, uniform on ``[start, sync_time)``; NaN where ``probe`` is False.
    t_prev : ndarray of float, shape (K,)
        Each arm's last scheduled sync time (the routine's second return value).
    """

    arm: NDArray[np.intp]
    start: NDArray[np.float64]
    sync_time: NDArray[np.float64]
    probe: NDArray[np.bool_]
    probe_time: NDArray[np.float64]
    t_prev: NDArray[np.float64]

    def plays(self) -> tuple[NDArray[np.intp], NDArray[np.float64], NDArray[np.bool_]]:
        """All plays as ``(arm, time, is_probe)``, sorted by arm then time."""
        arm = np.concatenate([self.arm, self.arm[self.probe]])
        time = np.concatenate([self.sync_time, self.probe_time[self.probe]])
        is_probe = np.concatenate([np.zeros(self.arm.size, bool), np.ones(int(self.probe.sum()), bool)])
        order = np.lexsort((time, arm))
        return arm[order], time[order], is_probe[order]


def _intervals_until(t_prev, r, end):
    """Number of complete periods j/r, j >= 1, with t_prev + j/r <= end (relative slack _TIME_SLACK)."""
    span = (end - t_prev) * r
    return np.maximum(np.floor(span + _TIME_SLACK * np.maximum(1.0, span)), 0.0).astype(np.intp)


def schedule_arm_plays(
    t_prev: ArrayLike, r: ArrayLike, end: float, epsilon: float, rng: np.random.Generator | int | None = None
) -> ArmSchedule:
    """ScheduleArmPlays (Alg. 1 lines 27-40 of seed 003), vectorised over arms.

    From each arm's last sync ``t_prev[k]``, sync plays follow every ``1 / r[k]`` while the next one falls
    no later than ``end``; before each, with probability ε, a probe play at a uniform time in the interval.

    Parameters
    ----------
    t_prev : ndarray of float, shape (K,)
        Last sync time per arm, time units.
    r : ndarray of float, shape (K,)
        Sync rates, plays per time unit, all > 0.
    end : float
        Schedule horizon (absolute time). A sync play exactly at ``end`` is included (line 29 of the seed
        reads ``<``; with ``<`` an arm at r_min would get no play at all in a round of length 1 / r_min,
        contradicting the round-length argument after Lemma 2).
    epsilon : float
        Probe probability ε in (0, 1).
    rng : numpy.random.Generator or int or None
        Randomness.

    Returns
    -------
    ArmSchedule
        One row per interval.

    Raises
    ------
    ValueError
        If shapes differ, a rate is not finite and > 0, a time is not finite or ε is not in (0, 1).

    Examples
    --------
    >>> s = schedule_arm_plays([0.0, 0.0], [1.0, 0.5], 4.0, 0.5, rng=0)
    >>> s.arm.tolist(), s.sync_time.tolist()
    ([0, 0, 0, 0, 1, 1], [1.0, 2.0, 3.0, 4.0, 2.0, 4.0])
    """
    r = check_array("r", r, low=0.0, low_inclusive=False, unit="plays per time unit")
    t_prev = check_array("t_prev", t_prev, shape=r.shape)
    end = float(check_array("end", [end])[0])
    epsilon = check_interval("epsilon", epsilon, low=0.0, high=1.0, closed="neither")
    rng = check_rng(rng)
    n = _intervals_until(t_prev, r, end)
    arm = np.repeat(np.arange(r.size, dtype=np.intp), n)
    first = np.cumsum(n) - n
    j = np.arange(arm.size) - np.repeat(first, n)
    period = 1.0 / r[arm]
    start = t_prev[arm] + j * period
    sync_time = t_prev[arm] + (j + 1) * period
    probe = rng.random(arm.size) < epsilon
    probe_time = np.full(arm.size, np.nan)
    probe_time[probe] = start[probe] + rng.random(int(probe.sum())) * period[probe]
    return ArmSchedule(arm, start, sync_time, probe, probe_time, t_prev + n / r)


# --------------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SyncRunResult:
    """One run of a synchronization-bandit algorithm.

    Attributes
    ----------
    algorithm : str
        ``"mirrorsync"``, ``"asyncmirrorsync"`` or ``"asyncpsgdsync"``.
    rounds : ndarray of float, shape (n_updates + 1,)
        Time of each recorded J in MirrorSync rounds (units of 1 / r_min); the first entry is 0 (initial r).
    j : ndarray of float, shape (n_updates + 1,)
        Policy cost J(r) (Lemma 1) of the sync rates after each update, cost units per arm and time unit.
    rates : ndarray of float, shape (K,)
        Final sync rates, plays per time unit (on K_ε).
    n_updates : int
        Number of rate updates.
    n_sync_plays, n_probe_plays : int
        Plays whose cost was drawn (for MirrorSync in "first" mode only the first interval of each
        round is simulated).
    horizon : float
        Simulated time, time units.
    """

    algorithm: str
    rounds: NDArray[np.float64]
    j: NDArray[np.float64]
    rates: NDArray[np.float64]
    n_updates: int
    n_sync_plays: int
    n_probe_plays: int
    horizon: float


# --------------------------------------------------------------------------------------------------
# Algorithms
# --------------------------------------------------------------------------------------------------


def _check_costs(c: NDArray, arms: NDArray[np.intp], bound: float, round_index: int, what: str) -> None:
    if c.size and c.min() >= 0.0 and c.max() <= bound:  # fast path; NaN fails both comparisons
        return
    bad = ~((c >= 0.0) & (c <= bound))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidObservation(
            f"{what} cost sample of arm {int(arms[i])} in round {round_index} must be in [0, U={bound!r}] "
            f"and not NaN; got {float(c[i])!r}"
        )


def _probe_sums(process: SyncCostProcess, pa: NDArray[np.intp], rate: NDArray[np.float64], epsilon: float,
                rng: np.random.Generator, round_index: int, n_arms: int) -> NDArray[np.float64]:
    """Σ of Lemma 2 samples per arm for probed intervals (one per entry of ``pa``, sync rate ``rate``)."""
    if not pa.size:
        return np.zeros(n_arms)
    period = 1.0 / rate
    c_probe, c_sync = process.sample_pair(pa, rng.random(pa.size) * period, period, rng)
    c_probe = np.asarray(c_probe, dtype=np.float64)
    c_sync = np.asarray(c_sync, dtype=np.float64)
    if c_probe.shape != pa.shape or c_sync.shape != pa.shape:
        raise InvalidObservation(
            f"sample_pair must return two arrays of shape {pa.shape} in round {round_index}; "
            f"got {c_probe.shape} and {c_sync.shape}"
        )
    _check_costs(c_probe, pa, process.cost_bound, round_index, "probe")
    _check_costs(c_sync, pa, process.cost_bound, round_index, "sync")
    return np.bincount(pa, weights=gradient_sample(c_probe, c_sync, rate, epsilon), minlength=n_arms)


def _j(process: SyncCostProcess, r: NDArray[np.float64]) -> float:
    """J(r) of Lemma 1 without argument checks (r is on K_ε by construction)."""
    fast = getattr(process, "_policy_cost_fast", None)
    if fast is not None:
        return fast(r)
    return float(np.mean(r * process.cumulative_mean_cost(1.0 / r)))


class _SyncBandit:
    """Shared hyperparameter checks."""

    algorithm = ""

    def __init__(self, *, budget: float, r_min: float, r_max: float, epsilon: float, eta: float) -> None:
        self.budget = budget
        self.r_min = r_min
        self.r_max = r_max
        self.epsilon = check_interval("epsilon", epsilon, low=0.0, high=1.0, closed="neither")
        check_positive("r_min", r_min, unit="plays per time unit")
        check_positive("r_max", r_max, unit="plays per time unit")
        if r_min >= r_max:
            raise ValueError(f"r_min must be < r_max = {r_max!r} plays per time unit; got r_min={r_min!r}")
        check_positive("budget", budget, unit="plays per time unit")
        self.eta = check_positive("eta", eta)
        self.rates_: NDArray[np.float64] | None = None

    def problem(self, n_arms: int) -> SyncProblem:
        """The :class:`SyncProblem` of these settings for ``n_arms`` arms (checks B against K)."""
        return SyncProblem(n_arms, self.budget, self.r_min, self.r_max, self.epsilon)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({params})"

    def _params(self) -> dict:
        return {"budget": self.budget, "r_min": self.r_min, "r_max": self.r_max, "epsilon": self.epsilon,
                "eta": self.eta}

    def _mirror_step(self, r: NDArray[np.float64], g: NDArray[np.float64], total: float, problem: SyncProblem
                     ) -> NDArray[np.float64]:
        """Log-barrier mirror-descent step from ``r`` along ``g`` onto ``{x in [r_min, r_hi] : Σ x = total}``."""
        x, _, _ = _log_barrier_projection(1.0 / r + self.eta * g, total, problem.r_min, problem.r_hi,
                                          _PROJ_TOL, _PROJ_MAX_ITER)
        return x


class MirrorSync(_SyncBandit):
    """MirrorSync (Alg. 1 of seed 003): rounds of length 1 / r_min, all arms reset for free at each start.

    In each round every arm is played in sync mode every 1 / r_k, with a probe play before each sync with
    probability ε (ScheduleArmPlays); at the end of the round the Lemma 2 estimates ĝ (divided by K) drive
    one log-barrier mirror-descent step on K_ε (MirrorDescentStep).

    Parameters
    ----------
    budget : float
        B, total play rate, plays per time unit (Table 1: 0.4 K).
    r_min, r_max : float
        Sync-rate bounds, plays per time unit (Table 1: 0.025 and 3; Table 2: 0.025 and 6).
    epsilon : float, default=0.05
        Probe probability ε in (0, 1).
    eta : float, default=2.7
        Learning rate η > 0 (App. B: 2.7 polynomial; App. C: 5 Poisson).
    samples : {"first", "mean"}, default="first"
        ``"first"``: keep only the first interval's estimate of each arm per round (line 18, as the seed
        states); only that interval is simulated. ``"mean"``: average the estimates of all the round's
        intervals, which the authors' published experiment code does; lower variance, same mean. App. B
        and C's learning rates were tuned with ``"mean"``: with ``"first"`` and η = 2.7 the polynomial
        instances of Table 1 diverge (final J/J* about 1.3-1.5); Theorem 5.1's η < Kε/(2U) (0.057 there)
        is safe but slow (J/J* 1.18 -> 1.16 in 240 rounds), η = 1 reaches about 1.10.

    Attributes
    ----------
    rates_ : ndarray of float, shape (K,)
        Sync rates after the last run, plays per time unit.

    Raises
    ------
    ValueError
        If ε is outside (0, 1), r_min >= r_max, a rate or B is not finite and > 0, or η <= 0.
    InfeasibleAllocation
        From :meth:`run`, if B is outside ``[K r_min, K r_max]`` or K_ε is empty.

    References
    ----------
    .. [1] Kolobov, Bubeck, Zimmert, ICML 2020 (seed 003), Alg. 1, Lemma 2, App. B and C.

    Examples
    --------
    >>> from freshcrawl.learning.sync_costs import PoissonBinaryCost
    >>> inst = PoissonBinaryCost.generate(100, rng=1)          # Table 2 of seed 003
    >>> res = MirrorSync(budget=40.0, r_min=0.025, r_max=6.0, eta=5.0, samples="mean").run(inst, 30, rng=2)
    >>> res.j.shape, bool(res.j[-1] < res.j[0])
    ((31,), True)
    """

    algorithm = "mirrorsync"

    def __init__(self, *, budget: float, r_min: float, r_max: float, epsilon: float = 0.05, eta: float = 2.7,
                 samples: Literal["first", "mean"] = "first") -> None:
        super().__init__(budget=budget, r_min=r_min, r_max=r_max, epsilon=epsilon, eta=eta)
        if samples not in ("first", "mean"):
            raise ValueError(f"samples must be 'first' or 'mean'; got {samples!r}")
        self.samples = samples

    def _params(self) -> dict:
        return {**super()._params(), "samples": self.samples}

    def round_gradient(self, process: SyncCostProcess, r: NDArray[np.float64], rng: np.random.Generator,
                       round_index: int = 1) -> tuple[NDArray[np.float64], int, int]:
        """Lemma 2 estimate of ∇J for one round at rates ``r`` (lines 8-19 of Alg. 1).

        Returns ``(g, n_sync_plays, n_probe_plays)`` with ``g`` of shape (K,), divided by K as in Lemma 2.
        """
        k = r.size
        if self.samples == "first":
            # The round starts with every arm just synced (time 0); its first interval is [0, 1/r_k]
            # (always inside the round since r_k >= r_min), and line 18 keeps that interval's estimate.
            n = np.ones(k, dtype=np.intp)
        else:
            n = _intervals_until(np.zeros(k), r, 1.0 / self.r_min)
        n_probes = rng.binomial(n, self.epsilon)
        pa = np.repeat(np.arange(k, dtype=np.intp), n_probes)
        g_sum = _probe_sums(process, pa, r[pa], self.epsilon, rng, round_index, k)
        return g_sum / np.maximum(n, 1) / k, int(n.sum()), int(pa.size)

    def step(self, r: NDArray[np.float64], g: NDArray[np.float64], problem: SyncProblem) -> NDArray[np.float64]:
        """MirrorDescentStep on K_ε (line 20)."""
        return self._mirror_step(r, g, problem.sync_budget, problem)

    def run(self, process: SyncCostProcess, n_rounds: int, rng: np.random.Generator | int | None = None
            ) -> SyncRunResult:
        """Run ``n_rounds`` rounds on ``process`` and record J after each.

        Parameters
        ----------
        process : SyncCostProcess
            The instance.
        n_rounds : int
            T_max ≥ 1 (the paper's figures: 240).
        rng : numpy.random.Generator or int or None
            Randomness.

        Returns
        -------
        SyncRunResult

        Raises
        ------
        InfeasibleAllocation
            If B is outside ``[K r_min, K r_max]`` or K_ε is empty.
        InvalidObservation
            If a cost sample is outside ``[0, U]`` or NaN (the message names arm and round).
        """
        n_rounds = _check_count("n_rounds", n_rounds)
        problem = self.problem(process.n_arms)
        rng = check_rng(rng)
        r = problem.initial_rates()
        j = np.empty(n_rounds + 1)
        j[0] = policy_cost(process, r)
        n_sync = n_probe = 0
        for t in range(1, n_rounds + 1):
            g, ns, nprb = self.round_gradient(process, r, rng, t)
            r = self.step(r, g, problem)
            n_sync += ns
            n_probe += nprb
            j[t] = _j(process, r)
        self.rates_ = r
        return SyncRunResult(self.algorithm, np.arange(n_rounds + 1, dtype=np.float64), j, r, n_rounds,
                             n_sync, n_probe, n_rounds / self.r_min)


class AsyncMirrorSync(_SyncBandit):
    """AsyncMirrorSync (Alg. 2 of seed 003): local mirror-descent updates on a schedule, no free resets.

    Every arm runs its own periodic schedule without resets. Each inter-sync interval of length 1 / r_k
    gets a probe with probability ε. At each update time (every ``update_interval``), the arms A_i that
    completed at least one interval since the previous update are updated: ḡ_k is the mean of their
    Lemma 2 samples, the vector is normalised by 1 / |A_i| (line 30), and a mirror-descent step runs on
    ``{x ∈ [r_min, r_max/(1+ε)]^{|A_i|} : Σ x = Σ_{k∈A_i} r_k}``. Then each updated arm is synced
    now with probability ε (line 36), otherwise at ``max(t_last_sync + 1/r_k, t_now)`` (line 37), and its
    schedule continues at the new rate.

    Parameters
    ----------
    budget, r_min, r_max, epsilon : float
        As for :class:`MirrorSync`.
    eta : float, default=1.6
        Learning rate (App. B: 1.6 polynomial; App. C: 1.3 Poisson).
    update_interval : float, default=20.0
        l_upd_round, time units between updates (App. B: 20; App. C: 8).

    Attributes
    ----------
    rates_ : ndarray of float, shape (K,)
        Sync rates after the last run.

    Raises
    ------
    ValueError
        As for :class:`MirrorSync`, or if ``update_interval`` is not finite and > 0.

    Notes
    -----
    Where this follows the seed's intent rather than its letter:

    * Line 32 writes the local constraint as ``Σ x = Σ_{k∈A_i} r_k / (1 + ε)``. The rates already live on
      K_ε, so dividing again would shrink the total sync rate by 1 / (1 + ε) at every update; the text of
      Sec. 6 ("the sum of current play rates of arms that are about to be updated as a local constraint")
      and the global budget both require ``Σ x = Σ_{k∈A_i} r_k``, which is used here.
    * Schedules are not cut at update times: an interval of length 1 / r_k keeps its probe chance even
      when it spans several updates, and its sample is used at the first update after it closes. Cutting
      schedules at the next update time (ScheduleArmPlays up to t_{i+1}, line 39) would leave arms with
      1 / r_k > update_interval without any probe ever. Only an updated arm's running interval is
      replaced (lines 36-38).
    * The sync of lines 36-38 (the interval it closes had no probe chance and is not of length 1 / r_k)
      yields no sample; counting it as a 0 sample would bias ḡ_k towards 0.
    * Lines 34-38 are applied to the updated arms A_i; for the others the rate did not change and the
      running interval is already on the periodic schedule.

    References
    ----------
    .. [1] Kolobov, Bubeck, Zimmert, ICML 2020 (seed 003), Alg. 2, Sec. 6 and 8, App. B and C.

    Examples
    --------
    >>> from freshcrawl.learning.sync_costs import PoissonBinaryCost
    >>> inst = PoissonBinaryCost.generate(100, rng=1)          # Table 2 of seed 003
    >>> algo = AsyncMirrorSync(budget=40.0, r_min=0.025, r_max=6.0, eta=1.3, update_interval=8.0)
    >>> res = algo.run(inst, 30, rng=2)
    >>> res.n_updates, bool(res.j[-1] < res.j[0])
    (150, True)
    """

    algorithm = "asyncmirrorsync"
    _euclidean = False

    def __init__(self, *, budget: float, r_min: float, r_max: float, epsilon: float = 0.05, eta: float = 1.6,
                 update_interval: float = 20.0) -> None:
        super().__init__(budget=budget, r_min=r_min, r_max=r_max, epsilon=epsilon, eta=eta)
        self.update_interval = check_positive("update_interval", update_interval, unit="time units")

    def _params(self) -> dict:
        return {**super()._params(), "update_interval": self.update_interval}

    def local_step(self, r: NDArray[np.float64], g: NDArray[np.float64], problem: SyncProblem
                   ) -> NDArray[np.float64]:
        """Update of the arms in A_i: ``r`` and ``g`` (already normalised by 1/|A_i|) of shape (|A_i|,)."""
        return self._mirror_step(r, g, float(r.sum()), problem)

    def run(self, process: SyncCostProcess, n_rounds: float, rng: np.random.Generator | int | None = None
            ) -> SyncRunResult:
        """Run for the time of ``n_rounds`` MirrorSync rounds (``n_rounds / r_min`` time units).

        Parameters
        ----------
        process : SyncCostProcess
            The instance.
        n_rounds : float
            Horizon in MirrorSync rounds (> 0); ``floor(n_rounds / (r_min update_interval))`` updates.
        rng : numpy.random.Generator or int or None
            Randomness.

        Returns
        -------
        SyncRunResult
            J after every update; ``rounds`` is the update time in MirrorSync rounds.

        Raises
        ------
        InfeasibleAllocation
            If B is outside ``[K r_min, K r_max]`` or K_ε is empty.
        InvalidObservation
            If a cost sample is outside ``[0, U]`` or NaN (the message names arm and update round).
        """
        n_rounds = check_positive("n_rounds", n_rounds, unit="MirrorSync rounds")
        problem = self.problem(process.n_arms)
        rng = check_rng(rng)
        k = problem.n_arms
        eps = self.epsilon
        horizon = n_rounds / self.r_min
        n_updates = int(math.floor(horizon / self.update_interval * (1 + _TIME_SLACK)))
        r = problem.initial_rates()
        # Running interval of each arm: it closes at next_sync; cur_is_sample tells whether it is a
        # Lemma 2 interval (length 1/r_k from a sync) or the sync of lines 36-38. An arm's rate only
        # changes at an update, which also replaces its running interval, so every running interval
        # has the arm's current rate.
        next_sync = 1.0 / r
        cur_is_sample = np.ones(k, dtype=bool)
        j = np.empty(n_updates + 1)
        j[0] = policy_cost(process, r)
        n_sync = n_probe = 0
        arms_all = np.arange(k, dtype=np.intp)
        slack = 1.0 + _TIME_SLACK
        counts = np.zeros(k, dtype=np.int64)
        last_sync = np.empty(k)
        euclidean = self._euclidean
        for i in range(1, n_updates + 1):
            t_now = i * self.update_interval
            # 1. Intervals closed in (t_{i-1}, t_now]: the running one, then whole periods 1/r_k.
            n_sync += _close_intervals(next_sync, cur_is_sample, r, t_now, slack, counts, last_sync)
            # 2. Lemma 2 samples: each closed interval had a probe with probability ε.
            n_probes = rng.binomial(counts, eps)
            pa = np.repeat(arms_all, n_probes)
            g_sum = _probe_sums(process, pa, r[pa], eps, rng, i, k)
            n_probe += int(pa.size)
            # 3. Lines 25-38: update the arms with at least one sample on their local constraint, then
            #    sync each now w.p. ε, else at max(last sync + 1/r_new, now) (a sync closing no sample).
            _, n_now = _local_update(r, g_sum, counts, last_sync, next_sync, cur_is_sample, rng.random(k), eps,
                                     self.eta, problem.r_min, problem.r_hi, t_now, euclidean, _PROJ_TOL,
                                     _PROJ_MAX_ITER)
            n_sync += n_now
            j[i] = _j(process, r)
        self.rates_ = r
        rounds = np.arange(n_updates + 1) * self.update_interval * self.r_min
        return SyncRunResult(self.algorithm, rounds, j, r, n_updates, n_sync, n_probe, horizon)

class AsyncPSGDSync(AsyncMirrorSync):
    """AsyncPSGDSync (Sec. 8 of seed 003): AsyncMirrorSync with a projected SGD step.

    Identical schedule and gradient estimates; the update is the Euclidean projection of ``r - η ḡ`` onto
    the local constraint set instead of the log-barrier mirror step.

    Parameters
    ----------
    budget, r_min, r_max, epsilon : float
        As for :class:`MirrorSync`.
    eta : float, default=0.08
        Learning rate (App. B: 0.08 polynomial; App. C: 0.5 Poisson).
    update_interval : float, default=20.0
        Time units between updates (App. B: 20; App. C: 40).

    Raises
    ------
    ValueError
        As for :class:`AsyncMirrorSync`.

    References
    ----------
    .. [1] Kolobov, Bubeck, Zimmert, ICML 2020 (seed 003), Sec. 8, App. B and C.

    Examples
    --------
    >>> from freshcrawl.learning.sync_costs import PoissonBinaryCost
    >>> inst = PoissonBinaryCost.generate(100, rng=1)
    >>> res = AsyncPSGDSync(budget=40.0, r_min=0.025, r_max=6.0, eta=0.5, update_interval=40.0).run(inst, 30, rng=2)
    >>> res.algorithm, res.n_updates
    ('asyncpsgdsync', 30)
    """

    algorithm = "asyncpsgdsync"
    _euclidean = True

    def __init__(self, *, budget: float, r_min: float, r_max: float, epsilon: float = 0.05, eta: float = 0.08,
                 update_interval: float = 20.0) -> None:
        super().__init__(budget=budget, r_min=r_min, r_max=r_max, epsilon=epsilon, eta=eta,
                         update_interval=update_interval)

    def local_step(self, r, g, problem):
        """Projected SGD update of the arms in A_i (same arguments as AsyncMirrorSync.local_step)."""
        total = float(r.sum())
        x, _, _ = _euclidean_projection(r - self.eta * g, total, problem.r_min, problem.r_hi,
                                        _PROJ_TOL, _PROJ_MAX_ITER)
        return x


def _check_count(name: str, value: object) -> int:
    return check_int(name, value, low=1)
