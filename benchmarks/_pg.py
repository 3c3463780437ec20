"""A throwaway PostgreSQL database for a benchmark run, on the machine's server (loopback)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable


def pg_database() -> tuple[str, Callable[[], None]]:
    """Create an empty database; return its URL and a function that drops it.

    The server is ``$FRESHCRAWL_TEST_PG`` (a URL without database name), by default user postgres
    on 127.0.0.1:5432, as in the tests.
    """
    from sqlalchemy import create_engine, text

    server = os.environ.get("FRESHCRAWL_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432")
    name = f"freshcrawl_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(f"{server}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    return f"{server}/{name}", drop
