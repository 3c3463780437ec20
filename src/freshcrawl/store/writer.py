"""One writer per crawl database: the lock the process that writes it holds for its whole life.

``freshcrawl serve``, ``freshcrawl crawl run`` and the Scrapy scheduler's in-process frontier take
it before they open the crawl (:func:`acquire_writer_lock`) and pass :meth:`WriterLock.ensure` to
the store as its ``guard``.

:class:`~freshcrawl.service.FrontierService` hands out leases under its own lock and keeps the
leases in memory, so two serve processes on one database could lease the same URL twice. That is
why a serve process takes the database's writer lock before it opens the crawl, and a second one is
refused with :class:`~freshcrawl.errors.DatabaseInUseError`:

- PostgreSQL: a session advisory lock (``pg_try_advisory_lock``) held on a dedicated connection. The
  server releases it when that connection closes, also when the process dies (``kill -9``) and
  when the server restarts. The holder takes it again after a reconnect (:meth:`WriterLock.ensure`,
  called before every new connection of its store and every second by ``serve``); if another
  process took it meanwhile, the holder gets :class:`~freshcrawl.errors.WriterLockLostError` and stops.
- SQLite: an exclusive ``flock`` on a sidecar file ``<db>.writer.lock`` beside the database (the
  crawls of other IDs, sibling files, are covered by the same lock). The kernel releases it when the
  process dies. It protects processes of one machine, which is all SQLite supports anyway.

The lock is advisory: it keeps serve processes apart, not other programs that open the database.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from pathlib import Path
from typing import Self

from freshcrawl.errors import DatabaseInUseError, WriterLockLostError

__all__ = ["ADVISORY_KEY", "WriterLock", "acquire_writer_lock"]

#: The PostgreSQL advisory lock key of a crawl database's writer (any constant 64-bit integer works:
#: advisory locks are per database). ``int.from_bytes(b"frcrawl1", "big") >> 1``.
ADVISORY_KEY = int.from_bytes(b"frcrawl1", "big") >> 1

log = logging.getLogger("freshcrawl.store")


class WriterLock:
    """A held writer lock; :meth:`release` (or the end of a ``with`` block) gives it back.

    On PostgreSQL the lock lives as long as its connection: a server restart, or the connection cut
    by ``pg_terminate_backend``, releases it. :meth:`ensure` finds that out and takes the lock
    again on a new connection, or raises :class:`~freshcrawl.errors.WriterLockLostError` when
    another process took it meanwhile (this one must then stop writing).
    """

    def __init__(
        self, db: str, *, fd: int | None = None, path: Path | None = None, conn=None, engine=None
    ):
        self.db = db
        self.path = path
        self._fd = fd
        self._conn = conn
        self._engine = engine
        self._mutex = threading.Lock()
        #: times the lock was taken again after its connection died
        self.n_retaken = 0
        #: set once the lock is lost to another process
        self.lost = False

    @property
    def held(self) -> bool:
        """Whether this object still holds the lock."""
        return self._fd is not None or self._conn is not None

    def ensure(self) -> None:
        """Check that the lock is still held; take it again if its connection died (PostgreSQL).

        One round trip on the lock's connection when it is alive; a new connection and
        ``pg_try_advisory_lock`` when it is not. A SQLite lock (``flock``) cannot be lost.

        Raises
        ------
        WriterLockLostError
            If the lock was lost and another process holds it now (also at every later call).
        DatabaseUnavailableError
            If the server cannot be reached to check (the lock is taken again at the next call
            that reaches it).
        """
        if self._engine is None:
            if self.lost:
                raise self._lost_error()
            return
        from sqlalchemy import text

        from freshcrawl.store import is_connection_error, unavailable

        with self._mutex:
            if self.lost:
                raise self._lost_error()
            if self._conn is not None:
                try:
                    self._conn.exec_driver_sql("SELECT 1")
                    self._conn.commit()
                    return
                except Exception as err:
                    if not is_connection_error(err):
                        raise
                    self._drop_connection()
            try:
                conn = self._engine.connect()
                got = conn.execute(
                    text("SELECT pg_try_advisory_lock(:k)"), {"k": ADVISORY_KEY}
                ).scalar_one()
                conn.commit()
            except Exception as err:
                if is_connection_error(err):
                    raise unavailable(self._shown, err) from err
                raise
            if not got:
                conn.close()
                self.lost = True
                raise self._lost_error()
            self._conn = conn
            self.n_retaken += 1
            log.warning("writer lock of %s taken again after its connection was lost", self._shown)

    @property
    def _shown(self) -> str:
        from sqlalchemy.engine import make_url

        from freshcrawl.store import database_url

        return make_url(database_url(self.db)).render_as_string(hide_password=True)

    def _lost_error(self) -> WriterLockLostError:
        return WriterLockLostError(
            f"the writer lock of {self._shown} was lost during a database outage and another process "
            "holds it now; this process stopped writing (run one writer per crawl database)"
        )

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # the connection is dead already
                conn.invalidate()
                conn.close()

    def release(self) -> None:
        """Release the lock (idempotent; a lock whose connection died is released already)."""
        if self._fd is not None:
            import fcntl

            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
        if self._engine is not None:
            from sqlalchemy import text

            with self._mutex:
                try:
                    # a dead connection holds no lock: nothing to release
                    with contextlib.suppress(Exception):
                        if self._conn is not None:
                            self._conn.execute(
                                text("SELECT pg_advisory_unlock(:k)"), {"k": ADVISORY_KEY}
                            )
                            self._conn.commit()
                finally:
                    self._drop_connection()
                    self._engine.dispose()
                    self._engine = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"WriterLock({self.db!r}, held={self.held})"


def acquire_writer_lock(db: str | Path, *, retry_s: float = 5.0) -> WriterLock:
    """Take the writer lock of crawl database ``db`` (SQLite path or URL) without waiting for it.

    Parameters
    ----------
    db : str or path
        The crawl database.
    retry_s : float, default=5.0
        Seconds to retry reaching a PostgreSQL server that refuses connections (capped, jittered
        back-off), not to wait for the lock.

    Raises
    ------
    DatabaseInUseError
        If another process (or another :class:`WriterLock` of this one) holds it.
    DatabaseUnavailableError
        If the PostgreSQL server cannot be reached within ``retry_s`` seconds.
    ValueError
        If ``db`` is not a path or URL, or a URL of a database other than SQLite or PostgreSQL.
    """
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_random_exponential

    from freshcrawl.store import database_url, is_connection_error, is_refused_login, unavailable

    url = make_url(database_url(db))
    shown = url.render_as_string(hide_password=True)
    if url.get_backend_name() == "sqlite":
        import fcntl

        if not url.database:
            raise ValueError(
                f"db must name a SQLite file, not an in-memory database; got {shown!r}"
            )
        path = Path(url.database).with_name(Path(url.database).name + ".writer.lock")
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as err:
            os.close(fd)
            raise DatabaseInUseError(
                f"the crawl database {shown} is already served by another process (it holds {path}); "
                "run one serve process per crawl database"
            ) from err
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return WriterLock(str(db), fd=fd, path=path)
    if url.get_backend_name() == "postgresql":
        engine = create_engine(
            url, poolclass=None, pool_size=1, max_overflow=0, connect_args={"connect_timeout": 10}
        )

        def take():
            conn = engine.connect()
            try:
                got = conn.execute(
                    text("SELECT pg_try_advisory_lock(:k)"), {"k": ADVISORY_KEY}
                ).scalar_one()
                conn.commit()  # the session lock outlives the transaction; nothing stays open
            except BaseException:
                conn.close()
                raise
            return conn, got

        retrying = Retrying(
            retry=retry_if_exception(is_connection_error),
            reraise=True,
            wait=wait_random_exponential(multiplier=0.05, max=1.0),
            stop=stop_after_delay(retry_s),
        )
        try:
            conn, got = retrying(take)
        except Exception as err:
            engine.dispose()
            if is_connection_error(err) or is_refused_login(err):
                raise unavailable(shown, err) from err
            raise
        if not got:
            conn.close()
            engine.dispose()
            raise DatabaseInUseError(
                f"the crawl database {shown} is already served by another process (it holds advisory "
                f"lock {ADVISORY_KEY}); run one serve process per crawl database"
            )
        return WriterLock(str(db), conn=conn, engine=engine)
    raise ValueError(f"db must be a SQLite file or a PostgreSQL URL; got {shown!r}")
