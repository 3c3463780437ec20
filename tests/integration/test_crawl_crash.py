"""kill -9 of ``freshcrawl crawl run`` at random points, then a clean run: nothing committed is lost or
counted twice, the committed change flags agree with the test web's truth, and politeness holds across
every restart (a restarted frontier waits a full host delay before contacting a host).

The test web runs in the test process and logs every request; the crawl runs as a subprocess on a
SQLite file and on a PostgreSQL database. The kills follow the request log (a run is killed at a random
time after it contacted any host, or the slow host, or at a random fraction of the last start-up
measured), never a fixed clock, so the test holds whatever a start-up takes. The evidence is
the comparison of the request log with the observation log of the store.
"""

from __future__ import annotations

import bisect
import itertools
import os
import signal
import subprocess
import time
from collections import defaultdict

import numpy as np
import pytest

from freshcrawl.crawler.outcome import RobotsOutcome
from freshcrawl.frontier import CrawlSettings, Frontier, RobotsVisit, Visit, origin_of
from freshcrawl.store import open_store
from freshcrawl.testing import HostSpec, TestWeb, make_pages

from ..live_crawl import crawl_cli
from ..warc_checks import check_structure, match_observations, read_records, warcio_check

MIN_DELAY_S = 0.3
#: host 2 is the slow host. A run that follows a kill just after a request to it restarts with its
#: per-host delay raised to SLOW_DELAY_PER_STARTUP times the start-up of the run before (from its
#: spawn to its first request) plus SLOW_DELAY_EXTRA_S: longer than the restart takes to reach its first
#: request, so that only the restart floor (or the last request, when committed) keeps the restarted
#: crawl from contacting the slow host too soon. Other runs give it MIN_DELAY_S.
SLOW_HOST = 2
SLOW_DELAY_PER_STARTUP, SLOW_DELAY_EXTRA_S = 1.5, 0.5
HOSTS = [
    HostSpec(crawl_delay=0.5),
    HostSpec(disallow=["/page/11"]),
    HostSpec(),
    HostSpec(crawl_delay=0.2),  # below --min-delay: the min delay rules
    HostSpec(),
]
N_PAGES = 60
#: what each killed run waits for before its kill: "any" (its first request to any host, then a random
#: 0-1 s), "slow" (its first request to the slow host, then a random 0-0.1 s: the visit may be in
#: flight or not yet committed), "startup" (a random 10-90 % of the last start-up measured: before
#: its first request, or about then; never first, when no start-up is measured yet). Each "slow" is
#: followed by a restart that tests the floor of the slow host.
KILLS = ("any", "startup", "slow", "slow", "any", "startup", "slow", "slow")
N_KILLS = len(KILLS)
#: the clean run after the kills
FINAL_RUN = "3s"
#: longest wait for a run's event: a bound on the test, never reached on a working crawl
EVENT_TIMEOUT_S = 60.0
#: slack of the time checks: the server stamps arrival after the client stamps its start
TOL_S = 0.05

#: graded on the wall clock (politeness, restarts within the slow host's delay): runs with the realtime
#: tests (scripts/test.sh)
pytestmark = pytest.mark.realtime


def _run_args(db: str, duration: str, warc: str) -> list[str]:
    options = f"--budget 10/s --replan-every 2s --min-delay {MIN_DELAY_S}s --timeout 3s --seed 7"
    return crawl_cli("run", "--db", db, "--for", duration, "--warc", warc, *options.split())


@pytest.fixture(scope="module")
def crawl_env() -> dict[str, str]:
    """The environment of the crawl's processes: Python may write bytecode, so that a restart does not
    compile every module from source again (as the test command allows)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _first_request(
    web: TestWeb, proc: subprocess.Popen, since: float, host: str | None = None
) -> float:
    """Arrival time of the first request the test web logs that arrived at `since` or later (to `host`
    if given), polling the log; fails if the crawl ends first or none comes within EVENT_TIMEOUT_S."""
    deadline = time.monotonic() + EVENT_TIMEOUT_S
    seen = 0
    while time.monotonic() < deadline:
        records = web.requests()
        hits = [r.arrived for r in records[seen:] if r.arrived >= since and host in (None, r.host)]
        if hits:
            return min(hits)
        seen = len(records)
        if proc.poll() is not None:
            pytest.fail(f"crawl run ended by itself (rc={proc.returncode}): {proc.stderr.read()}")
        time.sleep(0.01)
    pytest.fail(
        f"no request{' to ' + host if host else ''} within {EVENT_TIMEOUT_S} s of a crawl's start"
    )


def _match(obs_by_url, req_by_url):
    """Match each committed visit to exactly one logged request to its URL, arriving within
    [time - TOL, time + elapsed + TOL]; a request is matched at most once. Returns
    {observation id: request} and the list of observations without a request."""
    matched, unmatched = {}, []
    for url, rows in obs_by_url.items():
        reqs = sorted(req_by_url.get(url, []), key=lambda r: r.arrived)
        used = [False] * len(reqs)
        for o in sorted(rows, key=lambda o: o["time"]):
            lo, hi = o["time"] - TOL_S, o["time"] + (o["elapsed_s"] or 0.0) + TOL_S
            cands = [j for j, r in enumerate(reqs) if not used[j] and lo <= r.arrived <= hi]
            if len(cands) != 1:
                unmatched.append((o, len(cands)))
                continue
            used[cands[0]] = True
            matched[o["id"]] = reqs[cands[0]]
    return matched, unmatched


def _set_host_delay(db_url: str, host_id: int, delay_s: float) -> None:
    store = open_store(db_url)
    try:
        store.save_host(host_id, min_delay_s=delay_s)
    finally:
        store.close()


def test_kill_9_at_random_points_loses_nothing_counts_nothing_twice_and_stays_polite(
    db_url, tmp_path, crawl_env
):
    rng = np.random.default_rng(20240611)
    pages = make_pages(N_PAGES, len(HOSTS), (0.05, 1.0), seed=11)
    warc_dir = str(tmp_path / "warc")
    with TestWeb(pages, hosts=HOSTS, seed=11, max_hang_s=5.0) as web:
        urls_file = tmp_path / "urls.txt"
        urls_file.write_text("\n".join(web.urls()) + "\n")
        added = subprocess.run(
            crawl_cli("add", "--db", db_url, str(urls_file)),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=crawl_env,
        )
        assert added.returncode == 0, added.stderr
        slow_name = web.hosts[SLOW_HOST].name
        store = open_store(db_url)
        try:
            rows = store.page_rows(range(1, N_PAGES + 1)).values()
            slow_id = next(
                r["host_id"] for r in rows if origin_of(r["url"]) == web.hosts[SLOW_HOST].origin
            )
        finally:
            store.close()

        spawned: list[float] = []  # when each run was started, the final one last
        slow_delays: list[float] = []  # the slow host's delay during each run
        startups: list[float] = []  # from spawn to first request, of the runs that made one
        killed: list[tuple[str, float]] = []
        for k, (kind, u) in enumerate(zip(KILLS, rng.uniform(size=N_KILLS), strict=True)):
            after_slow = k > 0 and KILLS[k - 1] == "slow"
            slow_delays.append(
                round(SLOW_DELAY_PER_STARTUP * startups[-1] + SLOW_DELAY_EXTRA_S, 2)
                if after_slow
                else MIN_DELAY_S
            )
            if k == 0 or slow_delays[-1] != slow_delays[-2]:
                _set_host_delay(db_url, slow_id, slow_delays[-1])
            spawned.append(time.time())
            proc = subprocess.Popen(
                _run_args(db_url, "60s", warc_dir),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                env=crawl_env,
            )
            try:
                if kind == "startup":
                    kill_at = spawned[-1] + (0.1 + 0.8 * u) * startups[-1]
                else:
                    _first_request(web, proc, spawned[-1], slow_name if kind == "slow" else None)
                    kill_at = time.time() + (1.0 if kind == "any" else 0.1) * u
                time.sleep(max(0.0, kill_at - time.time()))
                if proc.poll() is not None:
                    pytest.fail(
                        f"crawl run ended by itself (rc={proc.returncode}): {proc.stderr.read()}"
                    )
                os.kill(proc.pid, signal.SIGKILL)
                assert proc.wait(timeout=30) == -signal.SIGKILL
                killed.append((kind, round(time.time() - spawned[-1], 2)))
            finally:
                if proc.poll() is None:  # pragma: no cover - a failure above left it running
                    proc.kill()
                    proc.wait(timeout=30)
                proc.stderr.close()
            in_run = [r.arrived for r in web.requests() if r.arrived >= spawned[-1]]
            if in_run:
                startups.append(min(in_run) - spawned[-1])
        slow_delays.append(slow_delays[-1])  # the final run keeps the last one
        spawned.append(time.time())
        final = subprocess.run(
            _run_args(db_url, FINAL_RUN, warc_dir),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=crawl_env,
        )
        assert final.returncode == 0, final.stderr
        requests = web.requests()
        host_names = [h.name for h in web.hosts]

    assert len(killed) == N_KILLS

    store = open_store(db_url)
    try:
        page_rows = store.page_rows(range(1, N_PAGES + 10))
        log = store.observation_log()
    finally:
        store.close()

    # every page added is still there, once
    assert sorted(r["url"] for r in page_rows.values()) == sorted(web.urls())
    url_of = {pid: r["url"] for pid, r in page_rows.items()}

    page_requests = [r for r in requests if r.page is not None]
    req_by_url: dict[str, list] = defaultdict(list)
    for r in page_requests:
        req_by_url[r.url].append(r)
    fetched = [o for o in log if o["why"] != "robots"]
    obs_by_url: dict[str, list] = defaultdict(list)
    for o in fetched:
        obs_by_url[url_of[o["page_id"]]].append(o)

    # the WARC files: the restart closed what the kills left open (cut back to whole records), every
    # file passes warcio check, every committed visit has its record, every reference resolves
    warc = tmp_path / "warc"
    warcio_check(warc)
    records = read_records(warc)
    check_structure(warc, records)
    with_record = match_observations(records, log, url_of)
    assert len(with_record) == len(fetched)

    # the disallowed page was never requested and is recorded as such
    disallowed = [o for o in log if o["why"] == "robots"]
    assert {url_of[o["page_id"]] for o in disallowed} == {
        u for u in web.urls() if u.endswith("/page/11")
    }
    assert not req_by_url.get(next(u for u in web.urls() if u.endswith("/page/11")))

    # every committed visit matches exactly one request, and no request is matched twice
    matched, unmatched = _match(obs_by_url, req_by_url)
    assert not unmatched, (
        f"{len(unmatched)} committed visits without exactly one request: {unmatched[:3]}"
    )
    assert len(set(map(id, matched.values()))) == len(matched) == len(fetched)
    # the requests without a committed visit are those in flight at a kill: one per host at most
    lost = len(page_requests) - len(matched)
    assert 0 <= lost <= N_KILLS * len(HOSTS), (lost, len(page_requests), len(matched))
    # a visit the crawler committed twice would show as a second row at the same time
    assert len({(o["page_id"], o["time"]) for o in fetched}) == len(fetched)

    # changed / unchanged agree with the versions served at the committed visits
    n_checked = 0
    for url, rows in obs_by_url.items():
        prev_version = None
        for o in sorted(rows, key=lambda o: o["time"]):
            served = matched[o["id"]].version
            assert o["outcome"] in ("first", "changed", "unchanged"), (url, o)
            if prev_version is None:
                assert o["outcome"] == "first", (url, o)
            else:
                truth = "changed" if served != prev_version else "unchanged"
                assert o["outcome"] == truth, (url, o, prev_version, served)
                n_checked += 1
            prev_version = served
    # the crawl saw enough for the comparison to mean something: enough pairs to catch a wrong flag
    assert n_checked >= 10, (n_checked, len(fetched), lost)
    assert any(o["outcome"] == "changed" for o in fetched) and any(
        o["outcome"] == "unchanged" for o in fetched
    )

    # politeness across every restart: delays, robots.txt, no Retry-After here; the slow host's delay
    # is the one of the run a request belongs to (each run knows the delay set before it started)
    violations = web.politeness_violations(MIN_DELAY_S)
    assert not violations, "\n".join(map(str, violations[:10]))
    run_of = [bisect.bisect_right(spawned, r.arrived) - 1 for r in requests]
    slow_times = sorted(
        (r.arrived, k) for r, k in zip(requests, run_of, strict=True) if r.host == slow_name
    )
    for (t_a, _), (t_b, k) in itertools.pairwise(slow_times):
        assert t_b - t_a >= slow_delays[k] - TOL_S, (k, t_b - t_a, slow_delays[k])

    # the restart floor: after each (re)start, no host is contacted before a full delay has passed
    # since the process was spawned (the frontier starts later still)
    host_delay = {
        name: max(MIN_DELAY_S, HOSTS[j].crawl_delay or 0.0) for j, name in enumerate(host_names)
    }
    matched_ids = set(map(id, matched.values()))
    n_floor = n_floor_lost = 0
    for k in range(1, len(spawned)):
        in_run = [r for r, j in zip(requests, run_of, strict=True) if j == k]
        if not in_run:
            continue
        lo = spawned[k]
        for name in host_names:
            to_host = [r.arrived for r in in_run if r.host == name]
            delay = slow_delays[k] if name == slow_name else host_delay[name]
            if to_host:
                assert min(to_host) >= lo + delay - TOL_S, (k, name, min(to_host) - lo, delay)
        # a restart that tested the floor of the slow host: it came sooner than the delay after a
        # request to it, began crawling before a delay had passed since its spawn (a frontier without
        # the floor could have contacted the slow host then, failing the check above), and contacted
        # it; the floor alone kept it polite when that request was lost to the kill
        before = [r for r, j in zip(requests, run_of, strict=True) if j < k and r.host == slow_name]
        if before and any(r.host == slow_name for r in in_run):
            prev = max(before, key=lambda r: r.arrived)
            began = min(r.arrived for r in in_run)
            if lo - prev.arrived < slow_delays[k] and began < lo + slow_delays[k] - TOL_S:
                n_floor += 1
                n_floor_lost += prev.page is not None and id(prev) not in matched_ids
    assert n_floor >= 1, ("no restart tested the floor of the slow host", startups, slow_delays)
    print(
        f"\n{'postgresql' if '://' in db_url else 'sqlite'}: kills {killed}; start-ups "
        f"{[round(s, 2) for s in startups]} s; slow host delays {slow_delays} s; {len(page_requests)} page "
        f"requests, {len(matched)} committed visits, {lost} lost in flight; {n_checked} change flags "
        f"checked; {n_floor} restarts tested the slow host's floor ({n_floor_lost} after a request to it "
        f"was lost)"
    )


def test_robots_fetch_lost_to_a_crash_still_delays_the_restart(tmp_path):
    """A robots.txt request in flight at the crash leaves nothing in the store; the restarted frontier
    must still not contact that host before a full delay (no network: the visits are not made)."""
    store = open_store(tmp_path / "crawl.db")
    try:
        store.add_pages([("http://127.0.0.2:9/a", "http://127.0.0.2:9", 1.0)], now=1000.0)
        settings = CrawlSettings(budget=86400.0, min_delay_s=2.0, replan_every_s=60.0)
        first = Frontier(store, settings, now=1000.0)
        # the host cap (86,400 / 2 s) gives the page 0.5 visits/s: it is due within 2 s
        handed = first.due(now=1002.0)
        assert [type(v) for v in handed] == [RobotsVisit]  # sent, then kill -9: nothing committed
        restarted = Frontier(store, settings, now=1002.5)
        assert restarted.due(now=1002.5) == []
        assert restarted.due(now=1004.4) == []
        again = restarted.due(now=1004.5)
        assert [type(v) for v in again] == [RobotsVisit]
        restarted.record_robots(
            again[0], RobotsOutcome("http://127.0.0.2:9", 404, None, 1004.5, 0.01, "http-404")
        )
        # a robots.txt fetch may have followed redirects: the delay runs from its end (1004.51)
        assert restarted.due(now=1006.5) == []
        assert [type(v) for v in restarted.due(now=1006.51)] == [Visit]
        # the page visit is lost to a kill as well: its host waits a full delay after the restart
        third = Frontier(store, settings, now=1007.0)
        assert third.due(now=1007.0) == [] and third.due(now=1008.9) == []
        assert [type(v) for v in third.due(now=1009.0)] == [Visit]
    finally:
        store.close()
