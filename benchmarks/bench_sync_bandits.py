"""Speed of the synchronization-bandit learners (seed 003); prints a markdown table.

Run: ``python benchmarks/bench_sync_bandits.py``. Not a pass/fail gate. Targets from the issue: one
240-round MirrorSync run at K = 100 under 0.5 s, the 150 runs of one figure under a minute, one update
step at K = 10^6 arms under 1 s. The authors' Python code (scipy.optimize.minimize per update) is quoted
at 30-60 s for one such MirrorSync run.
"""

from __future__ import annotations

import time

import numpy as np

from freshcrawl.experiments.sync_bandits import run_family
from freshcrawl.learning.mirror_sync import AsyncMirrorSync, AsyncPSGDSync, MirrorSync, mirror_descent_step
from freshcrawl.learning.sync_costs import PoissonBinaryCost, PolynomialCost


def best_of(fn, repeat=5):
    """Smallest wall time of ``repeat`` calls, seconds."""
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    rows = []
    table1 = dict(budget=40.0, r_min=0.025, r_max=3.0, epsilon=0.05)
    inst = PolynomialCost.generate(100, 0)
    for label, algo in [
        ("MirrorSync, 240 rounds, K=100 (first sample, Alg. 1)", MirrorSync(eta=2.7, samples="first", **table1)),
        ("MirrorSync, 240 rounds, K=100 (mean of samples)", MirrorSync(eta=2.7, samples="mean", **table1)),
        ("AsyncMirrorSync, 240 rounds = 480 updates, K=100", AsyncMirrorSync(eta=1.6, update_interval=20.0, **table1)),
        ("AsyncPSGDSync, 240 rounds = 480 updates, K=100", AsyncPSGDSync(eta=0.08, update_interval=20.0, **table1)),
    ]:
        algo.run(inst, 2, rng=0)  # compile
        rows.append((label, best_of(lambda algo=algo: algo.run(inst, 240, rng=1))))

    run_family("polynomial", runs=1, horizon=2)  # compile allocation kernels
    t0 = time.perf_counter()
    run_family("polynomial", runs=150, horizon=240, rng=0)
    rows.append(("Figures 1-2: 150 runs x 3 algorithms + J*, polynomial", time.perf_counter() - t0))
    t0 = time.perf_counter()
    run_family("poisson", runs=150, horizon=240, rng=0)
    rows.append(("Figures 3-4: 150 runs x 3 algorithms + J*, Poisson", time.perf_counter() - t0))

    k = 1_000_000
    big = PoissonBinaryCost.generate(k, 1)
    ms = MirrorSync(budget=0.4 * k, r_min=0.025, r_max=6.0, eta=5.0)
    prob = ms.problem(k)
    r = prob.initial_rates() * np.random.default_rng(2).uniform(0.5, 1.5, k)
    r = mirror_descent_step(r, np.zeros(k), 1.0, total=prob.sync_budget, r_lo=prob.r_min, r_hi=prob.r_hi)
    rng = np.random.default_rng(3)

    def full_step():
        g, _, _ = ms.round_gradient(big, r, rng)
        ms.step(r, g, prob)

    rows.append(("one MirrorSync update at K=10^6 (probe samples + projection)", best_of(full_step, 3)))
    g = rng.normal(0.0, 1.0, k) / k
    rows.append(("log-barrier Bregman projection alone, K=10^6", best_of(
        lambda: mirror_descent_step(r, g, 5.0, total=prob.sync_budget, r_lo=prob.r_min, r_hi=prob.r_hi), 3)))
    am = AsyncMirrorSync(budget=0.4 * k, r_min=0.025, r_max=6.0, eta=1.3, update_interval=8.0)
    rows.append(("AsyncMirrorSync, 1 round = 5 updates, K=10^6", best_of(lambda: am.run(big, 1, rng=4), 1)))

    print("| measurement | seconds |")
    print("|---|---:|")
    for label, sec in rows:
        print(f"| {label} | {sec:.4f} |")


if __name__ == "__main__":
    main()
