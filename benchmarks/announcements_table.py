"""Freshness with and without announcements on the real change histories, at equal visits.

Run: ``python benchmarks/announcements_table.py`` (from the repository root); prints the Markdown table
of docs/announcements.md. For each history, the last 365 days; budget B = the pages' changes per day
in that window (one visit per change on average); oracle rates; ten seeds (the share drawn, phases,
follow draws), mean and standard error over seeds of the mean paired per-page difference.
"""

from __future__ import annotations

import numpy as np

from freshcrawl.simulation.announcements import replay_announcements
from freshcrawl.traces.history import read_history

HISTORIES = ("peps", "ota-pga-versions")
CASES = [  # (share, delay in days, share of changes not announced)
    (0.25, 0.0, 0.0),
    (0.5, 0.0, 0.0),
    (1.0, 0.0, 0.0),
    (0.5, 1.0 / 24, 0.0),
    (0.5, 1.0 / 24, 0.2),
]
SEEDS = range(10)


def main() -> None:
    print(
        "| history | pages | share announcing | delay | not announced | visits without / with | "
        "freshness without | with | difference (SE) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in HISTORIES:
        h = read_history(f"data/{name}")
        end = h.last
        start = end - 365.0
        for share, delay, miss in CASES:
            n_changes = sum(
                ((h.page_times(i) > start) & (h.page_times(i) <= end)).sum()
                for i in range(h.n_pages)
                if h.born[i] <= start and h.died[i] >= end
            )
            budget = n_changes / 365.0
            res = [
                replay_announcements(
                    h,
                    start=start,
                    end=end,
                    budget=budget,
                    share=share,
                    delay_days=delay,
                    miss=miss,
                    rng=seed,
                )
                for seed in SEEDS
            ]
            diffs = np.array([(r.freshness_with - r.freshness_without).mean() for r in res])
            f0 = np.mean([r.freshness_without.mean() for r in res])
            f1 = np.mean([r.freshness_with.mean() for r in res])
            v0 = np.mean([r.visits_without for r in res])
            v1 = np.mean([r.visits_with for r in res])
            se = diffs.std(ddof=1) / np.sqrt(len(diffs))
            delay_text = "0" if delay == 0 else f"{delay * 24:g} h"
            print(
                f"| {name} | {res[0].n_pages} | {share:g} | {delay_text} | {miss:g} | {v0:,.0f} / {v1:,.0f} | "
                f"{f0:.3f} | {f1:.3f} | {diffs.mean():+.3f} ({se:.3f}) |"
            )


if __name__ == "__main__":
    main()
