"""Freshness of the learned policy with and without announcements on the shipped histories, at equal
visits: the replay of ``freshcrawl simulate --announce-share`` over seeds.

Run: ``python benchmarks/announcements_table.py [--seeds 10] [--jobs 2]`` (from the repository root);
prints the Markdown table of docs/announcements.md. For each history: the last 365 whole days, budget
B = the window's changes per day (one visit per change on average, 3 significant digits), the
``learned`` policy with the CLI's defaults; each seed is the CLI's ``--seed`` (the same phases and
draws as ``freshcrawl simulate --trace data/NAME --budget B/day --start DATE --days 365 --policy
learned --announce-share S [--announce-delay D --announce-miss M --announce-false F] --seed SEED``,
whose ``learned:mle-binned`` and ``learned:mle-binned +announced`` rows are one pair). Mean over seeds,
and the standard error over seeds of the paired difference.
"""

from __future__ import annotations

import argparse
import math
from concurrent.futures import ProcessPoolExecutor

import numpy as np

HISTORIES = ("peps", "ota-pga-versions")
CASES = [  # (share, delay in days, share of changes not announced, false announcements per change)
    (0.25, 0.0, 0.0, 0.0),
    (0.5, 0.0, 0.0, 0.0),
    (1.0, 0.0, 0.0, 0.0),
    (0.5, 1.0 / 24, 0.0, 0.0),
    (0.5, 1.0 / 24, 0.2, 0.0),
    (0.5, 0.0, 0.0, 0.5),
]


def window(name: str) -> tuple[float, float, float, str]:
    """(start, end, B, start date) of a history's last 365 whole days."""
    import pandas as pd

    from freshcrawl.traces.history import read_history

    h = read_history(f"data/{name}")
    start = math.floor(h.last) - 365.0
    end = start + 365.0
    n = int(((h.times > start) & (h.times <= end)).sum())
    budget = float(f"{n / 365.0:.3g}")
    date = pd.Timestamp(start * 86400, unit="s").strftime("%Y-%m-%d")
    return start, end, budget, date


def run(name: str, seed: int, case: tuple | None) -> tuple[float, int, int]:
    """(freshness, visits, visits for announced changes) of one replay, as the CLI makes it."""
    from freshcrawl.environments import ReplayEnvironment
    from freshcrawl.policies import PolicyOptions, make_policy
    from freshcrawl.simulation import simulate
    from freshcrawl.simulation.announce import Announcements
    from freshcrawl.traces.history import read_history

    start, end, budget, _ = window(name)
    env = ReplayEnvironment(read_history(f"data/{name}"), start, end)
    policy = make_policy(
        "learned", PolicyOptions(objective="freshness-periodic", replan_every=1.0, extra={})
    )
    announce = None if case is None else Announcements(*case)
    res = simulate(policy, env, budget, rng=np.random.default_rng([seed, 0]), announce=announce)
    return res.freshness, res.visits, res.followed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    seeds = range(args.seeds)
    jobs = [(name, seed, case) for name in HISTORIES for case in [None, *CASES] for seed in seeds]
    with ProcessPoolExecutor(args.jobs) as pool:
        out = dict(zip(jobs, pool.map(run, *zip(*jobs), chunksize=1), strict=True))
    print(
        "| history | B (/day) | share announcing | delay | not announced | false per change | "
        "visits without / with (followed) | freshness without | with | difference ± SE |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in HISTORIES:
        _, _, budget, _ = window(name)
        base = np.array([out[(name, s, None)] for s in seeds], dtype=np.float64)
        for case in CASES:
            share, delay, miss, false = case
            res = np.array([out[(name, s, case)] for s in seeds], dtype=np.float64)
            diff = res[:, 0] - base[:, 0]
            se = diff.std(ddof=1) / np.sqrt(diff.size)
            delay_text = "0" if delay == 0 else f"{delay * 24:g} h"
            print(
                f"| {name} | {budget:g} | {share:g} | {delay_text} | {miss:g} | {false:g} | "
                f"{base[:, 1].mean():,.0f} / {res[:, 1].mean():,.0f} ({res[:, 2].mean():,.0f}) | "
                f"{base[:, 0].mean():.4f} | {res[:, 0].mean():.4f} | "
                f"{diff.mean():+.4f} ± {se:.4f} |"
            )
    for name in HISTORIES:
        _, _, budget, date = window(name)
        print(f"\n{name}: --budget {budget:g}/day --start {date} --days 365")


if __name__ == "__main__":
    main()
