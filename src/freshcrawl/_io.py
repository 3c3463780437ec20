"""File output shared by the commands and the traces: whole files or nothing."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pandas as pd


def write_csv_atomic(df: pd.DataFrame, path: Path) -> None:
    """Write ``df`` as CSV to ``path`` (gzip when it ends in ``.gz``) without ever leaving a partial file.

    The table goes to a temporary file beside ``path`` that replaces it only once complete, so an error
    or an interruption leaves whatever was at ``path`` before.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        df.to_csv(tmp, index=False, compression="gzip" if path.name.endswith(".gz") else None)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
