"""The crawl state in a database (SQLAlchemy 2, alembic migrations): SQLite by default, PostgreSQL by URL.

:func:`open_store` opens or creates a store at the newest schema revision; :class:`Store` reads and
writes pages, hosts, the observation log and the crawl's settings, each write one transaction.
One process writes a crawl database: it holds the database's writer lock
(:func:`acquire_writer_lock`, :mod:`freshcrawl.store.writer`) for as long as it writes.
"""

from __future__ import annotations

from freshcrawl.store._retry import is_connection_error, is_refused_login, reason_of, unavailable
from freshcrawl.store.schema import PAGE_STATUSES
from freshcrawl.store.store import (
    HostArrays,
    PageArrays,
    Store,
    check_namespace,
    database_url,
    drop_namespace,
    list_namespaces,
    open_store,
)
from freshcrawl.store.writer import WriterLock, acquire_writer_lock

__all__ = [
    "PAGE_STATUSES",
    "HostArrays",
    "PageArrays",
    "Store",
    "WriterLock",
    "acquire_writer_lock",
    "check_namespace",
    "database_url",
    "drop_namespace",
    "is_connection_error",
    "is_refused_login",
    "list_namespaces",
    "open_store",
    "reason_of",
    "unavailable",
]
