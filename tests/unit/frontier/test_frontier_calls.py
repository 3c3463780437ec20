"""The frontier's public calls for other processes (what the frontier service uses), on two hosts.

Every test runs on a SQLite file and on a PostgreSQL database (the ``db_url`` fixture).
"""

from __future__ import annotations

import numpy as np
import pytest

from freshcrawl.frontier import Frontier

from .test_frontier import T0, Crawls, open_hosts

URLS = ["http://a.test/1", "http://a.test/2", "http://b.test/1"]
NOW = T0 + 1000.0  # every page due, every delay passed, robots.txt still fresh


@pytest.fixture
def make(db_url):
    crawls = Crawls(db_url)
    yield crawls
    for store in crawls.stores:
        store.close()


def test_hosts_by_id_and_origin(make):
    _, f = make(URLS)
    assert f.origins() == ["http://a.test", "http://b.test"]
    assert f.origin(2) == "http://b.test"
    assert f.host_id("http://b.test") == 2 and f.host_id("http://c.test") is None
    with pytest.raises(IndexError, match="no host id 3"):
        f.origin(3)


def test_ready_hosts_backlog_counts_and_leases(make):
    _, f = make(URLS)
    open_hosts(f)
    assert f.ready_hosts(NOW).tolist() == [1, 2]
    b = f.backlog(10, NOW)
    assert b.n_due == 3 and sorted(b.page_id.tolist()) == [1, 2, 3]
    assert b.host_id.tolist() == [(1 if k < 3 else 2) for k in b.page_id.tolist()]
    assert (np.diff(b.next_due) >= 0).all() and not b.leased.any()
    assert f.backlog(1, NOW).page_id.tolist() == b.page_id[:1].tolist()
    with pytest.raises(ValueError, match="limit"):
        f.backlog(-1, NOW)

    visits = f.due(NOW, 10)
    assert sorted(v.host_id for v in visits) == [1, 2]
    assert f.n_leased(NOW) == 2 and f.backlog(10, NOW).leased.sum() == 2
    counts = f.page_counts(now=NOW)
    assert counts == {"active": 3, "disallowed": 0, "failed": 0, "removed": 0, "leased": 2}
    assert f.page_counts([2], now=NOW) == {
        "active": 1,
        "disallowed": 0,
        "failed": 0,
        "removed": 0,
        "leased": 1,
    }
    assert f.ready_hosts(NOW).size == 0  # both hosts leased
    f.release_host(1)  # a.test has another page due, not leased
    assert f.ready_hosts(NOW).tolist() == [1]


def test_hold_keeps_a_date_across_plans_and_commits_it(make):
    store, f = make(URLS)
    open_hosts(f)
    assert f.hold(3, NOW + 200)
    assert not f.hold(3, NOW + 100, only_later=True)  # already due later
    assert f.hold(3, NOW + 300, only_later=True)
    f.replan(NOW)
    assert 3 not in f.backlog(10, NOW + 299).page_id
    assert 3 in f.backlog(10, NOW + 300).page_id
    assert store.page_rows([3])[3]["next_due"] == pytest.approx(NOW + 300)


def test_remove_pages_and_hosts(make):
    store, f = make(URLS)
    open_hosts(f)
    f.remove([2])
    assert f.page_counts(now=NOW)["removed"] == 1
    assert store.page_rows([2])[2]["status"] == "removed"
    assert 2 not in f.backlog(10, NOW).page_id
    assert f.remove_host(1) == 1  # page 1; page 2 was removed already
    assert f.remove_host(1) == 0
    assert f.page_counts([1], now=NOW)["removed"] == 2
    assert f.backlog(10, NOW).page_id.tolist() == [3]
    assert f.ready_hosts(NOW).tolist() == [2]


def test_block_host_and_set_delay_are_committed(make):
    store, f = make(URLS, min_delay_s=1.0)
    open_hosts(f)
    f.block_host(1, NOW + 500)
    assert f.ready_hosts(NOW).tolist() == [2]
    assert store.host_row(1)["backoff_until"] == pytest.approx(NOW + 500)
    f.block_host(1, 0.0)
    assert f.ready_hosts(NOW).tolist() == [1, 2]

    f.set_delay(5.0, host_id=1)
    assert store.host_row(1)["min_delay_s"] == 5.0 and store.host_row(2)["min_delay_s"] is None
    assert f.host_load().delay_s.tolist() == [5.0, 1.0]
    f.set_delay(3.0)
    assert f.settings.min_delay_s == 3.0
    assert [store.host_row(h)["min_delay_s"] for h in (1, 2)] == [3.0, 3.0]
    assert f.host_load().delay_s.tolist() == [3.0, 3.0]


def test_host_load_adds_the_plan_by_host(make):
    _, f = make(URLS, budget=100.0)
    load = f.host_load()
    assert load.origin == ["http://a.test", "http://b.test"]
    assert load.n_pages.tolist() == [2, 1]
    assert load.rate.sum() == pytest.approx(load.budget_in_use)
    assert 0 < load.budget_in_use <= 100.0 * (1 + 1e-9)
    assert load.budget_in_use == pytest.approx(f.budget_in_use())
    assert load.cap.tolist() == [86400.0, 86400.0]  # 1 s between requests
    assert load.delay_s.tolist() == [1.0, 1.0] and (load.backoff_until == 0).all()


def test_pages_added_without_a_plan_join_within_seconds(make):
    _, f = make(URLS)
    planned = f.planned_at
    added, known = f.add_urls([("http://c.test/1", "http://c.test", 1.0)], now=T0 + 1, replan=False)
    assert (added, known) == (1, 0)
    assert f.planned_at == planned  # no plan yet
    assert f.origins()[-1] == "http://c.test"
    assert f.next_replan == pytest.approx(T0 + 1 + Frontier.NEW_PAGES_PLAN_S)
    assert f.add_urls([("http://c.test/1", "http://c.test", 1.0)], now=T0 + 2, replan=False) == (
        0,
        1,
    )
