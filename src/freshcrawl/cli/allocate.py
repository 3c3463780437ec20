"""``freshcrawl allocate PAGES``: optimal visit rates for a crawl budget."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
import numpy as np
import pandas as pd

from freshcrawl._io import write_csv_atomic
from freshcrawl.allocation import OBJECTIVE_NAMES, AllocationResult
from freshcrawl.allocation import allocate as solve_allocation
from freshcrawl.errors import FreshcrawlError
from freshcrawl.units import parse_rate

__all__ = ["allocate_cmd", "allocate", "read_pages", "read_host_caps"]

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


def _rate(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_rate(value, name=param.name or "rate")
    except ValueError as err:
        raise click.BadParameter(str(err), ctx=ctx, param=param) from err


@click.command("allocate")
@click.argument("pages", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--budget", required=True, callback=_rate, help="Crawl budget B, e.g. 1000/day, 50/hour, 2/s.")
@click.option(
    "--objective",
    type=click.Choice(OBJECTIVE_NAMES),
    default="freshness-poisson",
    show_default=True,
    help="What to maximise: freshness under Poisson or periodic visits, harmonic staleness, changes detected.",
)
@click.option("--min-rate", callback=_rate, help="Lower bound on every page's rate (N/day, N/hour, N/s).")
@click.option("--max-rate", callback=_rate, help="Upper bound on every page's rate (N/day, N/hour, N/s).")
@click.option(
    "--host-caps",
    "host_caps_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="CSV host,max_rate: politeness cap of each host (hosts not listed are uncapped).",
)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write page,rate here (CSV; .gz compresses).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary of the solve instead of the rates.")
def allocate_cmd(
    pages: Path,
    budget: float,
    objective: str,
    min_rate: float | None,
    max_rate: float | None,
    host_caps_path: Path | None,
    out: Path | None,
    as_json: bool,
) -> None:
    """Compute the visit rates that maximise the objective under the budget, bounds and host caps.

    PAGES is a CSV with columns page,delta (changes per day) and optional weight, host and complete
    (0/1: every change of the page is announced). Rates are written in visits per day, one row per page:
    page, rate. With --json, prints lambda, objective, status, kkt_residual, budget_used and solve_seconds
    (the solver alone). On any error nothing is written.
    """
    if out is not None and not out.parent.exists():
        raise click.BadParameter(f"directory {out.parent} does not exist", param_hint="--out")
    if budget is None or budget <= 0:
        raise click.BadParameter(f"must be > 0 visits per day; got {budget!r}", param_hint="--budget")
    try:
        table = read_pages(pages)
        hosts = host_caps = None
        if host_caps_path is not None or "host" in table.columns:
            caps_by_name = read_host_caps(host_caps_path) if host_caps_path is not None else {}
            names = table["host"].astype(str).to_numpy() if "host" in table.columns else np.full(len(table), "")
            known = sorted(set(names) - {""} | set(caps_by_name))
            index = {name: j for j, name in enumerate(known)}
            hosts = np.array([index.get(name, -1) if name else -1 for name in names], dtype=np.intp)
            host_caps = np.array([caps_by_name.get(name, np.inf) for name in known], dtype=np.float64)
            if host_caps.size == 0:
                hosts = host_caps = None
        kwargs = dict(
            weights=table["weight"].to_numpy() if "weight" in table.columns else None,
            objective=objective,
            p_min=0.0 if min_rate is None else min_rate,
            p_max=np.inf if max_rate is None else max_rate,
            hosts=hosts,
            host_caps=host_caps,
            observed_completely=table["complete"].to_numpy(dtype=bool) if "complete" in table.columns else None,
        )
        delta = table["delta"].to_numpy(dtype=np.float64)
        t0 = time.perf_counter()
        res: AllocationResult = solve_allocation(delta, budget, **kwargs)
        solve_seconds = time.perf_counter() - t0
    except FileNotFoundError as err:
        raise click.BadParameter(str(err), param_hint="PAGES or --host-caps") from err
    except (FreshcrawlError, ValueError, TypeError) as err:
        raise click.ClickException(str(err)) from err
    rates = pd.DataFrame({"page": table["page"], "rate": res.p})
    if out is not None:
        write_csv_atomic(rates, out)
    if as_json:
        summary = {
            "lambda": res.lam,
            "objective": res.objective,
            "status": res.status.name.lower(),
            "kkt_residual": res.kkt_residual,
            "budget_used": float(np.sum(res.p)),
            "solve_seconds": solve_seconds,
            "n_pages": int(res.p.size),
            "n_iter": res.n_iter,
            "out": str(out) if out is not None else None,
        }
        click.echo(json.dumps(summary, indent=2))
    elif out is None:
        click.echo(rates.to_csv(index=False), nl=False)
    else:
        click.echo(f"wrote {res.p.size} pages to {out} ({res.message})", err=True)


#: The click command (``freshcrawl allocate``).
allocate = allocate_cmd
