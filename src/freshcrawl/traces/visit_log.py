"""Read and write visit logs: CSV files with one row per visit, ``page,time,changed``.

``time`` is unix seconds (integer or float) or an ISO 8601 timestamp (naive timestamps are read as UTC);
``changed`` is 0 or 1: whether the page differed from the copy fetched at its previous visit. The file may
be gzip-compressed (``.gz``). Rows may interleave pages; within a page, times must strictly increase in file
order. The first visit of a page only starts its history: its ``changed`` flag is not an observation.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from freshcrawl._io import write_csv_atomic
from freshcrawl.errors import TraceFormatError
from freshcrawl.units import SECONDS_PER_DAY

__all__ = ["VisitLog", "read_visit_log", "write_visit_log"]

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


def _bad(path: Path | str, line: int, what: str) -> TraceFormatError:
    return TraceFormatError(f"{path}: line {line}: {what}")


def read_visit_log(path: str | os.PathLike) -> VisitLog:
    """Read a visit log CSV (plain or ``.gz``) with columns ``page,time,changed``.

    Parameters
    ----------
    path : str or path-like
        The file. Times in unix seconds or ISO 8601; changed 0/1.

    Returns
    -------
    VisitLog

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    TraceFormatError
        Missing or extra columns, an empty page, a time that is neither a finite number of seconds nor an
        ISO 8601 timestamp, a flag outside {0, 1}, or times not strictly increasing within a page; the
        message gives the line number (the header is line 1).

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
    if df.empty:
        return VisitLog(np.empty(0, dtype=object), np.empty(0, dtype=np.intp), np.empty(0), np.empty(0, dtype=bool))
    lines = np.arange(df.shape[0]) + 2
    page = df["page"].astype(str)
    empty = (page.str.strip() == "").to_numpy()
    if empty.any():
        i = int(np.flatnonzero(empty)[0])
        raise _bad(path, int(lines[i]), "page is empty (expected 'page,time,changed')")

    text = df["time"].str.strip()
    secs = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
    days = secs / SECONDS_PER_DAY
    iso = np.isnan(secs)
    if iso.any():
        parsed = pd.to_datetime(text[iso], format="ISO8601", utc=True, errors="coerce")
        nat = parsed.isna().to_numpy()
        if nat.any():
            i = int(np.flatnonzero(iso)[np.flatnonzero(nat)[0]])
            raise _bad(path, int(lines[i]), f"time must be unix seconds or ISO 8601; got {df['time'].iloc[i]!r}")
        since_epoch = (parsed - pd.Timestamp(0, tz="UTC")) / pd.Timedelta(days=1)
        days[iso] = np.asarray(since_epoch, dtype=np.float64)
    inf = ~np.isfinite(days)
    if inf.any():
        i = int(np.flatnonzero(inf)[0])
        raise _bad(path, int(lines[i]), f"time must be finite; got {df['time'].iloc[i]!r}")

    flag = df["changed"].str.strip()
    ok = flag.isin(["0", "1"]).to_numpy()
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise _bad(path, int(lines[i]), f"changed must be 0 or 1; got {df['changed'].iloc[i]!r}")
    changed = (flag == "1").to_numpy()

    codes, names = pd.factorize(page, sort=False)
    codes = codes.astype(np.intp)
    order = np.argsort(codes, kind="stable")
    c_sorted = codes[order]
    t_sorted = days[order]
    same = c_sorted[1:] == c_sorted[:-1]
    bad = same & ~(t_sorted[1:] > t_sorted[:-1])
    if bad.any():
        i = int(order[1:][np.flatnonzero(bad)[0]])
        raise _bad(
            path,
            int(lines[i]),
            f"time must increase within page {page.iloc[i]!r}; {df['time'].iloc[i]!r} is not after its previous visit",
        )
    return VisitLog(np.asarray(names, dtype=object), codes, days, changed)


def write_visit_log(
    path: str | os.PathLike, page: ArrayLike, time_s: ArrayLike, changed: ArrayLike
) -> None:
    """Write a visit log CSV (gzip when the name ends in ``.gz``), atomically.

    Parameters
    ----------
    path : str or path-like
        Output file; replaced only once the whole file is written.
    page : array_like of str, shape (n,)
        Page identifiers.
    time_s : array_like of float, shape (n,)
        Visit times, unix seconds.
    changed : array_like of bool or 0/1, shape (n,)
        Changed flags.

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
    """
    page = np.asarray(page)
    time_s = np.asarray(time_s)
    changed = np.asarray(changed).astype(np.int8)
    if not (page.shape == time_s.shape == changed.shape):
        raise ValueError(
            f"page, time_s and changed must have the same length; got {page.shape}, {time_s.shape}, {changed.shape}"
        )
    path = Path(path)
    write_csv_atomic(pd.DataFrame({"page": page, "time": time_s, "changed": changed}), path)
