"""Plan and estimate at web scale: pages and visit logs in Parquet partitions, out of core or on Dask.

- :func:`allocate_partitioned`: the exact allocation of :func:`freshcrawl.allocation.allocate` over a
  directory of Parquet partitions of the PAGES table, partitioned by host.
- :func:`estimate_partitioned`: per-page change rates from a visit log partitioned by page, one
  partition at a time (a map with no communication).
- :func:`partition_by`: repartition a PAGES table by host or a visit log by page (dask.dataframe).
- :class:`StreamEngine` runs the passes on this machine, streaming the partitions from disk;
  :class:`DaskEngine` runs them on a Dask cluster, the partitions held in the workers' memory.
"""

from freshcrawl.bulk.allocate import PartitionedAllocation, allocate_partitioned
from freshcrawl.bulk.engines import ENGINE_NAMES, DaskEngine, StreamEngine, make_engine
from freshcrawl.bulk.estimate import PartitionedEstimate, estimate_partitioned
from freshcrawl.bulk.partition import partition_by

__all__ = [
    "allocate_partitioned",
    "PartitionedAllocation",
    "estimate_partitioned",
    "PartitionedEstimate",
    "StreamEngine",
    "DaskEngine",
    "make_engine",
    "ENGINE_NAMES",
    "partition_by",
]
