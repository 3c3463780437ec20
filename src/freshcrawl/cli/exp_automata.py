"""``freshcrawl experiments automata``: reproduce Figs. 5-12 of seed 004 (learning automata for web polling)."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

__all__ = ["automata"]


@click.command("automata")
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(file_okay=False, dir_okay=True, path_type=Path),
    help="Directory for the CSV tables, PNG plots and summary.json (created if missing).",
)
@click.option("--quick", is_flag=True, help="Small smoke run (64 pages, short horizons, one run per curve).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stdout instead of a table.")
@click.option(
    "--runs",
    type=click.IntRange(min=1),
    default=None,
    help="Independent runs per curve (default 5, 1 with --quick).",
)
@click.option("--seed", type=click.IntRange(min=0), default=2008, show_default=True, help="Master random seed.")
def automata(out: Path, quick: bool, as_json: bool, runs: int | None, seed: int) -> None:
    """Learning automata for web polling (seed 004): H-TRAA against Uniform, Proportional, Estimator, Optimal.

    Regenerates the update-mode comparison (Fig. 5), the static environments (0.3, 1.5), (0.3, 1.0),
    (0.9, 1.5) with 0 to 10^6 perturbations (Figs. 6-8), the switching environments with r = 80,000 and
    1,000 (Figs. 9-10) and the scaling from 2 to 32,768 pages (Figs. 11-12), with N = 500 automaton
    states. Every curve is the expected number of detected changes per poll.
    """
    from dataclasses import replace

    from freshcrawl.experiments.automata import AutomataConfig, run_automata_experiments

    if out.exists() and not out.is_dir():
        raise click.BadParameter(f"must be a directory; got the file {str(out)!r}", param_hint="--out")
    cfg = AutomataConfig.quick() if quick else AutomataConfig.full()
    cfg = replace(cfg, seed=seed, **({"n_runs": runs} if runs is not None else {}))
    err = Console(stderr=True)
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=as_json,
    ) as bar:
        task = None

        def tick(desc: str, n: int) -> None:
            nonlocal task
            if task is None:
                task = bar.add_task(desc, total=n)
            elif n == 0:
                bar.update(task, description=desc)
            else:
                bar.advance(task, n)

        result = run_automata_experiments(out, cfg, progress=tick)
    if as_json:
        keys = ("environments", "polls_per_second")
        click.echo(json.dumps({k: result.summary[k] for k in keys}, indent=2))
        return
    table = Table(title="Expected detected changes per poll at the end of the horizon")
    for col in ("α", "β", "perturb.", "H-TRAA", "optimal", "proport.", "estim.", "uniform"):
        table.add_column(col, justify="right")
    for env in result.summary["environments"]:
        p = env["policies"]
        table.add_row(
            str(env["alpha"]), str(env["beta"]), str(env["perturbations"]),
            *(f"{p[k]:.4f}" for k in ("htraa", "optimal", "proportional", "estimator", "uniform")),
        )  # fmt: skip
    con = Console()
    con.print(table)
    pps = result.summary["polls_per_second"]
    con.print(f"H-TRAA poll loop: {pps['512']:,.0f} polls/s at 512 pages, {pps['32768']:,.0f} at 32,768 (one core)")
    con.print(f"polls to close 90% of the uniform-to-optimal gap: {result.summary['convergence_polls']}")
    con.print(f"wrote {len(result.files)} files to {out} in {result.seconds:.1f} s")
