"""``freshcrawl experiments sync-bandits``: Figures 1-4 of seed 003 (synchronization bandits)."""

from __future__ import annotations

import json

import click

__all__ = ["sync_bandits"]


@click.command("sync-bandits")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, writable=True),
              help="Folder for the PNG figures and CSV tables (created if missing).")
@click.option("--quick", is_flag=True, help="3 runs of 20 MirrorSync rounds: a smoke test in seconds.")
@click.option("--runs", type=click.IntRange(min=1), default=None,
              help="Instances per family (paper: 150; --quick: 3).")
@click.option("--horizon", type=click.IntRange(min=1), default=None,
              help="MirrorSync rounds of 1/r_min time units (paper: 240; --quick: 20).")
@click.option("--family", type=click.Choice(["both", "polynomial", "poisson"]), default="both", show_default=True,
              help="Instance family: polynomial costs (Figures 1-2) or binary Poisson costs (Figures 3-4).")
@click.option("--mirrorsync-samples", type=click.Choice(["mean", "first"]), default="mean", show_default=True,
              help="MirrorSync's per-round gradient: mean of the round's samples (as in the published "
                   "experiments) or the first only (Alg. 1 line 18).")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary instead of the table.")
def sync_bandits(out, quick, runs, horizon, family, mirrorsync_samples, seed, as_json):
    """Reproduce Figures 1-4 of Kolobov, Bubeck, Zimmert (ICML 2020): MirrorSync vs AsyncMirrorSync vs
    AsyncPSGDSync on random instances (K = 100, B = 0.4 K, r_min = 0.025, r_max = 3 or 6, eps = 0.05),
    with J / J* per algorithm."""
    import numpy as np
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from freshcrawl.experiments.sync_bandits import run_family, write_outputs

    runs = runs if runs is not None else (3 if quick else 150)
    horizon = horizon if horizon is not None else (20 if quick else 240)
    families = ["polynomial", "poisson"] if family == "both" else [family]
    err = Console(stderr=True)
    rng = np.random.default_rng(seed)
    results = []
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=as_json) as bar:
        for fam in families:
            task = bar.add_task(f"{fam} instances", total=runs)
            results.append(run_family(fam, runs=runs, horizon=horizon, rng=rng,
                                      mirrorsync_samples=mirrorsync_samples,
                                      progress=lambda done, task=task: bar.update(task, completed=done)))
    paths = write_outputs(results, out)
    if as_json:
        by_family = {r.settings.name: r.to_dict() for r in results}
        payload = dict(by_family.get("polynomial", {}))
        if "poisson" in by_family:
            if payload:
                payload["poisson"] = by_family["poisson"]
            else:
                payload = {"poisson": by_family["poisson"]}
        click.echo(json.dumps(payload, indent=2))
        return
    console = Console()
    for res in results:
        table = Table(title=f"{res.settings.name} costs: {res.runs} runs, horizon {res.horizon} MirrorSync rounds")
        table.add_column("algorithm")
        table.add_column("final J", justify="right")
        table.add_column("final J / J*", justify="right")
        table.add_column("95% CI", justify="right")
        table.add_column("s / run", justify="right")
        for c in res.curves:
            table.add_row(c.algorithm, f"{c.j_mean[-1]:.4f}", f"{c.final_ratio:.4f}",
                          f"±{c.final_ratio_halfwidth:.4f}", f"{c.seconds_per_run:.3f}")
        table.caption = (f"J* = {res.j_star.mean():.4f} (mean); optimum over K_eps = "
                         f"{res.j_star_eps.mean():.4f} ({np.mean(res.j_star_eps / res.j_star):.4f} J*)")
        console.print(table)
    console.print(f"wrote {len(paths)} files to {out}")
