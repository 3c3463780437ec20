"""Options shared by the subcommands: rates (``--budget``, ``--min-rate``, ...), durations and ``--objective``."""

from __future__ import annotations

import math

import click

from freshcrawl.units import parse_duration, parse_rate

__all__ = [
    "rate_option", "budget_option", "duration_option", "file_option", "objective_option", "table_out_option",
    "engine_options",
]


def _rate(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """``N/day``, ``N/hour``, ``N/s`` or a number per day, to visits per day."""
    if value is None:
        return None
    try:
        return parse_rate(value, name=param.name or "rate")
    except ValueError as err:
        raise click.BadParameter(str(err), ctx=ctx, param=param) from err


def _budget(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    rate = _rate(ctx, param, value)
    if rate is not None and not (rate > 0 and math.isfinite(rate)):
        raise click.BadParameter(f"must be > 0 visits per day; got {value!r}", ctx=ctx, param=param)
    return rate


def rate_option(*names: str, help: str):  # noqa: A002 - click's keyword
    """A rate option, parsed to visits per day (None when not given)."""
    return click.option(*names, callback=_rate, metavar="RATE", help=help)


def budget_option(*, required: bool = True,
                  help: str = "Crawl budget B, e.g. 1000/day, 50/hour, 2/s (a bare number is per day)."):  # noqa: A002
    """``--budget RATE``: the crawl budget B, parsed to visits per day and checked > 0 (None when not given)."""
    return click.option("--budget", required=required, callback=_budget, metavar="RATE", help=help)


def _duration(zero: bool):
    def callback(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
        """``90s``, ``30m``, ``1h``, ``2d`` or a number of seconds, to seconds; > 0 unless ``zero``."""
        if value is None:
            return None
        try:
            seconds = parse_duration(value, name=param.opts[0])
        except ValueError as err:
            raise click.BadParameter(str(err), ctx=ctx, param=param) from err
        if seconds == 0 and not zero:
            raise click.BadParameter(f"must be > 0; got {value!r}", ctx=ctx, param=param)
        return seconds

    return callback


def duration_option(*names: str, help: str, default: str | None = None, zero: bool = False):  # noqa: A002
    """A duration option, parsed to seconds (None when not given and without a default); > 0 unless
    ``zero`` allows 0."""
    return click.option(*names, callback=_duration(zero), metavar="DURATION", default=default,
                        show_default=default is not None, help=help)


def file_option(*names: str, help: str):
    """An option naming a file (not a directory; None when not given)."""
    return click.option(*names, type=click.Path(dir_okay=False), default=None, metavar="FILE", help=help)


def objective_option(*, default: str | None, help: str):  # noqa: A002 - click's keyword
    """``--objective``: one of the allocation objectives (:data:`~freshcrawl.allocation.OBJECTIVE_NAMES`)."""
    from freshcrawl.allocation.objectives import OBJECTIVE_NAMES  # numba: only for the commands that allocate

    return click.option("--objective", type=click.Choice(OBJECTIVE_NAMES), default=default,
                        show_default=default is not None, help=help)


def table_out_option(columns: str):
    """``--out PATH``: where a command writes its table (``columns``): Parquet or CSV by the file name."""
    return click.option("--out", type=click.Path(path_type=str),
                        help=f"Write {columns} here: Parquet if the name ends in .parquet, else CSV (.gz compresses).")


def engine_options(fn):
    """``--engine memory|stream|dask`` and ``--scheduler ADDRESS|local``: where a bulk command runs."""
    fn = click.option(
        "--scheduler", default="local", show_default=True, metavar="ADDRESS|local",
        help="With --engine dask: the address of a Dask scheduler (tcp://host:8786), or local to start a "
        "LocalCluster of --workers processes on this machine.")(fn)
    fn = click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True,
                      help="Worker processes of the local Dask cluster.")(fn)
    fn = click.option(
        "--engine", type=click.Choice(["memory", "stream", "dask"]), default="memory", show_default=True,
        help="memory: read everything, solve in memory. stream: out of core, the Parquet partitions of a "
        "directory streamed from disk at every pass (memory bounded by a few partitions). dask: the same "
        "passes on a Dask cluster (--scheduler). With stream and dask, --out names a directory of Parquet "
        "partitions, one per input partition.")(fn)
    return fn


def make_bulk_engine(engine: str, scheduler: str, workers: int):
    """The :mod:`freshcrawl.bulk` engine of ``--engine`` (not ``memory``), as a click error if unreachable."""
    from freshcrawl.bulk import make_engine

    try:
        return make_engine(engine, scheduler=scheduler, n_workers=workers)
    except (OSError, TimeoutError, ValueError) as err:
        raise click.ClickException(f"cannot start the {engine} engine ({scheduler}): {err}") from err
