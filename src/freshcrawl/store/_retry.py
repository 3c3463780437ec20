"""Retries of store operations on lost or refused database connections.

A store operation is one transaction: when the connection fails before the commit, nothing of it
was written and running it again is safe. Such failures (a PostgreSQL restart, a server that is
down, a connection cut by ``pg_terminate_backend``) are retried with capped, jittered exponential
back-off (tenacity's ``wait_random_exponential``, "full jitter" as in the AWS Architecture Blog's
"Exponential Backoff and Jitter") for the store's retry window; then the operation raises
:class:`~freshcrawl.errors.DatabaseUnavailableError`, a one-line message naming the database.
Other errors (constraint violations, a corrupt file, SQL errors) are never retried.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy.exc import DBAPIError, DisconnectionError

from freshcrawl.errors import DatabaseUnavailableError

__all__ = ["is_connection_error", "is_refused_login", "reason_of", "retried", "unavailable"]

T = TypeVar("T")


def _psycopg_connection_errors() -> tuple[type[BaseException], ...]:
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a dependency
        return ()
    return (psycopg.OperationalError, psycopg.InterfaceError)


def is_connection_error(err: BaseException) -> bool:
    """Whether ``err`` is a lost, refused or unusable database connection (worth retrying).

    True for SQLAlchemy errors whose connection was invalidated, for ``OperationalError`` and
    ``InterfaceError`` of psycopg (raised as such by raw-cursor paths, or wrapped by SQLAlchemy), and
    for SQLAlchemy's ``DisconnectionError``. SQLite's errors are never connection errors: a SQLite
    file has no server to lose (a locked file waits in SQLite's own busy timeout).
    """
    if isinstance(err, DatabaseUnavailableError | DisconnectionError):
        return True
    if isinstance(err, DBAPIError):
        if err.connection_invalidated:
            return True
        err = err.orig
    kinds = _psycopg_connection_errors()
    return bool(kinds) and isinstance(err, kinds) and not is_refused_login(err)


#: Parts of the messages of connection attempts that the server refused for good: retrying them
#: cannot help (the database does not exist, the login is refused).
_REFUSED = (
    "does not exist",
    "authentication failed",
    "no pg_hba.conf entry",
    "role ",
    "permission denied",
)


def is_refused_login(err: BaseException) -> bool:
    """Whether ``err`` is a connection the server refused for good (unknown database, bad login)."""
    while isinstance(err, DBAPIError) and err.orig is not None:
        err = err.orig
    kinds = _psycopg_connection_errors()
    text = str(err)
    return (
        bool(kinds)
        and isinstance(err, kinds)
        and "connection failed" in text
        and any(part in text for part in _REFUSED)
    )


def reason_of(err: BaseException) -> str:
    """The first line of the driver's message of ``err``, at most 200 characters."""
    while isinstance(err, DBAPIError) and err.orig is not None:
        err = err.orig
    text = str(err).strip().splitlines()
    line = text[0].strip() if text else type(err).__name__
    return line if len(line) <= 200 else line[:197] + "..."


def unavailable(where: str, err: BaseException) -> DatabaseUnavailableError:
    """The one-line :class:`DatabaseUnavailableError` for a connection error ``err`` on ``where``."""
    if isinstance(err, DatabaseUnavailableError):
        return err
    return DatabaseUnavailableError(
        f"the crawl database {where} is unavailable ({reason_of(err)}); check that its server is "
        "running and reachable, and that --db names it",
        where=where,
    )


def retried(method: Callable[..., T]) -> Callable[..., T]:
    """Run a :class:`~freshcrawl.store.Store` method through the store's retry policy (``Store._run``)."""

    @functools.wraps(method)
    def wrapper(self, *args: Any, **kwargs: Any) -> T:
        return self._run(method, self, *args, **kwargs)

    return wrapper
