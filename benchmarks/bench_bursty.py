"""Speed of ``learned-bursty`` on the tldr year at 10,000 visits/day (target: under 30 s).

Run as ``python benchmarks/bench_bursty.py --tldr PREFIX [--policies learned-bursty,learned,uniform]``;
PREFIX is the tldr history's prefix (``PREFIX.changes.csv.gz`` + ``PREFIX.pages.csv``; not shipped).
The window is the last 365 days of the history, as in ``bench_simulation.py``. Prints a markdown table
with wall-clock and CPU seconds (on a shared machine the CPU time is the cost of the run itself).
"""

from __future__ import annotations

import argparse
import time

from freshcrawl.environments import ReplayEnvironment
from freshcrawl.policies import PolicyOptions, make_policy
from freshcrawl.policies.bursty import prefix_groups
from freshcrawl.simulation import simulate
from freshcrawl.traces.history import read_history


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--tldr", required=True, help="prefix of the tldr change history")
    ap.add_argument(
        "--budget", type=float, default=10_000.0, help="visits per day (default 10,000)"
    )
    ap.add_argument("--days", type=float, default=365.0)
    ap.add_argument("--policies", default="learned-bursty,learned,uniform")
    args = ap.parse_args()
    t = time.perf_counter()
    h = read_history(args.tldr)
    env = ReplayEnvironment(h, h.last - args.days, h.last)
    groups = [prefix_groups(h.pages), prefix_groups(h.pages, depth=1)]
    print(f"read {h.n_pages:,} pages in {time.perf_counter() - t:.1f} s (not counted below)")
    print("| policy | visits | seconds (wall) | seconds (CPU) | freshness |")
    print("|---|---:|---:|---:|---:|")
    for name in args.policies.split(","):
        extra = {"groups": groups} if name.startswith("learned-bursty") else {}
        t, c = time.perf_counter(), time.process_time()
        res = simulate(make_policy(name, PolicyOptions(extra=extra)), env, args.budget, rng=0)
        dt, dc = time.perf_counter() - t, time.process_time() - c
        print(
            f"| {name} | {res.visits:,} | {dt:.1f} | {dc:.1f} | {res.freshness:.4f} |", flush=True
        )


if __name__ == "__main__":
    main()
