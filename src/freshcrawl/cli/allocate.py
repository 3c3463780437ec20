"""``freshcrawl allocate PAGES``: optimal visit rates for a crawl budget.

PAGES is a CSV file, a Parquet file or a directory of Parquet partitions (read by
:func:`freshcrawl.traces.tables.read_pages`); the rates go to stdout as CSV, or to ``--out`` as Parquet
(a name ending in ``.parquet``) or CSV, written whole or not at all.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
import numpy as np
import pandas as pd

from freshcrawl._io import write_table_atomic
from freshcrawl.allocation import AllocationResult
from freshcrawl.allocation import allocate as solve_allocation
from freshcrawl.cli._options import (
    budget_option, engine_options, make_bulk_engine, objective_option, rate_option, table_out_option,
)
from freshcrawl.errors import FreshcrawlError
from freshcrawl.traces.tables import host_index, read_host_caps, read_pages

__all__ = ["allocate_cmd", "allocate"]

@click.command("allocate")
@click.argument("pages", type=click.Path(path_type=str))
@budget_option()
@objective_option(
    default="freshness-poisson",
    help="What to maximise: freshness under Poisson or periodic visits, harmonic staleness, changes detected.",
)
@rate_option("--min-rate", help="Lower bound on every page's rate (N/day, N/hour, N/s).")
@rate_option("--max-rate", help="Upper bound on every page's rate (N/day, N/hour, N/s).")
@click.option(
    "--host-caps",
    "host_caps_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="CSV or Parquet file with columns host,max_rate: politeness cap of each host (hosts not listed are "
    "uncapped).",
)
@table_out_option("page,rate")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary of the solve instead of the rates.")
@engine_options
def allocate_cmd(
    pages: Path,
    budget: float,
    objective: str,
    min_rate: float | None,
    max_rate: float | None,
    host_caps_path: Path | None,
    out: Path | None,
    as_json: bool,
    engine: str,
    scheduler: str,
    workers: int,
) -> None:
    """Compute the visit rates that maximise the objective under the budget, bounds and host caps.

    PAGES is a CSV file, a Parquet file, or a directory of Parquet partitions (its *.parquet files in
    name order; _SUCCESS, _metadata and hidden files skipped), with columns page,delta (changes per day)
    and optional weight, host and complete (0/1: every change of the page is announced). Rates are written
    in visits per day, one row per page: page, rate; --out ending in .parquet writes Parquet. With --json,
    prints lambda, objective, status, kkt_residual, budget_used and solve_seconds (the solver alone). On
    any error nothing is written.

    With --engine stream or dask, PAGES is partitioned by host (every host's pages in one file), the
    solve is the same exact optimum computed pass by pass over the partitions, and --out (required) is a
    directory that receives one Parquet partition of page,rate per input partition.
    """
    if engine == "memory":
        _allocate_memory(pages, budget, objective, min_rate, max_rate, host_caps_path, out, as_json)
    else:
        _allocate_bulk(pages, budget, objective, min_rate, max_rate, host_caps_path, out, as_json, engine,
                       scheduler, workers)


def _allocate_memory(pages, budget, objective, min_rate, max_rate, host_caps_path, out, as_json):
    """``allocate`` with ``--engine memory``: the whole table read, one solve."""
    out = None if out is None else Path(out)
    if out is not None and not out.parent.exists():
        raise click.BadParameter(f"directory {out.parent} does not exist", param_hint="--out")
    try:
        table = read_pages(pages)
        hosts = host_caps = None
        if host_caps_path is not None or "host" in table.columns:
            caps_by_name = read_host_caps(host_caps_path) if host_caps_path is not None else {}
            names = table["host"].astype(str).to_numpy() if "host" in table.columns else np.full(len(table), "")
            hosts, host_caps = host_index(names, caps_by_name)
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
        write_table_atomic(rates, out)
    if as_json:
        click.echo(_json_summary(res, float(np.sum(res.p)), solve_seconds, int(res.p.size),
                                 str(out) if out is not None else None, n_iter=res.n_iter))
    elif out is None:
        click.echo(rates.to_csv(index=False), nl=False)
    else:
        click.echo(f"wrote {res.p.size} pages to {out} ({res.message})", err=True)


def _allocate_bulk(pages, budget, objective, min_rate, max_rate, host_caps_path, out, as_json, engine, scheduler,
                   workers):
    from freshcrawl.bulk import allocate_partitioned

    if out is None:
        raise click.UsageError(f"--engine {engine} writes its rates to a directory: give --out DIR")
    try:
        caps_by_name = read_host_caps(host_caps_path) if host_caps_path is not None else {}
    except FileNotFoundError as err:
        raise click.BadParameter(str(err), param_hint="--host-caps") from err
    except ValueError as err:
        raise click.ClickException(str(err)) from err
    runner = make_bulk_engine(engine, scheduler, workers)
    try:
        res = allocate_partitioned(
            str(pages), budget, objective=objective, p_min=0.0 if min_rate is None else min_rate,
            p_max=np.inf if max_rate is None else max_rate, host_caps=caps_by_name, engine=runner, out=str(out),
            progress=lambda line: click.echo(line, err=True),
        )
    except FileNotFoundError as err:
        raise click.BadParameter(str(err), param_hint="PAGES or --out") from err
    except (FreshcrawlError, ValueError, TypeError) as err:
        raise click.ClickException(str(err)) from err
    finally:
        runner.close()
    if as_json:
        click.echo(_json_summary(res, res.budget_used, res.seconds, res.n_pages, str(out),
                                 n_partitions=res.n_partitions, n_passes=res.n_passes, engine=engine))
    else:
        click.echo(f"wrote {res.n_pages} pages in {res.n_partitions} partitions to {out} ({res.message})", err=True)


def _json_summary(res, used: float, seconds: float, n_pages: int, out: str | None, **more) -> str:
    """The ``--json`` summary of a solve (an AllocationResult or a PartitionedAllocation)."""
    return json.dumps({"lambda": res.lam, "objective": res.objective, "status": res.status.name.lower(),
                       "kkt_residual": res.kkt_residual, "budget_used": used, "solve_seconds": seconds,
                       "n_pages": n_pages, **more, "out": out}, indent=2)


#: The click command (``freshcrawl allocate``).
allocate = allocate_cmd
