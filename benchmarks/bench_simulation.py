"""Speed of the simulation engine.

Run as ``python benchmarks/bench_simulation.py [--tldr PREFIX]``; prints a markdown table. The tldr
history (46k pages) is not shipped: pass the prefix of its ``.changes.csv.gz`` / ``.pages.csv`` files.

Cases:
* replay of one year of a history at 10,000 visits/day (uniform: engine alone; learned: with the
  default estimator and the periodic-freshness allocation every day);
* synthetic Poisson pages, 10^6 pages x 100 visits each (budget 10^6/day over 100 days, re-planned
  every day), Δ lognormal around 0.5 changes/day (uniform: engine alone; learned with the
  O(1)-per-visit ``sa-interval`` estimator).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from freshcrawl.environments import PoissonEnvironment, ReplayEnvironment
from freshcrawl.policies import PolicyOptions, make_policy
from freshcrawl.simulation import simulate
from freshcrawl.traces.history import read_history


def timed(label, policy, env, budget, rows, **kw):
    t = time.perf_counter()
    res = simulate(make_policy(policy, PolicyOptions()), env, budget, rng=0, **kw)
    dt = time.perf_counter() - t
    rows.append(
        (
            label,
            policy,
            f"{res.visits:,}",
            f"{dt:.1f}",
            f"{res.visits / dt / 1e6:.2f}",
            f"{res.freshness:.4f}",
        )
    )
    print(f"  {label} {policy}: {dt:.1f} s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--tldr", help="prefix of the tldr change history (PREFIX.changes.csv.gz, PREFIX.pages.csv)"
    )
    ap.add_argument("--pages", type=int, default=1_000_000, help="synthetic pages (default 10^6)")
    ap.add_argument("--policies", default="uniform,learned", help="policies of the replay case")
    ap.add_argument(
        "--synthetic-policies",
        default="uniform,learned:sa-interval",
        help="policies of the synthetic case",
    )
    args = ap.parse_args()
    policies = args.policies.split(",")
    synthetic_policies = args.synthetic_policies.split(",")
    rows = []
    # warm-up: compile the numba kernels (cached on disk after the first run)
    warm = PoissonEnvironment(np.ones(10), start=0.0, end=3.0)
    for pol in set(policies) | set(synthetic_policies):
        simulate(make_policy(pol, PolicyOptions()), warm, 10.0, rng=0)
    if args.tldr:
        t = time.perf_counter()
        history = read_history(args.tldr)
        print(f"  read {args.tldr}: {time.perf_counter() - t:.1f} s", flush=True)
        env = ReplayEnvironment(history, history.last - 365.0, history.last)
        for pol in policies:
            timed(
                f"tldr ({history.n_pages:,} pages), 1 year, B = 10,000/day",
                pol,
                env,
                10_000.0,
                rows,
            )
    n = args.pages
    rng = np.random.default_rng(0)
    delta = np.exp(rng.normal(np.log(0.5), 1.0, n))
    env = PoissonEnvironment(delta, start=0.0, end=100.0)
    for pol in synthetic_policies:
        timed(f"synthetic Poisson, {n:,} pages x 100 visits", pol, env, float(n), rows)
    print()
    print("| case | policy | visits | seconds | million visits/s | freshness |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
