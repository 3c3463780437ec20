"""Partitions of a PAGES table in Parquet: list them, read one into a problem, write its rates.

Files are opened through fsspec, so a directory on shared storage or an object store URL
(``s3://bucket/pages/``, with the matching fsspec package installed) goes through the same calls as a
local one (only local paths are tested).
"""

from __future__ import annotations

import posixpath
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from numpy.typing import NDArray

from freshcrawl._io import decode_dictionary, is_number_type, is_text_type, parquet_files, parquet_footer, read_parquet
from freshcrawl.allocation import PageProblem, host_bounds, make_problem
from freshcrawl.errors import InfeasibleAllocation

__all__ = ["list_partitions", "row_count", "read_partition", "Output", "bulk_run"]

_NO_HOSTS = np.zeros(0, dtype=np.intp)
PAGE_COLUMNS = ("page", "delta", "weight", "host", "complete")


def list_partitions(source: str) -> tuple[fsspec.AbstractFileSystem, list[str]]:
    """The file system and the Parquet files of ``source`` (:func:`freshcrawl._io.parquet_files`)."""
    fs, root = fsspec.core.url_to_fs(str(source))
    return fs, parquet_files(root, fs=fs)


def row_count(fs, path: str) -> int:
    """Rows of one partition, from its footer; its required columns checked there (before any pass).

    Raises
    ------
    ValueError
        If the file is not Parquet or lacks ``page`` or ``delta``; the message names the file.
    """
    names, n_rows = parquet_footer(path, fs=fs)
    for col in ("page", "delta"):
        if col not in names:
            raise ValueError(f"{path}: missing column {col!r}; expected page,delta[,weight,host,complete]")
    return n_rows


def _page_at(fs, path: str, table: pa.Table, i: int):
    col = table["page"] if "page" in table.column_names else read_parquet(path, ("page",), fs=fs)["page"]
    return col[i].as_py()


def _numbers(fs, path: str, table: pa.Table, name: str, unit: str) -> NDArray[np.float64]:
    col = decode_dictionary(table[name])
    if not (is_number_type(col.type) or pa.types.is_null(col.type)):
        raise ValueError(f"{path}: column {name!r} must hold numbers; it holds {col.type}")
    values = col.cast(pa.float64()).to_numpy(zero_copy_only=False)
    bad = ~(np.isfinite(values) & (values >= 0.0))  # NaN also for nulls
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        page = _page_at(fs, path, table, i)
        raise ValueError(
            f"{path}: column {name!r} must be a finite number >= 0{unit}; row {i + 1} (page {page!r}) "
            f"has {col[i].as_py()!r}"
        )
    return values


def _flags(path: str, table: pa.Table) -> NDArray[np.bool_]:
    col = table["complete"]
    if pa.types.is_boolean(col.type):
        return col.fill_null(False).to_numpy(zero_copy_only=False).astype(bool)
    if pa.types.is_integer(col.type):
        values = col.fill_null(0).to_numpy(zero_copy_only=False)
        bad = (values != 0) & (values != 1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{path}: column 'complete' must be 0/1 or true/false; row {i + 1} has {values[i]!r}")
        return values == 1
    raise ValueError(f"{path}: column 'complete' must be boolean or 0/1; it holds {col.type}")


@dataclass
class PagePartition:
    """One partition of the pages, read and checked: its problem, hosts and bounds.

    ``hosts``: index into this partition's hosts (``host_names``, ``caps``), -1 for none. ``low``,
    ``s0``, ``up``: per host (then the pages without a host) Σ p_min, Σ p at λ = 0 and Σ p_max (None
    when read without bounds).
    """

    path: str
    index: int
    n: int
    prob: PageProblem | None
    hosts: NDArray[np.intp]
    caps: NDArray[np.float64]
    host_names: list[str]
    low: NDArray[np.float64] | None
    s0: NDArray[np.float64] | None
    up: NDArray[np.float64] | None
    sample: tuple | None = None
    page: pa.ChunkedArray | None = field(default=None, repr=False)
    fs: Any = field(default=None, repr=False)


def read_partition(fs, path: str, index: int, spec: dict) -> PagePartition:
    """Read the pages of one partition into a problem.

    ``spec``: ``objective``, ``p_min``, ``p_max``, ``caps`` (by host name); ``with_pages`` to keep the page
    column (for the output), ``bounds`` to compute the bounds per host (a pass over the pages; default
    True), ``stride`` to draw every stride-th page into ``sample``.

    Raises
    ------
    ValueError
        If the file is not Parquet, lacks a column or holds a bad value (file and 1-based row named), or
        the objective is not a built-in one.
    InfeasibleAllocation
        If a host's cap is below the sum of its pages' p_min (file and host named).
    """
    with_pages = spec.get("with_pages", False)
    table = read_parquet(path, PAGE_COLUMNS if with_pages else PAGE_COLUMNS[1:], fs=fs)
    n = table.num_rows
    page = table["page"] if with_pages else None
    if n == 0:
        empty = np.zeros(1)
        return PagePartition(path, index, 0, None, _NO_HOSTS, np.zeros(0), [], empty, empty, empty, None, page, fs)
    delta = _numbers(fs, path, table, "delta", " changes/day")
    weights = _numbers(fs, path, table, "weight", "") if "weight" in table.column_names else None
    complete = _flags(path, table) if "complete" in table.column_names else None
    try:
        prob, _ = make_problem(delta, weights=weights, objective=spec["objective"], p_min=spec["p_min"],
                                p_max=spec["p_max"], observed_completely=complete)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from err
    if prob.kind < 0:
        raise ValueError("the partitioned solver takes the built-in objectives (OBJECTIVE_NAMES) only")
    hosts, names, caps = _NO_HOSTS, [], np.zeros(0)
    if "host" in table.column_names and (table["host"].null_count < n):
        col = decode_dictionary(table["host"])
        if not is_text_type(col.type):
            raise ValueError(f"{path}: column 'host' must hold host names (text); it holds {col.type}")
        enc = pc.dictionary_encode(col.combine_chunks())
        names = enc.dictionary.to_pylist()
        codes = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.intp)
        if "" in names:  # an empty name: no host
            codes[codes == names.index("")] = -1
        caps = np.array([spec["caps"].get(h, np.inf) if h else np.inf for h in names], dtype=np.float64)
        hosts = np.ascontiguousarray(codes)
    n_hosts = caps.shape[0]
    low = s0 = up = None
    if spec.get("bounds", True):
        low, s0, up = (np.atleast_1d(np.asarray(x, dtype=np.float64)) for x in host_bounds(prob, hosts, caps))
        bad = np.isfinite(caps) & (low[:n_hosts] > caps)
        if bad.any():
            h = int(np.flatnonzero(bad)[0])
            raise InfeasibleAllocation(
                f"{path}: host {names[h]!r} has a cap of {caps[h]:g} visits/day, below the sum of its pages' "
                f"p_min, {low[h]:g} visits/day"
            )
    sample = None
    stride = spec.get("stride")
    if stride:
        take = slice(index % stride, None, stride)
        # copies: a strided view would keep the partition's whole columns alive after the read
        sample = (delta[take].copy(), None if weights is None else weights[take].copy(),
                  None if complete is None else complete[take].copy())
    return PagePartition(path, index, n, prob, hosts, caps, names, low, s0, up, sample, page, fs)


class Output:
    """A directory of rate partitions written whole or not at all.

    Partitions go to a hidden directory beside ``target``; :meth:`commit` moves it into place (replacing
    what was there), :meth:`abort` removes it.
    """

    def __init__(self, target: str) -> None:
        self.fs, self.target = fsspec.core.url_to_fs(str(target))
        parent = posixpath.dirname(self.target.rstrip("/")) or "."
        if not self.fs.isdir(parent):
            raise FileNotFoundError(f"directory {parent} does not exist")
        self.tmp = posixpath.join(parent, f".{posixpath.basename(self.target.rstrip('/'))}.{uuid.uuid4().hex}.tmp")
        self.fs.makedirs(self.tmp, exist_ok=True)

    def write(self, index: int, columns: dict) -> None:
        """Write output partition ``index`` (a dict of column name to array) as ``part-<index>.parquet``."""
        with self.fs.open(posixpath.join(self.tmp, f"part-{index:05d}.parquet"), "wb") as fh:
            pq.write_table(pa.table(columns), fh)

    def commit(self) -> None:
        if self.fs.exists(self.target):
            old = self.tmp + ".old"
            self.fs.mv(self.target, old, recursive=True)
            self.fs.mv(self.tmp, self.target, recursive=True)
            self.fs.rm(old, recursive=True)
        else:
            self.fs.mv(self.tmp, self.target, recursive=True)

    def abort(self) -> None:
        if self.fs.exists(self.tmp):
            self.fs.rm(self.tmp, recursive=True)


@contextmanager
def bulk_run(engine, out):
    """``(engine, output)`` for one bulk run: a :class:`~freshcrawl.bulk.StreamEngine` when ``engine`` is
    None (closed at the end), and an :class:`Output` for ``out`` (None without), committed when the block
    ends normally and removed when it raises."""
    own = engine is None
    if own:
        from freshcrawl.bulk.engines import StreamEngine

        engine = StreamEngine()
    output = None
    try:
        output = Output(out) if out is not None else None  # a missing parent directory: before any pass
        yield engine, output
        if output is not None:
            output.commit()
            output = None
    finally:
        if output is not None:
            output.abort()
        if own:
            engine.close()
