"""Read the tables of ``freshcrawl allocate``: PAGES (``page,delta[,weight,host,complete]``) and HOSTS
(``host,max_rate``), and map host names to the host indices and caps of
:func:`freshcrawl.allocation.allocate`.

PAGES is a CSV file (plain or ``.gz``), a Parquet file, or a directory of Parquet partitions (its
``*.parquet`` files, sorted by name; ``_SUCCESS``, ``_metadata`` and hidden files skipped), with the same
column names in every form. :func:`read_pages_file` reads one file; :func:`read_pages` reads a file or a
whole directory. Both forms go through the same checks, and every error names the file, the column and
the row (CSV: ``row i`` is the file's line ``i``, the header being line 1; Parquet: ``row i`` is the
``i``-th row of the file, counting from 1).

Parquet column types: ``page`` string or integer (read as text), ``delta`` and ``weight`` numeric,
``host`` string (null or ``""``: no host), ``complete`` boolean or integer 0/1 (null: false, as an empty
CSV cell). Columns other than these five are not read from Parquet.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from numpy.typing import NDArray

from freshcrawl._io import decode_dictionary, is_number_type, is_parquet, is_text_type
from freshcrawl._io import parquet_files, read_parquet
from freshcrawl.units import parse_rate

__all__ = ["read_pages", "read_pages_file", "read_host_caps", "host_index"]

_TRUE = {"1", "true", "yes", "y", "t"}
_FALSE = {"0", "false", "no", "n", "f", ""}
#: The columns of PAGES, required then optional.
PAGE_COLUMNS = ("page", "delta", "weight", "host", "complete")
_EXPECTED = "expected page,delta[,weight,host,complete]"
#: The type a Parquet column of type ``null`` (nulls only) is read as.
_NULL_AS = {"page": pa.string(), "delta": pa.float64(), "weight": pa.float64(), "host": pa.string(), "complete": pa.bool_()}


def read_pages(path: str | os.PathLike) -> pd.DataFrame:
    """Read the PAGES table: columns ``page,delta`` and optional ``weight``, ``host``, ``complete``.

    ``delta`` is the change rate in changes per day (a number >= 0); ``weight`` a number >= 0 (default 1);
    ``host`` a host name (empty: no host); ``complete`` 0/1 or true/false (every change of the page is
    announced, e.g. by a sitemap or feed).

    Parameters
    ----------
    path : str or path-like
        A CSV file (``.gz`` compressed or not), a Parquet file, or a directory of Parquet partitions (read
        in name order; partitions without rows are allowed and contribute nothing, but the table as a
        whole must have a page). See :func:`read_pages_file` for the formats.

    Returns
    -------
    pandas.DataFrame, shape (n_pages, n_columns)
        ``page`` (text), ``delta`` (float64, changes/day) and those of ``weight`` (float64), ``host`` (text,
        ``""`` for none) and ``complete`` (bool) that the table has, rows in file order (partitions one
        after the other), index ``0 .. n_pages - 1``.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If a column is missing or a value cannot be read (the message names the file, the column and the
        row), a file is not valid Parquet, a directory holds no partition file, partitions differ in
        their columns, or there is no page.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> pd.DataFrame({"page": ["a", "b"], "delta": [1.0, 0.5]}).to_parquet(d / "part-0.parquet")
    >>> pd.DataFrame({"page": ["c"], "delta": [2]}).to_parquet(d / "part-1.parquet")
    >>> read_pages(d)["delta"].tolist()
    [1.0, 0.5, 2.0]
    """
    path = Path(path)
    if not path.is_dir():
        return read_pages_file(path)
    files = parquet_files(path)
    frames = [read_pages_file(f, allow_empty=True) for f in files]
    for f, frame in zip(files[1:], frames[1:]):
        if list(frame.columns) != list(frames[0].columns):
            raise ValueError(
                f"{f}: columns {','.join(frame.columns)} differ from those of {files[0].name}, "
                f"{','.join(frames[0].columns)}; every partition must have the same columns"
            )
    nonempty = [frame for frame in frames if frame.shape[0] > 0]
    if not nonempty:
        raise ValueError(f"{path}: no pages (its {len(files)} partition files hold no rows)")
    return pd.concat(nonempty, ignore_index=True) if len(nonempty) > 1 else nonempty[0]


def read_pages_file(path: str | os.PathLike, *, allow_empty: bool = False) -> pd.DataFrame:
    """Read one file of the PAGES table: a CSV file or a Parquet file (one partition of a directory).

    The file is read as Parquet when its name ends in ``.parquet`` or it starts with the Parquet magic
    bytes, else as CSV (gzip when the name ends in ``.gz``). The columns and checks are those of
    :func:`read_pages`.

    Parameters
    ----------
    path : str or path-like
        The file.
    allow_empty : bool
        Return a table without rows for a file without rows (a Parquet partition may be empty) instead of
        raising.

    Returns
    -------
    pandas.DataFrame, shape (n_rows, n_columns)
        As :func:`read_pages`. From CSV, columns other than the five of PAGES are kept as text; from
        Parquet they are not read.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    ValueError
        If a column is missing or has a Parquet type that does not fit, a value cannot be read (the
        message names the file, the column and the row: CSV line, Parquet row from 1), the file is empty
        or not valid Parquet, or it has no row and ``allow_empty`` is false.
    """
    path = Path(path)
    if is_parquet(path):
        df, first_row, nulls = _pages_from_parquet(path)
    else:
        df, first_row, nulls = _pages_from_csv(path), 2, {}
    return _check_pages(df, path, first_row, nulls, allow_empty=allow_empty)


def _pages_from_csv(path: Path) -> pd.DataFrame:
    """The CSV table as text columns, the required columns checked."""
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError as err:
        raise ValueError(f"{path}: empty file; expected a CSV with columns page,delta") from err
    for col in ("page", "delta"):
        if col not in df.columns:
            raise ValueError(f"{path}: missing column {col!r}; {_EXPECTED}")
    return df


def _pages_from_parquet(path: Path) -> tuple[pd.DataFrame, int, dict[str, NDArray[np.bool_]]]:
    """The Parquet table as pandas columns for :func:`_check_pages`, the row of its first line (1), and
    the null mask of each numeric column (nulls read as NaN; the checks report them as null)."""
    table = read_parquet(path, PAGE_COLUMNS)
    for col in ("page", "delta"):
        if col not in table.column_names:
            raise ValueError(f"{path}: missing column {col!r}; {_EXPECTED}")
    columns: dict[str, pd.Series] = {}
    nulls: dict[str, NDArray[np.bool_]] = {}
    for col in table.column_names:
        arr = decode_dictionary(table.column(col))
        if pa.types.is_null(arr.type):  # a column of nulls only, as pandas writes an all-None column
            arr = arr.cast(_NULL_AS[col])
        kind = arr.type
        if col in ("page", "host"):
            if not (is_text_type(kind) or pa.types.is_integer(kind)):
                raise _bad_type(path, col, kind, "text or integer" if col == "page" else "text")
            if col == "page" and arr.null_count:
                i = _first(arr.is_null())
                raise ValueError(f"{path}: column 'page' must not be null; row {i + 1} is null")
            columns[col] = _text(arr)
        elif col in ("delta", "weight"):
            if is_number_type(kind):
                nulls[col] = arr.is_null().to_numpy(zero_copy_only=False)
                columns[col] = pd.Series(arr.cast(pa.float64()).to_numpy(zero_copy_only=False))
            elif is_text_type(kind):
                nulls[col] = arr.is_null().to_numpy(zero_copy_only=False)
                columns[col] = _text(arr)
            else:
                raise _bad_type(path, col, kind, "numeric")
        else:  # complete
            if pa.types.is_boolean(kind):
                columns[col] = pd.Series(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
            elif is_number_type(kind):
                if pa.types.is_decimal(kind):
                    arr = arr.cast(pa.float64())
                columns[col] = pd.Series(arr.fill_null(0).to_numpy(zero_copy_only=False))
            elif is_text_type(kind):
                columns[col] = _text(arr)
            else:
                raise _bad_type(path, col, kind, "boolean or integer 0/1")
    return pd.DataFrame(columns), 1, nulls


def _check_pages(
    df: pd.DataFrame, path: Path, first_row: int, nulls: dict[str, NDArray[np.bool_]], *, allow_empty: bool
) -> pd.DataFrame:
    """The checks of PAGES shared by CSV and Parquet; ``df`` holds text or numbers, and is converted in place.

    ``first_row`` is the row number of ``df``'s first row in messages (2 for CSV, 1 for Parquet); a true
    ``nulls[col][i]`` says that the value of ``col`` in row ``i`` was null (Parquet).
    """
    if df.shape[0] == 0 and not allow_empty:
        raise ValueError(f"{path}: no pages")
    for col in ("delta", "weight"):
        if col in df.columns:
            raw = df[col]
            parsed = pd.to_numeric(raw.str.strip() if _is_text_series(raw) else raw, errors="coerce")
            values = np.asarray(parsed, dtype=np.float64)
            bad = ~np.isfinite(values) | (values < 0)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                unit = " changes/day" if col == "delta" else ""
                has = "null" if col in nulls and nulls[col][i] else _show(raw.iloc[i])
                raise ValueError(
                    f"{path}: column {col!r} must be a finite number >= 0{unit}; row {i + first_row} (page "
                    f"{df['page'].iloc[i]!r}) has {has}"
                )
            df[col] = values
    if "complete" in df.columns:
        raw = df["complete"]
        if pd.api.types.is_bool_dtype(raw.dtype):
            flags = raw.to_numpy(dtype=bool)
            bad = np.zeros(flags.shape, dtype=bool)
        elif pd.api.types.is_numeric_dtype(raw.dtype):
            values = raw.to_numpy(dtype=np.float64)
            flags = values == 1
            bad = ~(flags | (values == 0))
        else:
            text = raw.astype(str).str.strip().str.lower()
            flags = text.isin(_TRUE).to_numpy()
            bad = ~text.isin(_TRUE | _FALSE).to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{path}: column 'complete' must be 0/1 or true/false; row {i + first_row} has {_show(raw.iloc[i])}"
            )
        df["complete"] = flags
    return df


def read_host_caps(path: str | os.PathLike) -> dict[str, float]:
    """Read the HOSTS table ``host,max_rate``: rate as ``N/day``, ``N/hour``, ``N/s`` or a number per day.

    Parameters
    ----------
    path : str or path-like
        A CSV file, or a Parquet file (name ending in ``.parquet`` or Parquet magic bytes) with a text
        ``host`` column and a ``max_rate`` column that is numeric (visits per day) or text as in the CSV.
        An empty cell, a null, ``inf`` or ``none`` means no cap.

    Returns
    -------
    dict of str to float
        Cap of each host, visits per day (``inf``: uncapped).

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    ValueError
        If a column is missing, a host is listed twice or is null, a rate cannot be read (file and row
        named: CSV line, Parquet row from 1), or the file is not valid Parquet.
    """
    path = Path(path)
    if is_parquet(path):
        table = read_parquet(path, ("host", "max_rate"))
        first_row = 1
    else:
        try:
            table = pd.read_csv(path, dtype=str, keep_default_na=False)
        except pd.errors.EmptyDataError as err:
            raise ValueError(f"{path}: empty file; expected a CSV with columns host,max_rate") from err
        first_row = 2
    names = table.column_names if isinstance(table, pa.Table) else list(table.columns)
    for col in ("host", "max_rate"):
        if col not in names:
            raise ValueError(f"{path}: missing column {col!r}; expected host,max_rate")
    if isinstance(table, pa.Table):
        host_col, rate_col = (decode_dictionary(table.column(col)) for col in ("host", "max_rate"))
        host_col, rate_col = (c.cast(pa.string()) if pa.types.is_null(c.type) else c for c in (host_col, rate_col))
        if not (is_text_type(host_col.type) or pa.types.is_integer(host_col.type)):
            raise _bad_type(path, "host", host_col.type, "text")
        if not (is_text_type(rate_col.type) or is_number_type(rate_col.type)):
            raise _bad_type(path, "max_rate", rate_col.type, "numeric (visits/day) or text such as '5/hour'")
        hosts = (host_col.cast(pa.string()) if pa.types.is_integer(host_col.type) else host_col).to_pylist()
        rates = rate_col.to_pylist()
    else:
        hosts, rates = table["host"].tolist(), table["max_rate"].tolist()
    caps: dict[str, float] = {}
    for i, (host, rate) in enumerate(zip(hosts, rates)):
        if host is None:
            raise ValueError(f"{path}: row {i + first_row}: host is null")
        if host in caps:
            raise ValueError(f"{path}: host {host!r} is listed twice (row {i + first_row})")
        try:
            if rate is None:
                caps[host] = np.inf
            elif isinstance(rate, str):
                text = rate.strip().lower()
                caps[host] = np.inf if text in ("inf", "none", "") else parse_rate(text, name="max_rate")
            else:
                rate = float(rate)
                caps[host] = np.inf if rate == np.inf else parse_rate(rate, name="max_rate")
        except ValueError as err:
            raise ValueError(f"{path}: row {i + first_row} (host {host!r}): {err}") from err
    return caps


def _is_text_series(s: pd.Series) -> bool:
    return pd.api.types.is_string_dtype(s.dtype) or s.dtype == object


def _text(arr: pa.ChunkedArray) -> pd.Series:
    """A text or integer column as a pandas text column (the dtype ``read_csv(dtype=str)`` gives), nulls as ``""``."""
    if not is_text_type(arr.type):
        arr = arr.cast(pa.string())
    arr = arr.fill_null("")
    return pd.Series(arr.to_numpy(zero_copy_only=False), dtype=object).astype(str)


def _first(mask: pa.ChunkedArray) -> int:
    """Index of the first true value of a boolean column."""
    return int(np.flatnonzero(mask.to_numpy(zero_copy_only=False))[0])


def _show(value: object) -> str:
    """``repr`` of a cell as Python shows it: ``'-2'`` for CSV text, ``-1.0`` for a Parquet number."""
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value)


def _bad_type(path: Path, col: str, kind: pa.DataType, want: str) -> ValueError:
    return ValueError(f"{path}: column {col!r} must be {want}; its Parquet type is {kind}")


def host_index(
    names: NDArray[np.str_], caps_by_name: dict[str, float]
) -> tuple[NDArray[np.intp] | None, NDArray[np.float64] | None]:
    """Host index of each page and the cap of each host, as :func:`~freshcrawl.allocation.allocate` takes them.

    Parameters
    ----------
    names : ndarray of str, shape (n_pages,)
        Host name of each page; ``""`` for a page without a host.
    caps_by_name : dict of str to float
        Cap of each listed host, visits per day (``inf``: uncapped). Hosts of pages not listed are uncapped.

    Returns
    -------
    hosts : ndarray of intp, shape (n_pages,), or None
        Index into ``host_caps`` (hosts sorted by name), ``-1`` for a page without a host; None when no
        host is named at all.
    host_caps : ndarray of float, shape (n_hosts,), or None

    Examples
    --------
    >>> hosts, caps = host_index(np.array(["b", "", "a"]), {"b": 5.0})
    >>> hosts.tolist(), caps.tolist()
    ([1, -1, 0], [inf, 5.0])
    """
    known = sorted(set(names) - {""} | set(caps_by_name))
    if not known:
        return None, None
    index = {name: j for j, name in enumerate(known)}
    hosts = np.array([index.get(name, -1) if name else -1 for name in names], dtype=np.intp)
    return hosts, np.array([caps_by_name.get(name, np.inf) for name in known], dtype=np.float64)
