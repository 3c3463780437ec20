"""Read and write visit logs: one row per visit, ``page,time,changed``, as CSV or Parquet.

``time`` is unix seconds (integer or float) or an ISO 8601 timestamp (naive timestamps are read as UTC);
``changed`` is 0 or 1: whether the page differed from the copy fetched at its previous visit. A CSV file may
be gzip-compressed (``.gz``). A Parquet file (name ending in ``.parquet``) has the same columns: ``page``
text or integer, ``time`` unix seconds, a Parquet timestamp (naive: UTC) or ISO 8601 text, ``changed``
boolean or 0/1; a directory of Parquet partitions (``*.parquet``, read in name order) is one log. Rows may
interleave pages; within a page, times must strictly increase in file order (partition after partition).
The first visit of a page only starts its history: its ``changed`` flag is not an observation.

Every error names the file and the line (CSV, the header being line 1) or the row (Parquet, from 1).
:func:`estimate_visit_log` turns a log into one change-rate estimate per page.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from numpy.typing import ArrayLike, NDArray

from freshcrawl._io import decode_dictionary, is_number_type, is_parquet, is_text_type
from freshcrawl._io import parquet_files, read_parquet, write_table_atomic
from freshcrawl.errors import TraceFormatError
from freshcrawl.units import SECONDS_PER_DAY

__all__ = ["VisitLog", "estimate_visit_log", "read_visit_log", "write_visit_log"]

COLUMNS = ("page", "time", "changed")


@dataclass(frozen=True, slots=True)
class VisitLog:
    """A visit log in memory.

    Attributes
    ----------
    page_names : ndarray of str (object), shape (n_pages,)
        Page identifiers, in order of first appearance.
    pages : ndarray of intp, shape (n_visits,)
        Index into ``page_names`` of each visit, in file order.
    time : ndarray of float64, shape (n_visits,)
        Visit time, days since the unix epoch.
    changed : ndarray of bool, shape (n_visits,)
        Flag of each visit (ignored for a page's first visit).
    """

    page_names: NDArray[np.object_]
    pages: NDArray[np.intp]
    time: NDArray[np.float64]
    changed: NDArray[np.bool_]

    @property
    def n_pages(self) -> int:
        """Number of distinct pages."""
        return int(self.page_names.shape[0])

    def observations(self) -> tuple[NDArray[np.intp], NDArray[np.bool_], NDArray[np.float64], NDArray[np.intp]]:
        """Observations per page: every visit but the page's first, with its interval.

        Returns
        -------
        pages : ndarray of intp, shape (m,)
            Page index, sorted by page then time.
        changed : ndarray of bool, shape (m,)
            I_k.
        tau : ndarray of float64, shape (m,)
            Days since the page's previous visit (> 0).
        rank : ndarray of intp, shape (m,)
            0 for a page's first observation, 1 for its second, ...
        """
        order = np.lexsort((self.time, self.pages))
        pg = self.pages[order]
        t = self.time[order]
        ch = self.changed[order]
        same = np.zeros(pg.shape[0], dtype=bool)
        same[1:] = pg[1:] == pg[:-1]
        idx = np.flatnonzero(same)
        tau = t[idx] - t[idx - 1]
        first_obs = np.ones(idx.shape[0], dtype=bool)
        first_obs[1:] = pg[idx[1:]] != pg[idx[:-1]]
        starts = np.flatnonzero(first_obs)
        rank = np.arange(idx.shape[0]) - np.repeat(starts, np.diff(np.append(starts, idx.shape[0])))
        return pg[idx].astype(np.intp), ch[idx], tau, rank.astype(np.intp)


def _bad(path: Path | str, line: int, what: str, unit: str = "line") -> TraceFormatError:
    return TraceFormatError(f"{path}: {unit} {line}: {what}")


@dataclass(frozen=True, slots=True)
class _Part:
    """The visits of one file, checked but for the order of times (which spans the files of a directory).

    Row ``i`` of the file is ``unit`` ``i + first`` in messages (CSV: line i + 2; Parquet: row i + 1).
    """

    path: Path
    unit: str
    first: int
    page: pd.Series  # text, shape (n,)
    time: NDArray[np.float64]  # days since the epoch, shape (n,)
    changed: NDArray[np.bool_]  # shape (n,)
    raw_time: pd.Series  # the time cells as the file has them, for messages

    def bad(self, i: int, what: str) -> TraceFormatError:
        """The error for row ``i`` (from 0) of this file."""
        return _bad(self.path, i + self.first, what, self.unit)


def read_visit_log(path: str | os.PathLike) -> VisitLog:
    """Read a visit log with columns ``page,time,changed``: CSV (plain or ``.gz``), Parquet, or a directory
    of Parquet partitions.

    Parameters
    ----------
    path : str or path-like
        The file or directory. A CSV has times in unix seconds or ISO 8601 and changed 0/1. A file whose
        name ends in ``.parquet`` (or that starts with the Parquet magic bytes) is read as Parquet: ``page``
        text or integer, ``time`` numeric (unix seconds), a timestamp (naive: UTC) or ISO 8601 text,
        ``changed`` boolean or 0/1; other columns are not read. A directory is read as the Parquet
        partitions ``*.parquet`` it holds, in name order, one after the other (``_SUCCESS``, ``_metadata``
        and hidden files skipped; a partition without rows adds nothing).

    Returns
    -------
    VisitLog

    Raises
    ------
    FileNotFoundError
        If the file or directory does not exist.
    TraceFormatError
        Missing columns (CSV: also extra ones), an empty or null page, a time that is neither a finite
        number of seconds, a timestamp nor an ISO 8601 text, a flag outside {0, 1}, a Parquet column of a
        type that does not fit, a file that is not valid Parquet, a directory without partitions, or times
        not strictly increasing within a page (in file order; partitions in name order). The message names
        the file and the line (CSV; the header is line 1) or the row (Parquet; the first row is row 1).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "log.csv"
    >>> _ = f.write_text("page,time,changed\\na,0,0\\na,86400,1\\nb,2024-01-01T00:00:00Z,0\\n")
    >>> log = read_visit_log(f)
    >>> log.page_names.tolist(), log.observations()[2].tolist()
    (['a', 'b'], [1.0])
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"visit log {path} does not exist")
    if path.is_dir():
        try:
            files = parquet_files(path)
        except ValueError as err:
            raise TraceFormatError(str(err)) from err
        parts = [_read_parquet_part(f) for f in files]
    elif is_parquet(path):
        parts = [_read_parquet_part(path)]
    else:
        parts = [_read_csv_part(path)]
    return _assemble([part for part in parts if part.page.shape[0] > 0])


def _read_csv_part(path: Path) -> _Part:
    try:
        df = pd.read_csv(
            path, dtype=str, keep_default_na=False, skip_blank_lines=False, compression="infer", skipinitialspace=True
        )
    except pd.errors.ParserError as err:
        m = re.search(r"line (\d+)", str(err))
        line = int(m.group(1)) if m else 0
        raise _bad(path, line, f"malformed row ({err})") from err
    except pd.errors.EmptyDataError as err:
        raise TraceFormatError(f"{path}: empty file; expected a header 'page,time,changed'") from err
    except (UnicodeDecodeError, OSError, EOFError) as err:
        raise TraceFormatError(f"{path}: cannot be read as CSV text ({err})") from err
    cols = [c.strip() for c in df.columns]
    if cols != list(COLUMNS):
        raise _bad(path, 1, f"header must be 'page,time,changed'; got {','.join(map(str, df.columns))!r}")
    df.columns = cols
    return _checked(path, "line", 2, df["page"].astype(str), df["time"], df["changed"])


def _read_parquet_part(path: Path) -> _Part:
    table = read_parquet(path, COLUMNS, error=TraceFormatError)
    for col in COLUMNS:
        if col not in table.column_names:
            raise TraceFormatError(f"{path}: missing column {col!r}; expected columns page,time,changed")
    columns = {col: decode_dictionary(table.column(col)) for col in COLUMNS}
    for col, arr in columns.items():
        if arr.null_count:
            i = int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])
            raise _bad(path, i + 1, f"{col} is null", "row")
        if pa.types.is_null(arr.type):  # no row: pandas writes an empty text column with type null
            columns[col] = arr.cast({"page": pa.string(), "time": pa.float64(), "changed": pa.bool_()}[col])

    page = columns["page"]
    if pa.types.is_integer(page.type):
        page = page.cast(pa.string())
    elif not is_text_type(page.type):
        raise _bad_type(path, "page", page.type, "text or integer")

    time = columns["time"]
    days = None
    if pa.types.is_timestamp(time.type):
        # Parquet timestamps count units since the epoch in UTC (naive ones are read as UTC); one division
        # of the exact count, as the ISO 8601 path divides nanoseconds.
        per_day = SECONDS_PER_DAY * {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[time.type.unit]
        days = time.cast(pa.int64()).to_numpy(zero_copy_only=False).astype(np.float64) / per_day
        time_cells = time.to_pandas()
    elif is_number_type(time.type):
        days = time.cast(pa.float64()).to_numpy(zero_copy_only=False) / SECONDS_PER_DAY
        time_cells = pd.Series(time.to_numpy(zero_copy_only=False))
    elif is_text_type(time.type):
        time_cells = _text(time)
    else:
        raise _bad_type(path, "time", time.type, "unix seconds (a number), a timestamp or ISO 8601 text")

    flag = columns["changed"]
    if pa.types.is_decimal(flag.type):
        flag = flag.cast(pa.float64())
    if pa.types.is_boolean(flag.type) or is_number_type(flag.type):
        flag_cells = pd.Series(flag.to_numpy(zero_copy_only=False))
    elif is_text_type(flag.type):
        flag_cells = _text(flag)
    else:
        raise _bad_type(path, "changed", flag.type, "boolean or 0/1")
    return _checked(path, "row", 1, _text(page), time_cells, flag_cells, days)


def _text(arr: pa.ChunkedArray) -> pd.Series:
    """A text column without nulls as the text Series that ``read_csv(dtype=str)`` gives."""
    return pd.Series(arr.to_numpy(zero_copy_only=False), dtype=object).astype(str)


def _bad_type(path: Path, col: str, kind: pa.DataType, want: str) -> TraceFormatError:
    return TraceFormatError(f"{path}: column {col!r} must be {want}; its Parquet type is {kind}")


def _checked(
    path: Path,
    unit: str,
    first: int,
    page: pd.Series,
    time_cells: pd.Series,
    flag_cells: pd.Series,
    days: NDArray[np.float64] | None = None,
) -> _Part:
    """The checks of one file shared by CSV and Parquet: pages not empty, times finite, flags 0/1.

    ``page`` is text; ``time_cells`` and ``flag_cells`` hold text (read as in a CSV) or, from Parquet,
    numbers or booleans; ``days`` holds the times already converted to days (Parquet numbers and
    timestamps), or None to read them from the text of ``time_cells``.
    """
    part = _Part(path, unit, first, page, np.empty(0), np.empty(0, dtype=bool), time_cells)
    empty = (page.str.strip() == "").to_numpy()
    if empty.any():
        raise part.bad(int(np.flatnonzero(empty)[0]), "page is empty (expected 'page,time,changed')")

    if days is None:
        text = time_cells.str.strip()
        secs = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
        days = secs / SECONDS_PER_DAY
        iso = np.isnan(secs)
        if iso.any():
            parsed = pd.to_datetime(text[iso], format="ISO8601", utc=True, errors="coerce")
            nat = parsed.isna().to_numpy()
            if nat.any():
                i = int(np.flatnonzero(iso)[np.flatnonzero(nat)[0]])
                raise part.bad(i, f"time must be unix seconds or ISO 8601; got {_show(time_cells.iloc[i])}")
            since_epoch = (parsed - pd.Timestamp(0, tz="UTC")) / pd.Timedelta(days=1)
            days[iso] = np.asarray(since_epoch, dtype=np.float64)
    inf = ~np.isfinite(days)
    if inf.any():
        i = int(np.flatnonzero(inf)[0])
        raise part.bad(i, f"time must be finite; got {_show(time_cells.iloc[i])}")

    if pd.api.types.is_bool_dtype(flag_cells.dtype):
        ok = np.ones(flag_cells.shape[0], dtype=bool)
        changed = flag_cells.to_numpy(dtype=bool)
    elif pd.api.types.is_numeric_dtype(flag_cells.dtype):
        values = flag_cells.to_numpy(dtype=np.float64)
        ok = (values == 0) | (values == 1)
        changed = values == 1
    else:
        flag = flag_cells.str.strip()
        ok = flag.isin(["0", "1"]).to_numpy()
        changed = (flag == "1").to_numpy()
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise part.bad(i, f"changed must be 0 or 1; got {_show(flag_cells.iloc[i])}")
    return _Part(path, unit, first, page, days, changed, time_cells)


def _assemble(parts: list[_Part]) -> VisitLog:
    """The visit log of the parts one after the other, after checking that times increase within a page."""
    if not parts:
        return VisitLog(np.empty(0, dtype=object), np.empty(0, dtype=np.intp), np.empty(0), np.empty(0, dtype=bool))
    if len(parts) == 1:
        page, days, changed = parts[0].page, parts[0].time, parts[0].changed
    else:
        page = pd.concat([p.page for p in parts], ignore_index=True)
        days = np.concatenate([p.time for p in parts])
        changed = np.concatenate([p.changed for p in parts])
    starts = np.cumsum([0] + [p.page.shape[0] for p in parts])

    codes, names = pd.factorize(page, sort=False)
    codes = codes.astype(np.intp)
    order = np.argsort(codes, kind="stable")
    c_sorted = codes[order]
    t_sorted = days[order]
    same = c_sorted[1:] == c_sorted[:-1]
    bad = same & ~(t_sorted[1:] > t_sorted[:-1])
    if bad.any():
        i = int(order[1:][np.flatnonzero(bad)[0]])
        k = int(np.searchsorted(starts, i, side="right")) - 1
        part, row = parts[k], i - int(starts[k])
        raise part.bad(
            row,
            f"time must increase within page {page.iloc[i]!r}; {_show(part.raw_time.iloc[row])} is not after its "
            "previous visit",
        )
    return VisitLog(np.asarray(names, dtype=object), codes, days, changed)


def _show(value: object) -> str:
    """``repr`` of a cell: ``'7'`` for CSV text, ``2`` or ``True`` for a Parquet value, a timestamp in ISO 8601."""
    if isinstance(value, pd.Timestamp):
        return repr(value.isoformat())
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value)


def write_visit_log(
    path: str | os.PathLike, page: ArrayLike, time_s: ArrayLike, changed: ArrayLike
) -> None:
    """Write a visit log, atomically: Parquet when the name ends in ``.parquet``, else CSV (gzip when it
    ends in ``.gz``).

    Parameters
    ----------
    path : str or path-like
        Output file; replaced only once the whole file is written.
    page : array_like of str, shape (n,)
        Page identifiers.
    time_s : array_like of float, shape (n,)
        Visit times, unix seconds (written as given: a Parquet ``time`` column is numeric, not a timestamp).
    changed : array_like of bool or 0/1, shape (n,)
        Changed flags (CSV: 0/1; Parquet: boolean).

    Raises
    ------
    ValueError
        If the three arrays differ in length.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "log.csv.gz"
    >>> write_visit_log(f, ["a", "a"], [0, 3600], [0, 1])
    >>> read_visit_log(f).observations()[2].tolist()    # one hour, in days
    [0.041666666666666664]
    >>> write_visit_log(f.with_name("log.parquet"), ["a", "a"], [0, 3600], [0, 1])
    >>> read_visit_log(f.with_name("log.parquet")).changed.tolist()
    [False, True]
    """
    page = np.asarray(page)
    time_s = np.asarray(time_s)
    changed = np.asarray(changed)
    if not (page.shape == time_s.shape == changed.shape):
        raise ValueError(
            f"page, time_s and changed must have the same length; got {page.shape}, {time_s.shape}, {changed.shape}"
        )
    path = Path(path)
    parquet = path.name.lower().endswith(".parquet")
    changed = changed.astype(bool) if parquet else changed.astype(np.int8)
    write_table_atomic(pd.DataFrame({"page": page, "time": time_s, "changed": changed}), path)


def estimate_visit_log(log: VisitLog, method: str, **params) -> pd.DataFrame:
    """Estimate every page's change rate from a visit log.

    Parameters
    ----------
    log : VisitLog
        Visits (see :func:`freshcrawl.traces.visit_log.read_visit_log`).
    method : str
        A name of :data:`freshcrawl.estimators.ESTIMATOR_NAMES`.
    **params
        Estimator parameters (``delta0``, ``eta``, ...).

    Returns
    -------
    pandas.DataFrame
        One row per page: ``page``, ``delta`` (changes/day), ``n_visits`` (observations used: visits after
        the first), ``n_changed``, ``days_observed`` (first to last visit), ``p`` (the page's mean visit
        rate, visits/day, which the paper forms use as their known p; NaN with fewer than two visits).

    Raises
    ------
    UnknownNameError
        If ``method`` is unknown.
    """
    from freshcrawl.estimators import make_batch_estimator  # the core, loaded when used

    est = make_batch_estimator(method, max(log.n_pages, 1), **params)
    pages, changed, tau, rank = log.observations()
    n_obs = np.bincount(pages, minlength=log.n_pages)
    days = np.bincount(pages, weights=tau, minlength=log.n_pages)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_page = np.where(n_obs > 0, n_obs / np.where(days > 0, days, 1.0), np.nan)
    if pages.size:
        # round r holds the r-th observation of every page that has one: pages are distinct in a round.
        order = np.lexsort((pages, rank))
        bounds = np.flatnonzero(np.diff(rank[order])) + 1
        for chunk in np.split(order, bounds):
            pg = pages[chunk]
            est.update(pg, changed[chunk], tau[chunk], p_page[pg])
    delta = np.asarray(est.delta_)[: log.n_pages]
    return pd.DataFrame(
        {
            "page": log.page_names,
            "delta": delta,
            "n_visits": n_obs,
            "n_changed": np.bincount(pages, weights=changed, minlength=log.n_pages).astype(np.int64),
            "days_observed": days,
            "p": p_page,
        }
    )
