"""Warm speed of the numpy kernels against the numba kernels they replaced, and their agreement.

The numba versions are read from git at commit 3fb8f94 (the last with them) and imported from a
temporary folder. Every kernel is called on the same input by both versions, alternating, after a call
that compiles the numba one; the table gives the best of ``--repeat`` calls of each, their ratio, and
the largest relative difference of the results. Sizes are those of one update of a crawl or of one
period of a simulation: one visit of each of ``--pages`` pages (the estimators), one day of visits
(the dispatch), a replay of that many pages (the freshness integrals).

    python benchmarks/bench_numpy_kernels.py [--pages 1000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from freshcrawl.environments import metrics as new_metrics
from freshcrawl.estimators import _kernels as new_k
from freshcrawl.scheduling import periodic as new_periodic
from freshcrawl.simulation import dispatch as new_dispatch

ROOT = Path(__file__).resolve().parents[1]
BASE = "3fb8f94"
OLD = {
    "est": "src/freshcrawl/estimators/_kernels.py",
    "metrics": "src/freshcrawl/environments/metrics.py",
    "periodic": "src/freshcrawl/scheduling/periodic.py",
    "dispatch": "src/freshcrawl/simulation/dispatch.py",
}


def load_old(folder: Path) -> dict:
    mods = {}
    for name, path in OLD.items():
        src = subprocess.run(
            ["git", "show", f"{BASE}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True
        ).stdout
        file = folder / f"old_{name}.py"
        file.write_text(src)
        spec = importlib.util.spec_from_file_location(f"old_{name}", file)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        mods[name] = mod
    return mods


def rel_diff(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    both = np.isfinite(a) & np.isfinite(b)
    if not np.array_equal(np.isfinite(a), np.isfinite(b)):
        return np.inf
    if not both.any():
        return 0.0
    return float(np.max(np.abs(a[both] - b[both]) / np.maximum(np.abs(b[both]), 1e-300)))


def compare(rows, label, new_fn, old_fn, setup, repeat):
    """Alternate the two versions on fresh copies of the same input (``setup()``, untimed).

    A function returns the arrays to compare, or None to compare the arrays it was given (updated in
    place)."""

    def timed(fn):
        args = setup()
        t = time.perf_counter()
        out = fn(*args)
        return time.perf_counter() - t, args if out is None else out

    timed(old_fn)  # compile
    t_new = t_old = np.inf
    for _ in range(repeat):
        tn, res_new = timed(new_fn)
        to, res_old = timed(old_fn)
        t_new, t_old = min(t_new, tn), min(t_old, to)
    diff = max([rel_diff(x, y) for x, y in zip(res_new, res_old, strict=True)], default=0.0)
    rows.append((label, t_old, t_new, diff))


def estimator_cases(rows, old, n, repeat):
    rng = np.random.default_rng(0)
    pages = np.arange(n)
    ch = (rng.random(n) < 0.4)[None, :]
    tau = rng.exponential(1.0, n)[None, :]
    p = np.full((1, n), 1.0)
    k_state = rng.integers(0, 50, n)
    d_state = rng.gamma(1.0, 1.0, n)

    def state(*shapes):
        return lambda: tuple(x.copy() for x in shapes)

    o = old["est"]
    eta, beta, omega, etab = 0.75, 0.6, 1.0, o.step_table(0.75)
    ztab = o.zeta_table(eta, beta, omega)
    n_chg = (k_state * 0.4).astype(np.int64)
    cases = [
        (
            "naive",
            lambda nv, nc, d: new_k.naive_batch(pages, ch, p, nv, nc, d),
            lambda nv, nc, d: o.naive_batch(pages, ch, p, nv, nc, d),
            state(k_state, n_chg, d_state),
        ),
        (
            "lln",
            lambda nv, nc, d: new_k.lln_batch(pages, ch, p, nv, nc, d, 1, 0.0),
            lambda nv, nc, d: o.lln_batch(pages, ch, p, nv, nc, d, 1, 0.0),
            state(k_state, n_chg, d_state),
        ),
        (
            "lln-interval",
            lambda nv, nc, nu, d0, st, d: new_k.lln_interval_batch(
                pages, ch, tau, nv, nc, nu, d0, st, d, 0, 0.0
            ),
            lambda nv, nc, nu, d0, st, d: o.lln_interval_batch(
                pages, ch, tau, nv, nc, nu, d0, st, d, 0, 0.0
            ),
            state(k_state, n_chg, d_state * 3, k_state * 0.6, k_state * 1.0 + 1, d_state),
        ),
        (
            "sa",
            lambda nv, d: new_k.sa_batch(pages, ch, tau, p, nv, d, eta),
            lambda nv, d: o.sa_batch(pages, ch, p, nv, d, eta, etab),
            state(k_state, d_state),
        ),
        (
            "sa-interval",
            lambda nv, d: new_k.sa_batch(pages, ch, tau, p, nv, d, eta, interval=True),
            lambda nv, d: o.sa_interval_batch(pages, ch, tau, p, nv, d, eta, etab),
            state(k_state, d_state),
        ),
        (
            "sam-interval",
            lambda nv, d, pr: new_k.sa_batch(
                pages, ch, tau, p, nv, d, eta, interval=True, prev=pr, momentum=(beta, omega)
            ),
            lambda nv, d, pr: o.sam_interval_batch(
                pages, ch, tau, p, nv, d, pr, eta, beta, omega, etab, ztab
            ),
            state(k_state, d_state, d_state * 0.9),
        ),
    ]
    for label, fn_new, fn_old, setup in cases:
        compare(rows, f"estimators: {label} update", fn_new, fn_old, setup, repeat)

    # binned slots: a state of 8 visits per page, then one more visit (insert) and the solve
    nb, lw = 16, np.log(1.1)
    key0, st0 = np.full((n, nb), np.nan), np.zeros((n, nb, 6))
    nv0 = np.zeros(n, dtype=np.int64)
    for _ in range(8):
        o.binned_batch(
            pages, rng.random((1, n)) < 0.4, rng.exponential(1.0, (1, n)), nv0, key0, st0, lw
        )
    compare(
        rows,
        "estimators: mle-binned update",
        lambda nv, k, s: new_k.binned_batch(pages, ch, tau, nv, k, s, lw),
        lambda nv, k, s: o.binned_batch(pages, ch, tau, nv, k, s, lw),
        state(nv0, key0, st0),
        repeat,
    )
    for mm in (False, True):
        compare(
            rows,
            f"estimators: {'mm' if mm else 'mle'}-binned solve",
            lambda d, mm=mm: new_k.binned_solve(pages, st0, nv0, d, mm),
            lambda d, mm=mm: o.binned_solve(pages, st0, nv0, d, mm),
            state(d_state),
            repeat,
        )
    # exact forms: 20 visits of each of n/10 pages in the log, every page re-solved
    m = n // 10
    log_pages = np.tile(np.arange(m), 20)
    log_ch = rng.random(log_pages.size) < 0.4
    log_tau = rng.exponential(1.0, log_pages.size)
    dirty = np.arange(m)
    for mm in (False, True):
        compare(
            rows,
            f"estimators: {'mm' if mm else 'mle'} (exact) solve, {m:,} pages x 20 visits",
            lambda d, mm=mm: new_k.exact_batch_solve(log_pages, log_ch, log_tau, dirty, d, mm),
            lambda d, mm=mm: o.exact_batch_solve(log_pages, log_ch, log_tau, dirty, d, mm),
            state(np.zeros(m)),
            repeat,
        )
    shuffled = rng.permutation(n)
    compare(
        rows,
        "estimators: batch check (pages shuffled)",
        lambda: (new_k.check_batch(shuffled, tau, p, n), new_k.find_duplicate(shuffled, n)),
        lambda: (o.check_batch(shuffled, tau, p, n), o.find_duplicate(shuffled, np.zeros(n, bool))),
        tuple,
        repeat,
    )


def dispatch_cases(rows, old, n, repeat):
    rng = np.random.default_rng(1)
    rates = rng.gamma(0.7, 1.0, n)
    rates *= n / rates.sum()  # one day of budget n
    lo, hi = np.zeros(n), np.ones(n)
    phase0 = rng.random(n)
    for label, mod_new, mod_old, setup, call in (
        ("periodic visits", new_periodic, old["periodic"], lambda: (phase0.copy(),),
         lambda mod, phase: (*mod.periodic_visits(rates, phase, lo, hi), phase)),
        ("Poisson visits", new_dispatch, old["dispatch"], tuple,
         lambda mod: mod.poisson_visits(rates, lo, hi, np.random.default_rng(7))),
    ):  # fmt: skip
        compare(rows, f"dispatch: {label}, one day", lambda *a, m=mod_new, c=call: c(m, *a),
                lambda *a, m=mod_old, c=call: c(m, *a), setup, repeat)  # fmt: skip


def replay_cases(rows, old, n, repeat):
    rng = np.random.default_rng(2)
    delta = rng.gamma(0.5, 2.0, n)
    counts = rng.poisson(delta * 30.0)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    page_of = np.repeat(np.arange(n), counts)
    ctimes = rng.random(page_of.size) * 30.0
    ctimes = ctimes[np.lexsort((ctimes, page_of))]
    # one day of periodic visits, then the checkpoint
    rates = np.full(n, 2.0)
    vp, vt = new_periodic.periodic_visits(rates, rng.random(n), np.full(n, 10.0), np.full(n, 11.0))
    ptr0 = offsets[:-1] + np.array(
        [np.searchsorted(ctimes[a:b], 10.0, side="right") for a, b in itertools.pairwise(offsets)]
    )
    has = ptr0 < offsets[1:]
    nxt0 = np.where(has, ctimes[np.minimum(ptr0, ctimes.size - 1)], np.inf)

    def setup():
        return (
            ptr0.copy(), nxt0.copy(), np.zeros(n, np.int64), np.zeros(n), np.full(n, np.inf),
            np.full(n, 10.0), np.ones(n, bool), np.zeros(6), np.zeros(vp.size, bool),
        )  # fmt: skip

    def run(mod):
        def fn(ptr, nxt, nu, hu, fu, cur, syn, acc, changed):
            mod.advance_kernel(
                vp, vt, 11.0, np.full(n, np.inf), mod.MODE_REPLAY, np.zeros(1),
                np.random.default_rng(0), offsets, ctimes, ptr, nxt, nu, hu, fu, cur, syn,
                np.ones(n), acc, changed,
            )  # fmt: skip

        return fn

    compare(rows, f"replay: one day of {vp.size:,} visits and a checkpoint",
            run(new_metrics), run(old["metrics"]), setup, repeat)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pages", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rows: list = []
    with tempfile.TemporaryDirectory() as tmp:
        old = load_old(Path(tmp))
        estimator_cases(rows, old, args.pages, args.repeat)
        dispatch_cases(rows, old, args.pages, args.repeat)
        replay_cases(rows, old, args.pages // 10, args.repeat)
    print(f"{args.pages:,} pages; best of {args.repeat}, alternating\n")
    print("| kernel | numba (ms) | numpy (ms) | numpy / numba | largest relative difference |")
    print("|---|---:|---:|---:|---:|")
    for label, t_old, t_new, diff in rows:
        print(
            f"| {label} | {t_old * 1e3:.1f} | {t_new * 1e3:.1f} | {t_new / t_old:.1f} | {diff:.1e} |"
        )


if __name__ == "__main__":
    main()
