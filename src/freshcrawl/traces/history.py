"""Read change histories: ``PREFIX.changes.csv.gz`` (``page,time``) and ``PREFIX.pages.csv``.

The format (see ``data/README.md``): ``changes.csv.gz`` holds one row per change, ``page,time`` with the
time in unix seconds (UTC), sorted by page and then by time, each ``(page, time)`` once;
``pages.csv`` holds ``page,born,died,n_changes`` with ``died`` empty while the page is alive. Times are
converted to days since the unix epoch, the unit used everywhere in freshcrawl.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from freshcrawl.errors import TraceFormatError
from freshcrawl.units import SECONDS_PER_DAY

__all__ = ["ChangeHistory", "read_history"]


@dataclass(frozen=True, slots=True)
class ChangeHistory:
    """The change times of many pages, with each page's birth and death.

    Attributes
    ----------
    pages : ndarray of object (str), shape (n_pages,)
        Page ids, in the order of ``pages.csv``; page ``i`` of every other array is ``pages[i]``.
    born : ndarray of float, shape (n_pages,)
        Birth time of each page, days since the unix epoch.
    died : ndarray of float, shape (n_pages,)
        Death time, days since the unix epoch; ``inf`` for a page still alive.
    offsets : ndarray of intp, shape (n_pages + 1,)
        The change times of page ``i`` are ``times[offsets[i]:offsets[i + 1]]``.
    times : ndarray of float, shape (n_changes,)
        Change times, days since the unix epoch, increasing within each page.
    first : float
        Earliest time in the history (first birth or change), days since the epoch.
    last : float
        Latest time in the history (last birth, death or change), days since the epoch.
    """

    pages: NDArray[np.object_]
    born: NDArray[np.float64]
    died: NDArray[np.float64]
    offsets: NDArray[np.intp]
    times: NDArray[np.float64]
    first: float
    last: float

    @property
    def n_pages(self) -> int:
        """Number of pages."""
        return int(self.born.shape[0])

    @property
    def n_changes(self) -> int:
        """Number of changes over all pages."""
        return int(self.times.shape[0])

    def page_times(self, i: int) -> NDArray[np.float64]:
        """Change times of page ``i``, days since the epoch, shape (n_changes_i,)."""
        return self.times[self.offsets[i] : self.offsets[i + 1]]


def _read_csv(path: Path, columns: list[str]) -> pd.DataFrame:
    if not path.is_file():
        raise FileNotFoundError(f"change history file {path} does not exist")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False)
    except pd.errors.ParserError as err:
        raise TraceFormatError(f"{path}: malformed CSV: {err}") from err
    except (UnicodeDecodeError, OSError, EOFError, pd.errors.EmptyDataError) as err:
        raise TraceFormatError(f"{path}: cannot be read as CSV: {err}") from err
    if list(frame.columns) != columns:
        raise TraceFormatError(
            f"{path}: line 1: header must be {','.join(columns)}; got {','.join(map(str, frame.columns))}"
        )
    return frame


def _integers(
    path: Path, frame: pd.DataFrame, column: str, *, allow_empty: bool = False
) -> NDArray:
    text = frame[column]
    empty = (text.str.strip() == "").to_numpy()
    values = pd.to_numeric(text.where(~empty, "0"), errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values) | (values != np.round(values))
    if not allow_empty:
        bad |= empty
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise TraceFormatError(
            f"{path}: line {k + 2}: {column} must be an integer number of unix seconds; got {text.iloc[k]!r}"
        )
    values[empty] = np.inf
    return values


def read_history(prefix: str | Path) -> ChangeHistory:
    """Read the change history ``PREFIX.changes.csv.gz`` + ``PREFIX.pages.csv``.

    Parameters
    ----------
    prefix : str or Path
        Path without the suffixes, e.g. ``"data/peps"``.

    Returns
    -------
    ChangeHistory
        Times converted to days since the unix epoch.

    Raises
    ------
    FileNotFoundError
        If either file is missing.
    TraceFormatError
        If a file is malformed: wrong header, a field that is not an integer time, a row of
        ``changes.csv.gz`` out of order (not sorted by page, then strictly by time), a change of a page
        missing from ``pages.csv``, a duplicate page, a death before the birth, or ``n_changes``
        disagreeing with the changes; the message gives the file and the line number (header = line 1).

    Examples
    --------
    >>> h = read_history("data/ota-pga-versions")
    >>> h.n_pages, h.n_changes
    (133, 4394)
    """
    prefix = Path(prefix)
    changes_path = prefix.with_name(prefix.name + ".changes.csv.gz")
    pages_path = prefix.with_name(prefix.name + ".pages.csv")
    pages_df = _read_csv(pages_path, ["page", "born", "died", "n_changes"])
    changes_df = _read_csv(changes_path, ["page", "time"])

    names = pages_df["page"].to_numpy(dtype=object)
    dup = pd.Series(names).duplicated().to_numpy()
    if dup.any():
        k = int(np.flatnonzero(dup)[0])
        raise TraceFormatError(f"{pages_path}: line {k + 2}: page {names[k]!r} listed twice")
    born_s = _integers(pages_path, pages_df, "born")
    died_s = _integers(pages_path, pages_df, "died", allow_empty=True)
    n_listed = _integers(pages_path, pages_df, "n_changes")
    bad = died_s < born_s
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise TraceFormatError(
            f"{pages_path}: line {k + 2}: died must be >= born; got born={born_s[k]:.0f}, died={died_s[k]:.0f}"
        )

    cpages = changes_df["page"].to_numpy(dtype=object)
    ctimes_s = _integers(changes_path, changes_df, "time")
    if cpages.size > 1:
        same = cpages[1:] == cpages[:-1]
        ordered = (cpages[1:] > cpages[:-1]) | (same & (ctimes_s[1:] > ctimes_s[:-1]))
        if not ordered.all():
            k = int(np.flatnonzero(~ordered)[0]) + 1
            raise TraceFormatError(
                f"{changes_path}: line {k + 2}: rows must be sorted by page, then strictly by time; "
                f"got ({cpages[k]!r}, {ctimes_s[k]:.0f}) after ({cpages[k - 1]!r}, {ctimes_s[k - 1]:.0f})"
            )
    index = pd.Index(names)
    idx = index.get_indexer(cpages)
    missing = idx < 0
    if missing.any():
        k = int(np.flatnonzero(missing)[0])
        raise TraceFormatError(
            f"{changes_path}: line {k + 2}: page {cpages[k]!r} is not in {pages_path.name}"
        )

    counts = np.bincount(idx, minlength=names.size)
    wrong = counts != n_listed
    if wrong.any():
        k = int(np.flatnonzero(wrong)[0])
        raise TraceFormatError(
            f"{pages_path}: line {k + 2}: n_changes of {names[k]!r} is {n_listed[k]:.0f} but "
            f"{changes_path.name} has {counts[k]} rows for it"
        )
    # Changes sorted by page name; re-order them to the page order of pages.csv.
    order = np.argsort(idx, kind="stable")
    times = np.ascontiguousarray(ctimes_s[order] / SECONDS_PER_DAY)
    offsets = np.zeros(names.size + 1, dtype=np.intp)
    np.cumsum(counts, out=offsets[1:])
    born = born_s / SECONDS_PER_DAY
    died = died_s / SECONDS_PER_DAY
    finite_died = died[np.isfinite(died)]
    first = float(min(born.min(initial=np.inf), times.min(initial=np.inf)))
    last = float(
        max(born.max(initial=-np.inf), times.max(initial=-np.inf), finite_died.max(initial=-np.inf))
    )
    if names.size == 0:
        raise TraceFormatError(f"{pages_path}: no pages")
    return ChangeHistory(
        pages=names, born=born, died=died, offsets=offsets, times=times, first=first, last=last
    )
