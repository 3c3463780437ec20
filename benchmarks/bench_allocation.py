"""Speed and exactness of the allocation solver on one core: prints markdown tables.

Run as ``python benchmarks/bench_allocation.py [--min-n 1e4] [--max-n 1e7] [--repeats 2] [--skip-scipy]
[--skip-replan] [--objectives NAME ...]``, or, for a before/after table against another checkout's
solver, ``python benchmarks/bench_allocation.py --against OTHER/src [--sizes 1e6 1e7] [--repeats 2]``:
each row is timed in two long-lived worker processes, one importing ``freshcrawl`` from OTHER/src
("before") and one from this checkout ("after"), alternating which goes first, best of the repeats.
Not a pass/fail gate. Times are the best of --repeats runs (of up to 20 below 10^6 pages, where a
solve takes milliseconds and the timings are the noisiest).

Instances: Δ ~ lognormal(0, 1.5) changes/day, w ~ 0.1 + Pareto(1.5), B = N/2 visits/day; with host caps,
pages are spread uniformly over 10^4 hosts, each capped at 1.1 B times its share of the pages (from a
few hundred to most of the caps bind, depending on N).
Targets (issue): 10^7 pages < 1 s (closed forms), < 5 s (Lambert-W forms), host caps < 2x.

Also: the same N = 10^3 instance solved by scipy.optimize (SLSQP) for time and objective, the
LambdaCrawl comparison at 10^6 pages (harmonic objective, 0% and 4% of pages observed completely), and
re-planning up to 10^6 pages: the next period's problem (a tenth of the pages with Δ re-estimated) solved
cold and with the last plan as ``warm_start``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from freshcrawl.allocation import allocate, get_objective

OBJECTIVES = ["freshness-poisson", "harmonic", "freshness-periodic", "detection"]
SCIPY_OBJECTIVES = ["freshness-poisson", "freshness-periodic"]  # SLSQP needs minutes per solve at N = 10^3
N_HOSTS = 10_000


def instance(n, seed=0):
    rng = np.random.default_rng(seed)
    delta = rng.lognormal(0.0, 1.5, n)
    w = 0.1 + rng.pareto(1.5, n)
    hosts = rng.integers(0, N_HOSTS, n)
    return delta, w, hosts


def host_caps(hosts, budget):
    """1.1 B times each host's share of the pages, visits/day."""
    return 1.1 * budget * np.bincount(hosts, minlength=N_HOSTS) / hosts.size


def timed(fn, repeats):
    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def warm_up():
    """One small solve of every kind the timed runs use (loads whatever a solver caches on first use)."""
    d, w, h = instance(20_000, seed=1)
    caps = host_caps(h, 10_000.0)
    for name in OBJECTIVES:
        allocate(d, 10_000.0, weights=w, objective=name)
        allocate(d, 10_000.0, weights=w, objective=name, hosts=h, host_caps=caps)
    complete = np.zeros(d.size, dtype=bool)
    complete[::25] = True
    allocate(d, 10_000.0, weights=w, objective="harmonic", observed_completely=complete)


def scaling_table(sizes, repeats, objectives=OBJECTIVES):
    rows = []
    for n in sizes:
        delta, w, hosts = instance(n)
        budget = 0.5 * n
        caps = host_caps(hosts, budget)
        reps = max(repeats, min(20, 10**6 // n))  # the small sizes take milliseconds and are the noisiest
        for name in objectives:
            t_plain, r_plain = timed(lambda: allocate(delta, budget, weights=w, objective=name), reps)
            t_caps, r_caps = timed(
                lambda: allocate(delta, budget, weights=w, objective=name, hosts=hosts, host_caps=caps), reps
            )
            # hosts with pages whose cap binds (a host without pages has a cap of 0 and an infinite multiplier)
            n_bind = int(np.sum((r_caps.host_lam > r_caps.lam) & (caps > 0)))
            rows.append((n, name, t_plain, r_plain.n_iter, r_plain.kkt_residual, t_caps, r_caps.n_iter,
                         r_caps.kkt_residual, n_bind, t_caps / t_plain))
        del delta, w, hosts
    print("| N | objective | time (s) | passes | KKT residual | time with 10^4 caps (s) | passes | KKT residual "
          "| caps binding (hosts with pages) | caps / plain |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, name, t, it, kkt, tc, itc, kktc, nb, ratio in rows:
        print(f"| {n:.0e} | {name} | {t:.3f} | {it} | {kkt:.1e} | {tc:.3f} | {itc} | {kktc:.1e} | {nb} | {ratio:.2f} |")


def scipy_table():
    n = 1000
    delta, w, _ = instance(n, seed=3)
    budget = 0.5 * n
    print()
    print("| N = 10^3 | freshcrawl (s) | scipy SLSQP (s) | time ratio | objective: freshcrawl - scipy "
          "| scipy: Σp - B | max abs rate difference |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in SCIPY_OBJECTIVES:
        obj = get_objective(name)
        lo = 1e-6 if name == "harmonic" else 0.0  # keeps SLSQP's line search away from log(0)
        t_ours, res = timed(lambda: allocate(delta, budget, weights=w, objective=name, p_min=lo), 3)

        def run_scipy():
            return minimize(
                lambda p: -np.sum(w * obj.value(p, delta)),
                np.full(n, budget / n),
                jac=lambda p: -w * obj.derivative(p, delta),
                bounds=[(lo, None)] * n,
                constraints=[{"type": "eq", "fun": lambda p: p.sum() - budget, "jac": lambda p: np.ones(n)}],
                method="SLSQP",
                options={"ftol": 1e-12, "maxiter": 1000},
            )

        t_scipy, ref = timed(run_scipy, 1)
        print(f"| {name} | {t_ours:.4f} | {t_scipy:.1f} | {t_scipy / t_ours:.0f}x | {res.objective + ref.fun:.1e} "
              f"| {ref.x.sum() - budget:.1e} | {np.max(np.abs(res.p - ref.x)):.1e} |")


def replan_table(sizes, repeats, objectives=OBJECTIVES):
    """The next period's plan, cold and warm-started from the last one (same pages, hosts and caps)."""
    print()
    print("| N | objective | caps | cold (ms) | passes | warm (ms) | passes | warm / cold |")
    print("|---:|---|---|---:|---:|---:|---:|---:|")
    for n in sizes:
        delta, w, hosts = instance(n)
        budget = 0.5 * n
        caps = host_caps(hosts, budget)
        rng = np.random.default_rng(7)
        delta_next = delta * np.where(rng.random(n) < 0.1, np.exp(rng.normal(0.0, 0.3, n)), 1.0)
        reps = max(repeats, min(20, 10**6 // n))
        for name in objectives:
            for kw in ({}, dict(hosts=hosts, host_caps=caps)):
                last = allocate(delta, budget, weights=w, objective=name, **kw)
                t_cold, cold = timed(lambda: allocate(delta_next, budget, weights=w, objective=name, **kw), reps)
                t_warm, warm = timed(
                    lambda: allocate(delta_next, budget, weights=w, objective=name, warm_start=last, **kw), reps
                )
                print(f"| {n:.0e} | {name} | {'10^4' if kw else 'none'} | {1e3 * t_cold:.2f} | {cold.n_iter} "
                      f"| {1e3 * t_warm:.2f} | {warm.n_iter} | {t_warm / t_cold:.2f} |")


def lambdacrawl_table(repeats):
    n = 1_000_000
    delta, w, _ = instance(n, seed=5)
    budget = 0.5 * n
    rng = np.random.default_rng(6)
    print()
    print("| LambdaCrawl problem, 10^6 pages | freshcrawl (s) | passes | KKT residual | budget used - B "
          "| published implementation (s) | speed-up |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for frac, published in [(0.0, 23.0), (0.04, 220.0)]:
        complete = rng.random(n) < frac if frac else None
        t, res = timed(
            lambda: allocate(delta, budget, weights=w, objective="harmonic", observed_completely=complete), repeats
        )
        label = "all observed at visits only" if not frac else f"{frac:.0%} observed completely"
        print(f"| {label} | {t:.3f} | {res.n_iter} | {res.kkt_residual:.1e} | {res.p.sum() - budget:.1e} "
              f"| {published:.0f} | {published / t:.0f}x |")


COMPARE_OBJECTIVES = ["freshness-poisson", "freshness-periodic"]


def worker():
    """Serve timing requests on stdin (one JSON object a line: n, objective, caps), one JSON reply a line."""
    warm_up()
    cache = {}
    for line in sys.stdin:
        req = json.loads(line)
        n = int(req["n"])
        if n not in cache:
            cache.clear()
            delta, w, hosts = instance(n)
            cache[n] = (delta, w, hosts, host_caps(hosts, 0.5 * n))
        delta, w, hosts, caps = cache[n]
        kw = {"hosts": hosts, "host_caps": caps} if req["caps"] else {}
        t0 = time.perf_counter()
        res = allocate(delta, 0.5 * n, weights=w, objective=req["objective"], **kw)
        t = time.perf_counter() - t0
        print(json.dumps({"t": t, "n_iter": int(res.n_iter), "kkt": float(res.kkt_residual)}), flush=True)


def compare_table(against, sizes, repeats, objectives=COMPARE_OBJECTIVES):
    """Before/after: the solver of another checkout's ``src`` against this one, alternating per request."""
    here = str(Path(__file__).resolve().parents[1] / "src")
    procs = {}
    for label, src in (("before", str(Path(against).resolve())), ("after", here)):
        env = dict(os.environ, PYTHONPATH=src)
        procs[label] = subprocess.Popen([sys.executable, __file__, "--worker"], env=env, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)

    def ask(label, req):
        proc = procs[label]
        proc.stdin.write(json.dumps(req) + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    print("| N | objective | host caps | before (s) | after (s) | after / before | passes before, after "
          "| KKT residual after |")
    print("|---:|---|---|---:|---:|---:|---|---:|")
    try:
        for n in sizes:
            for name in objectives:
                for caps in (False, True):
                    req = {"n": n, "objective": name, "caps": caps}
                    best = {"before": None, "after": None}
                    for r in range(repeats):
                        for label in (("before", "after") if r % 2 == 0 else ("after", "before")):
                            out = ask(label, req)
                            if best[label] is None or out["t"] < best[label]["t"]:
                                best[label] = out
                    b, a = best["before"], best["after"]
                    print(f"| {n:.0e} | {name} | {'10^4' if caps else 'none'} | {b['t']:.3f} | {a['t']:.3f} "
                          f"| {a['t'] / b['t']:.2f} | {b['n_iter']}, {a['n_iter']} | {a['kkt']:.1e} |", flush=True)
    finally:
        for proc in procs.values():
            proc.stdin.close()
            proc.wait()


def main():
    if "--worker" in sys.argv:
        worker()
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="another checkout's src directory: print the before/after table")
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e6, 1e7], help="page counts of --against")
    parser.add_argument("--min-n", type=float, default=1e4)
    parser.add_argument("--max-n", type=float, default=1e7)
    parser.add_argument("--skip-scipy", action="store_true", help="leave out the minutes-long SLSQP runs")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--objectives", nargs="+", choices=OBJECTIVES, default=OBJECTIVES,
                        help="objectives of the scaling and re-planning tables (default: all four)")
    parser.add_argument("--skip-replan", action="store_true", help="leave out the re-planning table")
    args = parser.parse_args()
    if args.against:
        compare_table(args.against, [int(x) for x in args.sizes], args.repeats)
        return
    warm_up()
    sizes = [int(10**k) for k in range(4, 8) if args.min_n <= 10**k <= args.max_n]
    scaling_table(sizes, args.repeats, args.objectives)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    n = sizes[-1]
    delta, w, hosts = instance(n)
    print(f"\nPeak RSS of the process after the scaling runs: {peak:.0f} MiB (its inputs at N = {n:.0e}: Δ, w "
          f"float64 and host int64, {n * 24 / 2**20:.0f} MiB). Arrays allocated by one solve at N = {n:.0e} "
          f"(host caps; tracemalloc peak, the returned rates included):")
    for name in ("harmonic", "freshness-poisson"):  # Poisson freshness also lists the pages near a bound
        tracemalloc.start()
        allocate(delta, 0.5 * n, weights=w, objective=name, hosts=hosts, host_caps=host_caps(hosts, 0.5 * n))
        solve_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"  {name}: {solve_peak / 2**20:.0f} MiB = {solve_peak / (8 * n):.2f} arrays of N float64")
    if not args.skip_scipy:
        scipy_table()
    lambdacrawl_table(args.repeats)
    if not args.skip_replan:
        replan_table([m for m in sizes if m <= 10**6], args.repeats, args.objectives)


if __name__ == "__main__":
    main()
