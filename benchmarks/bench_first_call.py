"""First-call cost of ``freshcrawl allocate``: the whole command on an empty numba cache, then again.

Each objective is run as a separate command (Python start, imports, reading the CSV, compiling or
loading the kernels, the solve), with and without host caps, first with an empty numba cache of its own
(``NUMBA_CACHE_DIR``: what a fresh install meets), then a second time on the cache the first left.

    python benchmarks/bench_first_call.py [--pages 2000] [--hosts 50] [--objectives detection,harmonic]

Prints one row per objective (seconds): first call, first call with host caps, next call, next call with
host caps. Nothing leaves this machine: the commands read and write files in a temporary directory.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

OBJECTIVES = ["freshness-poisson", "freshness-periodic", "harmonic", "detection", "detection-discrete"]


def write_inputs(folder: Path, n_pages: int, n_hosts: int, seed: int = 0) -> tuple[Path, Path, Path]:
    """Page tables (page, delta, host) and a host-cap table (host, max_rate).

    Δ ~ Gamma(0.7, 1) changes/day; the second page table gives 1 − e^(−Δ), the probability of a change per
    step, for ``detection-discrete``. The hosts are drawn uniformly; the even ones are capped at 0.2
    visits/day a page (below their share of a budget of 0.5 a page: they bind), the odd ones at 2.
    """
    rng = np.random.default_rng(seed)
    delta = rng.gamma(0.7, 1.0, n_pages)
    hosts = rng.integers(0, n_hosts, n_pages)
    page, host = [f"p{i}" for i in range(n_pages)], [f"h{h}" for h in hosts]
    pages, pages_discrete = folder / "pages.csv", folder / "pages-discrete.csv"
    pd.DataFrame({"page": page, "delta": delta, "host": host}).to_csv(pages, index=False)
    pd.DataFrame({"page": page, "delta": -np.expm1(-delta), "host": host}).to_csv(pages_discrete, index=False)
    size = np.bincount(hosts, minlength=n_hosts)
    caps = folder / "caps.csv"
    max_rate = size * np.where(np.arange(n_hosts) % 2 == 0, 0.2, 2.0) + 1.0
    pd.DataFrame({"host": [f"h{h}" for h in range(n_hosts)], "max_rate": max_rate}).to_csv(caps, index=False)
    return pages, pages_discrete, caps


def run(pages: Path, objective: str, budget: str, cache: Path, caps: Path | None) -> float:
    """Seconds of one ``freshcrawl allocate`` command with the numba cache in ``cache``."""
    cmd = [sys.executable, "-m", "freshcrawl", "allocate", str(pages), "--budget", budget,
           "--objective", objective, "--json"]
    if caps is not None:
        cmd += ["--host-caps", str(caps)]
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--budget", default=None, help="visits per day, e.g. 1000/day (default: 0.5 a page)")
    parser.add_argument("--objectives", default=",".join(OBJECTIVES))
    args = parser.parse_args(argv)
    budget = args.budget or f"{0.5 * args.pages:g}/day"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        pages, pages_discrete, caps = write_inputs(tmp, args.pages, args.hosts)
        print("| objective | first call | first call, host caps | next call | next call, host caps |")
        print("|---|---:|---:|---:|---:|")
        for objective in args.objectives.split(","):
            row = []
            table = pages_discrete if objective == "detection-discrete" else pages
            for with_caps in (False, True):
                cache = tmp / f"cache-{objective}-{with_caps}"
                cache.mkdir()
                c = caps if with_caps else None
                row.append((run(table, objective, budget, cache, c), run(table, objective, budget, cache, c)))
            (f0, n0), (f1, n1) = row
            print(f"| {objective} | {f0:.1f} | {f1:.1f} | {n0:.1f} | {n1:.1f} |", flush=True)


if __name__ == "__main__":
    main()
