"""Speed of the learning-automata poll loop (seed 004): polls per second on one core.

Run as ``python benchmarks/bench_automata.py``; prints a markdown table. The loop timed is the whole
compiled poll loop: per-node EDF pick, environment draw, feedback to the log2(n) automata on the path.
Targets: >= 1e6 polls/s at 512 pages, >= 2e5 polls/s at 32,768 pages.
"""

from __future__ import annotations

import time

import numpy as np

from freshcrawl.environments.zipf import ZipfEnvironment
from freshcrawl.experiments.polling import simulate_estimator, simulate_htraa
from freshcrawl.learning.htraa import HTRAA
from freshcrawl.policies.automata import HTRAAPolicy
from freshcrawl.policies.base import Observations, PolicyContext


def best_of(fn, repeats=3):
    return min(fn() for _ in range(repeats))


def htraa_seconds(n, polls, mode="reward-penalty", alpha=0.9, beta=1.5):
    env = ZipfEnvironment(n, alpha, beta, rng=0)
    h = HTRAA(n, mode=mode, rng=1)
    return simulate_htraa(env, h, polls, checkpoints=[0, polls]).seconds


def estimator_seconds(n, polls):
    env = ZipfEnvironment(n, 0.9, 1.5, rng=0)
    return simulate_estimator(env, polls, checkpoints=[0, polls]).seconds


def policy_seconds(n, visits):
    pol = HTRAAPolicy()
    pol.reset(PolicyContext(n_pages=n, budget=float(visits), start=0.0, weights=np.ones(n), rng=np.random.default_rng(0)))
    alive = np.ones(n, dtype=bool)
    t0 = time.perf_counter()
    plan = pol.plan(0.0, alive)
    m = len(plan.pages)
    changed = np.random.default_rng(1).random(m) < 0.5
    pol.observe(Observations(plan.pages, plan.times, changed, np.ones(m), np.ones(m)))
    return time.perf_counter() - t0


def main() -> None:
    htraa_seconds(512, 1000)  # compile (cached on disk after the first run)
    estimator_seconds(512, 1000)
    policy_seconds(16, 100)
    rows = []
    for n, polls in [(512, 4_000_000), (4096, 4_000_000), (32768, 4_000_000)]:
        s = best_of(lambda n=n, polls=polls: htraa_seconds(n, polls))
        h = HTRAA(n)
        rows.append((f"H-TRAA poll loop, reward-penalty, {n} pages", polls, s, h.nbytes()))
    for mode in ("reward-inaction", "inaction-penalty"):
        s = best_of(lambda mode=mode: htraa_seconds(512, 4_000_000, mode=mode))
        rows.append((f"H-TRAA poll loop, {mode}, 512 pages", 4_000_000, s, HTRAA(512).nbytes()))
    s = best_of(lambda: estimator_seconds(512, 4_000_000))
    rows.append(("Estimator phase loop (round robin), 512 pages", 4_000_000, s, None))
    s = best_of(lambda: policy_seconds(32768, 1_000_000))
    rows.append(("HTRAAPolicy plan + observe, 32768 pages", 1_000_000, s, None))
    print("| loop | polls | seconds | polls/s | memory of the hierarchy |")
    print("|---|---:|---:|---:|---:|")
    for name, polls, s, mem in rows:
        print(f"| {name} | {polls:,} | {s:.3f} | {polls / s:,.0f} | {'' if mem is None else f'{mem / 1024:,.0f} KiB'} |")


if __name__ == "__main__":
    main()
