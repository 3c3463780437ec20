"""The crawl store on SQLite and on the machine's PostgreSQL: schema, atomic writes, the visit log."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from freshcrawl.store import database_url, open_store
from freshcrawl.traces.visit_log import read_visit_log

T0 = 1_800_000_000.0


@pytest.fixture
def store(db_url):
    s = open_store(db_url)
    yield s
    s.close()


def test_database_url():
    assert database_url("postgresql+psycopg://u@h/db") == "postgresql+psycopg://u@h/db"
    assert database_url("crawl.db").startswith("sqlite:///") and database_url("crawl.db").endswith("/crawl.db")
    with pytest.raises(ValueError, match="file path or a database URL"):
        database_url("  ")


def test_missing_sqlite_file_is_an_error_unless_created(tmp_path):
    with pytest.raises(FileNotFoundError, match="no crawl database"):
        open_store(tmp_path / "nope.db", create=False)
    assert not (tmp_path / "nope.db").exists()


def test_schema_is_at_the_newest_revision_and_reopening_is_idempotent(store, db_url):
    names = set(inspect(store.engine).get_table_names())
    assert {"crawl", "hosts", "pages", "observations", "alembic_version", "sources", "announcements", "trust",
            "page_hints"} <= names
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one() == "0004"
    again = open_store(db_url)
    try:
        assert again.counts() == {"pages": {}, "hosts": 0, "observations": {}}
    finally:
        again.close()


def test_add_pages_skips_known_urls_and_shares_hosts(store):
    ids, known = store.add_pages([("http://a.test/1", "http://a.test", 1.0), ("http://a.test/2", "http://a.test", 2.0),
                                  ("http://a.test/1", "http://a.test", 5.0)], now=T0)
    assert ids == [1, 2] and known == 1
    ids, known = store.add_pages([("http://a.test/2", "http://a.test", 1.0), ("http://b.test/", "http://b.test", 1.0)],
                                 now=T0 + 1)
    assert ids == [3] and known == 1
    pa = store.page_arrays()
    assert pa.id.tolist() == [1, 2, 3] and pa.host_id.tolist() == [1, 1, 2] and pa.weight.tolist() == [1, 2, 1]
    assert np.isnan(pa.last_visit_at).all() and pa.status.tolist() == ["active"] * 3
    assert store.host_arrays().origin.tolist() == ["http://a.test", "http://b.test"]


def test_record_is_all_or_nothing(store):
    store.add_pages([("http://a.test/1", "http://a.test", 1.0)], now=T0)
    ok = dict(page_id=1, time=T0, outcome="first", why="first-copy")
    with pytest.raises(IntegrityError):  # the second observation names a page that does not exist
        store.record([ok, dict(page_id=99, time=T0, outcome="first", why="x")],
                     [dict(id=1, signature="abc", last_copy_at=T0)], [dict(id=1, last_request_at=T0)])
    assert store.counts()["observations"] == {}
    assert store.page_rows([1])[1]["signature"] is None
    assert store.host_row(1)["last_request_at"] is None
    assert store.record([ok], [dict(id=1, signature="abc")], []) == 1
    assert store.page_rows([1])[1]["signature"] == "abc"


def test_record_writes_every_row_of_a_batch(store):
    """Rows of one batch with different columns, None and infinite values all land as given."""
    store.add_pages([(f"http://a.test/{i}", "http://a.test", 1.0) for i in range(3)]
                    + [("http://b.test/", "http://b.test", 1.0)], now=T0)
    obs = [dict(page_id=1, time=T0, outcome="first", why="first-copy"),
           dict(page_id=2, time=T0 + 1, outcome="no-info", why="timeout", error="network", status=None,
                elapsed_s=np.float64(2.5)),
           dict(page_id=3, time=T0 + 2, outcome="changed", why="new-signature", tau_days=0.5, rate=2.0,
                status=200, n_bytes=10)]
    upd = [dict(id=1, signature="s1", next_due=math.inf), dict(id=2, n_errors=3, last_error="timeout"),
           dict(id=3, signature="s3", next_due=T0 + 99.5)]
    assert store.record(obs, upd, [dict(id=1, last_request_at=T0 + 2), dict(id=2, backoff_until=-math.inf)]) == 3
    rows = store.page_rows([1, 2, 3, 4])
    assert rows[1]["signature"] == "s1" and rows[1]["next_due"] == math.inf
    assert rows[2]["n_errors"] == 3 and rows[2]["last_error"] == "timeout" and rows[2]["signature"] is None
    assert rows[3]["signature"] == "s3" and rows[3]["next_due"] == T0 + 99.5
    assert rows[4]["signature"] is None
    assert store.host_row(1)["last_request_at"] == T0 + 2 and store.host_row(2)["backoff_until"] == -math.inf
    assert store.counts()["observations"] == {"first": 1, "no-info": 1, "changed": 1}
    buf = io.StringIO()
    assert store.export_csv(buf) == 2  # the first copy and the change; the error gave no copy
    assert buf.getvalue().splitlines()[2] == f"http://a.test/2,{T0 + 2!r},1"


def test_save_plan_writes_every_row(store):
    n = 2500
    store.add_pages([(f"http://a.test/{i}", "http://a.test", 1.0) for i in range(n)], now=T0)
    ids = np.arange(1, n + 1)
    rate = np.linspace(1, 2, n)
    delta = np.where(ids % 2 == 0, np.nan, 0.5)
    store.save_plan(ids, rate, T0 + rate, delta, ids % 7, settings={"planned_at": T0})
    pa = store.page_arrays()
    np.testing.assert_array_equal(pa.rate, rate)
    np.testing.assert_array_equal(pa.next_due, T0 + rate)
    rows = store.page_rows([1, 2])
    assert rows[1]["delta_hat"] == 0.5 and rows[2]["delta_hat"] is None and rows[2]["n_obs"] == 2
    assert store.settings()["planned_at"] == T0


def test_export_is_a_visit_log_that_estimate_reads(store, tmp_path):
    store.add_pages([("http://a.test/1", "http://a.test", 1.0), ("http://a.test/x,y", "http://a.test", 1.0)], now=T0)
    rows = [
        dict(page_id=1, time=T0 + 10, outcome="first", why="first-copy"),
        dict(page_id=2, time=T0 + 11, outcome="first", why="first-copy"),
        dict(page_id=1, time=T0 + 20, outcome="no-info", why="timeout", error="network"),
        dict(page_id=1, time=T0 + 30, outcome="changed", why="new-signature", tau_days=20 / 86400, rate=1.0),
        dict(page_id=2, time=T0 + 31, outcome="unchanged", why="not-modified", tau_days=20 / 86400, rate=1.0),
    ]
    store.record(rows, [], [])
    buf = io.StringIO()
    assert store.export_csv(buf) == 4  # the error gave no copy
    path = tmp_path / "visits.csv"
    path.write_text(buf.getvalue())
    log = read_visit_log(path)
    assert log.page_names.tolist() == ["http://a.test/1", "http://a.test/x,y"]
    assert log.changed.tolist() == [False, False, True, False]
    np.testing.assert_allclose(log.time * 86400, [T0 + 10, T0 + 11, T0 + 30, T0 + 31])
