"""Per-page change rates from a visit log in Parquet partitions, one partition at a time.

A page's estimate depends on its own visits only, so over a log partitioned by page (every page's visits
in one partition) batch estimation is a map with no communication: each partition is read, estimated with
:func:`freshcrawl.traces.visit_log.estimate_visit_log` and written beside the others.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from freshcrawl._io import parquet_files
from freshcrawl.bulk._partitions import bulk_run
from freshcrawl.estimators import ESTIMATOR_NAMES
from freshcrawl.errors import UnknownNameError
from freshcrawl.traces.visit_log import VisitLog, estimate_visit_log, read_visit_log

__all__ = ["estimate_partitioned", "PartitionedEstimate"]


@dataclass(frozen=True, slots=True)
class PartitionedEstimate:
    """Outcome of :func:`estimate_partitioned`.

    Attributes
    ----------
    table : pandas.DataFrame or None
        One row per page (``page, delta, n_visits, n_changed, days_observed, p``, as ``freshcrawl
        estimate``), partitions in name order; None when written to ``out``.
    n_pages, n_observations, n_changed, n_partitions : int
    seconds : float
        Wall time, reading and writing included.
    out : str or None
        Directory written (one partition per input partition), or None.
    """

    table: pd.DataFrame | None
    n_pages: int
    n_observations: int
    n_changed: int
    n_partitions: int
    seconds: float
    out: str | None


def _read_log(path: str, index: int, shared: dict) -> tuple[int, VisitLog]:
    return index, read_visit_log(path)


def _estimate(item, method: str, params: dict, output):
    index, log = item
    table = estimate_visit_log(log, method, **params)
    summary = {"n_pages": int(table.shape[0]), "n_observations": int(table["n_visits"].sum()),
               "n_changed": int(table["n_changed"].sum()), "table": None}
    if output is None:
        summary["table"] = table
    else:
        output.write(index, {c: table[c].astype(str).to_numpy() if c == "page" else table[c].to_numpy()
                             for c in table.columns})
    return summary


def estimate_partitioned(
    source: str | Path,
    method: str = "mle",
    *,
    engine=None,
    out: str | None = None,
    progress: Callable[[str], None] | None = None,
    **params,
) -> PartitionedEstimate:
    """Estimate every page's change rate from a visit log in Parquet partitions, partition by partition.

    Parameters
    ----------
    source : str or path
        A Parquet file or a directory of Parquet partitions with columns ``page, time, changed`` (see
        :func:`freshcrawl.traces.read_visit_log`). Every page's visits must lie in one partition.
    method : str, default="mle"
        One of :data:`freshcrawl.estimators.ESTIMATOR_NAMES`.
    engine : StreamEngine or DaskEngine, optional
        Where the partitions are estimated; default a :class:`~freshcrawl.bulk.StreamEngine`.
    out : str, optional
        Directory to write one Parquet partition of estimates per input partition, whole or not at all.
    progress : callable, optional
        Called with a line of text when done.
    **params
        Estimator parameters (``delta0``, ...).

    Returns
    -------
    PartitionedEstimate

    Raises
    ------
    UnknownNameError
        If ``method`` is unknown.
    TraceFormatError
        If a partition is malformed (file and row named); nothing is written.
    """
    t0 = time.perf_counter()
    if method not in ESTIMATOR_NAMES:
        raise UnknownNameError(f"unknown estimator {method!r}; expected one of {', '.join(ESTIMATOR_NAMES)}")
    files = [str(f) for f in parquet_files(source)]
    with bulk_run(engine, out) as (engine, output):
        handles = engine.load(_read_log, [(f, i) for i, f in enumerate(files)], {})
        results = engine.map(_estimate, handles, method, dict(params), output)
    table = None if out is not None else pd.concat([r["table"] for r in results], ignore_index=True)
    est = PartitionedEstimate(
        table=table,
        n_pages=int(sum(r["n_pages"] for r in results)),
        n_observations=int(sum(r["n_observations"] for r in results)),
        n_changed=int(sum(r["n_changed"] for r in results)),
        n_partitions=len(files),
        seconds=time.perf_counter() - t0,
        out=out,
    )
    if progress is not None:
        progress(f"estimated {est.n_pages} pages from {est.n_observations} observations in {len(files)} partitions "
                 f"({est.seconds:.1f} s)")
    return est

