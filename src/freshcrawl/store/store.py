"""The crawl state in a database: one SQLite file by default, PostgreSQL through a URL.

:func:`open_store` creates the database on first use and brings its schema to the newest alembic
revision; every write is one transaction, so a crash (``kill -9``) loses at most the transaction in
progress and never half of it. SQLite runs in WAL mode with ``synchronous=NORMAL``: a committed
transaction survives the crash of the process (not necessarily a power cut of the machine).

Outages. Every operation retries on a lost or refused connection (:mod:`freshcrawl.store._retry`)
for :attr:`Store.retry_s` seconds, then raises :class:`~freshcrawl.errors.DatabaseUnavailableError`;
while the store is in an outage (:attr:`Store.down_since`) an operation tries once and fails fast, and
the first one that succeeds ends the outage. PostgreSQL connections are checked before use (SQLAlchemy's
pool pre-ping), so a server restart between two operations costs a reconnect, not an error.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from importlib.resources import files
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Engine, Table, create_engine, event, func, insert, select, text, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DatabaseError, DBAPIError
from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_random_exponential,
)

from freshcrawl.errors import CorruptDatabaseError
from freshcrawl.store._retry import is_connection_error, is_refused_login, retried, unavailable
from freshcrawl.store.schema import (
    announcements,
    crawl,
    hosts,
    observations,
    page_hints,
    pages,
    sources,
    trust,
    url_metadata,
)

__all__ = [
    "Store",
    "open_store",
    "database_url",
    "check_namespace",
    "list_namespaces",
    "drop_namespace",
    "PageArrays",
    "HostArrays",
]


def database_url(db: str | Path) -> str:
    """SQLAlchemy URL of ``db``: a URL as given (``postgresql+psycopg://...``), a path as SQLite.

    Raises
    ------
    ValueError
        If ``db`` is empty or a URL SQLAlchemy cannot parse.
    """
    text_ = str(db).strip()
    if not text_:
        raise ValueError("db must be a file path or a database URL; got ''")
    if "://" in text_:
        try:
            make_url(text_)
        except Exception as err:
            raise ValueError(f"db is not a valid database URL: {text_!r} ({err})") from err
        backend = make_url(text_).get_backend_name()
        if backend not in ("sqlite", "postgresql"):
            raise ValueError(f"db must be a SQLite file or a postgresql+psycopg:// URL; got a {backend!r} URL")
        return text_
    return f"sqlite:///{Path(text_).expanduser().resolve()}"


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cur = dbapi_connection.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA cache_size=-65536")  # 64 MiB of page cache: a re-plan rewrites every page row
    cur.close()


@dataclass(frozen=True, slots=True)
class PageArrays:
    """Every page row as arrays of shape (n,), ordered by id; times in seconds since the epoch (NaN: never)."""

    id: NDArray[np.int64]
    host_id: NDArray[np.int64]
    weight: NDArray[np.float64]
    status: NDArray[np.object_]
    next_due: NDArray[np.float64]
    rate: NDArray[np.float64]
    last_visit_at: NDArray[np.float64]
    last_copy_at: NDArray[np.float64]
    n_errors: NDArray[np.int64]
    n_errors_total: NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class HostArrays:
    """Every host row as arrays of shape (n_hosts,), ordered by id (NaN where the column is NULL)."""

    id: NDArray[np.int64]
    origin: NDArray[np.object_]
    robots_status: NDArray[np.float64]
    robots_text: NDArray[np.object_]
    robots_fetched_at: NDArray[np.float64]
    crawl_delay_s: NDArray[np.float64]
    min_delay_s: NDArray[np.float64]
    max_per_day: NDArray[np.float64]
    last_request_at: NDArray[np.float64]
    backoff_until: NDArray[np.float64]
    n_backoff: NDArray[np.int64]
    n_errors: NDArray[np.int64]


def _floats(rows: Sequence[Any]) -> NDArray[np.float64]:
    return np.array([np.nan if v is None else v for v in rows], dtype=np.float64)


_Arrays = TypeVar("_Arrays", PageArrays, HostArrays)
#: Most values in one SQL ``IN (...)`` list.
_IN_BATCH = 5000

_T = TypeVar("_T")


def _batches(values: Sequence[_T]) -> Iterator[list[_T]]:
    """``values`` in lists of at most :data:`_IN_BATCH`, for SQL ``IN`` lists."""
    for i in range(0, len(values), _IN_BATCH):
        yield list(values[i : i + _IN_BATCH])


#: dtype of each array annotation of PageArrays and HostArrays (NULL: NaN in a float array)
_KINDS = {"NDArray[np.int64]": np.int64, "NDArray[np.float64]": np.float64, "NDArray[np.object_]": object}


class Store:
    """The crawl state behind one SQLAlchemy engine. Build it with :func:`open_store`.

    Parameters
    ----------
    engine : sqlalchemy.Engine
        An engine whose database is at the newest schema revision.
    retry_s : float, default=5.0
        Seconds an operation keeps retrying on connection errors before it raises
        :class:`~freshcrawl.errors.DatabaseUnavailableError` (0: one try).
    retry_max_wait_s : float, default=1.0
        Longest wait between two tries, seconds (each wait is drawn in [0, bound], the bound
        doubling from 100 ms).

    Attributes
    ----------
    down_since : float or None
        When (seconds since the epoch) the store's outage began; None when the database answers.
    outages : int
        Outages seen by this store (each ends at the first operation that succeeds).
    guard : callable or None
        Called with no argument before a new connection is used (PostgreSQL): the writer lock's
        check (:meth:`freshcrawl.store.writer.WriterLock.ensure`), which raises when the lock is
        lost, so that nothing is written on a connection made after another writer took over.
    """

    def __init__(self, engine: Engine, *, retry_s: float = 5.0, retry_max_wait_s: float = 1.0) -> None:
        self.engine = engine
        self.where = engine.url.render_as_string(hide_password=True)
        self.retry_s = float(retry_s)
        self.retry_max_wait_s = float(retry_max_wait_s)
        self.down_since: float | None = None
        self.outages = 0
        self.guard: Callable[[], None] | None = None
        self._state_lock = threading.Lock()
        # Single reads of the hot paths (a lease's URLs, a report's pages) in autocommit mode: on
        # PostgreSQL a read in a transaction costs two more round trips (BEGIN, and the ROLLBACK
        # that returns the connection to the pool).
        self._reads = engine.execution_options(isolation_level="AUTOCOMMIT")
        #: the crawl ID this store holds (None: the crawl of the database itself)
        self.namespace: str | None = None
        #: its PostgreSQL schema, if any
        self.schema: str | None = None

    @property
    def dialect(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self.engine.dialect.name

    def close(self) -> None:
        """Release the engine's connections."""
        self.engine.dispose()

    def _run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` (one transaction) with retries on connection errors.

        Raises
        ------
        DatabaseUnavailableError
            When the connection still fails after :attr:`retry_s` seconds, or at the first failure
            while the store is in an outage.
        """
        down = self.down_since is not None
        stop = stop_after_attempt(1) if down or self.retry_s <= 0 else stop_after_delay(self.retry_s)
        retrying = Retrying(
            retry=retry_if_exception(is_connection_error),
            wait=wait_random_exponential(multiplier=0.05, max=self.retry_max_wait_s),
            stop=stop,
            reraise=True,
        )
        began = time.time()
        try:
            result = retrying(fn, *args, **kwargs)
        except Exception as err:
            if is_refused_login(err):
                raise unavailable(self.where, err) from err
            if not is_connection_error(err):
                raise
            with self._state_lock:
                if self.down_since is None:
                    self.down_since = began
                    self.outages += 1
            error = unavailable(self.where, err)
            error.since = self.down_since
            raise error from err
        if down:
            with self._state_lock:
                self.down_since = None
        return result

    def _on_connect(self, _dbapi_connection, _record) -> None:
        if self.guard is not None:
            self.guard()

    def ping(self) -> None:
        """One round trip to the database (``SELECT 1``), through the retry policy.

        Raises
        ------
        DatabaseUnavailableError
            If the database cannot be reached.
        """
        self._run(self._ping)

    def _ping(self) -> None:
        with self._reads.connect() as conn:
            conn.exec_driver_sql("SELECT 1")

    # settings ------------------------------------------------------------------------------------
    @retried
    def settings(self) -> dict[str, Any]:
        """The crawl's settings as saved by :meth:`save_settings` (``{}`` for a new crawl)."""
        with self.engine.connect() as conn:
            return {k: json.loads(v) for k, v in conn.execute(select(crawl.c.key, crawl.c.value))}

    @retried
    def save_settings(self, values: dict[str, Any]) -> None:
        """Insert or replace settings (JSON-serialisable values) in one transaction."""
        with self.engine.begin() as conn:
            for key, value in values.items():
                conn.execute(crawl.delete().where(crawl.c.key == key))
                conn.execute(insert(crawl).values(key=key, value=json.dumps(value)))

    # pages and hosts -----------------------------------------------------------------------------
    @retried
    def add_pages(
        self, rows: Sequence[tuple[str, str, float]], *, now: float, next_due: Sequence[float] | None = None
    ) -> tuple[list[int], int]:
        """Add pages ``(url, origin, weight)`` not yet known, with their hosts, in one transaction.

        Parameters
        ----------
        rows : sequence of (str, str, float)
            Normalised URL, its origin (``scheme://host[:port]``) and weight >= 0.
        now : float
            Seconds since the epoch, the pages' ``added_at``.
        next_due : sequence of float, optional
            First due time of each row (seconds since the epoch); default ``now``.

        Returns
        -------
        added_ids : list of int
            Ids of the pages added, in the order of ``rows`` (known URLs are skipped).
        n_known : int
            Rows whose URL was already in the crawl (a removed page is not revived).
        """
        if not rows:
            return [], 0
        with self.engine.begin() as conn:
            origins = sorted({o for _, o, _ in rows})
            known_hosts = dict(
                conn.execute(select(hosts.c.origin, hosts.c.id).where(hosts.c.origin.in_(origins))).all()
            )
            for origin in origins:
                if origin not in known_hosts:
                    known_hosts[origin] = conn.execute(
                        insert(hosts).values(origin=origin).returning(hosts.c.id)
                    ).scalar_one()
            urls = [u for u, _, _ in rows]
            known_urls: set[str] = set()
            for batch in _batches(urls):
                known_urls.update(
                    conn.execute(select(pages.c.url).where(pages.c.url.in_(batch))).scalars()
                )
            due = [now] * len(rows) if next_due is None else list(next_due)
            new, seen = [], set()
            for (url, origin, weight), t in zip(rows, due):
                if url in known_urls or url in seen:
                    continue
                seen.add(url)
                new.append(
                    {"url": url, "host_id": known_hosts[origin], "weight": float(weight), "added_at": now,
                     "next_due": float(t), "status": "active"}
                )
            if new:
                conn.execute(insert(pages), new)
                ids = dict(
                    (u, i)
                    for batch in _batches(new)
                    for u, i in conn.execute(
                        select(pages.c.url, pages.c.id).where(
                            pages.c.url.in_([r["url"] for r in batch])
                        )
                    )
                )
                added = [ids[r["url"]] for r in new]
            else:
                added = []
        return added, len(rows) - len(added)

    @retried
    def page_arrays(self) -> PageArrays:
        """Every page as arrays ordered by id, read in chunks."""
        return self._arrays(pages, PageArrays)

    @retried
    def host_arrays(self) -> HostArrays:
        """Every host as arrays ordered by id."""
        return self._arrays(hosts, HostArrays)

    def _arrays(self, table: Table, cls: type[_Arrays]) -> _Arrays:
        """Every row of ``table`` ordered by id, read in chunks, as ``cls``: one array per field, the
        column of its name, of its annotation's dtype."""
        names = [f.name for f in fields(cls)]
        kinds = [_KINDS[f.type] for f in fields(cls)]
        parts: list[list[np.ndarray]] = [[] for _ in names]
        with self.engine.connect() as conn:
            result = conn.execution_options(stream_results=True, yield_per=100_000).execute(
                select(*(table.c[n] for n in names)).order_by(table.c.id)
            )
            for chunk in result.partitions():
                for j, column in enumerate(zip(*chunk)):
                    kind = kinds[j]
                    parts[j].append(_floats(column) if kind is np.float64 else np.array(column, dtype=kind))
        return cls(*(np.concatenate(p) if p else np.empty(0, dtype=k) for p, k in zip(parts, kinds)))

    @retried
    def page_rows(self, ids: Iterable[int]) -> dict[int, dict[str, Any]]:
        """Page rows by id, as dicts of column values."""
        ids = list(ids)
        out: dict[int, dict[str, Any]] = {}
        with self.engine.connect() as conn:
            for batch in _batches(ids):
                for row in conn.execute(select(pages).where(pages.c.id.in_(batch))).mappings():
                    out[row["id"]] = dict(row)
        return out

    @retried
    def request_rows(self, ids: Sequence[int]) -> dict[int, tuple[str, str | None, str | None, str | None]]:
        """``id -> (url, etag, last_modified, signature)`` of pages ``ids``: what a visit sends.

        The dispatch's hot path (one call per lease): a plain driver query, no ORM rows.
        """
        ids = [int(i) for i in ids]
        if not ids:
            return {}
        mark = "?" if self.dialect == "sqlite" else "%s"
        sql = ("SELECT id, url, etag, last_modified, signature FROM pages WHERE id IN ("
               + ", ".join([mark] * len(ids)) + ")")
        with self._reads.connect() as conn:
            rows = conn.exec_driver_sql(sql, tuple(ids)).all()
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}

    @retried
    def pages_after(self, after_id: int) -> list[dict[str, Any]]:
        """Rows (id, host_id, weight, status, next_due) of the pages with id > ``after_id``, by id."""
        c = pages.c
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(
                select(c.id, c.host_id, c.weight, c.status, c.next_due).where(c.id > after_id).order_by(c.id)
            ).mappings()]

    def _url_filter(self, q, host_id: int | None, contains: str | None, ignore_case: bool):
        q = q.where(pages.c.status != "removed")
        if host_id is not None:
            q = q.where(pages.c.host_id == host_id)
        if contains and not ignore_case and self.dialect == "sqlite":
            # SQLite's LIKE ignores the case of ASCII letters: a case-sensitive match is instr()
            q = q.where(func.instr(pages.c.url, contains) > 0)
        elif contains:
            pattern = "%" + contains.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            column = func.lower(pages.c.url) if ignore_case else pages.c.url
            q = q.where(column.like(pattern.lower() if ignore_case else pattern, escape="\\"))
        return q

    @retried
    def count_urls(self, *, host_id: int | None = None, contains: str | None = None,
                   ignore_case: bool = False) -> int:
        """Pages not removed, of one host and/or whose URL contains a text."""
        q = self._url_filter(select(func.count()).select_from(pages), host_id, contains, ignore_case)
        with self.engine.connect() as conn:
            return int(conn.execute(q).scalar_one())

    @retried
    def list_urls(self, *, start: int = 0, size: int = 100, host_id: int | None = None,
                  contains: str | None = None, ignore_case: bool = False) -> list[dict[str, Any]]:
        """Page rows not removed, by id, from ``start``, at most ``size``."""
        q = self._url_filter(select(pages), host_id, contains, ignore_case).order_by(pages.c.id)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(q.offset(max(0, start)).limit(max(0, size))).mappings()]

    @retried
    def page_by_url(self, url: str) -> dict[str, Any] | None:
        """The page row of ``url`` (normalised), or None."""
        with self.engine.connect() as conn:
            row = conn.execute(select(pages).where(pages.c.url == url)).mappings().first()
        return None if row is None else dict(row)

    @retried
    def pages_by_url(self, urls: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Page rows of the known ``urls`` (normalised), by URL; unknown URLs are left out."""
        urls = list(dict.fromkeys(urls))
        out: dict[str, dict[str, Any]] = {}
        if not urls:
            return out
        with self._reads.connect() as conn:
            for batch in _batches(urls):
                for row in conn.execute(select(pages).where(pages.c.url.in_(batch))).mappings():
                    out[row["url"]] = dict(row)
        return out

    @retried
    def save_url_metadata(self, items: dict[int, dict[str, list[str]]], *, overwrite: bool = True) -> int:
        """Keep a client's metadata of pages (page id -> key -> values); return how many were written.

        ``overwrite=False`` writes only pages that have none yet (a URL discovered again keeps its own).
        """
        if not items:
            return 0
        ids = list(items)
        with self.engine.begin() as conn:
            have: set[int] = set()
            for batch in _batches(ids):
                have.update(conn.execute(select(url_metadata.c.page_id).where(
                    url_metadata.c.page_id.in_(batch))).scalars())
            if not overwrite:
                ids = [k for k in ids if k not in have]
            elif have:
                gone = list(have)
                for batch in _batches(gone):
                    conn.execute(url_metadata.delete().where(url_metadata.c.page_id.in_(batch)))
            if ids:
                conn.execute(url_metadata.insert(),
                             [{"page_id": k, "metadata": json.dumps(items[k], sort_keys=True)} for k in ids])
        return len(ids)

    @retried
    def url_metadata(self, ids: Iterable[int]) -> dict[int, dict[str, list[str]]]:
        """A client's metadata of pages, by page id (pages without any are left out)."""
        ids = list(ids)
        out: dict[int, dict[str, list[str]]] = {}
        if not ids:
            return out
        with self._reads.connect() as conn:  # a lease's hot path (GetURLs)
            for batch in _batches(ids):
                for page_id, text_ in conn.execute(select(url_metadata.c.page_id, url_metadata.c.metadata).where(
                        url_metadata.c.page_id.in_(batch))):
                    out[page_id] = json.loads(text_)
        return out

    @retried
    def host_row(self, host_id: int) -> dict[str, Any]:
        """The host row of ``host_id``."""
        with self.engine.connect() as conn:
            return dict(conn.execute(select(hosts).where(hosts.c.id == host_id)).mappings().one())

    # writes of the crawl loop --------------------------------------------------------------------
    def record(
        self,
        observation_rows: Sequence[dict[str, Any]],
        page_updates: Sequence[dict[str, Any]],
        host_updates: Sequence[dict[str, Any]],
    ) -> int:
        """Append observations and update their pages and hosts, all in one transaction.

        Each page update and host update is a dict with ``id`` and the columns to set. Rows with the
        same keys are written together: one executemany on SQLite; on PostgreSQL one statement (the
        rows as JSON) and the whole transaction one pipeline (psycopg's pipeline mode: one round trip
        to the server, then the commit).

        A connection lost at the commit leaves it unknown whether the commit happened: a retry
        then appends only the observations not in the log yet (same page, time and outcome), so
        that no observation is counted twice.

        Returns
        -------
        int
            The number of observations appended.

        Raises
        ------
        DatabaseUnavailableError
            If the database cannot be reached within the retry window (nothing was written, or the
            first try's commit did and a later call finds its observations logged).
        """
        tries = 0

        def attempt() -> int:
            nonlocal tries
            tries += 1
            rows = observation_rows if tries == 1 else self._not_logged(observation_rows)
            self._record_once(rows, page_updates, host_updates)
            return len(observation_rows)

        return self._run(attempt)

    def _not_logged(self, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The observation rows whose (page, time, outcome) is not in the log yet."""
        if not rows:
            return []
        o = observations.c
        ids = sorted({r["page_id"] for r in rows})
        seen: set[tuple[int, float, str]] = set()
        with self.engine.connect() as conn:
            for batch in _batches(ids):
                q = select(o.page_id, o.time, o.outcome).where(o.page_id.in_(batch))
                seen.update((int(a), float(b), str(c)) for a, b, c in conn.execute(q))
        return [r for r in rows if (int(r["page_id"]), float(r["time"]), str(r["outcome"])) not in seen]

    def _record_once(
        self,
        observation_rows: Sequence[dict[str, Any]],
        page_updates: Sequence[dict[str, Any]],
        host_updates: Sequence[dict[str, Any]],
    ) -> None:
        writes = [(observations, observation_rows, True), (pages, page_updates, False),
                  (hosts, host_updates, False)]
        with self.engine.begin() as conn:
            if self.dialect == "postgresql":
                # one statement per table and set of keys, in one pipeline: a round trip and the commit
                import psycopg

                raw = conn.connection.driver_connection
                sql = None
                try:
                    with raw.pipeline(), raw.cursor() as cur:
                        for table, rows, new in writes:
                            for cols, group in _by_keys(rows, new):
                                sql = _pg_bulk(table, cols, group, new)
                                cur.execute(*sql)
                except psycopg.Error as err:  # as SQLAlchemy raises it (IntegrityError, OperationalError, ...)
                    raise DBAPIError.instance(sql[0] if sql else "", None, err, psycopg.Error) from err
            else:
                for table, rows, new in writes:
                    for cols, group in _by_keys(rows, new):
                        if new:
                            sql = f"INSERT INTO {table.name} ({', '.join(cols)}) VALUES ({', '.join(':' + c for c in cols)})"
                        else:
                            sql = (f"UPDATE {table.name} SET {', '.join(f'{c} = :{c}' for c in cols)} "
                                   "WHERE id = :id")
                        conn.execute(text(sql), group)

    @retried
    def save_plan(
        self,
        ids: NDArray[np.int64],
        rate: NDArray[np.float64],
        next_due: NDArray[np.float64],
        delta_hat: NDArray[np.float64],
        n_obs: NDArray[np.int64],
        *,
        settings: dict[str, Any] | None = None,
    ) -> None:
        """Write a plan (rates, next due times, Δ̂ and observation counts) for ``ids``, in one transaction.

        SQLite takes one executemany; PostgreSQL a COPY into a temporary table and one UPDATE.
        """
        chunk = 100_000

        def rows(lo: int):  # plain Python values, a chunk at a time (bounded memory)
            sl = slice(lo, lo + chunk)
            delta = [None if not math.isfinite(d) else d for d in delta_hat[sl].tolist()]
            return zip(rate[sl].tolist(), next_due[sl].tolist(), delta, n_obs[sl].tolist(), ids[sl].tolist())

        with self.engine.begin() as conn:
            if self.dialect == "postgresql" and ids.size:
                raw = conn.connection.driver_connection
                with raw.cursor() as cur:
                    cur.execute(
                        "CREATE TEMP TABLE plan_rows (rate double precision, next_due double precision, "
                        "delta_hat double precision, n_obs integer, id integer) ON COMMIT DROP"
                    )
                    with cur.copy("COPY plan_rows (rate, next_due, delta_hat, n_obs, id) FROM STDIN") as cp:
                        for lo in range(0, ids.size, chunk):
                            for row in rows(lo):
                                cp.write_row(row)
                    cur.execute(
                        "UPDATE pages SET rate = p.rate, next_due = p.next_due, delta_hat = p.delta_hat, "
                        "n_obs = p.n_obs FROM plan_rows p WHERE pages.id = p.id"
                    )
            else:
                for lo in range(0, ids.size, chunk):
                    conn.exec_driver_sql(
                        "UPDATE pages SET rate = ?, next_due = ?, delta_hat = ?, n_obs = ? WHERE id = ?",
                        list(rows(lo)),
                    )
            for key, value in (settings or {}).items():
                conn.execute(crawl.delete().where(crawl.c.key == key))
                conn.execute(insert(crawl).values(key=key, value=json.dumps(value)))

    @retried
    def save_host(self, host_id: int, **values: Any) -> None:
        """Set columns of one host in one transaction."""
        with self.engine.begin() as conn:
            conn.execute(update(hosts).where(hosts.c.id == host_id).values(**values))

    @retried
    def set_page_status(self, ids: Sequence[int], status: str, **values: Any) -> None:
        """Set the status (and other columns) of pages ``ids`` in one transaction."""
        with self.engine.begin() as conn:
            for batch in _batches(ids):
                conn.execute(
                    update(pages).where(pages.c.id.in_(batch)).values(status=status, **values)
                )

    def clear(self) -> None:
        """Delete every page, host, observation and client metadata of the crawl in one transaction.

        The settings and the schema stay: a frontier opened on the store afterwards starts empty,
        and the ids of the pages and hosts added next start again from 1 (the frontier indexes
        them).
        """
        tables = (url_metadata, announcements, trust, page_hints, sources, observations, pages, hosts)
        with self.engine.begin() as conn:
            if self.dialect == "postgresql":  # DELETE would keep the id sequences where they were
                names = ", ".join(conn.dialect.identifier_preparer.quote(t.name) for t in tables)
                conn.execute(text(f"TRUNCATE TABLE {names} RESTART IDENTITY"))
            else:
                for table in tables:
                    conn.execute(table.delete())

    # reads of the log ----------------------------------------------------------------------------
    @retried
    def observation_log(
        self, *, page_id: int | None = None, after_id: int = 0, outcomes: Sequence[str] | None = None
    ) -> list[dict[str, Any]]:
        """Observation rows (dicts) with id > ``after_id``, in time order (then id)."""
        q = select(observations).where(observations.c.id > after_id)
        if page_id is not None:
            q = q.where(observations.c.page_id == page_id)
        if outcomes is not None:
            q = q.where(observations.c.outcome.in_(list(outcomes)))
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(q.order_by(observations.c.time, observations.c.id)).mappings()]

    @retried
    def learning_log(self) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.bool_],
                                    NDArray[np.float64], NDArray[np.float64], int]:
        """The observations the estimators learn from (changed and unchanged), in time order.

        Returns
        -------
        page_id, time_s, changed, tau_days, rate : ndarrays of shape (m,)
        last_id : int
            The largest observation id in the log (0 when empty).
        """
        o = observations.c
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(o.page_id, o.time, o.outcome, o.tau_days, o.rate)
                .where(o.outcome.in_(("changed", "unchanged")))
                .order_by(o.time, o.id)
            ).all()
            last = conn.execute(select(func.max(o.id))).scalar() or 0
        if not rows:
            e = np.empty(0)
            return e.astype(np.int64), e, e.astype(bool), e, e, int(last)
        c = list(zip(*rows))
        return (np.array(c[0], dtype=np.int64), np.array(c[1], dtype=np.float64),
                np.array(c[2], dtype=object) == "changed", np.array(c[3], dtype=np.float64),
                np.array(c[4], dtype=np.float64), int(last))

    @retried
    def counts(self) -> dict[str, Any]:
        """Pages by status, hosts, observations by outcome."""
        with self.engine.connect() as conn:
            by_status = dict(conn.execute(select(pages.c.status, func.count()).group_by(pages.c.status)).all())
            by_outcome = dict(
                conn.execute(select(observations.c.outcome, func.count()).group_by(observations.c.outcome)).all()
            )
            n_hosts = conn.execute(select(func.count()).select_from(hosts)).scalar_one()
        return {"pages": by_status, "hosts": n_hosts, "observations": by_outcome}

    def outcome_counts(self) -> dict[tuple[str, str | None], int]:
        """Observations by (outcome, error kind); the kind is None for visits that gave information."""
        o = observations.c
        q = select(o.outcome, o.error, func.count()).group_by(o.outcome, o.error)
        with self.engine.connect() as conn:
            rows = conn.execute(q).all()
        return {(outcome, error): int(n) for outcome, error, n in rows}

    # announcements -------------------------------------------------------------------------------
    @retried
    def add_sources(self, rows: Sequence[dict[str, Any]]) -> int:
        """Mark pages as sources: dicts with ``page_id``, ``kind`` (``sitemap``/``feed``), ``how``
        and ``added_at``; pages already sources are skipped. Returns how many were added."""
        if not rows:
            return 0
        with self.engine.begin() as conn:
            have = set(conn.execute(select(sources.c.page_id).where(
                sources.c.page_id.in_([r["page_id"] for r in rows]))).scalars())
            new = [dict(r) for r in rows if r["page_id"] not in have]
            if new:
                conn.execute(insert(sources), new)
        return len(new)

    @retried
    def source_rows(self) -> list[dict[str, Any]]:
        """Every source with its page's URL and host id, by page id."""
        q = (select(sources, pages.c.url, pages.c.host_id)
             .join(pages, pages.c.id == sources.c.page_id).order_by(sources.c.page_id))
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(q).mappings()]

    @retried
    def record_announcements(
        self,
        rows: Sequence[dict[str, Any]],
        *,
        source_read: dict[str, Any] | None = None,
        hints: Sequence[dict[str, Any]] = (),
    ) -> None:
        """Append announcements (dicts: ``page_id``, ``source``, ``changed_at``, ``received_at``,
        ``note``), update a source's last read (``page_id`` and the columns) and set page hints
        (``page_id``, ``changefreq``, ``priority``), in one transaction."""
        with self.engine.begin() as conn:
            if rows:
                conn.execute(insert(announcements), [dict(r) for r in rows])
            if source_read is not None:
                values = {k: v for k, v in source_read.items() if k != "page_id"}
                conn.execute(update(sources).where(sources.c.page_id == source_read["page_id"]).values(**values))
            if hints:
                ids = [h["page_id"] for h in hints]
                for batch in _batches(ids):
                    conn.execute(page_hints.delete().where(page_hints.c.page_id.in_(batch)))
                conn.execute(insert(page_hints), [dict(h) for h in hints])

    @retried
    def announcement_log(self) -> list[tuple[int, str, float, float, str | None]]:
        """Every announcement as ``(page_id, source, changed_at, received_at, note)``, in id order."""
        a = announcements.c
        with self.engine.connect() as conn:
            return [tuple(r) for r in conn.execute(
                select(a.page_id, a.source, a.changed_at, a.received_at, a.note).order_by(a.id))]

    @retried
    def page_hints(self) -> dict[int, tuple[str | None, float | None]]:
        """page id -> (changefreq, priority) as the sitemaps last gave them."""
        with self.engine.connect() as conn:
            return {int(i): (f, p) for i, f, p in conn.execute(select(page_hints))}

    @retried
    def save_trust(self, rows: Sequence[dict[str, Any]]) -> None:
        """Replace the trust rows (dicts with every column of ``trust``) of their (source, host) pairs."""
        if not rows:
            return
        with self.engine.begin() as conn:
            for r in rows:
                conn.execute(trust.delete().where((trust.c.source == r["source"]) & (trust.c.host_id == r["host_id"])))
            conn.execute(insert(trust), [dict(r) for r in rows])

    @retried
    def trust_rows(self, host_id: int | None = None) -> list[dict[str, Any]]:
        """Trust per source and host (of ``host_id`` only, if given), with the host's origin."""
        q = select(trust, hosts.c.origin).join(hosts, hosts.c.id == trust.c.host_id)
        if host_id is not None:
            q = q.where(trust.c.host_id == host_id)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(q.order_by(trust.c.host_id, trust.c.source)).mappings()]

    def export_csv(self, out: io.TextIOBase) -> int:
        """Write the visit log as ``page,time,changed`` (the format ``freshcrawl estimate`` reads).

        Every visit that gave a copy (first copy, changed, unchanged) is a row: ``page`` is the URL,
        ``time`` unix seconds, ``changed`` 0 or 1 (a page's first row starts its history). Returns the
        number of rows.
        """
        q = (
            select(pages.c.url, observations.c.time, observations.c.outcome)
            .join(pages, pages.c.id == observations.c.page_id)
            .where(observations.c.outcome.in_(("first", "changed", "unchanged")))
            .order_by(observations.c.time, observations.c.id)
        )
        try:
            return self._export_csv(q, out)
        except Exception as err:  # never retried: the rows already written would be written again
            if is_connection_error(err):
                raise unavailable(self.where, err) from err
            raise

    def _export_csv(self, q, out: io.TextIOBase) -> int:
        out.write("page,time,changed\n")
        n = 0
        last: dict[str, float] = {}
        with self.engine.connect() as conn:
            for url, t, outcome in conn.execute(q):
                if url in last and t <= last[url]:
                    continue  # times must strictly increase per page in a visit log
                last[url] = t
                quoted = '"' + url.replace('"', '""') + '"' if ("," in url or '"' in url) else url
                out.write(f"{quoted},{t!r},{int(outcome == 'changed')}\n")
                n += 1
        return n


def _by_keys(rows: Sequence[dict[str, Any]], insert: bool) -> list[tuple[tuple[str, ...], list[dict[str, Any]]]]:
    """Rows grouped by their set of columns (``id`` apart for updates), each group written at once."""
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row in rows:
        cols = tuple(sorted(k for k in row if insert or k != "id"))
        if cols:
            groups.setdefault(cols, []).append(row)
    return list(groups.items())


def _json_value(v: Any) -> Any:
    """``v`` as JSON carries it to PostgreSQL: a non-finite float as the text float8 reads
    (``inf``, ``-inf``, ``nan``)."""
    return repr(v) if isinstance(v, float) and not math.isfinite(v) else v


def _pg_bulk(table, cols: tuple[str, ...], rows: list[dict[str, Any]], insert: bool) -> tuple[str, tuple]:
    """One PostgreSQL statement that inserts ``rows`` into ``table`` (or updates them by ``id``).

    The rows travel as one JSON parameter read back with ``json_populate_recordset`` (the table's
    own row type gives the column types): a batch of visits costs the server one statement per
    table instead of one per row. Column names come from this module's callers, never from outside.
    """
    names = cols if insert else ("id", *cols)
    try:
        data = json.dumps([{c: r[c] for c in names} for r in rows], allow_nan=False)
    except ValueError:  # a non-finite float, which JSON cannot carry: the slower, exact way
        data = json.dumps([{c: _json_value(r[c]) for c in names} for r in rows], allow_nan=False)
    source = f"json_populate_recordset(NULL::{table.name}, %s)"
    if insert:
        return f"INSERT INTO {table.name} ({', '.join(cols)}) SELECT {', '.join(cols)} FROM {source}", (data,)
    sets = ", ".join(f"{c} = v.{c}" for c in cols)
    # "id = ANY(the ids)": the planner cannot count the rows of a function (it assumes 100) and would
    # scan a table of a few thousand rows instead of looking the ids up
    return (f"WITH v AS MATERIALIZED (SELECT * FROM {source}) UPDATE {table.name} SET {sets} FROM v "
            f"WHERE {table.name}.id = v.id AND {table.name}.id = ANY(ARRAY(SELECT id FROM v))"), (data,)


def _migrate(engine: Engine) -> None:
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(files("freshcrawl.store") / "migrations"))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


#: Crawl namespaces (URLFrontier crawl IDs): letters, digits, ``.``, ``_`` and ``-``, at most 64.
_NAMESPACE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def check_namespace(namespace: str) -> str:
    """Return ``namespace`` if it can name a crawl; ValueError otherwise."""
    if not isinstance(namespace, str) or not _NAMESPACE.match(namespace) or namespace in (".", ".."):
        raise ValueError(
            f"a crawl ID is 1-64 letters, digits, '.', '_' or '-'; got {namespace!r}"
        )
    return namespace


def _pg_schema(namespace: str) -> str:
    return "fc_" + hashlib.sha1(namespace.encode()).hexdigest()[:20]


def _sqlite_sibling(path: Path, namespace: str) -> Path:
    return path.with_name(f"{path.stem}.crawl-{namespace}{path.suffix or '.db'}")


#: The first 16 bytes of every SQLite database file.
_SQLITE_HEADER = b"SQLite format 3\x00"


def _check_sqlite_file(path: Path) -> None:
    """Refuse an existing file that cannot be a crawl database (CorruptDatabaseError)."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(len(_SQLITE_HEADER))
    except OSError as err:
        raise CorruptDatabaseError(f"cannot read the crawl database {path}: {err.strerror}; check the path "
                                   "and its permissions") from err
    if size == 0:
        raise CorruptDatabaseError(
            f"{path} is an empty (0-byte) file, not a crawl database: if it held a crawl it was "
            "truncated (restore it from a backup); otherwise delete it and run again"
        )
    if head != _SQLITE_HEADER:
        raise CorruptDatabaseError(
            f"{path} is not a SQLite database (no SQLite header); restore it from a backup or give "
            "another --db"
        )


def _prepare(engine: Engine, schema: str | None, create: bool) -> bool:
    """Create the namespace's schema if asked and bring the database to the newest revision.

    Returns False (and does nothing) when ``schema`` does not exist and ``create`` is False.
    """
    if engine.dialect.name == "sqlite":
        with engine.connect() as conn:
            names = set(conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'table'")).scalars())
        if names and "alembic_version" not in names:
            raise CorruptDatabaseError(
                f"{engine.url.database} is a SQLite database of another program (tables "
                f"{', '.join(sorted(names)[:5])}), not a crawl database; give another --db"
            )
    if schema is not None:
        with engine.begin() as conn:
            exists = conn.execute(
                text("SELECT 1 FROM information_schema.schemata WHERE schema_name = :s"), {"s": schema}
            ).first()
            if exists is None and not create:
                return False
            conn.execute(text(f"CREATE SCHEMA IF NOT EXISTS {schema}"))
    _migrate(engine)
    return True


def open_store(
    db: str | Path,
    *,
    create: bool = True,
    namespace: str | None = None,
    retry_s: float = 5.0,
    guard: Callable[[], None] | None = None,
) -> Store:
    """Open (and on first use create) the crawl store ``db`` at the newest schema revision.

    Parameters
    ----------
    db : str or path
        A SQLite file path, or a SQLAlchemy URL such as ``postgresql+psycopg://user@host/dbname``.
    create : bool, default=True
        Create a missing SQLite file (or PostgreSQL schema); with False a missing one raises
        FileNotFoundError.
    namespace : str, optional
        Another crawl in the same place (a URLFrontier crawl ID): a sibling SQLite file
        ``<stem>.crawl-<namespace>.db``, or a PostgreSQL schema of its own. None is the crawl of
        ``db`` itself.
    retry_s : float, default=5.0
        The store's retry window on connection errors, seconds (:class:`Store`); opening retries
        as long.
    guard : callable, optional
        :attr:`Store.guard`: called before each new connection to PostgreSQL is used.

    Raises
    ------
    FileNotFoundError
        If ``create`` is False and the crawl does not exist.
    ValueError
        If ``db`` is not a path or a valid URL, or ``namespace`` is not a valid crawl ID.
    CorruptDatabaseError
        If the SQLite file is empty (0 bytes), not a SQLite database, corrupt, or another
        program's database. An empty file is refused rather than initialised: it is what a
        truncated crawl database looks like.
    DatabaseUnavailableError
        If the database cannot be reached within ``retry_s`` seconds.
    """
    url = database_url(db)
    sa_url = make_url(url)
    connect_args: dict[str, Any] = {}
    schema = None
    if namespace is not None:
        check_namespace(namespace)
    sqlite = sa_url.get_backend_name() == "sqlite"
    if sqlite and sa_url.database:
        path = Path(sa_url.database)
        if namespace is not None:
            path = _sqlite_sibling(path, namespace)
            url = f"sqlite:///{path}"
        if not create and not path.exists():
            raise FileNotFoundError(f"no crawl database at {path} (create one with 'freshcrawl crawl add')")
        if path.exists():
            _check_sqlite_file(path)
        path.parent.mkdir(parents=True, exist_ok=True)
    elif namespace is not None:
        schema = _pg_schema(namespace)
        connect_args["options"] = f"-c search_path={schema}"
    if sa_url.get_backend_name() == "postgresql":
        connect_args.setdefault("connect_timeout", 10)
    engine = create_engine(url, connect_args=connect_args, pool_pre_ping=not sqlite)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    store = Store(engine, retry_s=retry_s)
    store.guard = guard
    if engine.dialect.name == "postgresql":
        event.listen(engine, "connect", store._on_connect)
    try:
        found = store._run(_prepare, engine, schema, create)
    except DatabaseError as err:  # SQLite: "file is not a database", "database disk image is malformed"
        engine.dispose()
        if is_connection_error(err):
            raise
        where = sa_url.database if sqlite else store.where
        raise CorruptDatabaseError(
            f"the crawl database {where} cannot be read ({str(err.orig).strip()}); restore it from a "
            "backup or give another --db"
        ) from err
    except BaseException:
        engine.dispose()
        raise
    if not found:  # the connection is back in the pool: dispose closes it
        engine.dispose()
        raise FileNotFoundError(f"no crawl {namespace!r} in {sa_url.render_as_string(hide_password=True)}")
    store.namespace = namespace
    store.schema = schema
    if namespace is not None and "crawl_id" not in store.settings():
        store.save_settings({"crawl_id": namespace})
    return store


def list_namespaces(db: str | Path) -> list[str]:
    """Crawl IDs of the namespaced crawls beside ``db`` (see :func:`open_store`), sorted."""
    url = database_url(db)
    sa_url = make_url(url)
    if sa_url.get_backend_name() == "sqlite" and sa_url.database:
        path = Path(sa_url.database)
        prefix = f"{path.stem}.crawl-"
        return sorted(p.name[len(prefix): len(p.name) - len(path.suffix or ".db")]
                      for p in path.parent.glob(f"{prefix}*{path.suffix or '.db'}"))
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            schemas = conn.execute(
                text("SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 'fc\\_%'")
            ).scalars().all()
            names = []
            for schema in schemas:
                value = conn.execute(text(f"SELECT value FROM {schema}.crawl WHERE key = 'crawl_id'")).scalar()
                if value is not None:
                    names.append(json.loads(value))
        return sorted(names)
    finally:
        engine.dispose()


def drop_namespace(db: str | Path, namespace: str) -> None:
    """Delete the crawl ``namespace`` beside ``db`` (its SQLite file or PostgreSQL schema)."""
    check_namespace(namespace)
    url = database_url(db)
    sa_url = make_url(url)
    if sa_url.get_backend_name() == "sqlite" and sa_url.database:
        base = _sqlite_sibling(Path(sa_url.database), namespace)
        for suffix in ("", "-wal", "-shm"):
            Path(str(base) + suffix).unlink(missing_ok=True)
        return
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text(f"DROP SCHEMA IF EXISTS {_pg_schema(namespace)} CASCADE"))
    finally:
        engine.dispose()
