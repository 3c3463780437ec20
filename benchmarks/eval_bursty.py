"""Evidence for ``learned-bursty``: freshness on real histories, several seeds, mean and standard error.

Run as ``python benchmarks/eval_bursty.py --data DIR [--cases ...] [--seeds 0,1,2] [--set key=value]``;
DIR holds the histories (``NAME.changes.csv.gz`` + ``NAME.pages.csv``). Prints one markdown row per
case and policy and, with ``--out``, writes every run to a CSV.

Two sets of cases:

* ``eval``: the windows of the tables of docs/benchmarks.md (each history at two budgets);
* ``tune`` (names starting with ``t-``): earlier windows of the same histories (no overlap with
  ``eval``), on which the settings of ``learned-bursty`` were chosen, ``t-peps2y`` being the
  counterpart of ``peps2y`` (two years at a low budget); ``ota-pga-versions`` (whole history in
  ``eval``) has none and is fully held out.

The page groups given to ``learned-bursty`` are the directories of the page ids
(:func:`freshcrawl.policies.bursty.prefix_groups`), and for co-changes also their first path component.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import time

import numpy as np

from freshcrawl.environments import ReplayEnvironment
from freshcrawl.policies import PolicyOptions, make_policy
from freshcrawl.policies.bursty import prefix_groups
from freshcrawl.simulation import simulate
from freshcrawl.traces.history import read_history


def _day(text: str) -> float:
    return float((dt.date.fromisoformat(text) - dt.date(1970, 1, 1)).days)


#: name -> (history, start or None, days or None, budgets)
CASES = {
    # evaluation windows (docs/benchmarks.md, "Simulation")
    "ota": ("ota-pga-versions", None, None, (5.0, 20.0)),
    "peps": ("peps", "2022-08-22", 1461, (10.0, 40.0)),
    "peps2y": ("peps", "2024-08-22", 730, (5.0,)),
    "tldr": ("tldr", "2025-06-01", 180, (200.0, 1000.0)),
    "pgerec": ("pge-outages-records", "2025-06-01", 180, (20.0, 100.0)),
    "pge": ("pge-outages", "2025-06-01", 180, (5.0, 20.0)),
    # tuning windows: before the evaluation windows
    "t-peps": ("peps", "2016-08-22", 1461, (10.0, 40.0)),
    "t-peps2y": ("peps", "2018-08-22", 730, (5.0,)),
    "t-tldr": ("tldr", "2024-06-01", 180, (200.0, 1000.0)),
    "t-pgerec": ("pge-outages-records", "2024-06-01", 180, (20.0, 100.0)),
}

BASELINES = ["learned", "oracle", "uniform", "nutch", "stormcrawler", "heritrix"]


def run_case(data, key, seeds, policies, settings, rows, budgets=None, replan=1.0):
    name, start, days, case_budgets = CASES[key]
    h = read_history(f"{data}/{name}")
    s = h.first if start is None else _day(start)
    e = h.last if days is None else s + days
    env = ReplayEnvironment(h, s, min(e, h.last))
    groups = [prefix_groups(h.pages), prefix_groups(h.pages, depth=1)]
    for budget in budgets or case_budgets:
        for pol in policies:
            for seed in seeds:
                extra = dict(settings)
                period = 1.0
                if pol.startswith("learned-bursty"):
                    extra["groups"] = groups
                else:
                    period = replan
                t = time.perf_counter()
                opts = PolicyOptions(extra=extra, replan_every=period)
                res = simulate(make_policy(pol, opts), env, budget, rng=seed)
                rows.append(
                    {
                        "case": key,
                        "budget": budget,
                        "policy": pol,
                        "seed": seed,
                        "freshness": res.freshness,
                        "age": res.age_days,
                        "harmonic": res.harmonic_staleness,
                        "visits": res.visits,
                        "seconds": time.perf_counter() - t,
                    }
                )
        summarize([r for r in rows if r["case"] == key and r["budget"] == budget])


def summarize(rows):
    by = {}
    for r in rows:
        by.setdefault((r["case"], r["budget"], r["policy"]), []).append(r)
    for (case, budget, pol), rs in by.items():
        f = np.array([r["freshness"] for r in rs])
        se = f.std(ddof=1) / np.sqrt(f.size) if f.size > 1 else float("nan")
        print(
            f"| {case} | {budget:g} | {pol} | {f.mean():.4f} ± {se:.4f} | n={f.size} "
            f"| {np.mean([r['seconds'] for r in rs]):.1f} s |",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", required=True)
    ap.add_argument("--cases", default="ota,peps,peps2y,tldr,pgerec,pge")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--policies", default="learned-bursty," + ",".join(BASELINES))
    ap.add_argument("--budgets", default=None, help="override the cases' budgets, comma-separated")
    ap.add_argument("--set", action="append", default=[], help="learned-bursty setting key=value")
    ap.add_argument(
        "--baseline-replan",
        type=float,
        default=1.0,
        help="days between re-plans of the other policies (learned-bursty plans every 1/4 day)",
    )
    ap.add_argument("--out")
    args = ap.parse_args()
    settings = {}
    for kv in args.set:
        k, _, v = kv.partition("=")
        settings[k] = float(v)
    seeds = [int(s) for s in args.seeds.split(",")]
    budgets = [float(b) for b in args.budgets.split(",")] if args.budgets else None
    rows: list[dict] = []
    for key in args.cases.split(","):
        run_case(
            args.data,
            key,
            seeds,
            args.policies.split(","),
            settings,
            rows,
            budgets,
            args.baseline_replan,
        )
    if args.out:
        with open(args.out, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
