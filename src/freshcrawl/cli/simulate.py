"""``freshcrawl simulate``: replay a change history against recrawl policies under a budget."""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
import tempfile
from pathlib import Path

import click

from freshcrawl.cli._options import budget_option, objective_option

__all__ = ["simulate"]


def _parse_start(text: str) -> float:
    """ISO date/time (UTC unless it says otherwise) or unix seconds -> days since the epoch."""
    from freshcrawl.units import parse_time

    try:
        return parse_time(text, name="the window start")
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--start") from err


def _policy_specs(text: str) -> list[str]:
    from freshcrawl.policies import policy_names

    specs = [s.strip() for s in text.split(",") if s.strip()]
    if not specs:
        raise click.BadParameter("give at least one policy name, or 'all'", param_hint="--policy")
    if "all" in specs:
        specs = policy_names()
    for ref in ("oracle", "uniform"):  # the references of the ratios
        if ref not in specs:
            specs.append(ref)
    return list(dict.fromkeys(specs))


def _fmt_date(days: float) -> str:
    import pandas as pd

    from freshcrawl.units import SECONDS_PER_DAY

    return pd.Timestamp(days * SECONDS_PER_DAY, unit="s").strftime("%Y-%m-%d")


@click.command("simulate")
@click.option(
    "--trace",
    "trace",
    required=True,
    metavar="PREFIX",
    help="Change history: reads PREFIX.changes.csv.gz and PREFIX.pages.csv.",
)
@budget_option()
@click.option(
    "--start",
    default=None,
    metavar="DATE",
    help="Window start (ISO date, UTC, or unix seconds); default the start of the history.",
)
@click.option(
    "--days",
    type=float,
    default=None,
    help="Window length in days; default up to the end of the history.",
)
@click.option(
    "--policy",
    "policy_text",
    default="all",
    show_default=True,
    help="Comma-separated policies (learned:<estimator>, oracle, uniform, proportional, nutch, "
    "stormcrawler, heritrix, ...) or 'all'. Oracle and uniform are always run.",
)
@objective_option(
    default=None,
    help="Allocation objective of learned and oracle; default freshness-periodic, or "
    "freshness-poisson with --visits poisson.",
)
@click.option(
    "--visits",
    type=click.Choice(["periodic", "poisson"]),
    default="periodic",
    show_default=True,
    help="How visit rates become visit times.",
)
@click.option(
    "--replan-every", type=float, default=1.0, show_default=True, help="Days between re-plans (P)."
)
@click.option(
    "--estimator-half-life",
    "half_life",
    type=float,
    default=None,
    metavar="DAYS",
    help="Exponential forgetting of the learned policies' estimator (mle-binned, mm-binned; "
    "sa-interval: constant step): a visit d days old weighs 2^(-d/DAYS); 'inf' turns it off. "
    "Per policy: learned:mle-binned@90d.",
)
@click.option(
    "--announce-share",
    type=click.FloatRange(0.0, 1.0),
    default=None,
    metavar="FRACTION",
    help="This share of the pages (drawn per seed) announce their true change times: every policy "
    "that plans with announcements (learned) is run again with them, as '<policy> +announced', at "
    "equal visits.",
)
@click.option(
    "--announce-delay",
    type=click.FloatRange(0.0),
    default=0.0,
    show_default=True,
    metavar="DAYS",
    help="With --announce-share: days from a change to its announcement.",
)
@click.option(
    "--announce-miss",
    type=click.FloatRange(0.0, 1.0, max_open=True),
    default=0.0,
    show_default=True,
    metavar="FRACTION",
    help="With --announce-share: share of the changes not announced.",
)
@click.option(
    "--announce-false",
    type=click.FloatRange(0.0),
    default=0.0,
    show_default=True,
    metavar="PER_CHANGE",
    help="With --announce-share: announcements of changes that did not happen, per true change.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Random seed; the same seed gives the same result.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write results.csv, timeseries.csv and PNG plots into this folder.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the results as JSON instead of a table."
)
def simulate(
    trace,
    budget,
    start,
    days,
    policy_text,
    objective,
    visits,
    replan_every,
    half_life,
    announce_share,
    announce_delay,
    announce_miss,
    announce_false,
    seed,
    out_dir,
    as_json,
):
    """Replay a change history and compare recrawl policies under the same visit budget.

    Prints, per policy: freshness (time- and page-averaged fraction of fresh pages), mean age (days),
    harmonic staleness, visits, and freshness as a ratio to the oracle and to uniform. With
    --announce-share, the policies that plan with announcements (learned) are also run with a share
    of the pages announcing their changes (same seed: the same phases and draws otherwise).
    """
    import numpy as np
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from freshcrawl.environments import ReplayEnvironment
    from freshcrawl.errors import FreshcrawlError, UnknownNameError
    from freshcrawl.policies import PolicyOptions, make_policy
    from freshcrawl.simulation import results_table, write_report
    from freshcrawl.simulation import simulate as run_simulation
    from freshcrawl.simulation.announce import Announcements
    from freshcrawl.traces.history import read_history

    rate = budget  # visits per day, parsed and checked by --budget
    if not (math.isfinite(replan_every) and replan_every > 0):
        raise click.BadParameter(
            f"must be finite and > 0 days; got {replan_every!r}", param_hint="--replan-every"
        )
    if half_life is not None and not half_life > 0:
        raise click.BadParameter(
            f"must be > 0 days (or inf for no forgetting); got {half_life!r}",
            param_hint="--estimator-half-life",
        )
    if days is not None and not (math.isfinite(days) and days > 0):
        raise click.BadParameter(f"must be finite and > 0 days; got {days!r}", param_hint="--days")
    if objective is None:
        objective = "freshness-poisson" if visits == "poisson" else "freshness-periodic"
    specs = _policy_specs(policy_text)
    extra = {}
    if half_life is not None:
        extra["half_life"] = None if math.isinf(half_life) else half_life
    options = PolicyOptions(objective=objective, replan_every=replan_every, extra=extra)
    try:
        policies = [make_policy(s, options) for s in specs]
    except (UnknownNameError, ValueError) as err:
        raise click.BadParameter(str(err), param_hint="--policy") from err

    try:
        history = read_history(trace)
    except FileNotFoundError as err:
        raise click.BadParameter(str(err), param_hint="--trace") from err
    except FreshcrawlError as err:
        raise click.ClickException(str(err)) from err
    from freshcrawl.policies.bursty import BurstyPolicy, prefix_groups

    for pol in policies:  # learned-bursty pools pages by the directories of their ids
        if isinstance(pol, BurstyPolicy) and pol.groups is None:
            pol.groups = [prefix_groups(history.pages), prefix_groups(history.pages, depth=1)]
    t0 = history.first if start is None else _parse_start(start)
    t1 = history.last if days is None else t0 + days
    if not (history.first <= t0 < history.last) or t1 > history.last:
        raise click.BadParameter(
            f"the window {_fmt_date(t0)} .. {_fmt_date(t1)} must lie inside the data "
            f"{_fmt_date(history.first)} .. {_fmt_date(history.last)}",
            param_hint="--start/--days",
        )
    env = ReplayEnvironment(history, t0, t1)
    announce = None
    if announce_share is not None:
        announce = Announcements(announce_share, announce_delay, announce_miss, announce_false)
    elif (announce_delay, announce_miss, announce_false) != (0.0, 0.0, 0.0):
        raise click.BadParameter(
            "--announce-delay, --announce-miss and --announce-false need --announce-share",
            param_hint="--announce-share",
        )
    runs = [(k, policy, None) for k, policy in enumerate(policies)]
    if announce is not None:
        runs += [
            (k, policy, announce)
            for k, policy in enumerate(policies)
            if hasattr(policy, "set_observed_completely")
        ]

    err_console = Console(stderr=True)
    results = []
    with Progress(
        TextColumn("{task.description:<24}"),
        BarColumn(),
        TextColumn("{task.percentage:>5.1f}%"),
        TimeElapsedColumn(),
        console=err_console,
        transient=as_json,
    ) as progress:
        for k, policy, ann in runs:
            name = policy.name if ann is None else f"{policy.name} +announced"
            task = progress.add_task(name, total=t1 - t0)

            def advance(t: float, task=task) -> None:
                progress.update(task, completed=t - t0)

            try:
                res = run_simulation(
                    policy,
                    env,
                    rate,
                    visits=visits,
                    rng=np.random.default_rng([seed, k]),  # the same with announcements
                    on_period=advance,
                    announce=ann,
                )
            except (FreshcrawlError, ValueError, TypeError) as err:
                raise click.ClickException(f"policy {name!r} failed: {err}") from err
            results.append(res if ann is None else dataclasses.replace(res, policy=name))

    table = results_table(results)
    if out_dir is not None:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
        try:
            written = write_report(results, tmp, title=f"{Path(trace).name}, B = {rate:g}/day")
            out_dir.mkdir(parents=True, exist_ok=True)
            for path in written:
                shutil.move(str(path), out_dir / path.name)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    if as_json:
        records = table.drop(columns=["changes_detected"]).to_dict(orient="records")
        click.echo(
            json.dumps(
                {
                    "policies": [
                        {
                            k: (None if isinstance(v, float) and math.isnan(v) else v)
                            for k, v in r.items()
                        }
                        for r in records
                    ]
                },
                indent=2,
            )
        )
        return
    out = Table(
        title=f"{Path(trace).name}: {_fmt_date(t0)} .. {_fmt_date(t1)} ({t1 - t0:.0f} days), "
        f"{history.n_pages} pages, budget {rate:g}/day, {visits} visits"
    )
    for col, justify in [
        ("policy", "left"),
        ("freshness", "right"),
        ("age (days)", "right"),
        ("harmonic staleness", "right"),
        ("visits", "right"),
        ("÷ oracle", "right"),
        ("÷ uniform", "right"),
    ]:
        out.add_column(col, justify=justify)
    for r in table.itertuples(index=False):
        out.add_row(
            r.policy,
            f"{r.freshness:.4f}",
            f"{r.age_days:.3f}",
            f"{r.harmonic_staleness:.4f}",
            f"{r.visits:,}",
            f"{r.ratio_to_oracle:.3f}",
            f"{r.ratio_to_uniform:.3f}",
        )
    Console(width=120).print(out)
