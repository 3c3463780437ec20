"""Database faults: restarts and outages of a real PostgreSQL server, cut connections, unusable files.

The restarts use a PostgreSQL server of this module (``private_pg``), never the shared one; cutting
connections with ``pg_terminate_backend`` uses the shared server, on the test's own database only.
"""

from __future__ import annotations

import re
import time
import uuid

import pytest
from sqlalchemy import create_engine, text

from freshcrawl.errors import (
    CorruptDatabaseError,
    DatabaseInUseError,
    DatabaseUnavailableError,
    WriterLockLostError,
)
from freshcrawl.store import acquire_writer_lock, open_store

T0 = 1_800_000_000.0


@pytest.fixture
def private_db(private_pg):
    """A new database on the module's own PostgreSQL server (started again if a test left it down)."""
    try:
        private_pg.start()
    except RuntimeError:
        pass  # already running
    return private_pg.create_database(f"fc_{uuid.uuid4().hex[:10]}")


def _obs(page_id: int, t: float) -> dict:
    return {
        "page_id": page_id,
        "time": t,
        "outcome": "first",
        "why": "first-copy",
        "source": "fetcher",
        "status": 200,
    }


def test_store_rides_out_a_restart_and_reports_an_outage_in_one_line(private_pg, private_db):
    store = open_store(private_db, retry_s=1.0)
    try:
        store.add_pages([("http://a.example/x", "http://a.example", 1.0)], now=T0)
        private_pg.restart(down_s=0.2)  # every connection of the pool is dead now
        assert store.record([_obs(1, T0 + 1)], [{"id": 1, "last_visit_at": T0 + 1}], []) == 1
        assert store.down_since is None and store.outages == 0
        private_pg.stop()
        t = time.monotonic()
        with pytest.raises(DatabaseUnavailableError) as err:
            store.record([_obs(1, T0 + 2)], [], [])
        assert time.monotonic() - t < 10.0
        assert "\n" not in str(err.value) and "unavailable" in str(err.value)
        assert f"127.0.0.1:{private_pg.port}" in str(err.value)
        assert store.down_since is not None and store.outages == 1
        t = time.monotonic()
        with pytest.raises(DatabaseUnavailableError):  # while down: one try, no waiting
            store.counts()
        assert time.monotonic() - t < 1.0
        private_pg.start()
        assert store.record([_obs(1, T0 + 3)], [], []) == 1
        assert store.down_since is None
        assert [o["time"] for o in store.observation_log()] == [T0 + 1, T0 + 3]
    finally:
        store.close()


def test_a_cut_connection_is_retried_and_no_observation_is_written_twice(pg_url):
    store = open_store(pg_url)
    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    try:
        store.add_pages([("http://a.example/x", "http://a.example", 1.0)], now=T0)
        with admin.connect() as conn:
            n = conn.execute(
                text(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            ).scalar()
        assert n >= 1  # the store's pooled connection
        assert store.record([_obs(1, T0 + 1)], [], []) == 1
        # a retry after a commit whose answer was lost writes only what is not logged yet
        assert store._not_logged([_obs(1, T0 + 1), _obs(1, T0 + 2)]) == [_obs(1, T0 + 2)]
        assert len(store.observation_log()) == 1
    finally:
        admin.dispose()
        store.close()


def test_the_writer_lock_is_taken_again_after_a_restart_and_still_refuses_a_second_writer(
    private_pg, private_db
):
    lock = acquire_writer_lock(private_db)
    try:
        private_pg.restart(down_s=0.2)  # the server forgot the advisory lock
        lock.ensure()
        assert lock.n_retaken == 1
        with pytest.raises(DatabaseInUseError):
            acquire_writer_lock(private_db)
        lock.ensure()  # alive: one round trip, nothing taken again
        assert lock.n_retaken == 1
    finally:
        lock.release()


def test_a_writer_whose_lock_was_taken_during_an_outage_stops_writing(private_pg, private_db):
    lock = acquire_writer_lock(private_db)
    store = open_store(private_db, guard=lock.ensure)
    other = None
    try:
        store.add_pages([("http://a.example/x", "http://a.example", 1.0)], now=T0)
        private_pg.restart(down_s=0.2)
        other = acquire_writer_lock(private_db)  # another process was faster after the restart
        with pytest.raises(WriterLockLostError, match="another process holds it"):
            store.record([_obs(1, T0 + 1)], [], [])
        with pytest.raises(WriterLockLostError):
            lock.ensure()
        check = open_store(private_db)
        assert check.observation_log() == []  # nothing was written
        check.close()
    finally:
        store.close()
        lock.release()
        if other is not None:
            other.release()


def _cli(*args: str, input_: str | None = None):
    """Run a command in this process (click's runner); returns (exit code, lines of its error output)."""
    from click.testing import CliRunner

    from freshcrawl.cli import main

    result = CliRunner().invoke(main, list(args), input=input_)
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception
    return result.exit_code, result.stderr.strip().splitlines()


@pytest.mark.parametrize(
    "content, says",
    [
        (b"", "empty (0-byte) file"),
        (b"not a database at all" * 100, "not a SQLite database"),
        (b"SQLite format 3\x00" + bytes(range(256)) * 40, "cannot be read"),
    ],
)
def test_an_unusable_sqlite_file_is_refused_in_one_line(tmp_path, content, says):
    db = tmp_path / "crawl.db"
    db.write_bytes(content)
    with pytest.raises(CorruptDatabaseError, match=re.escape(says)):
        open_store(db)
    assert db.read_bytes() == content  # left as it was
    urls = tmp_path / "urls.txt"
    urls.write_text("http://a.example/x\n")
    for args in (
        ("crawl", "status", "--db", str(db)),
        ("crawl", "add", "--db", str(db), str(urls)),
    ):
        code, lines = _cli(*args)
        assert code == 1 and len(lines) == 1 and says in lines[0] and str(db) in lines[0], lines


def test_a_foreign_sqlite_database_is_not_taken_over(tmp_path):
    import sqlite3

    db = tmp_path / "other.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    with pytest.raises(CorruptDatabaseError, match="another program"):
        open_store(db)


def test_an_unreachable_server_is_one_line_for_every_command(private_pg):
    down = f"postgresql+psycopg://postgres@127.0.0.1:{private_pg.port}/nowhere"
    private_pg.stop()
    try:
        # each waits out the store's retry window (5 s); crawl add and status open the store as run does
        for args in (
            ("crawl", "run", "--db", down, "--for", "1s"),
            ("serve", "--db", down, "--budget", "10/day", "--http", "127.0.0.1:0", "--no-grpc"),
        ):
            code, lines = _cli(*args)
            assert code == 1 and len(lines) == 1, (args, lines)
            assert "unavailable" in lines[0] and f"127.0.0.1:{private_pg.port}" in lines[0], lines[
                0
            ]
    finally:
        private_pg.start()


def test_the_service_answers_503_and_unavailable_during_an_outage_then_recovers(
    private_pg, private_db
):
    import grpc
    import httpx

    from freshcrawl.frontier import CrawlSettings
    from freshcrawl.service import FrontierService
    from freshcrawl.service.grpc_server import serve_grpc
    from freshcrawl.service.proto import urlfrontier_pb2 as pb
    from freshcrawl.service.proto import urlfrontier_pb2_grpc as pb_grpc
    from freshcrawl.service.rest import create_app
    from tests.integration.rest_server import running

    service = FrontierService(private_db, CrawlSettings(budget=100.0, policy="uniform"))
    server = serve_grpc(service, "127.0.0.1:0")
    try:
        service.add_urls(None, [("http://a.example/x", 1.0)])
        with (
            running(create_app(service, token=None)) as base,
            httpx.Client(base_url=base, timeout=30) as c,
        ):
            assert c.get("/status").status_code == 200
            private_pg.stop()
            for _ in range(2):  # the first one after the store's retry window, the second at once
                r = c.get("/status")
                assert r.status_code == 503 and r.headers["retry-after"] == "5"
                assert r.headers["content-type"] == "application/json"
                (detail,) = r.json()["detail"]
                assert detail["type"] == "database_unavailable" and "\n" not in detail["msg"]
                assert f"127.0.0.1:{private_pg.port}" in detail["msg"]
            r = c.post("/leases", json={"worker_id": "w", "count": 1})
            assert r.status_code in (200, 503)  # 200 when nothing is due: no database needed
            metrics = c.get("/metrics")
            assert metrics.status_code == 200
            assert 'freshcrawl_database_up{crawl="DEFAULT"} 0.0' in metrics.text
            with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                stub = pb_grpc.URLFrontierStub(channel)
                with pytest.raises(grpc.RpcError) as err:
                    stub.CountURLs(pb.CountUrlParams(crawlID=""), timeout=30)
                assert err.value.code() is grpc.StatusCode.UNAVAILABLE
                assert "unavailable" in err.value.details()
            private_pg.start()
            assert c.get("/status").status_code == 200
            assert 'freshcrawl_database_up{crawl="DEFAULT"} 1.0' in c.get("/metrics").text
    finally:
        server.stop(grace=1.0).wait()
        service.close()


@pytest.mark.parametrize(
    "db, says",
    [
        ("mysql://user@host/crawl", "must be a SQLite file or a postgresql+psycopg:// URL"),
        ("postgresql+psycopg://user@host:notaport/crawl", "is not a valid database URL"),
    ],
)
def test_a_malformed_database_url_is_one_line_for_every_command(db, says):
    for args in (
        ("crawl", "status", "--db", db),
        ("crawl", "run", "--db", db, "--for", "1s"),
        ("serve", "--db", db, "--budget", "10/day", "--no-grpc"),
    ):
        code, lines = _cli(*args)
        assert code == 1 and len(lines) == 1 and says in lines[0], (args, lines)


def test_crawl_run_gives_up_after_its_give_up_time_in_one_line(private_pg, private_db):
    import threading

    from freshcrawl.testing import HostSpec, TestWeb, make_pages

    with TestWeb(
        make_pages(4, 1, (0.5, 1.0), seed=2), hosts=[HostSpec()], seed=2, max_hang_s=2.0
    ) as web:
        code, lines = _cli("crawl", "add", "--db", private_db, "-", input_="\n".join(web.urls()))
        assert code == 0, lines

        def stop_after_first_request() -> None:
            deadline = time.time() + 120
            while time.time() < deadline and not any(r.page is not None for r in web.requests()):
                time.sleep(0.05)
            private_pg.stop()

        killer = threading.Thread(target=stop_after_first_request, daemon=True)
        killer.start()
        t = time.monotonic()
        code, lines = _cli(
            "crawl",
            "run",
            "--db",
            private_db,
            "--budget",
            "8/s",
            "--for",
            "120s",
            "--min-delay",
            "0.2s",
            "--db-give-up",
            "3s",
        )
        killer.join(timeout=10)
    private_pg.start()
    assert code == 1 and lines, lines
    assert lines[-1].startswith("Error: gave up after a database outage of"), lines
    assert f"127.0.0.1:{private_pg.port}" in lines[-1] and "Traceback" not in "\n".join(lines)
    assert time.monotonic() - t < 100
