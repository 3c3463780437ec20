"""Store.outcome_counts and Store.clear on SQLite and on the machine's PostgreSQL."""

from __future__ import annotations

import pytest

from freshcrawl.frontier import CrawlSettings, Frontier
from freshcrawl.store import open_store

T0 = 1_800_000_000.0


@pytest.fixture
def store(db_url):
    s = open_store(db_url)
    yield s
    s.close()


def _visit(page_id: int, t: float, outcome: str, error: str | None = None) -> dict:
    return {"page_id": page_id, "time": t, "outcome": outcome, "why": "x", "error": error}


def test_outcome_counts_then_clear_leaves_an_empty_crawl(store):
    rows = [("http://a.test/1", "http://a.test", 1.0), ("http://b.test/1", "http://b.test", 1.0)]
    ids, _ = store.add_pages(rows, now=T0)
    assert store.outcome_counts() == {}
    store.record(
        [
            _visit(ids[0], T0 + 1, "first"),
            _visit(ids[0], T0 + 2, "changed"),
            _visit(ids[1], T0 + 3, "no-info", "server"),
            _visit(ids[1], T0 + 4, "no-info", "server"),
            _visit(ids[1], T0 + 5, "no-info", "network"),
        ],
        [],
        [],
    )
    store.save_url_metadata({ids[0]: {"k": ["v"]}})
    assert store.outcome_counts() == {
        ("first", None): 1,
        ("changed", None): 1,
        ("no-info", "server"): 2,
        ("no-info", "network"): 1,
    }
    store.save_settings({"settings": {"budget": 5.0}})

    store.clear()
    assert store.outcome_counts() == {}
    assert store.counts() == {"pages": {}, "hosts": 0, "observations": {}}
    assert store.url_metadata(ids) == {}
    assert store.settings()["settings"] == {"budget": 5.0}  # the settings stay
    new, known = store.add_pages(rows[1:], now=T0 + 10)
    assert (new, known) == ([1], 0)  # ids start again from 1: the frontier indexes pages by id
    assert store.host_arrays().id.tolist() == [1]
    assert store.host_arrays().origin.tolist() == ["http://b.test"]


def test_a_frontier_on_a_cleared_store_takes_new_pages(store):
    rows = [("http://a.test/1", "http://a.test", 1.0), ("http://b.test/1", "http://b.test", 1.0)]
    store.add_pages(rows, now=T0)
    Frontier(store, CrawlSettings(budget=10.0), now=T0)
    store.clear()
    f = Frontier(store, CrawlSettings(budget=10.0), now=T0 + 1)
    assert f.add_urls(rows[1:], now=T0 + 2) == (1, 0)
    assert f.origins() == ["http://b.test"]
    assert f.page_counts(now=T0 + 2)["active"] == 1
