"""Writing Parquet partitions for the tests of the readers and commands that take them."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq


def write_partitions(directory, table, sizes, name="part-{:03d}.parquet"):
    """Split ``table`` into partitions of ``sizes`` rows (0: a partition without rows) in a new
    ``directory``, with the ``_SUCCESS`` marker Spark and Dask leave; returns the directory."""
    directory.mkdir()
    start = 0
    for k, n in enumerate(sizes):
        pq.write_table(table.slice(start, n), directory / name.format(k))
        start += n
    assert start == table.num_rows
    (directory / "_SUCCESS").write_bytes(b"")
    return directory


def write_files(directory, files):
    """Write ``{name: content}`` into a new ``directory``: a dict of columns as a Parquet table, bytes as
    they are (a file that is not Parquet); returns the directory."""
    directory.mkdir()
    for name, content in files.items():
        if isinstance(content, bytes):
            (directory / name).write_bytes(content)
        else:
            pq.write_table(pa.table(content), directory / name)
    return directory
