"""Benchmark of the partitioned allocation: 10^7 and 10^8 pages out of core, and on a Dask LocalCluster.

Run on purpose (not part of the tests)::

    python benchmarks/bench_bulk.py --pages 1e7 --partitions 10 --engine stream
    python benchmarks/bench_bulk.py --pages 1e8 --partitions 100 --engine stream dask
    python benchmarks/bench_bulk.py --pages 1e7 --partitions 5 10 20 40 80 --engine stream   # per-pass cost
    python benchmarks/bench_bulk.py --estimate --pages 1e6 --visits 10 --partitions 10 --engine stream dask

Data (generated once into ``--data-dir``, kept between runs): ``--pages`` pages in ``--partitions``
Parquet files, partitioned by host: hosts of 1 to 1,000 pages (a Pareto spread: 76 pages on average,
median 23), every second host capped at 0.1 visits/day a page; Δ log-normal (median 0.2 changes/day),
weights uniform in [0.5, 2]; page ids int64. The budget is 0.2 visits/day a page under Poisson
freshness (``--objective`` to change).

With ``--estimate``: a visit log of ``--pages`` pages with ``--visits`` visits each (Poisson changes, Δ
log-normal, visits every 0.5 to 3 days), partitioned by page, estimated by MLE with
:func:`freshcrawl.bulk.estimate_partitioned` into a directory of Parquet partitions.

Reported per run: wall time of :func:`freshcrawl.bulk.allocate_partitioned` (reading, passes, writing
the rates to a directory of Parquet partitions), passes, seconds per pass, and the peak resident memory
of this process and its children (the Dask workers), sampled every 50 ms.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pyarrow as pa
import pyarrow.parquet as pq

from freshcrawl.bulk import DaskEngine, StreamEngine, allocate_partitioned, estimate_partitioned


def generate(directory: Path, n_pages: int, n_parts: int, seed: int = 0) -> dict[str, float]:
    """Write the pages (partitioned by host) and return the caps by host name."""
    rng = np.random.default_rng(seed)
    caps: dict[str, float] = {}
    directory.mkdir(parents=True, exist_ok=True)
    per_part = n_pages // n_parts
    next_page = 0
    next_host = 0
    for k in range(n_parts):
        n = per_part if k < n_parts - 1 else n_pages - per_part * (n_parts - 1)
        sizes = np.minimum(np.floor(rng.pareto(1.2, n // 40 + 10) * 30 + 1), 1000).astype(np.int64)
        sizes = sizes[np.cumsum(sizes) <= n]
        sizes = np.append(sizes, n - sizes.sum()) if sizes.sum() < n else sizes
        sizes = sizes[sizes > 0]
        host_ids = np.arange(next_host, next_host + sizes.size)
        next_host += sizes.size
        host = np.repeat(host_ids, sizes)
        delta = rng.lognormal(np.log(0.2), 1.5, n)
        names = np.array([f"h{h}.example" for h in host_ids], dtype=object)
        for h, size in zip(host_ids[::2], sizes[::2]):
            caps[f"h{h}.example"] = float(0.1 * size)
        host_col = pa.DictionaryArray.from_arrays(pa.array(host - host_ids[0], pa.int32()), pa.array(names, pa.string()))
        table = pa.table({
            "page": pa.array(np.arange(next_page, next_page + n, dtype=np.int64)),
            "delta": delta,
            "weight": rng.uniform(0.5, 2.0, n),
            "host": host_col,
        })
        next_page += n
        pq.write_table(table, directory / f"part-{k:05d}.parquet", compression="snappy")
    (directory / "_caps.json").write_text(json.dumps(caps))
    return caps


def generate_log(directory: Path, n_pages: int, visits: int, n_parts: int, seed: int = 0) -> None:
    """Write a visit log partitioned by page: ``visits`` visits of each page, Poisson changes."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    per_part = n_pages // n_parts
    for k in range(n_parts):
        n = per_part if k < n_parts - 1 else n_pages - per_part * (n_parts - 1)
        first = k * per_part
        delta = rng.lognormal(np.log(0.2), 1.0, n)
        gap = rng.uniform(0.5, 3.0, (n, visits))  # days between visits
        t = 1.7e9 / 86400.0 + np.cumsum(gap, axis=1)
        changed = rng.random((n, visits)) < -np.expm1(-delta[:, None] * gap)
        table = pa.table({
            "page": np.repeat(np.arange(first, first + n, dtype=np.int64), visits),
            "time": (t * 86400.0).ravel(),
            "changed": changed.ravel(),
        })
        pq.write_table(table, directory / f"part-{k:05d}.parquet")
    (directory / "_done").write_text("")


class PeakMemory:
    """Peak resident memory of this process and its children, sampled every 50 ms."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.is_set():
            try:
                rss = me.memory_info().rss + sum(c.memory_info().rss for c in me.children(recursive=True))
            except psutil.Error:
                rss = 0
            self.peak = max(self.peak, rss)
            self._stop.wait(0.05)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=float, nargs="+", default=[1e7])
    ap.add_argument("--partitions", type=int, nargs="+", default=[10])
    ap.add_argument("--engine", nargs="+", default=["stream"], choices=["stream", "dask"])
    ap.add_argument("--objective", default="freshness-poisson")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "freshcrawl-bench-bulk")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--estimate", action="store_true", help="benchmark estimate_partitioned instead")
    ap.add_argument("--visits", type=int, default=10, help="visits a page (with --estimate)")
    args = ap.parse_args()
    if args.estimate:
        bench_estimate(args)
        return
    rows = []
    for pages in args.pages:
        n = int(pages)
        for parts in args.partitions:
            data = args.data_dir / f"pages-{n}-{parts}"
            if not (data / "_caps.json").exists():
                t = time.perf_counter()
                shutil.rmtree(data, ignore_errors=True)
                generate(data, n, parts)
                print(f"generated {n} pages in {parts} partitions in {time.perf_counter() - t:.1f} s", flush=True)
            caps = json.loads((data / "_caps.json").read_text())
            size = sum(f.stat().st_size for f in data.glob("*.parquet"))
            for name in args.engine:
                for _ in range(args.repeat):
                    out = args.data_dir / "rates"
                    t = time.perf_counter()
                    engine = StreamEngine() if name == "stream" else DaskEngine("local", args.workers)
                    start = time.perf_counter() - t
                    with PeakMemory() as mem:
                        res = allocate_partitioned(str(data), 0.2 * n, objective=args.objective, host_caps=caps,
                                                   engine=engine, out=str(out))
                    engine.close()
                    row = {
                        "pages": n, "partitions": parts, "engine": name, "objective": args.objective,
                        "seconds": round(res.seconds, 2), "engine_start_s": round(start, 2),
                        "passes": res.n_passes, "read_s": round(res.pass_seconds[0], 2),
                        "iteration_s": round(float(np.mean(res.pass_seconds[1:-1])), 3),
                        "final_s": round(res.pass_seconds[-1], 2),
                        "peak_rss_gib": round(mem.peak / 2**30, 2), "data_gib": round(size / 2**30, 2),
                        "status": res.status.name, "kkt": res.kkt_residual,
                    }
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    shutil.rmtree(out, ignore_errors=True)


def bench_estimate(args) -> None:
    for pages in args.pages:
        n = int(pages)
        for parts in args.partitions:
            data = args.data_dir / f"log-{n}-{args.visits}-{parts}"
            if not (data / "_done").exists():
                shutil.rmtree(data, ignore_errors=True)
                generate_log(data, n, args.visits, parts)
            for name in args.engine:
                out = args.data_dir / "estimates"
                t = time.perf_counter()
                engine = StreamEngine() if name == "stream" else DaskEngine("local", args.workers)
                start = time.perf_counter() - t
                with PeakMemory() as mem:
                    res = estimate_partitioned(str(data), "mle", engine=engine, out=str(out))
                engine.close()
                print(json.dumps({
                    "pages": n, "visits": n * args.visits, "partitions": parts, "engine": name,
                    "seconds": round(res.seconds, 2), "engine_start_s": round(start, 2),
                    "visits_per_s": round(n * args.visits / res.seconds), "peak_rss_gib": round(mem.peak / 2**30, 2),
                }), flush=True)
                shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
