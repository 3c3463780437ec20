"""Exponential forgetting of the binned MLE: which half-life, and what it costs per update.

Part 1 is the synthetic study the learned policy's half-life is chosen from. Pages change as a Poisson
process whose rate switches at Poisson times (mean regime length L days) by a factor drawn log-uniformly in
[1/8, 8]; initial Δτ is log-uniform in [0.03, 3]; pages are visited every τ days. The table gives the mean
squared error of the estimated change probability per visit, 1 − e^{−Δ̂τ}, against the true one, over 10
years after a 2-year burn-in (2,000 pages, seed 0), for each half-life; "none" is the plain MLE.

Part 2 times one batch update (insert + decay) and the solve, with and without forgetting.

Run: python benchmarks/bench_forgetting.py [--quick]
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

from freshcrawl.estimators import MLEBinned

HALF_LIVES = (15, 30, 60, 90, 180, 365, 730, None)


def study(tau: float, regime: float, half_life: float | None, n: int, days: float, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    burn = 730.0
    delta = np.exp(rng.uniform(math.log(0.03), math.log(3.0), n)) / tau
    est = MLEBinned(n, half_life=half_life)
    pages = np.arange(n)
    taus = np.full(n, tau)
    p_switch = -math.expm1(-tau / regime)
    err = []
    for r in range(int(days / tau)):
        sw = rng.random(n) < p_switch
        delta[sw] *= np.exp(rng.uniform(-math.log(8.0), math.log(8.0), int(sw.sum())))
        np.clip(delta, 0.01 / tau, 10.0 / tau, out=delta)
        q = -np.expm1(-delta * tau)
        est.learn_many(pages, rng.random(n) < q, tau=taus)
        if r * tau >= burn and r % 4 == 0:
            err.append(float(np.mean((-np.expm1(-est.delta_ * tau) - q) ** 2)))
    return float(np.mean(err))


def timing(n: int, half_life: float | None, rounds: int = 20) -> tuple[float, float]:
    rng = np.random.default_rng(1)
    est = MLEBinned(n, half_life=half_life)
    pages = np.arange(n)
    tau = rng.exponential(5.0, (rounds, n))
    flags = rng.random((rounds, n)) < 0.3
    est.learn_many(pages, flags[:1], tau=tau[:1])
    _ = est.delta_
    t0 = time.perf_counter()
    for r in range(1, rounds):
        est.learn_many(pages, flags[r], tau=tau[r])
    t1 = time.perf_counter()
    for r in range(1, rounds):
        est.learn_many(pages, flags[r], tau=tau[r])
        _ = est.delta_
    t2 = time.perf_counter()
    m = (rounds - 1) * n
    return m / (t1 - t0), m / (t2 - t1)


def main() -> None:
    quick = "--quick" in sys.argv
    n, days = (300, 1500.0) if quick else (2000, 3650.0)
    print("| regime L (days) | visit every τ (days) | " + " | ".join(str(h or "none") for h in HALF_LIVES) + " | best |")
    print("|---|---|" + "---:|" * len(HALF_LIVES) + "---|")
    for regime in (365.0, 730.0, 1460.0):
        for tau in (7.0, 30.0):
            res = {h: study(tau, regime, h, n, days) for h in HALF_LIVES}
            best = min((h for h in HALF_LIVES if h), key=lambda h: res[h])
            cells = " | ".join(f"{res[h]:.4f}" for h in HALF_LIVES)
            print(f"| {regime:.0f} | {tau:.0f} | {cells} | {best} |")
    print()
    print("| estimator, 10^6 pages | updates/s (insert only) | updates/s (insert + solve) |")
    print("|---|---:|---:|")
    for h in (None, 180.0):
        ins, full = timing(10**5 if quick else 10**6, h, rounds=4 if quick else 8)
        print(f"| mle-binned, half_life={h} | {ins / 1e6:.2f} M | {full / 1e6:.2f} M |")


if __name__ == "__main__":
    main()
