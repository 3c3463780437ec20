"""Figures 1-4 of seed 003: MirrorSync, AsyncMirrorSync and AsyncPSGDSync on random instances.

Each run draws a new instance (K = 100 arms, polynomial costs of App. B / Table 1 or binary Poisson costs
of App. C / Table 2), computes its exact optimum J* (Problem 1, through :mod:`freshcrawl.allocation`) and
the exploration-constrained optimum J*_ε over K_ε, and runs the three algorithms on it for the time of
``horizon`` MirrorSync rounds, recording J(r) after every update. Curves are averaged over runs with a 95%
confidence interval (Student t).

References
----------
.. [1] Kolobov, Bubeck, Zimmert, "Online Learning for Active Cache Synchronization", ICML 2020 (seed 003),
   Sec. 8, Figures 1-2, App. B (Table 1), App. C (Table 2, Figures 3-4).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from freshcrawl._validation import check_int, check_rng
from freshcrawl.learning.mirror_sync import AsyncMirrorSync, AsyncPSGDSync, MirrorSync
from freshcrawl.learning.sync_costs import PoissonBinaryCost, PolynomialCost, optimal_policy_cost
from freshcrawl.errors import UnknownNameError

__all__ = [
    "FamilySettings",
    "FAMILIES",
    "ALGORITHMS",
    "AlgorithmCurve",
    "SyncBanditsResult",
    "run_family",
    "write_outputs",
]

ALGORITHMS = ("mirrorsync", "asyncmirrorsync", "asyncpsgdsync")


@dataclass(frozen=True, slots=True)
class FamilySettings:
    """Problem generator and tuned hyperparameters of one figure pair.

    Attributes
    ----------
    name : str
        ``"polynomial"`` or ``"poisson"``.
    n_arms : int
        K.
    budget_per_arm : float
        B / K, plays per time unit per arm.
    r_min, r_max : float
        Rate bounds, plays per time unit.
    epsilon : float
        Probe probability.
    eta_mirrorsync, eta_async, eta_psgd : float
        Learning rates of MirrorSync, AsyncMirrorSync and AsyncPSGDSync.
    update_async, update_psgd : float
        Update intervals (l_upd_round) of the two asynchronous algorithms, time units.
    figures : tuple of int
        Figure numbers of the seed (MirrorSync vs Async; Async vs PSGD).
    """

    name: str
    n_arms: int
    budget_per_arm: float
    r_min: float
    r_max: float
    epsilon: float
    eta_mirrorsync: float
    eta_async: float
    update_async: float
    eta_psgd: float
    update_psgd: float
    figures: tuple[int, int]

    def generate(self, rng: np.random.Generator):
        """A random instance of this family."""
        if self.name == "polynomial":
            return PolynomialCost.generate(self.n_arms, rng, noise=0.1, scale=5.0, tau_max=1.0 / self.r_min)
        return PoissonBinaryCost.generate(self.n_arms, rng, low=0.005, high=5.0)

    @property
    def budget(self) -> float:
        """B, plays per time unit."""
        return self.budget_per_arm * self.n_arms


#: Table 1 / App. B (Figures 1-2) and Table 2 / App. C (Figures 3-4) of seed 003.
FAMILIES: dict[str, FamilySettings] = {
    "polynomial": FamilySettings("polynomial", 100, 0.4, 0.025, 3.0, 0.05, 2.7, 1.6, 20.0, 0.08, 20.0, (1, 2)),
    "poisson": FamilySettings("poisson", 100, 0.4, 0.025, 6.0, 0.05, 5.0, 1.3, 8.0, 0.5, 40.0, (3, 4)),
}


@dataclass(frozen=True, slots=True)
class AlgorithmCurve:
    """J per update of one algorithm, over runs.

    Attributes
    ----------
    algorithm : str
        One of :data:`ALGORITHMS`.
    rounds : ndarray of float, shape (n,)
        Update times in MirrorSync rounds.
    j_mean, j_low, j_high : ndarray of float, shape (n,)
        Mean J over runs and its 95% confidence interval.
    ratio_mean : ndarray of float, shape (n,)
        Mean of J / J* over runs.
    final_ratio : float
        Mean final J / J*.
    final_ratio_halfwidth : float
        Half-width of its 95% confidence interval.
    seconds_per_run : float
        Mean wall-clock seconds of one run of the algorithm.
    """

    algorithm: str
    rounds: NDArray[np.float64]
    j_mean: NDArray[np.float64]
    j_low: NDArray[np.float64]
    j_high: NDArray[np.float64]
    ratio_mean: NDArray[np.float64]
    final_ratio: float
    final_ratio_halfwidth: float
    seconds_per_run: float


@dataclass(frozen=True, slots=True)
class SyncBanditsResult:
    """Everything one family's experiment produced.

    Attributes
    ----------
    settings : FamilySettings
    runs : int
    horizon : int
        MirrorSync rounds.
    j_star : ndarray of float, shape (runs,)
        J* of each run's instance (Problem 1 over K, full budget).
    j_star_eps : ndarray of float, shape (runs,)
        Optimum over K_ε (budget B/(1+ε), bound r_max/(1+ε)): the best any of the algorithms can reach.
    curves : tuple of AlgorithmCurve
        One per algorithm, in :data:`ALGORITHMS` order.
    mirrorsync_samples : str
        ``"mean"`` or ``"first"`` (see :class:`~freshcrawl.learning.mirror_sync.MirrorSync`).
    """

    settings: FamilySettings
    runs: int
    horizon: int
    j_star: NDArray[np.float64]
    j_star_eps: NDArray[np.float64]
    curves: tuple[AlgorithmCurve, ...] = field(default_factory=tuple)
    mirrorsync_samples: str = "mean"

    def curve(self, algorithm: str) -> AlgorithmCurve:
        """The curve of ``algorithm``."""
        for c in self.curves:
            if c.algorithm == algorithm:
                return c
        raise UnknownNameError(f"unknown algorithm {algorithm!r}; known: {', '.join(ALGORITHMS)}")

    def to_dict(self) -> dict:
        """The JSON summary: algorithms with final J/J* and seconds per run, runs, horizon."""
        return {
            "algorithms": [
                {"algorithm": c.algorithm, "final_j_over_jstar": float(c.final_ratio),
                 "final_j_over_jstar_ci95": float(c.final_ratio_halfwidth),
                 "seconds_per_run": float(c.seconds_per_run)}
                for c in self.curves
            ],
            "runs": self.runs,
            "horizon": self.horizon,
            "jstar_eps_over_jstar": float(np.mean(self.j_star_eps / self.j_star)),
        }


def _algorithms(s: FamilySettings, mirrorsync_samples: str):
    common = dict(budget=s.budget, r_min=s.r_min, r_max=s.r_max, epsilon=s.epsilon)
    return (
        MirrorSync(eta=s.eta_mirrorsync, samples=mirrorsync_samples, **common),
        AsyncMirrorSync(eta=s.eta_async, update_interval=s.update_async, **common),
        AsyncPSGDSync(eta=s.eta_psgd, update_interval=s.update_psgd, **common),
    )


def _ci(values: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Mean and 95% Student-t half-width over axis 0."""
    n = values.shape[0]
    mean = values.mean(axis=0)
    if n < 2:
        return mean, np.zeros_like(mean)
    half = stats.t.ppf(0.975, n - 1) * values.std(axis=0, ddof=1) / np.sqrt(n)
    return mean, half


def run_family(
    family: str,
    *,
    runs: int = 150,
    horizon: int = 240,
    rng: np.random.Generator | int | None = 0,
    mirrorsync_samples: str = "mean",
    progress: Callable[[int], None] | None = None,
) -> SyncBanditsResult:
    """Run the experiment of one family (Figures 1-2 or 3-4 of seed 003).

    Parameters
    ----------
    family : {"polynomial", "poisson"}
        Instance family.
    runs : int, default=150
        Instances (runs) ≥ 1.
    horizon : int, default=240
        MirrorSync rounds ≥ 1; the asynchronous algorithms run for the same simulated time.
    rng : numpy.random.Generator or int or None, default=0
        Randomness (instances and algorithms).
    mirrorsync_samples : {"mean", "first"}, default="mean"
        Gradient samples MirrorSync uses per round: the mean of the round's estimates, as the published
        experiments did (the App. B/C learning rates were tuned with it), or only the first (Alg. 1 line 18).
    progress : callable, optional
        Called with the number of finished runs after each run.

    Returns
    -------
    SyncBanditsResult

    Raises
    ------
    UnknownNameError
        If ``family`` is unknown.
    ValueError
        If ``runs`` or ``horizon`` is < 1.

    Examples
    --------
    >>> res = run_family("poisson", runs=2, horizon=4, rng=1)
    >>> [c.algorithm for c in res.curves], res.curve("mirrorsync").rounds.tolist()
    (['mirrorsync', 'asyncmirrorsync', 'asyncpsgdsync'], [0.0, 1.0, 2.0, 3.0, 4.0])
    """
    if family not in FAMILIES:
        raise UnknownNameError(f"unknown instance family {family!r}; known: {', '.join(FAMILIES)}")
    for name, value in (("runs", runs), ("horizon", horizon)):
        check_int(name, value, low=1)
    s = FAMILIES[family]
    rng = check_rng(rng)
    algos = _algorithms(s, mirrorsync_samples)
    j_runs: list[list[NDArray[np.float64]]] = [[] for _ in algos]
    seconds = np.zeros(len(algos))
    rounds: list[NDArray[np.float64]] = [np.empty(0)] * len(algos)
    j_star = np.empty(runs)
    j_star_eps = np.empty(runs)
    for i in range(runs):
        inst = s.generate(rng)
        j_star[i] = optimal_policy_cost(inst, s.budget, s.r_min, s.r_max).j_star
        j_star_eps[i] = optimal_policy_cost(inst, s.budget / (1 + s.epsilon), s.r_min,
                                            s.r_max / (1 + s.epsilon)).j_star
        for a, algo in enumerate(algos):
            t0 = time.perf_counter()
            res = algo.run(inst, horizon, rng)
            seconds[a] += time.perf_counter() - t0
            j_runs[a].append(res.j)
            rounds[a] = res.rounds
        if progress is not None:
            progress(i + 1)
    curves = []
    for a, algo in enumerate(algos):
        j = np.vstack(j_runs[a])
        ratio = j / j_star[:, None]
        j_mean, j_half = _ci(j)
        r_mean, r_half = _ci(ratio)
        curves.append(AlgorithmCurve(algo.algorithm, rounds[a], j_mean, j_mean - j_half, j_mean + j_half,
                                     r_mean, float(r_mean[-1]), float(r_half[-1]), float(seconds[a] / runs)))
    return SyncBanditsResult(s, runs, horizon, j_star, j_star_eps, tuple(curves), mirrorsync_samples)


_LABELS = {"mirrorsync": "MirrorSync", "asyncmirrorsync": "AsyncMirrorSync", "asyncpsgdsync": "AsyncPSGDSync"}
_COLORS = {"mirrorsync": "tab:blue", "asyncmirrorsync": "tab:red", "asyncpsgdsync": "tab:green"}


def write_outputs(results: list[SyncBanditsResult], out: str | Path) -> list[Path]:
    """Write the curves (CSV), a summary (CSV) and Figures 1-4 (PNG) into ``out``; return the paths.

    Files: ``sync_bandits_curves.csv`` (family, algorithm, round, J mean and 95% CI, mean J/J*),
    ``sync_bandits_summary.csv`` (final J/J* per family and algorithm), ``figure<N>_<family>_<pair>.png``.

    Parameters
    ----------
    results : list of SyncBanditsResult
        One per family.
    out : str or Path
        Output folder (created if missing).

    Returns
    -------
    list of Path
        The files written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    out = Path(out)
    rows, summary = [], []
    for res in results:
        for c in res.curves:
            rows.append(pd.DataFrame({
                "family": res.settings.name, "algorithm": c.algorithm, "round": c.rounds, "j_mean": c.j_mean,
                "j_ci95_low": c.j_low, "j_ci95_high": c.j_high, "j_over_jstar_mean": c.ratio_mean,
            }))
            summary.append({
                "family": res.settings.name, "algorithm": c.algorithm, "runs": res.runs, "horizon": res.horizon,
                "final_j_mean": float(c.j_mean[-1]), "final_j_over_jstar": c.final_ratio,
                "final_j_over_jstar_ci95": c.final_ratio_halfwidth, "jstar_mean": float(res.j_star.mean()),
                "jstar_eps_mean": float(res.j_star_eps.mean()), "seconds_per_run": c.seconds_per_run,
                "mirrorsync_samples": res.mirrorsync_samples,
            })
    curves_df = pd.concat(rows, ignore_index=True)
    summary_df = pd.DataFrame(summary)
    figures = []
    for res in results:
        fa, fb = res.settings.figures
        for num, pair in ((fa, ("mirrorsync", "asyncmirrorsync")), (fb, ("asyncmirrorsync", "asyncpsgdsync"))):
            fig, ax = plt.subplots(figsize=(6.4, 4.2))
            for name in pair:
                c = res.curve(name)
                ax.plot(c.rounds, c.j_mean, color=_COLORS[name], label=_LABELS[name], lw=1.4)
                ax.fill_between(c.rounds, c.j_low, c.j_high, color=_COLORS[name], alpha=0.25, lw=0)
            ax.axhline(res.j_star_eps.mean(), color="k", ls="--", lw=1, label="optimum over $K_\\varepsilon$")
            ax.axhline(res.j_star.mean(), color="0.5", ls=":", lw=1, label="$J^*$ (Problem 1)")
            ax.set_xlabel("time (MirrorSync rounds of $1/r_{min}$)")
            ax.set_ylabel("policy cost $J$ (mean, 95% CI)")
            ax.set_title(f"Figure {num}: {res.settings.name} costs, K={res.settings.n_arms}, {res.runs} runs")
            ax.legend(loc="upper right", fontsize=8)
            fig.tight_layout()
            figures.append((out / f"figure{num}_{res.settings.name}_{pair[0]}_vs_{pair[1]}.png", fig))
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "sync_bandits_curves.csv", out / "sync_bandits_summary.csv"]
    curves_df.to_csv(written[0], index=False)
    summary_df.to_csv(written[1], index=False)
    for path, fig in figures:
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written
