"""Tables, CSV files and plots of simulation results."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from freshcrawl.simulation.engine import SimulationResult

__all__ = ["plot_delta", "plot_freshness", "results_table", "timeseries_table", "write_report"]

RESULT_COLUMNS = [
    "policy",
    "freshness",
    "age_days",
    "harmonic_staleness",
    "visits",
    "changes_detected",
    "ratio_to_oracle",
    "ratio_to_uniform",
]


def results_table(results: Sequence[SimulationResult]) -> pd.DataFrame:
    """One row per policy: freshness (fraction), age (days), harmonic staleness, visits, ratios.

    ``ratio_to_oracle`` and ``ratio_to_uniform`` divide a policy's freshness by that of the policy named
    ``oracle`` and ``uniform`` (NaN when that policy is not among the results).

    Examples
    --------
    >>> from freshcrawl.environments import PoissonEnvironment
    >>> from freshcrawl.policies.baselines import make_uniform
    >>> from freshcrawl.simulation import simulate
    >>> res = simulate(make_uniform(None, None), PoissonEnvironment([1.0], end=10.0), 1.0, rng=0)
    >>> results_table([res])["ratio_to_uniform"].tolist()
    [1.0]
    """
    frame = pd.DataFrame(
        {
            "policy": [r.policy for r in results],
            "freshness": [r.freshness for r in results],
            "age_days": [r.age_days for r in results],
            "harmonic_staleness": [r.harmonic_staleness for r in results],
            "visits": [r.visits for r in results],
            "changes_detected": [r.changes_detected for r in results],
        }
    )
    for ref in ("oracle", "uniform"):
        match = frame.loc[frame["policy"] == ref, "freshness"]
        base = float(match.iloc[0]) if len(match) else float("nan")
        frame[f"ratio_to_{ref}"] = frame["freshness"] / base if base > 0 else float("nan")
    return frame[RESULT_COLUMNS]


def timeseries_table(results: Sequence[SimulationResult]) -> pd.DataFrame:
    """Per policy and planning period: the period and its metrics.

    Parameters
    ----------
    results : sequence of SimulationResult

    Returns
    -------
    pandas.DataFrame
        Columns ``policy``, ``t_start`` and ``t_end`` (days), ``freshness`` (fraction), ``age_days``,
        ``harmonic_staleness``, ``visits``; one row per policy and period.

    Examples
    --------
    >>> from freshcrawl.environments import PoissonEnvironment
    >>> from freshcrawl.policies.baselines import make_uniform
    >>> from freshcrawl.simulation import simulate
    >>> res = simulate(make_uniform(None, None), PoissonEnvironment([1.0], end=3.0), 2.0, rng=0)
    >>> timeseries_table([res])[["t_start", "t_end", "visits"]].values.tolist()
    [[0.0, 1.0, 1.0], [1.0, 2.0, 2.0], [2.0, 3.0, 2.0]]
    """
    parts = [
        pd.DataFrame(
            {
                "policy": r.policy,
                "t_start": r.t_start,
                "t_end": r.t_end,
                "freshness": r.freshness_t,
                "age_days": r.age_t,
                "harmonic_staleness": r.harmonic_t,
                "visits": r.visits_t,
            }
        )
        for r in results
    ]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def plot_freshness(results: Sequence[SimulationResult], path: Path, *, title: str = "") -> None:
    """Write a PNG of each policy's freshness per period against time.

    Parameters
    ----------
    results : sequence of SimulationResult
    path : Path
        PNG file to write.
    title : str, optional
        Plot title.

    Notes
    -----
    x: days since the window start; y: freshness per period, 7-period centred moving average.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    for r in results:
        x = 0.5 * (r.t_start + r.t_end) - (r.start if np.isfinite(r.start) else 0.0)
        y = pd.Series(r.freshness_t).rolling(7, min_periods=1, center=True).mean()
        ax.plot(x, y, label=r.policy, lw=1.2)
    ax.set_xlabel("days since the window start")
    ax.set_ylabel("freshness (7-period moving average)")
    ax.set_title(title or "freshness over time")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_delta(results: Sequence[SimulationResult], path: Path, *, title: str = "") -> bool:
    """Write a log-log PNG of each estimating policy's final Δ̂ against the true Δ (changes/day).

    Pages with Δ = 0, Δ̂ = 0 or no estimate (NaN) cannot be drawn on log axes and are left out.

    Parameters are those of :func:`plot_freshness`.

    Returns
    -------
    bool
        False, and nothing written, when no result carries estimates.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    est = [r for r in results if r.estimated_delta is not None]
    if not est:
        return False
    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    lo, hi = np.inf, 0.0
    for r in est:
        ok = (r.true_delta > 0) & np.isfinite(r.estimated_delta) & (r.estimated_delta > 0)
        if ok.any():
            ax.scatter(r.true_delta[ok], r.estimated_delta[ok], s=8, alpha=0.6, label=r.policy)
            lo = min(lo, r.true_delta[ok].min(), r.estimated_delta[ok].min())
            hi = max(hi, r.true_delta[ok].max(), r.estimated_delta[ok].max())
    if hi > 0:
        ax.plot([lo, hi], [lo, hi], "k--", lw=1, label=r"$\hat{\Delta} = \Delta$")
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlabel("true Δ over the window (changes/day)")
    ax.set_ylabel("estimated Δ̂ at the end (changes/day)")
    ax.set_title(title or "estimated vs true change rates")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_report(
    results: Sequence[SimulationResult], out_dir: Path, *, title: str = ""
) -> list[Path]:
    """Write ``results.csv``, ``timeseries.csv``, ``freshness.png`` and ``delta.png`` into ``out_dir``.

    Parameters
    ----------
    results : sequence of SimulationResult
    out_dir : Path
        Folder, created if missing.
    title : str, optional
        Title of the plots.

    Returns
    -------
    list of Path
        The files written (``delta.png`` only when a policy estimates Δ).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    path = out_dir / "results.csv"
    results_table(results).to_csv(path, index=False)
    written.append(path)
    path = out_dir / "timeseries.csv"
    timeseries_table(results).to_csv(path, index=False)
    written.append(path)
    path = out_dir / "freshness.png"
    plot_freshness(results, path, title=title)
    written.append(path)
    path = out_dir / "delta.png"
    if plot_delta(results, path, title=title):
        written.append(path)
    return written
