"""Effects after commit: random interleavings of leases, reports and failed commits against a model.

The frontier service runs on a real SQLite store. A failed commit is injected with SQLAlchemy's
``commit`` event, which raises the error a dropped PostgreSQL connection gives, before the
transaction commits: the store's transaction is rolled back, as in a real outage. The model keeps
each worker's leases and the committed signature of each page, and checks after every step:

- no URL is handed out while a lease of it runs;
- a failed call leaves the frontier as it was (leases, due times, last copies, host state);
- every report that was committed gives the observation the model expects: a retried report of a
  visit whose first try failed is ``changed`` or ``unchanged`` against the page's previous copy,
  never a ``first`` copy, so what it observed reaches the estimators.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import psycopg
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from sqlalchemy import event as sa_event
from sqlalchemy.exc import OperationalError

from freshcrawl.errors import DatabaseUnavailableError
from freshcrawl.frontier import CrawlSettings
from freshcrawl.service import FrontierService
from freshcrawl.service.core import Report

T0 = 1_800_000_000.0
LEASE_S = 60.0
N_HOSTS, PAGES_PER_HOST = 2, 2
WORKERS = ("w0", "w1")


class CommitFault:
    """Arms a failure of the next commit of an engine (then disarms itself)."""

    def __init__(self, engine) -> None:
        self.armed = False
        self.fired = 0
        sa_event.listen(engine, "commit", self._on_commit)

    def _on_commit(self, _conn) -> None:
        if self.armed:
            self.armed = False
            self.fired += 1
            raise OperationalError(
                "COMMIT", None, psycopg.OperationalError("server closed the connection")
            )


def frontier_state(service: FrontierService) -> dict[str, np.ndarray]:
    """What a failed call must not change: the default crawl's in-memory dispatch state, and its leases."""
    c = service.crawl(None)
    f = c.frontier
    h = f._hosts
    state = {
        name: getattr(f, name).copy()
        for name in (
            "next_due",
            "lease_until",
            "last_copy",
            "last_visit",
            "n_errors",
            "status",
            "rate",
        )
    }
    state.update(
        {
            f"host_{name}": getattr(h, name).copy()
            for name in ("lease_until", "ready_at", "backoff_until", "last_request_at")
        }
    )
    state["page_leases"] = np.array(sorted(c.page_leases))
    state["held"] = np.array(sorted(f.held.items()))
    return state


def same_state(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(
        np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f") for k in a
    )


lease_step = st.tuples(st.just("lease"), st.sampled_from(WORKERS), st.integers(1, 3), st.booleans())
report_step = st.tuples(
    st.just("report"),
    st.sampled_from(WORKERS),
    st.integers(0, 2),
    st.booleans(),
    st.sampled_from(["same", "new", "304", "500"]),
)
wait_step = st.tuples(
    st.just("wait"), st.one_of(st.floats(1.0, 20.0), st.floats(1.0, 1.5 * LEASE_S))
)
# reports are the interesting steps (a failed one, then its retry): drawn three times as often
step = st.one_of(lease_step, report_step, report_step, report_step, wait_step)


@settings(max_examples=25, deadline=None)
@given(steps=st.lists(step, min_size=10, max_size=60))
def test_failed_commits_change_nothing_and_lose_no_observation(steps):
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "crawl.db")
        service = FrontierService(
            db,
            CrawlSettings(budget=40_000.0, policy="uniform", min_delay_s=0.0, replan_every_s=600.0),
        )
        try:
            run_steps(service, steps)
        finally:
            service.close()


def run_steps(service: FrontierService, steps) -> None:
    now = T0
    urls = [f"http://h{h}.example/p{p}" for h in range(N_HOSTS) for p in range(PAGES_PER_HOST)]
    service.add_urls(None, [(u, 1.0) for u in urls], now=now)
    store = service.crawl(None).frontier.store
    store.retry_s = 0.0  # one try: an injected failure is an outage, not a blip the store rides out
    fault = CommitFault(store.engine)
    for h in range(N_HOSTS):  # robots.txt first: no restrictions
        service.report_robots(None, f"http://h{h}.example", 404, None, fetched_at=now)
    now += (
        20.0  # every page is due: each gets its first copy, so that later reports are observations
    )
    first: set[str] = set()
    for _ in range(20):
        for lease in service.lease(None, "setup", N_HOSTS, lease_s=LEASE_S, now=now):
            if lease.url not in first:
                first.add(lease.url)
                rep = Report(lease.url, 200, signature=f"{lease.url}#0", started_at=now)
            else:
                rep = Report(lease.url, 304, started_at=now)
            assert service.report(None, [rep], now=now) == ["ok"]
        if len(first) == len(urls):
            break
        now += 5.0
    n_first = len(store.observation_log())
    assert len(first) == len(urls)

    committed_sig = {u: f"{u}#0" for u in urls}  # the model of the store
    version = dict.fromkeys(urls, 0)  # each page's content, changed by the workers' "new" reports
    leases: dict[str, tuple[str, float]] = {}  # url -> (worker, expires_at)
    pending: dict[str, Report] = {}  # url -> a report whose commit failed, to send again
    n_reports = 0
    n_retried_ok = 0

    for op in steps:
        kind = op[0]
        if kind == "wait":
            now += op[1]
            for url in [u for u, (_, exp) in leases.items() if exp <= now]:
                del leases[url]  # the lease ran out: its worker gives up the visit
                pending.pop(url, None)
            continue
        worker, fail = op[1], op[3]
        if kind == "lease":
            before = frontier_state(service)
            fault.armed = fail
            try:
                got = service.lease(None, worker, op[2], lease_s=LEASE_S, now=now)
            except DatabaseUnavailableError:
                assert same_state(before, frontier_state(service)), (
                    "a failed lease changed the frontier"
                )
                continue
            finally:
                fault.armed = False
            for lease in got:
                assert lease.kind == "page"
                holder = leases.get(lease.url)
                assert holder is None or holder[1] <= now, f"{lease.url} leased twice while leased"
                leases[lease.url] = (worker, lease.expires_at)
            continue
        # a report of one of this worker's leases: a retry first, else a new visit (leased now if the
        # worker holds none)
        mine = sorted(u for u, (w, exp) in leases.items() if w == worker and exp > now)
        if not mine:
            for lease in service.lease(None, worker, 2, lease_s=LEASE_S, now=now):
                holder = leases.get(lease.url)
                assert holder is None or holder[1] <= now, f"{lease.url} leased twice while leased"
                leases[lease.url] = (worker, lease.expires_at)
                mine.append(lease.url)
            if not mine:
                continue
        retries = [u for u in mine if u in pending]
        url = retries[0] if retries else mine[op[2] % len(mine)]
        rep = pending.get(url)
        retry = rep is not None
        if rep is None:
            how = op[4]
            if how == "new":
                version[url] += 1
            sig = f"{url}#{version[url]}"
            if how == "304" and committed_sig[url] is not None:
                rep = Report(url, 304, started_at=now, elapsed_s=0.1)
            elif how == "500":
                rep = Report(url, 500, started_at=now, elapsed_s=0.1)
            else:
                rep = Report(url, 200, signature=sig, started_at=now, elapsed_s=0.1, n_bytes=10)
        before = frontier_state(service)
        n_before = len(store.observation_log())
        fault.armed = fail
        try:
            answers = service.report(None, [rep], now=now)
        except DatabaseUnavailableError:
            assert same_state(before, frontier_state(service)), (
                "a failed report changed the frontier"
            )
            assert len(store.observation_log()) == n_before, "a failed report left an observation"
            pending[url] = rep  # sent again later, under the same lease
            continue
        finally:
            fault.armed = False
        assert answers == ["ok"]
        pending.pop(url, None)
        leases.pop(url, None)
        n_reports += 1
        log = store.observation_log()
        assert len(log) == n_before + 1
        obs = max(log, key=lambda o: o["id"])  # a retried report keeps its (earlier) visit time
        if rep.status == 500:
            assert obs["outcome"] == "no-info"
        elif committed_sig[url] is None:
            assert obs["outcome"] == "first"
            committed_sig[url] = rep.signature
        else:
            expected = (
                "unchanged"
                if rep.status == 304 or rep.signature == committed_sig[url]
                else "changed"
            )
            assert obs["outcome"] == expected, (obs, retry)
            assert obs["tau_days"] is not None and obs["tau_days"] > 0
            if rep.status == 200:
                committed_sig[url] = rep.signature
            n_retried_ok += retry
    assert len(store.observation_log()) == n_first + n_reports
    event(
        f"retried reports committed as observations: {min(n_retried_ok, 3)}{'+' if n_retried_ok > 3 else ''}"
    )
    event(f"commits failed: {min(fault.fired, 3)}{'+' if fault.fired > 3 else ''}")


def test_commit_fault_is_a_real_rollback(tmp_path):
    """The injected failure rolls the transaction back: nothing of the failed write is in the store."""
    service = FrontierService(
        str(tmp_path / "crawl.db"), CrawlSettings(budget=1000.0, policy="uniform")
    )
    try:
        service.add_urls(None, [("http://a.example/x", 1.0)], now=T0)
        service.report_robots(None, "http://a.example", 404, None, fetched_at=T0)
        store = service.crawl(None).frontier.store
        store.retry_s = 0.0
        fault = CommitFault(store.engine)
        fault.armed = True
        with pytest.raises(DatabaseUnavailableError, match="unavailable"):
            service.report(
                None,
                [Report("http://a.example/x", 200, signature="s", started_at=T0 + 1)],
                now=T0 + 1,
            )
        assert fault.fired == 1
        assert store.observation_log(outcomes=["first"]) == []
        assert store.page_by_url("http://a.example/x")["signature"] is None
        assert service.report(
            None, [Report("http://a.example/x", 200, signature="s", started_at=T0 + 1)], now=T0 + 2
        ) == ["ok"]
        assert [o["outcome"] for o in store.observation_log()] == ["first"]
        assert store.down_since is None
    finally:
        service.close()


def test_a_failed_report_keeps_its_lease_and_its_retry_is_an_observation(tmp_path):
    """Issue 46, point 3: the report of a changed page fails to commit; the other worker is not handed
    the URL while the first worker's lease runs, and the retried report is stored as ``changed``."""
    service = FrontierService(
        str(tmp_path / "crawl.db"), CrawlSettings(budget=8640.0, policy="uniform", min_delay_s=0.0)
    )
    try:
        url = "http://a.example/x"
        service.add_urls(None, [(url, 1.0)], now=T0)
        service.report_robots(None, "http://a.example", 404, None, fetched_at=T0)
        service.replan_all(now=T0)  # a visit every 10 s, the first within 10 s
        assert len(service.lease(None, "w0", 1, lease_s=LEASE_S, now=T0 + 20)) == 1
        assert service.report(
            None, [Report(url, 200, signature="v1", started_at=T0 + 20)], now=T0 + 20
        ) == ["ok"]
        assert len(service.lease(None, "w0", 1, lease_s=LEASE_S, now=T0 + 40)) == 1
        store = service.crawl(None).frontier.store
        store.retry_s = 0.0
        fault = CommitFault(store.engine)
        fault.armed = True
        changed = Report(url, 200, signature="v2", started_at=T0 + 40, elapsed_s=0.2)
        with pytest.raises(DatabaseUnavailableError):
            service.report(None, [changed], now=T0 + 41)
        assert (
            service.lease(None, "w1", 1, lease_s=LEASE_S, now=T0 + 42) == []
        )  # w0's lease still runs
        assert service.report(None, [changed], now=T0 + 43) == ["ok"]
        last = store.observation_log()[-1]
        assert (last["outcome"], last["why"]) == ("changed", "new-signature")
        assert last["tau_days"] == pytest.approx(20.0 / 86400.0)
    finally:
        service.close()
