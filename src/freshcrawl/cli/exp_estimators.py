"""``freshcrawl experiments estimators``: seed 001's Figs. 1-5 as PNG plots and CSV tables."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import click

__all__ = ["estimators"]


@click.command("estimators")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Output directory (created).")
@click.option("--quick", is_flag=True, help="Few runs and visits: finishes in well under a minute.")
@click.option("--runs", type=click.IntRange(min=2), default=None, help="Independent runs per setting [100; quick: 20].")
@click.option("--visits", type=click.IntRange(min=10), default=None, help="Visits per run [2000; quick: 300].")
@click.option(
    "--trace",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("data/pge-outages.changes.csv.gz"),
    show_default=True,
    help="Change history (page,time) for the real-trace experiment of Sec. 4.1; the default is the copy shipped in a checkout's data/ folder, relative to the working directory.",
)
@click.option("--seed", type=int, default=2021, show_default=True, help="Random seed.")
def estimators(out_dir: Path, quick: bool, runs: int | None, visits: int | None, trace: Path, seed: int) -> None:
    """Regenerate the estimator experiments of seed 001 (Avrachenkov, Patil, Thoppe).

    Writes synthetic.csv and fig2/fig3/fig4_*.png (RMSE and 95% band over the runs at (Δ, p) = (5, 3),
    (500, 3), (500, 50)), stepsizes.csv and fig5_stepsizes.png (the study at (500, 10)), real_trace.csv
    and fig1_real_trace.png (a real change history visited at Poisson rates 0.5 and 0.1 times its mean
    change rate), and summary.json.
    """
    import numpy as np
    import pandas as pd
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from freshcrawl.experiments import estimators as E

    if not trace.exists():
        raise click.BadParameter(f"change history {trace} does not exist", param_hint="--trace")
    n_runs = runs or (20 if quick else 100)
    n_visits = visits or (300 if quick else 2000)
    rng = np.random.default_rng(seed)
    synth_specs = [(fig, d, p, specs if not quick else [s for s in specs if s.name != "mle" or d < 100]) for fig, d, p, specs in E.SYNTHETIC_SETTINGS]
    total = sum(n_visits * len(s) for *_, s in synth_specs) + sum(n_visits * len(s) for _, s in E.STEPSIZE_STUDY) + 1
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}."))
    try:
        with Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), transient=True
        ) as bar:
            task = bar.add_task("estimator experiments", total=total)
            advance = lambda n: bar.advance(task, n)  # noqa: E731
            frames = []
            for fig, d, p, specs in synth_specs:
                bar.update(task, description=f"{fig} (Δ={d:g}, p={p:g})")
                ks, est = E.run_synthetic(d, p, specs, n_visits=n_visits, n_runs=n_runs, rng=rng, progress=advance)
                frames.append(E.summarise_runs(ks, est, d, figure=fig, p=p))
            synth = pd.concat(frames, ignore_index=True)
            frames = []
            for panel, specs in E.STEPSIZE_STUDY:
                bar.update(task, description=panel)
                ks, est = E.run_synthetic(500.0, 10.0, specs, n_visits=n_visits, n_runs=n_runs, rng=rng, progress=advance)
                frames.append(E.summarise_runs(ks, est, 500.0, figure=panel, p=10.0))
            steps = pd.concat(frames, ignore_index=True)
            bar.update(task, description="real trace (Sec. 4.1)")
            times, page = E.load_change_times(trace)
            real = E.run_real_trace(times, (0.5, 0.1), rng=rng, max_visits=n_visits if quick else None)
            bar.advance(task, 1)
        synth.to_csv(tmp / "synthetic.csv", index=False)
        steps.to_csv(tmp / "stepsizes.csv", index=False)
        real.to_csv(tmp / "real_trace.csv", index=False)
        for fig, d, p, _ in synth_specs:
            E.plot_synthetic(synth, fig, tmp / f"{fig}_delta{d:g}_p{p:g}.png")
        E.plot_stepsizes(steps, tmp / "fig5_stepsizes.png")
        E.plot_real_trace(real, tmp / "fig1_real_trace.png")
        last = synth[synth["k"] == synth["k"].max()]
        summary = {
            "runs": n_runs,
            "visits": n_visits,
            "seed": seed,
            "quick": quick,
            "real_trace": {"file": str(trace), "page": page, "delta_bar_per_day": float(real["delta_bar"].iloc[0])},
            "final_rmse": {
                fig: {r.estimator: round(float(r.rmse), 6) for r in last[last["figure"] == fig].itertuples()}
                for fig, *_ in synth_specs
            },
        }
        (tmp / "summary.json").write_text(json.dumps(summary, indent=2))
        out_dir.mkdir(parents=True, exist_ok=True)
        for f in sorted(tmp.iterdir()):
            os.replace(f, out_dir / f.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    click.echo(f"wrote {len(list(out_dir.iterdir()))} files to {out_dir}")
