"""Speed of the change-rate estimators; prints markdown tables.

1. Batch update of n pages at once (n = 1e6 and 1e7), as observations per second, for the online
   estimators: every page updated (pages sorted, as ``np.arange``), and a random 10% subset of the pages
   (sorted, and in random order, which costs a sort to rule out duplicates). "update" is the public
   ``learn_many`` call (conversion, validation and the update); "kernel" is the update alone.
2. Cost of one ``learn_one`` and the ``predict_one`` that follows it, after k visits of a one-page
   estimator (k = 10, 1e3, 1e5), for the exact MLE / moment matching (re-solved on the whole history) and
   their binned online forms.
3. Estimator state in bytes per page.

Run: ``python benchmarks/bench_estimators.py [--quick]``. Not a pass/fail gate; numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import numpy as np

from freshcrawl.estimators import (
    MLE,
    MLEBinned,
    MomentMatching,
    MomentMatchingBinned,
    make_estimator,
)
from freshcrawl.estimators._checks import check_batch

ONLINE = ["naive", "lln", "sa", "sam", "lln-interval", "sa-interval", "sam-interval"]


def best_of(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def bench_batch(sizes, repeat):
    print("## Batch update throughput (million observations per second, one core)\n")
    print(
        "| estimator | n pages | pages updated | order | update (M obs/s) | kernel (M obs/s) | ns / obs (update) |"
    )
    print("|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for n in sizes:
        tau_all = rng.exponential(1.0, n)
        p_all = np.full(n, 1.0)
        ch_all = rng.random(n) < 0.4
        subset = np.sort(rng.choice(n, n // 10, replace=False))
        cases = [
            ("all", "sorted", np.arange(n)),
            ("10% random", "sorted", subset),
            ("10% random", "shuffled", rng.permutation(subset)),
        ]
        for name in ONLINE:
            est = make_estimator(name, n)
            for label, order, pages in cases:
                m = pages.size
                ch, ta, pr = ch_all[:m], tau_all[:m], p_all[:m]
                est.learn_many(pages[:10], ch[:10], ta[:10], pr[:10])  # warm
                t_up = best_of(partial(est.learn_many, pages, ch, ta, pr), repeat)
                # the update alone, on already-checked 2-d inputs
                t_k = best_of(partial(est._apply, *check_batch(pages, ch, ta, pr, n)), repeat)
                print(
                    f"| {name} | {n:.0e} | {label} | {order} | {m / t_up / 1e6:.0f} | {m / t_k / 1e6:.0f} | "
                    f"{t_up / m * 1e9:.1f} |"
                )
            del est  # free the state of 1e7 pages before the next estimator allocates its own
    print()


def bench_growth(ks):
    print("## Cost of one learn_one + predict_one after k visits (microseconds)\n")
    print("| estimator | " + " | ".join(f"k = {k:.0e}" for k in ks) + " |")
    print("|---|" + "---|" * len(ks))
    rng = np.random.default_rng(1)
    for label, cls in (
        ("mle (exact)", MLE),
        ("mm (exact)", MomentMatching),
        ("mle-binned", MLEBinned),
        ("mm-binned", MomentMatchingBinned),
    ):
        row = []
        for k in ks:
            tau = rng.exponential(1.0, k)
            ch = rng.random(k) < -np.expm1(-2.0 * tau)
            est = cls()
            est.learn_many([0], ch[:, None], tau[:, None])  # k visits of page 0, in one call
            est.predict_one(0)
            reps = 5 if k >= 10**5 else 50
            samples = []
            for i in range(reps):
                t0 = time.perf_counter()
                est.learn_one(0, bool(ch[i % k]), tau=float(tau[i % k]))
                est.predict_one(0)
                samples.append(time.perf_counter() - t0)
            row.append(f"{np.median(samples) * 1e6:.1f}")
        print(f"| {label} | " + " | ".join(row) + " |")
    print()


def bench_state():
    print("## Estimator state (bytes per page)\n")
    print("| estimator | bytes / page |")
    print("|---|---|")
    n = 10_000
    for name in ONLINE + ["mle-binned", "mm-binned"]:
        est = make_estimator(name, n)
        print(f"| {name} | {est.state_nbytes / n:.0f} |")
    print("| mle, mm (exact) | 8 (estimate) + 17 per visit kept |")
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n = 1e5 and 1e6 only, fewer repeats")
    args = ap.parse_args()
    sizes = [10**5, 10**6] if args.quick else [10**6, 10**7]
    bench_batch(sizes, repeat=2 if args.quick else 3)
    bench_growth([10, 10**3, 10**5])
    bench_state()


if __name__ == "__main__":
    main()
