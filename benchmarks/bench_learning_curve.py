"""Learning curve of the learned policy: its share of the oracle's freshness gain over uniform
against visits per page, on synthetic Poisson pages, several seeds.

Pages change as Poisson processes whose rates Δ are log-uniform over two decades (0.002 to 0.2
changes per second by default); the budget visits each page every 30 s on average, so host caps and
the token bucket never bind. Every policy is re-planned every 3 s of simulated time (a tenth of a
visit cycle: the information-driven re-plan of a live crawl, a plan once a tenth of the pages has a
new observation). For each visit bin v (the time in which the crawl makes its v-th visit per page on
average) the script measures the freshness of uniform, the oracle and each learned variant; a
variant's share is (F_learned - F_uniform) / (F_oracle - F_uniform), paired on the same pages and
seed.

    python benchmarks/bench_learning_curve.py [--pages 4000] [--seeds 8] [--visits 20]
        [--png docs/img/learning-curve.png]

Prints a Markdown table (mean share and its standard error over seeds, by visit bin) and writes the
figure. Nothing leaves this machine.
"""

from __future__ import annotations

import argparse

import numpy as np

from freshcrawl.environments import PoissonEnvironment
from freshcrawl.policies import PolicyOptions, make_policy
from freshcrawl.simulation.engine import simulate
from freshcrawl.units import SECONDS_PER_DAY

VARIANTS = {
    "learned (gamma posterior, the default)": {},
    "learned, mean shrinkage (k0 = 2 visits)": {"prior": "mean"},
    "learned, posterior 0.7-quantile": {"plan_quantile": 0.7},
}


def run(n_pages: int, seeds: int, visits: int, low: float, high: float, interval_s: float) -> dict:
    """Freshness per visit bin, shape (seeds, visits), for uniform, the oracle and each variant."""
    per_bin = 10  # plans per visit cycle
    period = interval_s / per_bin / SECONDS_PER_DAY
    budget = n_pages / interval_s * SECONDS_PER_DAY
    end = visits * interval_s / SECONDS_PER_DAY
    names = {"uniform": ("uniform", {}), "oracle": ("oracle", {})}
    names.update({k: ("learned", v) for k, v in VARIANTS.items()})
    out = {k: np.empty((seeds, visits)) for k in names}
    for s in range(seeds):
        rng = np.random.default_rng(1000 + s)
        delta = np.exp(rng.uniform(np.log(low), np.log(high), n_pages)) * SECONDS_PER_DAY
        for key, (policy, extra) in names.items():
            env = PoissonEnvironment(delta, start=0.0, end=end)
            pol = make_policy(policy, PolicyOptions(replan_every=period, extra=dict(extra)))
            res = simulate(pol, env, budget, rng=s)
            out[key][s] = res.freshness_t[: visits * per_bin].reshape(visits, per_bin).mean(axis=1)
    return out


def shares(out: dict) -> dict:
    """Share of the oracle's gain per visit bin: (mean, standard error over seeds) per variant."""
    gain = out["oracle"] - out["uniform"]
    res = {}
    for key in VARIANTS:
        d = out[key] - out["uniform"]
        g = gain.mean(axis=0)
        mean = d.mean(axis=0) / g
        # delta method on the ratio of paired means (per-seed differences)
        r = d - mean * gain
        se = r.std(axis=0, ddof=1) / np.sqrt(d.shape[0]) / np.abs(g)
        res[key] = (mean, se)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=4000)
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--visits", type=int, default=20)
    ap.add_argument("--low", type=float, default=0.002, help="Slowest rate, changes per second.")
    ap.add_argument("--high", type=float, default=0.2, help="Fastest rate, changes per second.")
    ap.add_argument("--interval", type=float, default=30.0, help="Mean seconds between visits.")
    ap.add_argument("--png", default=None, help="Write the figure here.")
    a = ap.parse_args()
    out = run(a.pages, a.seeds, a.visits, a.low, a.high, a.interval)
    sh = shares(out)
    gain = (out["oracle"] - out["uniform"]).mean(axis=0)
    show = [v for v in (1, 2, 3, 5, 7, 10, 15, 20) if v <= a.visits]
    print(
        f"uniform freshness {out['uniform'].mean():.4f}; oracle gain over uniform "
        f"{gain.mean():.4f} (per bin {gain.min():.4f}-{gain.max():.4f})\n"
    )
    print("| policy | " + " | ".join(f"visit {v}" for v in show) + " | visits 10-20 |")
    print("|---|" + "---:|" * (len(show) + 1))
    for key, (mean, se) in sh.items():
        d = out[key] - out["uniform"]
        g = out["oracle"] - out["uniform"]
        late = slice(9, a.visits)
        m_late = d[:, late].mean() / g[:, late].mean()
        per_seed = d[:, late].mean(axis=1) - m_late * g[:, late].mean(axis=1)
        se_late = per_seed.std(ddof=1) / np.sqrt(d.shape[0]) / g[:, late].mean()
        cells = [f"{mean[v - 1]:.2f} ± {se[v - 1]:.2f}" for v in show]
        print(f"| {key} | " + " | ".join(cells) + f" | {m_late:.2f} ± {se_late:.2f} |")
    if a.png:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4))
        v = np.arange(1, a.visits + 1)
        for key, (mean, se) in sh.items():
            ax.errorbar(v, mean, yerr=se, marker="o", ms=3, capsize=2, label=key)
        ax.axhline(1.0, color="k", lw=0.8, ls="--", label="oracle")
        ax.axhline(0.0, color="grey", lw=0.8, label="uniform")
        ax.axhline(0.5, color="grey", lw=0.5, ls=":")
        ax.set_xlabel("visits per page so far")
        ax.set_ylabel("share of the oracle's gain over uniform")
        ax.set_title(
            f"{a.pages} Poisson pages, Δ log-uniform {a.low:g}-{a.high:g}/s, "
            f"a visit per {a.interval:g} s, {a.seeds} seeds",
            fontsize=9,
        )
        ax.legend(fontsize=8, loc="lower right")
        fig.tight_layout()
        fig.savefig(a.png, dpi=110)


if __name__ == "__main__":
    main()
