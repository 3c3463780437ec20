"""Read the tables of ``freshcrawl allocate``: PAGES (``page,delta[,weight,host,complete]``) and HOSTS
(``host,max_rate``), and map host names to the host indices and caps of
:func:`freshcrawl.allocation.allocate`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from freshcrawl.units import parse_rate

__all__ = ["read_pages", "read_host_caps", "host_index"]

_TRUE = {"1", "true", "yes", "y", "t"}
_FALSE = {"0", "false", "no", "n", "f", ""}


def read_pages(path: Path) -> pd.DataFrame:
    """Read the PAGES table: columns ``page,delta`` and optional ``weight``, ``host``, ``complete``.

    ``delta`` is the change rate in changes per day (a number >= 0); ``weight`` a number >= 0 (default 1);
    ``host`` a host name (empty: no host); ``complete`` 0/1 or true/false (every change of the page is
    announced, e.g. by a sitemap or feed).

    Raises
    ------
    ValueError
        If a column is missing or a value cannot be read; the message names the column and the row.
    """
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError as err:
        raise ValueError(f"{path}: empty file; expected a CSV with columns page,delta") from err
    for col in ("page", "delta"):
        if col not in df.columns:
            raise ValueError(f"{path}: missing column {col!r}; expected page,delta[,weight,host,complete]")
    if df.shape[0] == 0:
        raise ValueError(f"{path}: no pages")
    for col in ("delta", "weight"):
        if col in df.columns:
            values = pd.to_numeric(df[col].str.strip(), errors="coerce")
            bad = values.isna().to_numpy() | ~np.isfinite(values.to_numpy(dtype=float)) | (values.to_numpy() < 0)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                unit = " changes/day" if col == "delta" else ""
                raise ValueError(
                    f"{path}: column {col!r} must be a finite number >= 0{unit}; row {i + 2} (page "
                    f"{df['page'].iloc[i]!r}) has {df[col].iloc[i]!r}"
                )
            df[col] = values.astype(float)
    if "complete" in df.columns:
        text = df["complete"].astype(str).str.strip().str.lower()
        bad = ~text.isin(_TRUE | _FALSE)
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise ValueError(f"{path}: column 'complete' must be 0/1 or true/false; row {i + 2} has {df['complete'].iloc[i]!r}")
        df["complete"] = text.isin(_TRUE)
    return df


def read_host_caps(path: Path) -> dict[str, float]:
    """Read the HOSTS table ``host,max_rate``: rate as ``N/day``, ``N/hour``, ``N/s`` or a number per day.

    Raises
    ------
    ValueError
        If a column is missing, a host is listed twice or a rate cannot be read (row named).
    """
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError as err:
        raise ValueError(f"{path}: empty file; expected a CSV with columns host,max_rate") from err
    for col in ("host", "max_rate"):
        if col not in df.columns:
            raise ValueError(f"{path}: missing column {col!r}; expected host,max_rate")
    caps: dict[str, float] = {}
    for i, (host, rate) in enumerate(zip(df["host"], df["max_rate"])):
        if host in caps:
            raise ValueError(f"{path}: host {host!r} is listed twice (row {i + 2})")
        text = rate.strip().lower()
        try:
            caps[host] = np.inf if text in ("inf", "none", "") else parse_rate(text, name="max_rate")
        except ValueError as err:
            raise ValueError(f"{path}: row {i + 2} (host {host!r}): {err}") from err
    return caps


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
