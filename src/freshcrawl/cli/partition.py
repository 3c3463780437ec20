"""``freshcrawl partition SOURCE --by host|page --out DIR``: Parquet partitions for the bulk engines."""

from __future__ import annotations

import json

import click

from freshcrawl.errors import FreshcrawlError

__all__ = ["partition"]


@click.command("partition")
@click.argument("source", type=click.Path(path_type=str))
@click.option("--by", "column", type=click.Choice(["host", "page"]), required=True,
              help="host: a PAGES table for allocate; page: a visit log for estimate.")
@click.option("--partitions", "n_partitions", type=click.IntRange(min=1), required=True,
              help="Number of output partitions (about 10^6 rows each suits the bulk engines).")
@click.option("--out", type=click.Path(path_type=str), required=True,
              help="Directory to write part-00000.parquet, ... to (replaced once complete).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Shuffle on this Dask scheduler (tcp://host:8786); default: threads on this machine.")
def partition(source: str, column: str, n_partitions: int, out: str, scheduler: str | None) -> None:
    """Repartition SOURCE (a Parquet file or directory) so that every host's pages, or every page's
    visits, lie in one partition: what allocate and estimate need with --engine stream or dask.

    A hash shuffle with dask.dataframe; prints a JSON summary.
    """
    from freshcrawl.bulk.partition import partition_by

    client = None
    try:
        if scheduler is not None:
            from distributed import Client

            client = Client(scheduler)
        n_rows = partition_by(source, out, column, n_partitions, client=client)
    except FileNotFoundError as err:
        raise click.BadParameter(str(err), param_hint="SOURCE or --out") from err
    except (FreshcrawlError, ValueError, OSError) as err:
        raise click.ClickException(str(err)) from err
    finally:
        if client is not None:
            client.close()
    click.echo(json.dumps({"source": source, "by": column, "partitions": n_partitions, "rows": n_rows, "out": out}))
