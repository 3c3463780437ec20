"""Repartition a PAGES table by host, or a visit log by page, with dask.dataframe's shuffle.

The partitioned solvers need every host's pages (every page's visits) in one partition; data written in
another order (by crawl date, by fetcher) goes through :func:`partition_by` first.
"""

from __future__ import annotations

import pandas as pd

from freshcrawl._io import parquet_files, parquet_footer
from freshcrawl.bulk._partitions import Output

__all__ = ["partition_by"]


def partition_by(source: str, out: str, column: str, n_partitions: int, *, client=None) -> int:
    """Write the rows of ``source`` to ``out`` as ``n_partitions`` Parquet partitions, by ``column``.

    Rows with one value of ``column`` land in one partition (a hash shuffle, dask.dataframe's
    ``DataFrame.shuffle``); rows without a value (null) are spread as the shuffle places them. The
    partitions are written to a hidden directory beside ``out`` and moved into place once complete
    (:class:`~freshcrawl.bulk._partitions.Output`).

    Parameters
    ----------
    source : str
        A Parquet file or a directory of Parquet partitions (local path or fsspec URL).
    out : str
        Directory to write ``part-00000.parquet``, ... to (replaced if it exists).
    column : str
        ``"host"`` for a PAGES table, ``"page"`` for a visit log.
    n_partitions : int
        Number of output partitions (>= 1).
    client : distributed.Client, optional
        Run on this Dask cluster; default: dask's local scheduler.

    Returns
    -------
    int
        Rows written.

    Raises
    ------
    ValueError
        If ``source`` has no column ``column`` or ``n_partitions < 1``.
    """
    import dask
    import dask.dataframe as dd

    if n_partitions < 1:
        raise ValueError(f"n_partitions must be >= 1; got {n_partitions}")
    df = dd.read_parquet(source)
    if column not in df.columns:
        raise ValueError(f"{source}: no column {column!r} to partition by; columns are {list(df.columns)}")
    # dictionary-encoded text (read as categoricals whose categories differ between partitions) as text
    cats = [c for c, kind in df.dtypes.items() if isinstance(kind, pd.CategoricalDtype)]
    if cats:
        df = df.astype({c: "string[pyarrow]" for c in cats})
    output = Output(out)
    # on a cluster dask's peer-to-peer shuffle; on this machine its disk shuffle (out of core, partd)
    settings = {"scheduler": client if client is not None else "threads",
                "dataframe.shuffle.method": "p2p" if client is not None else "disk"}
    try:
        with dask.config.set(settings):
            shuffled = df.shuffle(column, npartitions=n_partitions)
            shuffled.to_parquet(output.fs.unstrip_protocol(output.tmp), write_index=False,
                                name_function=lambda i: f"part-{i:05d}.parquet")
        n_rows = sum(parquet_footer(f, fs=output.fs)[1] for f in parquet_files(output.tmp, fs=output.fs))
        output.commit()
    except BaseException:
        output.abort()
        raise
    return n_rows
