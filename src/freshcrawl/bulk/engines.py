"""Where the passes over the partitions run: streamed from disk on this machine, or on a Dask cluster.

An engine loads partitions (:meth:`load`) and maps a function over them (:meth:`map`), returning the
small per-partition results in partition order. The solvers reduce those results themselves, so a pass
costs one map and one gather whatever the engine.

- :class:`StreamEngine`: out of core on one machine. Every pass reads each partition from its file again,
  a few at a time on a pool of threads (the compiled passes and Parquet decoding release the GIL), so
  memory holds about ``n_threads`` partitions whatever the number of pages; the operating system's page
  cache keeps the files warm between passes when they fit in memory.
- :class:`DaskEngine`: the partitions are loaded once into the memory of the workers of a Dask cluster
  (``distributed``) and stay there; each pass is a ``Client.map`` over them and a ``gather`` of a few
  numbers each.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["StreamEngine", "DaskEngine", "make_engine", "ENGINE_NAMES"]

#: Names of the partitioned engines (``--engine``); ``memory`` (the in-memory solver) is not one of them.
ENGINE_NAMES = ("stream", "dask")


class StreamEngine:
    """Partitions streamed from their files at every pass by ``n_threads`` threads.

    Parameters
    ----------
    n_threads : int, optional
        Partitions processed at once; default: the number of CPUs (``os.cpu_count()``).
    """

    name = "stream"

    def __init__(self, n_threads: int | None = None) -> None:
        self.n_threads = max(1, int(n_threads or os.cpu_count() or 1))
        self._pool = ThreadPoolExecutor(self.n_threads, thread_name_prefix="freshcrawl-stream")

    def load(self, read: Callable[..., Any], args: Sequence[tuple], shared: dict) -> list:
        """Handles of the partitions: here ``read(*a, shared)`` for each ``a`` in ``args``, called again at
        every pass."""
        return [(read, a, shared) for a in args]

    def map(self, fn: Callable[..., Any], handles: list, *args: Any, **options: Any) -> list:
        """``[fn(partition, *args) for each partition]``, ``options`` updating the reader's ``shared``."""

        def run(handle):
            read, a, shared = handle
            return fn(read(*a, {**shared, **options} if options else shared), *args)

        return list(self._pool.map(run, handles))

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class DaskEngine:
    """Partitions held in the memory of a Dask cluster's workers; each pass a map and a gather.

    Parameters
    ----------
    scheduler : str
        Address of a running scheduler (``tcp://host:8786``), or ``"local"`` to start a
        ``distributed.LocalCluster`` of ``n_workers`` processes of one thread each on this machine.
    n_workers : int, default=2
        Workers of the local cluster (ignored with an address).

    Raises
    ------
    ImportError
        If ``dask`` and ``distributed`` are not installed (``pip install 'freshcrawl[dask]'``).
    OSError
        If the scheduler cannot be reached.
    """

    name = "dask"

    def __init__(self, scheduler: str = "local", n_workers: int = 2) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError as err:  # pragma: no cover - dask is a dependency of the test extra
            raise ImportError("the dask engine needs dask and distributed: pip install 'freshcrawl[dask]'") from err
        self._cluster = None
        if scheduler == "local":
            self._cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                         dashboard_address="127.0.0.1:0", host="127.0.0.1")
            self.client = Client(self._cluster)
        else:
            self.client = Client(scheduler)

    def load(self, read: Callable[..., Any], args: Sequence[tuple], shared: dict) -> list:
        """Futures of the partitions ``read(*a, shared)``, read once on the workers and kept there.

        ``shared`` (options and the host caps, which may be large) is sent to each worker once.
        """
        shared_f = self.client.scatter([shared], broadcast=True, hash=False)[0]
        return [self.client.submit(read, *a, shared_f, pure=False) for a in args]

    def map(self, fn: Callable[..., Any], handles: list, *args: Any, **options: Any) -> list:
        """``[fn(partition, *args) for each partition]``, run where each partition is held (the partitions
        were read with every option they need: ``options`` is not used)."""
        futures = [self.client.submit(fn, h, *args, pure=False) for h in handles]
        return self.client.gather(futures)

    def close(self) -> None:
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def make_engine(name: str, *, scheduler: str = "local", n_threads: int | None = None, n_workers: int = 2):
    """The engine called ``name`` (``"stream"`` or ``"dask"``).

    Raises
    ------
    UnknownNameError
        If ``name`` is not one of :data:`ENGINE_NAMES`.
    """
    from freshcrawl.errors import UnknownNameError

    if name == "stream":
        return StreamEngine(n_threads)
    if name == "dask":
        return DaskEngine(scheduler, n_workers)
    raise UnknownNameError(f"unknown engine {name!r}; expected one of {', '.join(ENGINE_NAMES)}")
