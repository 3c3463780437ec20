"""File input and output shared by the commands and the traces: whole files or nothing, CSV or Parquet.

- :func:`write_table_atomic` writes a table as Parquet (a name ending in ``.parquet``) or CSV (gzip when
  the name ends in ``.gz``); :func:`write_csv_atomic` always writes CSV. Both write a temporary file
  beside the target and move it into place only once it is complete.
- :func:`is_parquet` tells whether a file is read as Parquet; :func:`parquet_files` lists the files of a
  Parquet file or of a directory of Parquet partitions (as Spark, Dask or pyarrow write them);
  :func:`read_parquet` reads columns of one Parquet file and :func:`parquet_footer` its column names and
  row count, naming the file when it is not valid Parquet (all three take an fsspec file system for
  shared or object storage);
  :func:`decode_dictionary`, :func:`is_text_type` and :func:`is_number_type` help the readers check the
  types of its columns.
"""

from __future__ import annotations

import os
import posixpath
import tempfile
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from pathlib import Path

import fsspec
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = [
    "write_csv_atomic",
    "write_table_atomic",
    "parquet_files",
    "is_parquet",
    "read_parquet",
    "parquet_footer",
    "decode_dictionary",
    "is_text_type",
    "is_number_type",
]

_LOCAL = fsspec.filesystem("file")

#: The first (and last) four bytes of every Parquet file.
PARQUET_MAGIC = b"PAR1"


def _has_parquet_suffix(path: Path) -> bool:
    return path.name.lower().endswith(".parquet")


def is_parquet(path: str | os.PathLike) -> bool:
    """Whether ``path`` is read as Parquet: its name ends in ``.parquet``, or it is a file that starts with
    the Parquet magic bytes ``PAR1``.

    A file named ``*.parquet`` counts as Parquet whatever it holds (a reader then reports it as invalid
    Parquet rather than reading it as CSV). A file that cannot be opened is not Parquet (its reader reports
    the problem).

    Examples
    --------
    >>> is_parquet("pages.parquet"), is_parquet("pages.csv.gz")
    (True, False)
    """
    path = Path(path)
    if _has_parquet_suffix(path):
        return True
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == PARQUET_MAGIC
    except OSError:
        return False


def parquet_files(path: str | os.PathLike, *, fs: fsspec.AbstractFileSystem | None = None) -> list:
    """The Parquet files that make up ``path``: ``[path]`` for a file, the partitions of a directory.

    The partitions of a directory are its files (not subdirectories) whose names end in ``.parquet``,
    sorted by name; names starting with ``_`` or ``.`` (``_SUCCESS``, ``_metadata``, hidden and temporary
    files) are skipped.

    Parameters
    ----------
    path : str or path-like
        A file (returned as it is, whatever its name) or a directory.
    fs : fsspec.AbstractFileSystem, optional
        The file system ``path`` is on (shared or object storage); default: this machine's.

    Returns
    -------
    list of Path (of str with ``fs``), length >= 1

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If ``path`` is a directory without partition files; the message names the directory.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("part-1.parquet", "part-0.parquet", "_SUCCESS", ".part-2.parquet.crc", "_metadata"):
    ...     _ = (d / name).write_bytes(b"")
    >>> [p.name for p in parquet_files(d)]
    ['part-0.parquet', 'part-1.parquet']
    """
    local = fs is None
    fs = _LOCAL if local else fs
    root = os.fspath(path)
    if not fs.exists(root):
        raise FileNotFoundError(f"{path} does not exist")
    if not fs.isdir(root):
        return [Path(root)] if local else [root]
    files = sorted(
        f for f in fs.ls(root, detail=False)
        if _has_parquet_suffix(Path(f)) and not posixpath.basename(f).startswith(("_", ".")) and fs.isfile(f)
    )
    if not files:
        raise ValueError(f"{path}: directory holds no Parquet partition files (*.parquet)")
    return [Path(f) for f in files] if local else files


@contextmanager
def _parquet_file(path, error: type[ValueError], fs: fsspec.AbstractFileSystem | None):
    """An open ``pyarrow.parquet.ParquetFile``; FileNotFoundError, or ``error`` naming the file."""
    fs = fs or _LOCAL
    if not fs.exists(os.fspath(path)):
        raise FileNotFoundError(f"{path} does not exist")
    try:
        with fs.open(os.fspath(path), "rb") as fh, pq.ParquetFile(fh) as pf:
            yield pf
    except (pa.ArrowException, OSError) as err:
        raise error(f"{path}: not a valid Parquet file ({err})") from err


def parquet_footer(
    path: str | os.PathLike, *, error: type[ValueError] = ValueError, fs: fsspec.AbstractFileSystem | None = None
) -> tuple[list[str], int]:
    """The column names and the number of rows of a Parquet file, from its footer alone.

    Raises as :func:`read_parquet`.
    """
    with _parquet_file(path, error, fs) as pf:
        return pf.schema_arrow.names, pf.metadata.num_rows


def read_parquet(
    path: str | os.PathLike, columns: Sequence[str], *, error: type[ValueError] = ValueError,
    fs: fsspec.AbstractFileSystem | None = None,
) -> pa.Table:
    """Read those of ``columns`` that the Parquet file ``path`` has; the caller checks which are missing.

    Parameters
    ----------
    path : str or path-like
        One Parquet file.
    columns : sequence of str
        Names of the columns wanted; columns of the file not named here are not read.
    error : subclass of ValueError
        Exception raised when the file is not valid Parquet.
    fs : fsspec.AbstractFileSystem, optional
        The file system ``path`` is on; default: this machine's.

    Returns
    -------
    pyarrow.Table, shape (n_rows, n_present)
        The columns of ``columns`` that the file has, in the order of ``columns``, with the file's types.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError (``error``)
        If ``path`` is not a readable Parquet file; the message names the file.
    """
    with _parquet_file(path, error, fs) as pf:
        names = pf.schema_arrow.names
        return pf.read(columns=[c for c in columns if c in names])


def decode_dictionary(arr: pa.ChunkedArray) -> pa.ChunkedArray:
    """A dictionary-encoded column (categorical text, as Spark or pandas may write it) as plain values."""
    return arr.cast(arr.type.value_type) if pa.types.is_dictionary(arr.type) else arr


def is_text_type(kind: pa.DataType) -> bool:
    """Whether an Arrow type is text: ``string``, ``large_string`` or ``string_view``."""
    is_view = getattr(pa.types, "is_string_view", None)  # pyarrow >= 16
    return pa.types.is_string(kind) or pa.types.is_large_string(kind) or bool(is_view and is_view(kind))


def is_number_type(kind: pa.DataType) -> bool:
    """Whether an Arrow type is a number: an integer, a float or a decimal (not a boolean)."""
    return pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind)


def _replace_atomically(path: Path, write: Callable[[str], None]) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then move it to ``path``; on error, remove it."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_csv_atomic(df: pd.DataFrame, path: Path) -> None:
    """Write ``df`` as CSV to ``path`` (gzip when it ends in ``.gz``) without ever leaving a partial file.

    The table goes to a temporary file beside ``path`` that replaces it only once complete, so an error
    or an interruption leaves whatever was at ``path`` before.
    """
    path = Path(path)
    compression = "gzip" if path.name.endswith(".gz") else None
    _replace_atomically(path, lambda tmp: df.to_csv(tmp, index=False, compression=compression))


def write_table_atomic(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write ``df`` to ``path``: Parquet if the name ends in ``.parquet``, else CSV (:func:`write_csv_atomic`).

    The file is replaced whole or not at all, as with :func:`write_csv_atomic`. The Parquet file holds
    the columns of ``df`` without its index; text columns are written as Parquet strings (``string``, not
    ``large_string``, which some readers do not take).

    Parameters
    ----------
    df : pandas.DataFrame, shape (n_rows, n_columns)
        The table.
    path : str or path-like
        Output file; its directory must exist.

    Raises
    ------
    OSError
        If the file cannot be written (``path`` is left as it was).

    Examples
    --------
    >>> import tempfile, pathlib, pyarrow.parquet as pq
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "rates.parquet"
    >>> write_table_atomic(pd.DataFrame({"page": ["a", "b"], "rate": [1.0, 0.5]}), f)
    >>> pq.read_table(f).to_pydict()
    {'page': ['a', 'b'], 'rate': [1.0, 0.5]}
    """
    path = Path(path)
    if not _has_parquet_suffix(path):
        write_csv_atomic(df, path)
        return
    table = pa.Table.from_pandas(df, preserve_index=False)
    schema = pa.schema(
        [f.with_type(pa.string()) if pa.types.is_large_string(f.type) else f for f in table.schema],
        metadata=table.schema.metadata,
    )
    table = table.cast(schema)
    _replace_atomically(path, lambda tmp: pq.write_table(table, tmp))
