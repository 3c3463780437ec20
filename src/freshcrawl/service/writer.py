"""One writer per crawl database: the lock a ``freshcrawl serve`` process holds for its whole life.

:class:`~freshcrawl.service.FrontierService` hands out leases under its own lock and keeps the
leases in memory, so two serve processes on one database could lease the same URL twice. That is
why a serve process takes the database's writer lock before it opens the crawl, and a second one is
refused with :class:`~freshcrawl.errors.DatabaseInUseError`:

- PostgreSQL: a session advisory lock (``pg_try_advisory_lock``) held on a dedicated connection. The
  server releases it when that connection closes, also when the process dies (``kill -9``).
- SQLite: an exclusive ``flock`` on a sidecar file ``<db>.writer.lock`` beside the database (the
  crawls of other IDs, sibling files, are covered by the same lock). The kernel releases it when the
  process dies. It protects processes of one machine, which is all SQLite supports anyway.

The lock is advisory: it keeps serve processes apart, not other programs that open the database.
"""

from __future__ import annotations

import os
from pathlib import Path

from freshcrawl.errors import DatabaseInUseError

__all__ = ["WriterLock", "acquire_writer_lock", "ADVISORY_KEY"]

#: The PostgreSQL advisory lock key of a crawl database's writer (any constant 64-bit integer works:
#: advisory locks are per database). ``int.from_bytes(b"frcrawl1", "big") >> 1``.
ADVISORY_KEY = int.from_bytes(b"frcrawl1", "big") >> 1


class WriterLock:
    """A held writer lock; :meth:`release` (or the end of a ``with`` block) gives it back."""

    def __init__(self, db: str, *, fd: int | None = None, path: Path | None = None, conn=None, engine=None):
        self.db = db
        self.path = path
        self._fd = fd
        self._conn = conn
        self._engine = engine

    @property
    def held(self) -> bool:
        """Whether this object still holds the lock."""
        return self._fd is not None or self._conn is not None

    def release(self) -> None:
        """Release the lock (idempotent)."""
        if self._fd is not None:
            import fcntl

            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
        if self._conn is not None:
            from sqlalchemy import text

            try:
                self._conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": ADVISORY_KEY})
            finally:
                self._conn.close()
                self._engine.dispose()
                self._conn = self._engine = None

    def __enter__(self) -> WriterLock:
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"WriterLock({self.db!r}, held={self.held})"


def acquire_writer_lock(db: str | Path) -> WriterLock:
    """Take the writer lock of crawl database ``db`` (SQLite path or URL) without waiting.

    Raises
    ------
    DatabaseInUseError
        If another process (or another :class:`WriterLock` of this one) holds it.
    ValueError
        If ``db`` is not a path or URL, or a URL of a database other than SQLite or PostgreSQL.
    """
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from freshcrawl.store import database_url

    url = make_url(database_url(db))
    shown = url.render_as_string(hide_password=True)
    if url.get_backend_name() == "sqlite":
        import fcntl

        if not url.database:
            raise ValueError(f"db must name a SQLite file, not an in-memory database; got {shown!r}")
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
        engine = create_engine(url, poolclass=None, pool_size=1, max_overflow=0)
        conn = engine.connect()
        try:
            got = conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": ADVISORY_KEY}).scalar_one()
            conn.commit()  # the session lock outlives the transaction; nothing stays open
        except Exception:
            conn.close()
            engine.dispose()
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
