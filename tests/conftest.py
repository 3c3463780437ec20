"""Shared test configuration: hypothesis profiles and common fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib
import pytest
from hypothesis import HealthCheck, settings

matplotlib.use("Agg")

settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile(
    "ci", max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real change histories shipped inside the repository."""
    return DATA


#: The PostgreSQL server the store tests use (the machine's own, on loopback); override with
#: FRESHCRAWL_TEST_PG (a server URL without database name).
PG_SERVER = os.environ.get("FRESHCRAWL_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432")


@pytest.fixture
def pg_url():
    """URL of a new, empty PostgreSQL database, dropped after the test.

    Fails (never skips) when the server cannot be reached: the tests that use it need the real one.
    """
    import uuid

    from sqlalchemy import create_engine, text

    name = f"freshcrawl_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(f"{PG_SERVER}/postgres", isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as err:  # pragma: no cover - the machine's server is down
        admin.dispose()
        pytest.fail(f"PostgreSQL at {PG_SERVER} is needed by this test and not reachable: {err}")
    try:
        yield f"{PG_SERVER}/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    """A new crawl database: a SQLite file, then a PostgreSQL database (each test runs on both)."""
    if request.param == "sqlite":
        return str(tmp_path / "crawl.db")
    return request.getfixturevalue("pg_url")


@pytest.fixture(scope="module")
def private_pg():
    """A PostgreSQL server of its own (``tests/pgserver.py``), started, for tests that stop or restart it.

    Never the shared server of ``pg_url``: stopping that one would break other tests. Fails (never
    skips) when PostgreSQL's server binaries are missing.
    """
    from tests.pgserver import PrivatePostgres, find_bindir

    bindir = find_bindir()
    if bindir is None:
        pytest.fail("PostgreSQL's server binaries (initdb, pg_ctl) are needed by this test and not found: "
                    "install the PostgreSQL server package")
    server = PrivatePostgres(bindir)
    try:
        server.start()
        yield server
    finally:
        server.close()
