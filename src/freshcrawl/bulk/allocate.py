"""The exact allocation over partitioned pages: λ by a root-find whose every step is one pass.

Method
------
The budget equation of :func:`freshcrawl.allocation.allocate`, ``Σ_h min(c_h, S_h(λ)) + S_free(λ) = B``,
is a sum over partitions when every host's pages lie in one partition: each partition k returns its
``S_k(λ)`` and ``dS_k/dλ`` in one pass (:func:`freshcrawl.allocation.budget_sums`) (its hosts capped where they exceed their caps), and the
driver adds them up. λ is found by the same safeguarded Newton iteration as in memory
(:func:`freshcrawl.allocation.find_roots`, from the λ of a strided sample of the pages), so a solve
takes one pass to read and check the partitions, a pass per iteration (4 to 7 in the benchmark), and one pass that
solves each binding host's λ_h where its pages are and writes the rates, with the same first-order
correction that makes the budget exact. Where the root sits on a jump of Σp (flat marginal values), one
more pass measures each partition's sums at both ends, and each partition mixes its two rate vectors to
take its share of the budget.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from freshcrawl._validation import check_int, check_positive
from freshcrawl.allocation import (
    KKT_ALARM,
    Roots,
    Status,
    allocate,
    budget_sums,
    find_roots,
    get_objective,
    kkt_residual,
    rates_at_root,
)
from freshcrawl.bulk._partitions import PagePartition, bulk_run, list_partitions, read_partition, row_count
from freshcrawl.errors import ConvergenceWarning, InfeasibleAllocation

__all__ = ["allocate_partitioned", "PartitionedAllocation"]

_SAMPLE = 1 << 14  # pages of the sample whose exact λ starts the root-find
#: what a pass that only sums needs of a partition read from its file (the streaming engine reads it again
#: at every pass): neither the bounds per host nor the sample, which the first pass has taken
_SUMS_ONLY = {"bounds": False, "stride": None}


@dataclass(frozen=True, slots=True)
class PartitionedAllocation:
    """Outcome of :func:`allocate_partitioned`.

    Attributes
    ----------
    p : ndarray of float, shape (n_pages,) or None
        Visit rates, visits per day, in partition order then row order; None when written to ``out``.
    lam : float
        Multiplier λ of the budget (as :attr:`freshcrawl.allocation.AllocationResult.lam`).
    objective : float
        Σ_i w_i f(p_i; Δ_i).
    status : Status
        As in :class:`freshcrawl.allocation.AllocationResult`.
    message : str
    n_pages, n_partitions : int
    n_passes : int
        Passes over the partitions: the read, one per root-find iteration, the final one (and one more on a
        jump of Σp).
    budget_used : float
        Σ p_i, visits per day.
    kkt_residual : float
        Largest relative violation of the optimality conditions over all partitions, the budget and caps.
    seconds : float
        Wall time of the solve, reading and writing included.
    pass_seconds : tuple of float
        Wall time of each pass: the read, the root-find's iterations, the final pass(es).
    out : str or None
        Directory of rate partitions written (``part-00000.parquet``, ... one per input partition, columns
        page, rate), or None.
    """

    p: NDArray[np.float64] | None
    lam: float
    objective: float
    status: Status
    message: str
    n_pages: int
    n_partitions: int
    n_passes: int
    budget_used: float
    kkt_residual: float
    seconds: float
    pass_seconds: tuple[float, ...]
    out: str | None

    @property
    def success(self) -> bool:
        """True when ``status`` is ``Status.CONVERGED``."""
        return self.status == Status.CONVERGED


# ---------------------------------------------------------------------------------------------------
# What each partition computes (top-level functions: Dask ships them to the workers by reference)
# ---------------------------------------------------------------------------------------------------
def _summary(part: PagePartition) -> dict:
    """Page count, bounds, host names and sample of a partition, read at the first pass."""
    n_hosts = part.caps.shape[0]
    low, s0, up = part.low, part.s0, part.up  # an uncapped host's cap is inf: min(c_h, x) = x
    return {
        "n": part.n,
        "low": float(np.sum(low)),
        "s0": float(s0[n_hosts] + np.sum(np.minimum(part.caps, s0[:n_hosts]))),
        "up": float(up[n_hosts] + np.sum(np.minimum(part.caps, up[:n_hosts]))),
        "hosts": [h for h in part.host_names if h],  # "" is no host
        "sample": part.sample,
    }


def _sums(part: PagePartition, lam: float) -> tuple[float, float]:
    """S_k(λ) and dS_k/dλ of a partition: Σ_h min(c_h, S_h(λ)) + S_free(λ) over its pages."""
    if part.n == 0:
        return 0.0, 0.0
    return budget_sums(part.prob, lam, part.hosts, part.caps)[:2]


def _sums_at_ends(part: PagePartition, lam_a: float, lam_b: float) -> tuple[float, float]:
    return _sums(part, lam_a)[0], _sums(part, lam_b)[0]


def _finish(part: PagePartition, lam, dlam, lam2, theta, shares, tol, max_iter, output):
    """Rates of a partition at the root: its binding hosts' λ_h, then every page; checked; written to
    ``output`` (or returned). ``shares``: each partition's share of the budget on a jump, else Nones."""
    if part.n == 0:
        p = np.zeros(0)
        kkt = over = value = 0.0
        n_iter, converged = 0, True
    else:
        prob, hosts, caps = part.prob, part.hosts, part.caps
        n_hosts = caps.shape[0]
        root = Roots(np.array([lam]), np.array([dlam]), np.array([lam2]), np.array([theta]), np.ones(1, dtype=bool),
                     at=np.array([lam + dlam]))
        s_low = budget_sums(prob, lam2, hosts, caps)[2] if n_hosts else None
        share = shares[part.index]
        p, lamhat, n_iter, converged = rates_at_root(prob, root, hosts, caps, s_low,
                                                     0.0 if share is None else share, tol, max_iter, low=part.low)
        kkt = kkt_residual(prob, p, lam + dlam, hosts, lamhat)
        over = 0.0
        if n_hosts:
            on = hosts >= 0
            sums = np.bincount(hosts[on], weights=p[on], minlength=n_hosts)
            fin = np.isfinite(caps)
            excess = (sums[fin] - caps[fin]) / np.maximum(caps[fin], np.finfo(float).tiny)
            over = float(np.max(excess, initial=0.0))
        value = float(prob.objective(p))
    result = {"used": float(np.sum(p)), "kkt": float(kkt), "value": value, "over": over, "n_iter": int(n_iter),
              "converged": bool(converged), "p": None}
    if output is not None:
        output.write(part.index, {"page": part.page, "rate": p})
    else:
        result["p"] = p
    return result


# ---------------------------------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------------------------------
def allocate_partitioned(
    source: str,
    budget: float,
    *,
    objective: str = "freshness-poisson",
    p_min: float = 0.0,
    p_max: float = np.inf,
    host_caps: dict[str, float] | None = None,
    engine=None,
    out: str | None = None,
    tol: float = 1e-12,
    max_iter: int = 100,
    progress: Callable[[str], None] | None = None,
) -> PartitionedAllocation:
    """Optimal visit rates for pages in Parquet partitions, out of core or on a Dask cluster.

    The same optimum as :func:`freshcrawl.allocation.allocate` on all the pages at once (same λ, each
    binding host's λ_h solved where its pages are, the budget met exactly), with memory bounded by the
    partitions in flight (:class:`~freshcrawl.bulk.StreamEngine`) or spread over a cluster's workers
    (:class:`~freshcrawl.bulk.DaskEngine`).

    Parameters
    ----------
    source : str
        A Parquet file or a directory of Parquet partitions (local path or fsspec URL) with the columns of
        the PAGES table: ``page``, ``delta`` (changes/day) and optional ``weight``, ``host``, ``complete``.
        Every host's pages must lie in one partition (partition by host).
    budget : float
        Crawl budget B > 0, visits per day.
    objective : str, default="freshness-poisson"
        One of :data:`freshcrawl.allocation.OBJECTIVE_NAMES`.
    p_min, p_max : float
        Bounds on every page's rate, visits per day.
    host_caps : dict of str to float, optional
        Politeness cap of each named host, visits per day (hosts not listed are uncapped).
    engine : StreamEngine or DaskEngine, optional
        Where the passes run; default a :class:`~freshcrawl.bulk.StreamEngine` (closed at the end).
    out : str, optional
        Directory to write the rates to, one partition per input partition (columns page, rate), replacing
        what was there only once every partition is written; on any error nothing is written. Default:
        the rates are returned in ``p``.
    tol, max_iter : float, int
        As in :func:`~freshcrawl.allocation.allocate`.
    progress : callable, optional
        Called with a line of text after each pass.

    Returns
    -------
    PartitionedAllocation

    Raises
    ------
    ValueError
        If a partition is not Parquet or holds a bad value (file and row named), a host has pages in two
        partitions (both named), or the budget exceeds what the pages with a positive marginal value can
        take (the in-memory solver spreads that over the others; this one does not).
    InfeasibleAllocation
        As :func:`~freshcrawl.allocation.allocate`.
    """
    t0 = time.perf_counter()
    budget = check_positive("budget", budget, unit="visits/day")
    tol = check_positive("tol", tol)
    max_iter = check_int("max_iter", max_iter, low=1)
    obj = get_objective(objective)
    if obj._kind is None:
        raise ValueError(f"the partitioned solver takes the built-in objectives only; got {obj!r}")
    say = progress or (lambda line: None)
    fs, files = list_partitions(source)
    with bulk_run(engine, out) as (engine, output):
        rows = [row_count(fs, f) for f in files]
        n_total = int(sum(rows))
        if n_total == 0:
            raise ValueError(f"{source}: no pages")
        spec = {"objective": obj, "p_min": float(p_min), "p_max": float(p_max), "caps": dict(host_caps or {}),
                "stride": max(1, n_total // _SAMPLE), "with_pages": engine.name == "dask"}
        timing = []
        tick = time.perf_counter()
        handles = engine.load(read_partition, [(fs, f, i) for i, f in enumerate(files)], spec)
        summaries = engine.map(_summary, handles)
        passes = 1
        timing.append(time.perf_counter() - tick)
        _check_hosts_partitioned(files, summaries)
        total_low = sum(s["low"] for s in summaries)
        max_total = sum(s["up"] for s in summaries)
        s0_total = sum(s["s0"] for s in summaries)
        if budget < total_low:
            raise InfeasibleAllocation(
                f"budget {budget:g} visits/day is below the sum of the lower bounds p_min, {total_low:g} visits/day")
        if budget > max_total:
            raise InfeasibleAllocation(
                f"budget {budget:g} visits/day exceeds the most the pages can take, {max_total:g} visits/day "
                f"(sum of p_max, each host limited to its cap)")
        if budget >= s0_total:
            raise ValueError(
                f"budget {budget:g} visits/day is at least what the pages with a positive marginal value can take "
                f"({s0_total:g} visits/day); the in-memory solver (freshcrawl.allocation.allocate) spreads the rest "
                f"over the others, the partitioned one does not")
        say(f"read {len(files)} partitions, {n_total} pages")
        lam0 = _start(summaries, budget, n_total, obj, p_min, p_max)

        def evaluate(lam_v, act):
            nonlocal passes
            lam = float(lam_v[0])
            tick = time.perf_counter()
            parts = engine.map(_sums, handles, lam, **_SUMS_ONLY)
            passes += 1
            timing.append(time.perf_counter() - tick)
            s = float(sum(x[0] for x in parts))
            ds = float(sum(x[1] for x in parts))
            say(f"pass {passes}: λ = {lam:.17g}, Σp = {s:.17g} visits/day ({(s - budget) / budget:+.2e} of B)")
            return np.array([s]), np.array([ds])

        roots = find_roots(evaluate, np.array([budget]), np.array([lam0]), tol=tol, max_iter=max_iter)
        converged = bool(roots.converged.all())
        lam, dlam = float(roots.lam[0]), float(roots.dlam[0])
        lam2, theta = float(roots.lam_a[0]), float(roots.theta[0])
        if np.isnan(theta):
            raise ValueError("the root lies on a jump to an infinite Σp (pages of no value without p_max); "
                             "use the in-memory solver (freshcrawl.allocation.allocate)")
        shares = [None] * len(files)
        tick = time.perf_counter()
        if theta != 0.0:  # on a jump of Σp: each partition's share of the budget between its two ends
            ends = engine.map(_sums_at_ends, handles, lam2, lam, **_SUMS_ONLY)
            passes += 1
            s_a = sum(e[0] for e in ends)
            s_b = sum(e[1] for e in ends)
            t = min(max((budget - s_b) / (s_a - s_b), 0.0), 1.0) if s_a > s_b else 0.0
            shares = [e[1] + t * (e[0] - e[1]) for e in ends]
        results = engine.map(_finish, handles, lam, dlam, lam2, theta, shares, tol, max_iter, output,
                             with_pages=True, stride=None)
        passes += 1
    timing.append(time.perf_counter() - tick)  # the final pass, the output moved into place included
    used = float(sum(r["used"] for r in results))
    kkt = max([abs(used - budget) / budget] + [r["kkt"] for r in results] + [r["over"] for r in results])
    converged &= all(r["converged"] for r in results)
    status = Status.CONVERGED if converged else Status.MAX_ITER
    if converged and not kkt <= KKT_ALARM:
        status = Status.NOT_OPTIMAL
    message = (f"{status.name.lower()}: {used:.12g} of {budget:.12g} visits/day used, KKT residual {kkt:.2e}, "
               f"{passes} passes over {len(files)} partitions")
    if status != Status.CONVERGED:  # as the in-memory solver does
        warnings.warn(message, ConvergenceWarning, stacklevel=2)
    say(message)
    p = None if out is not None else np.concatenate([r["p"] for r in results])
    return PartitionedAllocation(
        p=p, lam=lam + dlam, objective=float(sum(r["value"] for r in results)), status=status, message=message,
        n_pages=n_total, n_partitions=len(files), n_passes=passes, budget_used=used, kkt_residual=float(kkt),
        seconds=time.perf_counter() - t0, pass_seconds=tuple(timing), out=out,
    )


def _check_hosts_partitioned(files, summaries) -> None:
    seen: dict[str, int] = {}
    for i, s in enumerate(summaries):
        for h in s["hosts"]:
            j = seen.setdefault(h, i)
            if j != i:
                raise ValueError(
                    f"host {h!r} has pages in two partitions, {files[j]} and {files[i]}: partition the pages by "
                    f"host (every host's pages in one file) so that its cap is solved where its pages are: "
                    f"freshcrawl partition PAGES --by host --partitions N --out DIR")


def _start(summaries, budget, n_total, obj, p_min, p_max) -> float:
    """λ of the strided sample of the pages with a proportional budget (uncapped), or 1 if it has none."""
    parts = [s["sample"] for s in summaries if s["sample"] is not None and s["sample"][0].size]
    if not parts:
        return 1.0
    delta = np.concatenate([p[0] for p in parts])
    if any(p[1] is not None for p in parts):
        w = np.concatenate([p[1] if p[1] is not None else np.ones(p[0].size) for p in parts])
    else:
        w = None
    if any(p[2] is not None for p in parts):
        c = np.concatenate([p[2] if p[2] is not None else np.zeros(p[0].size, dtype=bool) for p in parts])
    else:
        c = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a sample that stops early still gives a start
            res = allocate(delta, budget * delta.size / n_total, weights=w, objective=obj, p_min=p_min, p_max=p_max,
                           observed_completely=c, tol=1e-9, max_iter=50)
        lam = res.lam
    except (InfeasibleAllocation, ValueError):
        lam = 0.0
    return float(lam) if lam > 0 and np.isfinite(lam) else 1.0
