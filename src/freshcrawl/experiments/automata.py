"""Reproduction of the experiments of seed 004 (Figs. 5-12): learning automata for web polling.

Every curve is the expected number of changes detected per poll, ``Σ x_i d_i(x_i) / c``, of the
allocation a policy holds after a given number of polls, in the environment's state at that moment
(Sec. 4.3.1), averaged over independent runs. The settings:

- Fig. 5, update modes: (α, β) = (0.9, 1.5), H-TRAA with Reward-Inaction, Inaction-Penalty and
  Reward-Penalty updates.
- Figs. 6-8, static environments (0.3, 1.5), (0.3, 1.0), (0.9, 1.5): H-TRAA (reward-penalty) with
  0, 10^3, 10^4, 10^5 and 10^6 perturbations, against Uniform, Proportional, Optimal and Estimator
  (the Estimator's value at t polls is that of the proportional policy on the estimates of an
  estimation phase of t uniform polls).
- Figs. 9-10, switching environments (0.9, 1.5) with r = 80,000 and r = 1,000 polls between switches.
- Figs. 11-12, scaling: 2^1 ... 2^15 pages in the (0.9, 1.5) environment, and the polls H-TRAA needs to
  close 90% of the gap between the uniform and the optimal policy.

Every automaton has resolution N = 500. LAKG (Granmo, Oommen, Myrer, Olsen 2007), the comparison scheme
of the paper, is not reproduced: its update rules are not described in seed 004 and could not be
reconstructed faithfully from public material, so its column is reported as ``None``.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from freshcrawl._validation import check_int
from freshcrawl.environments.zipf import (
    ZipfEnvironment,
    expected_detections_per_poll,
)
from freshcrawl.experiments.polling import simulate_estimator, simulate_htraa
from freshcrawl.learning.htraa import HTRAA
from freshcrawl.learning.polling_policies import optimal_polling, proportional_polling, uniform_polling

__all__ = ["AutomataConfig", "AutomataResult", "run_automata_experiments", "measure_polls_per_second"]

STATIC_ENVIRONMENTS: tuple[tuple[float, float], ...] = ((0.3, 1.5), (0.3, 1.0), (0.9, 1.5))
MODES: tuple[str, ...] = ("reward-inaction", "inaction-penalty", "reward-penalty")


@dataclass(frozen=True, slots=True)
class AutomataConfig:
    """Sizes of the reproduction; :meth:`full` follows the seed where feasible, :meth:`quick` is a smoke run.

    Attributes
    ----------
    n_pages : int
        Pages of Figs. 5-10 (512 in the seed).
    n_states : int
        Resolution N of every automaton (500 in the seed).
    horizon : int
        Polls per run in the static environments and the update-mode comparison.
    n_runs : int
        Independent runs averaged per curve.
    perturbations : tuple of int
        Perturbation counts of the static environments.
    switch_every : tuple of int
        r of the switching environments.
    switch_horizon : int
        Polls per run in the switching environments.
    scaling_exponents : tuple of int
        Page counts 2^k of the scaling experiment.
    scaling_horizon : int
        Polls per run of the scaling experiment.
    n_checkpoints : int
        Evaluation points per curve (linear, plus a few log-spaced early ones).
    speed_polls : int
        Polls timed for the polls-per-second figures.
    seed : int
        Master seed; each run draws its own streams from it.
    """

    n_pages: int = 512
    n_states: int = 500
    horizon: int = 4_000_000
    n_runs: int = 5
    perturbations: tuple[int, ...] = (0, 1_000, 10_000, 100_000, 1_000_000)
    switch_every: tuple[int, ...] = (80_000, 1_000)
    switch_horizon: int = 2_000_000
    scaling_exponents: tuple[int, ...] = tuple(range(1, 16))
    scaling_horizon: int = 4_000_000
    n_checkpoints: int = 100
    speed_polls: int = 2_000_000
    seed: int = 2008

    @classmethod
    def full(cls) -> AutomataConfig:
        """The settings of the seed (512 pages, N = 500), 5 runs per curve, horizons of 2-4 million polls."""
        return cls()

    @classmethod
    def quick(cls) -> AutomataConfig:
        """A run of a few seconds with the same structure: 64 pages, short horizons, one run."""
        return cls(
            n_pages=64,
            horizon=60_000,
            n_runs=1,
            perturbations=(0, 1_000),
            switch_every=(8_000, 500),
            switch_horizon=40_000,
            scaling_exponents=(1, 3, 5, 7),
            scaling_horizon=60_000,
            n_checkpoints=20,
            speed_polls=200_000,
        )

    def __post_init__(self) -> None:
        ints = ("n_pages", "horizon", "n_runs", "switch_horizon", "scaling_horizon", "n_checkpoints", "speed_polls")
        for name in ints:
            v = getattr(self, name)
            check_int(name, v, low=1)
        check_int("n_states", self.n_states, low=2, what=" (resolution N)")
        if any(p < 0 for p in self.perturbations):
            raise ValueError(f"perturbations must be >= 0; got {self.perturbations!r}")
        if any(r < 1 for r in self.switch_every):
            raise ValueError(f"switch_every must be >= 1 poll; got {self.switch_every!r}")
        if any(not 1 <= k <= 20 for k in self.scaling_exponents):
            raise ValueError(f"scaling_exponents must be in 1..20; got {self.scaling_exponents!r}")


@dataclass(frozen=True)
class AutomataResult:
    """What :func:`run_automata_experiments` wrote and the summary ``--json`` prints.

    Attributes
    ----------
    summary : dict
        ``{"environments": [{"alpha", "beta", "perturbations", "policies": {...}}], "polls_per_second":
        {"512": ..., "32768": ...}, "convergence_polls": {n_pages: polls}, "convergence_polls_static":
        [{"alpha", "beta", "perturbations", "polls"}], "config": {...}}``; convergence is the first
        checkpoint at which the mean H-TRAA curve closes 90% (scaling) or 95% (static) of the gap between
        the uniform and the optimal policy.
    files : list of Path
        CSV and PNG files written.
    seconds : float
        Wall-clock time of the whole reproduction.
    """

    summary: dict
    files: list[Path] = field(default_factory=list)
    seconds: float = 0.0


def _checkpoints(horizon: int, k: int) -> np.ndarray:
    lin = np.linspace(0, horizon, k + 1).astype(np.int64)
    early = np.geomspace(100, horizon, 40).astype(np.int64)
    return np.unique(np.concatenate([lin, early[early < horizon]]))


def _references(u: np.ndarray) -> dict[str, float]:
    n = u.size
    return {
        "optimal": expected_detections_per_poll(optimal_polling(u), u),
        "uniform": expected_detections_per_poll(uniform_polling(n), u),
        "proportional": expected_detections_per_poll(proportional_polling(u), u),
    }


def measure_polls_per_second(n_pages: int, n_polls: int = 2_000_000, *, seed: int = 0) -> float:
    """Polls per second of the compiled H-TRAA poll loop (EDF pick, draw, feedback) on one core.

    Runs once to compile (cached on disk), then times `n_polls` polls in the (0.9, 1.5) environment.
    """
    env = ZipfEnvironment(n_pages, 0.9, 1.5, rng=seed)
    simulate_htraa(env, HTRAA(n_pages, rng=seed), 1_000, checkpoints=[0, 1_000])
    run = simulate_htraa(env, HTRAA(n_pages, rng=seed + 1), n_polls, checkpoints=[0, n_polls])
    return n_polls / run.seconds


def _tasks(cfg: AutomataConfig) -> int:
    static = len(STATIC_ENVIRONMENTS) * (len(cfg.perturbations) + 1) * cfg.n_runs
    others = len(MODES) + 2 * len(cfg.switch_every) + len(cfg.scaling_exponents)
    return static + others * cfg.n_runs + 2


def run_automata_experiments(
    out: str | Path,
    config: AutomataConfig | None = None,
    *,
    progress: Callable[[str, int], None] | None = None,
) -> AutomataResult:
    """Run Figs. 5-12 of seed 004 and write their CSV tables and PNG plots into `out`.

    Parameters
    ----------
    out : str or Path
        Output directory; created if missing. Files are written to a temporary directory first and
        moved into `out` only when everything succeeded.
    config : AutomataConfig, optional
        Sizes; :meth:`AutomataConfig.full` by default.
    progress : callable, optional
        ``progress(description, total_steps)`` is called once at the start with the number of steps,
        then ``progress(description, 0)`` before and ``progress("", 1)`` after each step.

    Returns
    -------
    AutomataResult

    Raises
    ------
    ValueError
        If `out` exists and is not a directory.
    """
    cfg = config or AutomataConfig.full()
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"out must be a directory; got the file {str(out)!r}")
    tick = progress or (lambda desc, n: None)
    tick("automata", _tasks(cfg))
    t_start = time.perf_counter()
    seeds = np.random.SeedSequence(cfg.seed)
    tmp = Path(tempfile.mkdtemp(prefix="freshcrawl-automata-"))
    try:
        summary, frames = _run_all(cfg, seeds, tick)
        files = _write(tmp, cfg, summary, frames)
        out.mkdir(parents=True, exist_ok=True)
        final = []
        for f in files:
            dest = out / f.name
            shutil.move(str(f), dest)
            final.append(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return AutomataResult(summary, final, time.perf_counter() - t_start)


def _mean_run(make_env, make_learner, horizon, cps, runs, seeds, tick, desc, estimator=False):
    values, hists = [], []
    for r in range(runs):
        tick(f"{desc} run {r + 1}/{runs}", 0)
        ss = seeds.spawn(1)[0]
        env = make_env(ss)
        if estimator:
            run = simulate_estimator(env, horizon, checkpoints=cps, seed=int(ss.generate_state(1)[0] % (2**31)))
        else:
            run = simulate_htraa(env, make_learner(ss), horizon, checkpoints=cps)
        values.append(run.value)
        hists.append(run.update_prob)
        tick("", 1)
    return np.mean(values, axis=0), hists


def _run_all(cfg: AutomataConfig, seeds: np.random.SeedSequence, tick):
    n = cfg.n_pages
    cps = _checkpoints(cfg.horizon, cfg.n_checkpoints)
    frames: dict[str, list[pd.DataFrame]] = {"static": [], "modes": [], "switching": [], "scaling": []}
    envs_summary = []
    static_conv: list[dict] = []

    def learner(n_mat, mode="reward-penalty"):
        return lambda ss: HTRAA(n_mat, n_states=cfg.n_states, mode=mode, rng=np.random.default_rng(ss))

    # Figs. 6-8: static environments with perturbations.
    for alpha, beta in STATIC_ENVIRONMENTS:
        u = ZipfEnvironment(n, alpha, beta).update_prob_
        refs = _references(u)
        est, _ = _mean_run(
            lambda ss: ZipfEnvironment(n, alpha, beta), None, cfg.horizon, cps, cfg.n_runs, seeds, tick,
            f"estimator ({alpha}, {beta})", estimator=True,
        )  # fmt: skip
        base = {"alpha": alpha, "beta": beta, "polls": cps}
        frames["static"].append(pd.DataFrame({**base, "perturbations": 0, "policy": "estimator", "value": est}))
        for name, v in refs.items():
            frames["static"].append(pd.DataFrame({**base, "perturbations": 0, "policy": name, "value": v}))
        for k in cfg.perturbations:
            ht, _ = _mean_run(
                lambda ss, k=k: ZipfEnvironment(n, alpha, beta, perturbations=k, rng=np.random.default_rng(ss)),
                learner(n), cfg.horizon, cps, cfg.n_runs, seeds, tick, f"H-TRAA ({alpha}, {beta}) {k} perturbations",
            )  # fmt: skip
            frames["static"].append(pd.DataFrame({**base, "perturbations": k, "policy": "htraa", "value": ht}))
            gap = refs["optimal"] - refs["uniform"]
            hit = np.flatnonzero((ht - refs["uniform"]) >= 0.95 * gap)
            static_conv.append(
                {"alpha": alpha, "beta": beta, "perturbations": k, "polls": int(cps[hit[0]]) if hit.size else None}
            )
            envs_summary.append(
                {
                    "alpha": alpha,
                    "beta": beta,
                    "perturbations": k,
                    "policies": {
                        "htraa": float(ht[-1]),
                        "optimal": refs["optimal"],
                        "uniform": refs["uniform"],
                        "proportional": refs["proportional"],
                        "estimator": float(est[-1]),
                        "lakg": None,
                    },
                }
            )

    # Fig. 5: update modes in the (0.9, 1.5) environment.
    u = ZipfEnvironment(n, 0.9, 1.5).update_prob_
    refs = _references(u)
    for mode in MODES:
        v, _ = _mean_run(
            lambda ss: ZipfEnvironment(n, 0.9, 1.5), learner(n, mode), cfg.horizon, cps, cfg.n_runs, seeds, tick,
            f"H-TRAA {mode}",
        )  # fmt: skip
        frames["modes"].append(pd.DataFrame({"polls": cps, "policy": f"htraa:{mode}", "value": v}))
    for name in ("optimal", "proportional"):
        frames["modes"].append(pd.DataFrame({"polls": cps, "policy": name, "value": refs[name]}))

    # Figs. 9-10: switching environments.
    scp = np.linspace(0, cfg.switch_horizon, 4 * cfg.n_checkpoints + 1).astype(np.int64)
    for r in cfg.switch_every:
        def env_r(ss, r=r):
            return ZipfEnvironment(n, 0.9, 1.5, switch_every=r, rng=np.random.default_rng(ss))

        ht, hists = _mean_run(env_r, learner(n), cfg.switch_horizon, scp, cfg.n_runs, seeds, tick, f"H-TRAA r={r}")
        est, _ = _mean_run(
            env_r, None, cfg.switch_horizon, scp, cfg.n_runs, seeds, tick, f"estimator r={r}", estimator=True
        )
        ref_curves = {name: np.zeros(scp.size) for name in ("optimal", "uniform", "proportional")}
        for h in hists:
            for j in range(scp.size):
                for name, v in _references(h[j]).items():
                    ref_curves[name][j] += v / len(hists)
        for name, v in [("htraa", ht), ("estimator", est), *ref_curves.items()]:
            frames["switching"].append(pd.DataFrame({"switch_every": r, "polls": scp, "policy": name, "value": v}))

    # Figs. 11-12: scaling with the number of pages.
    conv = {}
    sc = np.unique(np.concatenate([[0], np.geomspace(10, cfg.scaling_horizon, 4 * cfg.n_checkpoints).astype(np.int64)]))
    for e in cfg.scaling_exponents:
        m = 2**e
        u = ZipfEnvironment(m, 0.9, 1.5).update_prob_
        refs = _references(u)
        v, _ = _mean_run(
            lambda ss, m=m: ZipfEnvironment(m, 0.9, 1.5), learner(m), cfg.scaling_horizon, sc, cfg.n_runs, seeds,
            tick, f"H-TRAA {m} pages",
        )  # fmt: skip
        gap = refs["optimal"] - refs["uniform"]
        rel = (v - refs["uniform"]) / gap if gap > 0 else np.ones_like(v)
        hit = np.flatnonzero(rel >= 0.9)
        conv[str(m)] = int(sc[hit[0]]) if hit.size else None
        frames["scaling"].append(
            pd.DataFrame(
                {"n_pages": m, "polls": sc, "value": v, "optimal": refs["optimal"], "uniform": refs["uniform"],
                 "gap_closed": rel}
            )  # fmt: skip
        )

    tick("speed 512 pages", 0)
    pps = {"512": measure_polls_per_second(512, cfg.speed_polls)}
    tick("", 1)
    tick("speed 32768 pages", 0)
    pps["32768"] = measure_polls_per_second(32768, cfg.speed_polls)
    tick("", 1)
    cfg_dict = {}
    for name in cfg.__dataclass_fields__:
        v = getattr(cfg, name)
        cfg_dict[name] = list(v) if isinstance(v, tuple) else v
    summary = {
        "environments": envs_summary,
        "polls_per_second": pps,
        "convergence_polls": conv,
        "convergence_polls_static": static_conv,
        "config": cfg_dict,
        "lakg": "not reproduced: LAKG's update rules are not given in seed 004 or in public material we could check",
    }
    return summary, {k: pd.concat(v, ignore_index=True) for k, v in frames.items()}


def _write(tmp: Path, cfg: AutomataConfig, summary: dict, frames: dict[str, pd.DataFrame]) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    tables = [
        ("modes", "fig5_update_modes"),
        ("static", "fig6_8_static"),
        ("switching", "fig9_10_switching"),
        ("scaling", "fig11_12_scaling"),
    ]
    ylabel = "expected detected changes per poll"
    for key, name in tables:
        p = tmp / f"{name}.csv"
        frames[key].to_csv(p, index=False)
        files.append(p)

    def save(fig, name):
        p = tmp / name
        fig.tight_layout()
        fig.savefig(p, dpi=110)
        plt.close(fig)
        files.append(p)

    df = frames["modes"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for pol, g in df.groupby("policy", sort=False):
        ax.plot(g["polls"], g["value"], ls="--" if not pol.startswith("htraa") else "-", label=pol)
    ax.set(xlabel="polls", ylabel=ylabel, title=f"Fig. 5: update modes, (0.9, 1.5), {cfg.n_pages} pages")
    ax.set_xscale("symlog", linthresh=1000)
    ax.legend()
    save(fig, "fig5_update_modes.png")

    st = frames["static"]
    for fig_no, (alpha, beta) in zip((6, 7, 8), STATIC_ENVIRONMENTS, strict=True):
        g0 = st[(st.alpha == alpha) & (st.beta == beta)]
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for pol in ("optimal", "proportional", "uniform", "estimator"):
            g = g0[g0.policy == pol]
            ax.plot(g["polls"], g["value"], ls="--" if pol != "estimator" else ":", label=pol)
        for k, g in g0[g0.policy == "htraa"].groupby("perturbations"):
            ax.plot(g["polls"], g["value"], label=f"H-TRAA, {k} perturbations")
        ax.set(xlabel="polls", ylabel=ylabel, title=f"Fig. {fig_no}: ({alpha}, {beta}), {cfg.n_pages} pages")
        ax.set_xscale("symlog", linthresh=1000)
        ax.legend(fontsize=8)
        save(fig, f"fig{fig_no}_alpha{alpha}_beta{beta}.png")

    sw = frames["switching"]
    for fig_no, r in zip((9, 10), cfg.switch_every, strict=False):
        g0 = sw[sw.switch_every == r]
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for pol, g in g0.groupby("policy", sort=False):
            ax.plot(g["polls"], g["value"], ls="-" if pol in ("htraa", "estimator") else "--", label=pol)
        ax.set(xlabel="polls", ylabel=ylabel, title=f"Fig. {fig_no}: switching every {r} polls, (0.9, 1.5)")
        ax.legend(fontsize=8)
        save(fig, f"fig{fig_no}_switching_r{r}.png")

    sc = frames["scaling"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for m, g in sc.groupby("n_pages"):
        axes[0].plot(g["polls"], g["gap_closed"], label=f"{m} pages")
    axes[0].set(
        xlabel="polls", ylabel="share of the uniform-to-optimal gap closed", title="Figs. 11-12: H-TRAA, (0.9, 1.5)"
    )
    axes[0].set_xscale("symlog", linthresh=1000)
    axes[0].legend(fontsize=7, ncol=2)
    conv = {int(k): v for k, v in summary["convergence_polls"].items() if v is not None}
    if conv:
        ks = sorted(conv)
        axes[1].loglog(ks, [max(conv[k], 1) for k in ks], "o-", label="H-TRAA")
        axes[1].loglog(ks, [max(conv[ks[0]], 1) * k / ks[0] for k in ks], ":", label="linear in n")
        axes[1].set(xlabel="pages n", ylabel="polls to close 90% of the gap")
        axes[1].legend()
    save(fig, "fig11_12_scaling.png")

    p = tmp / "summary.json"
    p.write_text(json.dumps(summary, indent=2))
    files.append(p)
    return files

