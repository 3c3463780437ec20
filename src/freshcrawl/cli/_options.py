"""Options shared by the subcommands: rates (``--budget``, ``--min-rate``, ...) and ``--objective``."""

from __future__ import annotations

import math

import click

from freshcrawl.allocation.objectives import OBJECTIVE_NAMES
from freshcrawl.units import parse_rate

__all__ = ["rate_option", "budget_option", "objective_option"]


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


def budget_option():
    """``--budget RATE``: the crawl budget B, parsed to visits per day and checked > 0."""
    return click.option("--budget", required=True, callback=_budget, metavar="RATE",
                        help="Crawl budget B, e.g. 1000/day, 50/hour, 2/s (a bare number is per day).")


def objective_option(*, default: str | None, help: str):  # noqa: A002 - click's keyword
    """``--objective``: one of the allocation objectives (:data:`~freshcrawl.allocation.OBJECTIVE_NAMES`)."""
    return click.option("--objective", type=click.Choice(OBJECTIVE_NAMES), default=default,
                        show_default=default is not None, help=help)
