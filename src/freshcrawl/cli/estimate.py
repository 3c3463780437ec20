"""``freshcrawl estimate LOG``: per-page change rates from a visit log.

LOG is a CSV file, a Parquet file or a directory of Parquet partitions (read by
:func:`freshcrawl.traces.visit_log.read_visit_log`); the table goes to stdout as CSV, or to ``--out`` as
Parquet (a name ending in ``.parquet``) or CSV, written whole or not at all.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import numpy as np

from freshcrawl._io import write_table_atomic
from freshcrawl.cli._options import engine_options, make_bulk_engine, table_out_option
from freshcrawl.errors import FreshcrawlError
from freshcrawl.estimators import ESTIMATOR_NAMES
from freshcrawl.traces.visit_log import estimate_visit_log, read_visit_log

__all__ = ["estimate"]


@click.command("estimate")
@click.argument("log", type=click.Path(path_type=str))
@click.option(
    "--method",
    type=click.Choice(ESTIMATOR_NAMES),
    default="mle",
    show_default=True,
    help="Estimator. naive, lln, sa, sam: seed 001's forms (they take p = the page's mean visit rate and "
    "assume Poisson visits); naive-interval: changes seen per day (biased low); mle, mm: exact solves; "
    "lln-interval, sa-interval, sam-interval, mle-binned, mm-binned: online forms that stay consistent under "
    "periodic visits.",
)
@table_out_option("page,delta,...")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary instead of the table.")
@click.option("--delta0", type=float, default=1.0, show_default=True, help="Prior, changes/day, for pages with one visit.")
@engine_options
def estimate(log: Path, method: str, out: Path | None, as_json: bool, delta0: float, engine: str, scheduler: str,
             workers: int) -> None:
    """Estimate each page's change rate (changes per day) from a visit log LOG.

    LOG is a CSV (plain or .gz) with columns page,time,changed: time in unix seconds or ISO 8601, changed
    0/1 (whether the page changed since its previous visit; ignored on a page's first visit). LOG may also
    be a Parquet file or a directory of Parquet partitions (its *.parquet files in name order; _SUCCESS,
    _metadata and hidden files skipped) with the same columns: time numeric unix seconds, a timestamp
    (naive: UTC) or ISO 8601 text, changed boolean or 0/1. Writes one row per page: page, delta, n_visits,
    n_changed, days_observed, p; --out ending in .parquet writes Parquet. A malformed row is reported with
    its file and line (CSV) or row (Parquet), and nothing is written.

    With --engine stream or dask, LOG is a directory of Parquet partitions by page (every page's visits in
    one file), estimated partition by partition, and --out (required) is a directory that receives one
    Parquet partition of estimates per input partition.
    """
    if engine != "memory":
        _estimate_bulk(log, method, out, as_json, delta0, engine, scheduler, workers)
        return
    out = None if out is None else Path(out)
    if out is not None and not out.parent.exists():
        raise click.BadParameter(f"directory {out.parent} does not exist", param_hint="--out")
    try:
        log_data = read_visit_log(log)
        table = estimate_visit_log(log_data, method, delta0=delta0)
    except FileNotFoundError as err:
        raise click.BadParameter(str(err), param_hint="LOG") from err
    except (FreshcrawlError, ValueError) as err:
        raise click.ClickException(str(err)) from err
    if out is not None:
        write_table_atomic(table, out)
    if as_json:
        d = table["delta"].to_numpy()
        summary = {
            "log": str(log),
            "method": method,
            "n_pages": int(table.shape[0]),
            "n_observations": int(table["n_visits"].sum()),
            "n_changed": int(table["n_changed"].sum()),
            "delta_per_day": {
                "mean": float(d.mean()) if d.size else None,
                "median": float(np.median(d)) if d.size else None,
                "min": float(d.min()) if d.size else None,
                "max": float(d.max()) if d.size else None,
            },
            "out": str(out) if out is not None else None,
        }
        click.echo(json.dumps(summary, indent=2))
    elif out is None:
        click.echo(table.to_csv(index=False), nl=False)
    else:
        click.echo(f"wrote {table.shape[0]} pages to {out}", err=True)


def _estimate_bulk(log, method, out, as_json, delta0, engine, scheduler, workers):
    from freshcrawl.bulk import estimate_partitioned

    if out is None:
        raise click.UsageError(f"--engine {engine} writes its estimates to a directory: give --out DIR")
    runner = make_bulk_engine(engine, scheduler, workers)
    try:
        res = estimate_partitioned(str(log), method, engine=runner, out=str(out), delta0=delta0,
                                   progress=lambda line: click.echo(line, err=True))
    except FileNotFoundError as err:
        raise click.BadParameter(str(err), param_hint="LOG or --out") from err
    except (FreshcrawlError, ValueError) as err:
        raise click.ClickException(str(err)) from err
    finally:
        runner.close()
    if as_json:
        click.echo(json.dumps({"log": str(log), "method": method, "n_pages": res.n_pages,
                               "n_observations": res.n_observations, "n_changed": res.n_changed,
                               "n_partitions": res.n_partitions, "seconds": res.seconds, "engine": engine,
                               "out": str(out)}, indent=2))
