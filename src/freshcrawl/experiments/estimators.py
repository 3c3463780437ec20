"""The estimator experiments of seed 001 (Sec. 4): synthetic Figs. 2-5 and the real-trace Fig. 1.

- Figs. 2-4 (Sec. 4.2): one page with Poisson changes of rate Δ, visited at Poisson times of rate p, for
  (Δ, p) = (5, 3), (500, 3), (500, 50); 100 independent runs; mean, 95% band (2.5% and 97.5% quantiles of
  the runs) and RMSE of every estimator after each visit. Stepsizes: α_k = 1; η = 0.75, β = 0.6, ω = 1 for
  Fig. 2 and η = 0.8, β = 0.5 for Figs. 3-4, as in the paper. The interval-aware forms run alongside.
- Fig. 5 (Sec. 4.3): (Δ, p) = (500, 10); LLN with α_k ∈ {1, √k, k^0.75}; SA with η ∈ {0.5, 0.75, 1};
  SAM with η = 0.8 and β ∈ {0.4, 0.5, 0.6}; SAM with β = 0.4 and η ∈ {0.5, 0.6, 0.8}. The paper gives
  the values only in its figure; these are the ones its text names, completed to three each.
- Fig. 1 (Sec. 4.1): a real change history (pge-outages), visited at Poisson times of rate 0.5 and 0.1
  times the page's mean change rate Δ̄ = changes / window; one trajectory per estimator.

Given the visit intervals, Poisson changes make each I_k an independent Bernoulli(1 − e^{−Δτ_k}), which is
how the synthetic runs are drawn.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from freshcrawl._validation import check_positive, check_rng
from freshcrawl.estimators import make_batch_estimator, mle_path
from freshcrawl.units import SECONDS_PER_DAY

__all__ = [
    "EstimatorSpec",
    "SYNTHETIC_SETTINGS",
    "STEPSIZE_STUDY",
    "draw_changed",
    "changed_between_visits",
    "run_synthetic",
    "summarise_runs",
    "run_real_trace",
    "load_change_times",
    "plot_synthetic",
    "plot_stepsizes",
    "plot_real_trace",
]


@dataclass(frozen=True)
class EstimatorSpec:
    """An estimator of the registry with its parameters, under a display label."""

    label: str
    name: str
    params: dict = field(default_factory=dict)


def _paper_specs(eta: float, beta: float, with_mle: bool) -> list[EstimatorSpec]:
    specs = [
        EstimatorSpec("Naive", "naive"),
        EstimatorSpec("LLN", "lln", {"alpha": "1"}),
        EstimatorSpec("SA", "sa", {"eta": eta}),
        EstimatorSpec("SAM", "sam", {"eta": eta, "beta": beta, "omega": 1.0}),
        EstimatorSpec("LLN-interval", "lln-interval", {"alpha": "1"}),
        EstimatorSpec("SA-interval", "sa-interval", {"eta": eta}),
        EstimatorSpec("SAM-interval", "sam-interval", {"eta": eta, "beta": beta, "omega": 1.0}),
        EstimatorSpec("MLE-binned", "mle-binned"),
    ]
    if with_mle:
        specs.append(EstimatorSpec("MLE", "mle"))
    return specs


#: (figure, Δ, p, estimators) of Sec. 4.2.
SYNTHETIC_SETTINGS: tuple[tuple[str, float, float, list[EstimatorSpec]], ...] = (
    ("fig2", 5.0, 3.0, _paper_specs(0.75, 0.6, True)),
    ("fig3", 500.0, 3.0, _paper_specs(0.8, 0.5, True)),
    ("fig4", 500.0, 50.0, _paper_specs(0.8, 0.5, True)),
)

#: (panel, estimators) of Sec. 4.3 at (Δ, p) = (500, 10).
STEPSIZE_STUDY: tuple[tuple[str, list[EstimatorSpec]], ...] = (
    ("fig5a LLN alpha_k", [EstimatorSpec(f"alpha={a}", "lln", {"alpha": v}) for a, v in (("1", "1"), ("sqrt(k)", "sqrt"), ("k^0.75", 0.75))]),
    ("fig5b SA eta", [EstimatorSpec(f"eta={e}", "sa", {"eta": e}) for e in (0.5, 0.75, 1.0)]),
    ("fig5c SAM eta=0.8, beta", [EstimatorSpec(f"beta={b}", "sam", {"eta": 0.8, "beta": b}) for b in (0.4, 0.5, 0.6)]),
    ("fig5d SAM beta=0.4, eta", [EstimatorSpec(f"eta={e}", "sam", {"eta": e, "beta": 0.4}) for e in (0.5, 0.6, 0.8)]),
)


def draw_changed(delta: float, tau: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.bool_]:
    """I for each interval: Bernoulli(1 − e^{−Δτ}), the change indicator under Poisson changes of rate Δ.

    Parameters
    ----------
    delta : float
        Change rate, changes per day, >= 0.
    tau : ndarray of float
        Intervals, days, any shape.
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of bool, same shape as ``tau``.

    Examples
    --------
    >>> draw_changed(1e9, np.ones(3), np.random.default_rng(0)).tolist()
    [True, True, True]
    """
    return rng.random(tau.shape) < -np.expm1(-delta * tau)


def changed_between_visits(change_times: NDArray[np.float64], visit_times: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Whether at least one change falls in (t_{k−1}, t_k] for each visit k >= 1: shape (n_visits − 1,).

    Both arrays sorted, same unit.

    Examples
    --------
    >>> changed_between_visits(np.array([1.5, 1.7, 4.0]), np.array([1.0, 2.0, 3.0, 4.0])).tolist()
    [True, False, True]
    """
    idx = np.searchsorted(change_times, visit_times, side="right")
    return np.diff(idx) > 0


def run_synthetic(
    delta: float,
    p: float,
    specs: Sequence[EstimatorSpec],
    *,
    n_visits: int,
    n_runs: int,
    checkpoints: Iterable[int] | None = None,
    rng: np.random.Generator | int | None = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[NDArray[np.int64], dict[str, NDArray[np.float64]]]:
    """Estimates of ``n_runs`` independent runs at chosen visit counts (Sec. 4.2 of seed 001).

    Each run is one page with Poisson changes of rate ``delta`` visited at Poisson times of rate ``p``; the
    runs are the pages of one batch estimator, updated k rounds at a time.

    Parameters
    ----------
    delta : float
        Change rate Δ, changes per day; > 0.
    p : float
        Visit rate, visits per day; > 0.
    specs : sequence of EstimatorSpec
        Estimators to run.
    n_visits : int
        Visits per run, >= 1.
    n_runs : int
        Independent runs, >= 1.
    checkpoints : iterable of int, optional
        Visit counts (1..n_visits) at which estimates are recorded; default about 60 log-spaced ones.
    rng : Generator, int or None
        Randomness.
    progress : callable, optional
        Called with the number of visits simulated since the previous call.

    Returns
    -------
    ks : ndarray of int64, shape (n_checkpoints,)
    estimates : dict label -> ndarray of float64, shape (n_checkpoints, n_runs)

    Raises
    ------
    ValueError
        If a rate or count is out of range.

    Examples
    --------
    >>> ks, est = run_synthetic(5.0, 3.0, [EstimatorSpec("LLN", "lln")], n_visits=50, n_runs=4, rng=0)
    >>> est["LLN"].shape == (ks.size, 4) and bool(np.isfinite(est["LLN"]).all())
    True
    """
    delta = check_positive("delta", delta, unit="changes per day")
    p = check_positive("p", p, unit="visits per day")
    if n_visits < 1 or n_runs < 1:
        raise ValueError(f"n_visits and n_runs must be >= 1; got {n_visits} and {n_runs}")
    rng = check_rng(rng)
    if checkpoints is None:
        ks = np.unique(np.geomspace(1, n_visits, 60).astype(np.int64))
    else:
        ks = np.unique(np.asarray(list(checkpoints), dtype=np.int64))
        if ks.size == 0 or ks[0] < 1 or ks[-1] > n_visits:
            raise ValueError(f"checkpoints must lie in [1, {n_visits}]; got {ks.tolist()}")
    tau = rng.exponential(1.0 / p, size=(n_visits, n_runs))
    changed = draw_changed(delta, tau, rng)
    p_arr = np.full((n_visits, n_runs), p)
    pages = np.arange(n_runs)
    out: dict[str, NDArray[np.float64]] = {}
    for spec in specs:
        rec = np.empty((ks.size, n_runs))
        if spec.name == "mle":
            for r in range(n_runs):
                rec[:, r] = mle_path(changed[:, r], tau[:, r])[ks - 1]
        else:
            est = make_batch_estimator(spec.name, n_runs, **spec.params)
            done = 0
            for i, k in enumerate(ks):
                if k > done:
                    est.update(pages, changed[done:k], tau[done:k], p_arr[done:k])
                    done = int(k)
                rec[i] = est.delta_
        out[spec.label] = rec
        if progress is not None:
            progress(n_visits)
    return ks, out


def summarise_runs(
    ks: NDArray[np.int64], estimates: dict[str, NDArray[np.float64]], delta: float, **labels: object
) -> pd.DataFrame:
    """Mean, RMSE and 95% band (2.5% / 97.5% quantiles over runs) per estimator and checkpoint.

    Examples
    --------
    >>> df = summarise_runs(np.array([1]), {"x": np.array([[1.0, 3.0]])}, 2.0, fig="t")
    >>> df[["estimator", "k", "mean", "rmse"]].values.tolist()
    [['x', 1, 2.0, 1.0]]
    """
    rows = []
    for label, est in estimates.items():
        err = est - delta
        q = np.quantile(est, [0.025, 0.975], axis=1)
        for i, k in enumerate(ks):
            rows.append(
                {
                    **labels,
                    "delta": delta,
                    "estimator": label,
                    "k": int(k),
                    "n_runs": est.shape[1],
                    "mean": float(est[i].mean()),
                    "rmse": float(np.sqrt(np.mean(err[i] ** 2))),
                    "q025": float(q[0, i]),
                    "q975": float(q[1, i]),
                }
            )
    return pd.DataFrame(rows)


def load_change_times(path: str | Path) -> tuple[NDArray[np.float64], str]:
    """Change times (days since the epoch, sorted) of the page with most changes in a change history.

    ``path`` is a ``<name>.changes.csv.gz`` file with columns ``page,time`` (unix seconds).

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"change history {path} does not exist")
    df = pd.read_csv(path, keep_default_na=False)
    page = df["page"].value_counts().index[0]
    t = np.sort(df.loc[df["page"] == page, "time"].to_numpy(dtype=np.float64)) / SECONDS_PER_DAY
    return t, str(page)


def run_real_trace(
    change_times: NDArray[np.float64],
    p_factors: Sequence[float] = (0.5, 0.1),
    *,
    specs: Sequence[EstimatorSpec] | None = None,
    rng: np.random.Generator | int | None = None,
    max_visits: int | None = None,
    n_points: int = 400,
) -> pd.DataFrame:
    """Sec. 4.1 of seed 001 on a real change history: one trajectory per estimator and visit rate.

    Parameters
    ----------
    change_times : ndarray of float, shape (n_changes,)
        Sorted change times of one page, days.
    p_factors : sequence of float
        Visit rates as multiples of Δ̄ = n_changes / (last − first change), the page's mean change rate.
    specs : sequence of EstimatorSpec, optional
        Default: Naive, LLN, SA, SAM (Fig. 1 settings: α = 1, η = 0.75, β = 0.6), MLE and the
        interval-aware forms.
    rng : Generator, int or None
        Randomness of the visit times.
    max_visits : int, optional
        Stop after this many visits (for quick runs).
    n_points : int, default=400
        Visit counts (evenly spaced) at which the trajectories are recorded.

    Returns
    -------
    pandas.DataFrame
        Columns ``p_factor, p, delta_bar, estimator, k, estimate``.

    Examples
    --------
    >>> t = np.cumsum(np.random.default_rng(0).exponential(1.0, 400))
    >>> df = run_real_trace(t, (0.5,), specs=[EstimatorSpec("LLN", "lln")], rng=1)
    >>> set(df["estimator"]) == {"LLN"} and bool((df["estimate"] >= 0).all())
    True
    """
    rng = check_rng(rng)
    change_times = np.asarray(change_times, dtype=np.float64)
    start, end = float(change_times[0]), float(change_times[-1])
    delta_bar = (change_times.size - 1) / (end - start)
    if specs is None:
        specs = _paper_specs(0.75, 0.6, True)
    frames = []
    for f in p_factors:
        p = check_positive("p_factor", f) * delta_bar
        n = int(1.2 * p * (end - start)) + 10
        visits = start + np.cumsum(rng.exponential(1.0 / p, n))
        visits = np.concatenate([[start], visits[visits < end]])
        if max_visits is not None:
            visits = visits[: max_visits + 1]
        changed = changed_between_visits(change_times, visits)
        tau = np.diff(visits)
        k = tau.size
        ks = np.unique(np.linspace(1, k, min(k, n_points)).astype(np.int64))
        for spec in specs:
            if spec.name == "mle":
                path = mle_path(changed, tau)[ks - 1]
            else:
                est = make_batch_estimator(spec.name, 1, **spec.params)
                path = np.empty(ks.size)
                done = 0
                for i, kk in enumerate(ks):
                    est.update([0], changed[done:kk, None], tau[done:kk, None], np.full((kk - done, 1), p))
                    done = int(kk)
                    path[i] = est.delta_[0]
            frames.append(
                pd.DataFrame(
                    {"p_factor": f, "p": p, "delta_bar": delta_bar, "estimator": spec.label, "k": ks, "estimate": path}
                )
            )
    return pd.concat(frames, ignore_index=True)


def _axes(n: int):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, n, figsize=(6.0 * n, 4.2), squeeze=False)
    return plt, fig, axes[0]


def _save(plt, fig, out: Path) -> None:
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def plot_synthetic(df: pd.DataFrame, figure: str, out: Path) -> None:
    """PNG with the 95% band (left) and the RMSE (right) of each estimator against k."""
    plt, fig, (ax1, ax2) = _axes(2)
    sub = df[df["figure"] == figure]
    delta, p = float(sub["delta"].iloc[0]), float(sub["p"].iloc[0])
    for label, g in sub.groupby("estimator", sort=False):
        (line,) = ax1.plot(g["k"], g["mean"], label=label)
        ax1.fill_between(g["k"], g["q025"], g["q975"], color=line.get_color(), alpha=0.15)
        ax2.plot(g["k"], g["rmse"], label=label, color=line.get_color())
    ax1.axhline(delta, color="black", lw=0.8, ls="--")
    ax1.set(xscale="log", xlabel="visits k", ylabel="estimate (changes/day)", title=f"{figure}: mean and 95% band, Δ={delta:g}, p={p:g}")
    ax1.set_ylim(0, 2.5 * delta)
    ax2.set(xscale="log", yscale="log", xlabel="visits k", ylabel="RMSE (changes/day)", title=f"{figure}: RMSE over {int(sub['n_runs'].iloc[0])} runs")
    ax1.legend(fontsize=7)
    _save(plt, fig, out)


def plot_stepsizes(df: pd.DataFrame, out: Path) -> None:
    """PNG with one RMSE panel per stepsize study of Fig. 5."""
    panels = list(dict.fromkeys(df["figure"]))
    plt, fig, axes = _axes(len(panels))
    for ax, panel in zip(axes, panels):
        for label, g in df[df["figure"] == panel].groupby("estimator", sort=False):
            ax.plot(g["k"], g["rmse"], label=label)
        ax.set(xscale="log", yscale="log", xlabel="visits k", ylabel="RMSE", title=panel)
        ax.legend(fontsize=7)
    _save(plt, fig, out)


def plot_real_trace(df: pd.DataFrame, out: Path) -> None:
    """PNG with the trajectories of Sec. 4.1, one panel per visit rate."""
    factors = list(dict.fromkeys(df["p_factor"]))
    plt, fig, axes = _axes(len(factors))
    for ax, f in zip(axes, factors):
        sub = df[df["p_factor"] == f]
        for label, g in sub.groupby("estimator", sort=False):
            ax.plot(g["k"], g["estimate"], label=label, lw=0.9)
        dbar = float(sub["delta_bar"].iloc[0])
        ax.axhline(dbar, color="black", lw=0.8, ls="--")
        ax.set(xlabel="visits k", ylabel="estimate (changes/day)", title=f"p = {f:g} x mean change rate = {float(sub['p'].iloc[0]):.3g} visits/day")
        ax.set_ylim(0, 2.5 * dbar)
        ax.legend(fontsize=7)
    _save(plt, fig, out)
