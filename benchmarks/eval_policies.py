"""Policies at equal visits on the shipped histories: freshness, visits, paired differences, the default rule.

Run as ``python benchmarks/eval_policies.py --data DIR [--cases ...] [--seeds 0,1,2,3,4] [--jobs 2]
[--csv FILE]``, or ``--from-csv FILE`` to print the tables of an earlier run. DIR holds the histories
(``NAME.changes.csv.gz`` + ``NAME.pages.csv``; the repository's ``data/``). Every run goes through the
engine's budget rule (at most B t visits over the first t days, at most B W + one day of budget in any
window of W days).

Prints, in markdown:

* freshness, mean ± standard error over the seeds, per case and policy, with B W and the visits made;
* the paired differences (same seed) of each candidate default (``--candidates``) against uniform,
  each crawler rule and the oracle, mean ± standard error, marked ``>`` (ahead by more than two
  standard errors), ``=`` (within two) or ``<`` (behind by more than two);
* the default rule: a candidate passes if it is never behind (``<``) in a case that counts, and ahead
  of all of uniform and the crawler rules (``>``) in most of those cases. ``pge-outages`` (one page: no
  allocation to make) does not count, nor do ``tldr`` and ``pge-outages-records`` (not shipped: the
  default rule is measured on the shipped histories).

The page groups given to ``learned-bursty`` are the directories of the page ids
(:func:`freshcrawl.policies.bursty.prefix_groups`), and for co-changes also their first path
component, as ``freshcrawl simulate`` does.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

#: name -> (history, start or None, days or None, budgets, counts for the default rule)
CASES = {
    "ota": ("ota-pga-versions", None, None, (5.0, 20.0), True),
    "peps2y": ("peps", "2024-08-22", 730, (5.0,), True),
    "peps": ("peps", "2022-08-22", 1461, (10.0, 40.0), True),
    "pge": ("pge-outages", "2025-06-01", 180, (5.0, 20.0), False),
    # not shipped (same collection): DIR must hold them
    "tldr": ("tldr", "2025-06-01", 180, (200.0, 1000.0), False),
    "pgerec": ("pge-outages-records", "2025-06-01", 180, (20.0, 100.0), False),
}
LABELS = {
    "ota": "ota-pga-versions, whole",
    "peps2y": "peps, last 2 years",
    "peps": "peps, last 4 years",
    "pge": "pge-outages, 180 days",
    "tldr": "tldr, 180 days",
    "pgerec": "pge-outages-records, 180 days",
}
POLICIES = [
    "learned",
    "learned-bursty",
    "oracle",
    "uniform",
    "nutch",
    "stormcrawler",
    "heritrix",
]
CRAWLERS = ["nutch", "stormcrawler", "heritrix"]


def _day(text: str) -> float:
    return float((dt.date.fromisoformat(text) - dt.date(1970, 1, 1)).days)


_ENVS: dict = {}


def _env(data: str, key: str):
    from freshcrawl.environments import ReplayEnvironment
    from freshcrawl.policies.bursty import prefix_groups
    from freshcrawl.traces.history import read_history

    if key not in _ENVS:
        name, start, days, _, _ = CASES[key]
        h = read_history(os.path.join(data, name))
        s = h.first if start is None else _day(start)
        e = h.last if days is None else s + days
        groups = [prefix_groups(h.pages), prefix_groups(h.pages, depth=1)]
        _ENVS[key] = (ReplayEnvironment(h, s, min(e, h.last)), groups)
    return _ENVS[key]


def run_one(data: str, key: str, budget: float, policy: str, seed: int) -> dict:
    """One simulation; a row of the CSV."""
    from freshcrawl.policies import PolicyOptions, make_policy
    from freshcrawl.policies.bursty import BurstyPolicy
    from freshcrawl.simulation import simulate

    env, groups = _env(data, key)
    pol = make_policy(policy, PolicyOptions())
    if isinstance(pol, BurstyPolicy) and pol.groups is None:
        pol.groups = groups
    t = time.perf_counter()
    res = simulate(pol, env, budget, rng=seed)
    return {
        "case": key,
        "budget": budget,
        "policy": policy,
        "seed": seed,
        "freshness": res.freshness,
        "age": res.age_days,
        "harmonic": res.harmonic_staleness,
        "visits": res.visits,
        "dropped": res.dropped,
        "budget_visits": budget * (env.end - env.start),
        "seconds": time.perf_counter() - t,
    }


def _mse(x: np.ndarray) -> tuple[float, float]:
    return float(x.mean()), float(x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1 else float("nan")


def tables(rows: list[dict], candidates: list[str]) -> str:
    """The markdown tables of a run."""
    by: dict = {}
    for r in rows:
        by.setdefault((r["case"], float(r["budget"])), {}).setdefault(r["policy"], {})[
            int(r["seed"])
        ] = r
    cases = sorted(by, key=lambda cb: (list(CASES).index(cb[0]), cb[1]))
    policies = [p for p in POLICIES if any(p in by[c] for c in cases)]
    out = []
    out.append("| history, window, budget/day | " + " | ".join(policies) + " |")
    out.append("|---|" + "---:|" * len(policies))
    for c in cases:
        cells = []
        for p in policies:
            runs = by[c].get(p, {})
            f = np.array([float(r["freshness"]) for r in runs.values()])
            cells.append(f"{_mse(f)[0]:.4f} ± {_mse(f)[1]:.4f}" if f.size else "")
        out.append(f"| {LABELS[c[0]]}, {c[1]:g} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("| history, window, budget/day | B·W | " + " | ".join(policies) + " |")
    out.append("|---|---:|" + "---:|" * len(policies))
    for c in cases:
        cells = []
        bw = next(iter(next(iter(by[c].values())).values()))["budget_visits"]
        for p in policies:
            runs = by[c].get(p, {})
            v = np.array([float(r["visits"]) for r in runs.values()])
            cells.append(f"{v.mean():,.0f}" if v.size else "")
        out.append(f"| {LABELS[c[0]]}, {c[1]:g} | {float(bw):,.0f} | " + " | ".join(cells) + " |")
    refs = ["uniform", *CRAWLERS, "oracle"]
    verdicts = {}
    for cand in candidates:
        others = [x for x in refs if x != cand]
        out.append("")
        out.append(
            "| history, window, budget/day | " + " | ".join(f"{cand} − {x}" for x in others) + " |"
        )
        out.append("|---|" + "---:|" * len(others))
        verdicts[cand] = []
        for c in cases:
            cells = []
            marks = {}
            for x in others:
                a, b = by[c].get(cand, {}), by[c].get(x, {})
                seeds = sorted(set(a) & set(b))
                if len(seeds) < 2:
                    cells.append("")
                    continue
                d = np.array([float(a[s]["freshness"]) - float(b[s]["freshness"]) for s in seeds])
                m, se = _mse(d)
                mark = ">" if m > 2 * se else "<" if m < -2 * se else "="
                if se == 0 and m == 0:
                    mark = "="
                marks[x] = mark
                cells.append(f"{m:+.4f} ± {se:.4f} {mark}")
            out.append(f"| {LABELS[c[0]]}, {c[1]:g} | " + " | ".join(cells) + " |")
            if CASES[c[0]][4]:
                verdicts[cand].append((c, marks))
    out.append("")
    for cand, vs in verdicts.items():
        if not vs:
            out.append(f"- {cand}: no case here counts for the default rule")
            continue
        rule = ["uniform", *CRAWLERS]
        behind = [(c, x) for c, m in vs for x in rule if m.get(x) == "<"]
        ahead_all = [c for c, m in vs if all(m.get(x) == ">" for x in rule)]
        ahead_n = sum(m.get(x) == ">" for _, m in vs for x in rule)
        n_cmp = sum(x in m for _, m in vs for x in rule)
        ok = not behind and 2 * len(ahead_all) > len(vs)
        out.append(
            f"- {cand}: behind in {len(behind)} comparisons"
            + (
                " (" + ", ".join(f"{LABELS[c[0]]} {c[1]:g} vs {x}" for c, x in behind) + ")"
                if behind
                else ""
            )
            + f"; ahead of all of uniform and the crawler rules by > 2 SE in {len(ahead_all)} of"
            f" {len(vs)} cases; ahead in {ahead_n} of {n_cmp} comparisons: "
            + ("passes the default rule" if ok else "does not pass the default rule")
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", default="data")
    ap.add_argument("--cases", default="ota,peps2y,peps,pge", help=f"of {', '.join(CASES)}")
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--candidates", default="learned-bursty,learned")
    ap.add_argument("--jobs", type=int, default=1, help="simulations run at once (processes)")
    ap.add_argument("--csv", help="write every run to this CSV")
    ap.add_argument("--from-csv", help="print the tables of an earlier run's CSV, run nothing")
    args = ap.parse_args()
    candidates = args.candidates.split(",")
    if args.from_csv:
        with open(args.from_csv, newline="") as fh:
            print(tables(list(csv.DictReader(fh)), candidates))
        return
    seeds = [int(s) for s in args.seeds.split(",")]
    tasks = [
        (args.data, key, budget, pol, seed)
        for key in args.cases.split(",")
        for budget in CASES[key][3]
        for seed in seeds
        for pol in args.policies.split(",")
    ]
    rows: list[dict] = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for r in pool.map(run_one, *zip(*tasks)):
            rows.append(r)
            print(
                f"{r['case']} {r['budget']:g} {r['policy']} seed {r['seed']}: "
                f"{r['freshness']:.4f}, {r['visits']} visits, {r['seconds']:.1f} s",
                flush=True,
            )
            if args.csv:
                with open(args.csv, "w", newline="") as fh:
                    w = csv.DictWriter(fh, fieldnames=list(rows[0]))
                    w.writeheader()
                    w.writerows(rows)
    print(tables(rows, candidates))


if __name__ == "__main__":
    main()
