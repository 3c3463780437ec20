"""A crawl and a served frontier live through a 10 s database outage and a restart of PostgreSQL.

The database runs on a PostgreSQL server of this module (``private_pg``), which the tests stop and
start; the pages are the package's test web. The evidence: the process keeps running (one log line
per outage and one at its end), every request the test web logged is exactly one committed
observation (nothing observed during the outage is lost, nothing is counted twice), no page is leased
to two workers while a lease runs, and politeness holds across the outage.
"""

from __future__ import annotations

import hashlib
import itertools
import subprocess
import sys
import threading
import time
import uuid
from collections import defaultdict

import httpx
import pytest

from freshcrawl.errors import DatabaseInUseError
from freshcrawl.store import acquire_writer_lock, open_store
from freshcrawl.testing import HostSpec, TestWeb, make_pages

MIN_DELAY_S = 0.5
HOSTS = [HostSpec(), HostSpec(), HostSpec(crawl_delay=1.0)]
N_PAGES = 24
OUTAGE_S = 10.0
TOL_S = 0.05


@pytest.fixture
def private_db(private_pg):
    try:
        private_pg.start()
    except RuntimeError:
        pass  # already running
    return private_pg.create_database(f"fc_{uuid.uuid4().hex[:10]}")


def _faults(private_pg, web, start_after_s: float, times: list) -> threading.Thread:
    """``start_after_s`` after the test web's first page request: stop the server for OUTAGE_S
    seconds and start it; 5 s later restart it. ``times`` gets the (stop, start) times."""

    def run() -> None:
        deadline = time.time() + 120  # the process starts, plans, and makes its first requests
        while time.time() < deadline and not any(r.page is not None for r in web.requests()):
            time.sleep(0.1)
        time.sleep(start_after_s)
        times.append(time.time())
        private_pg.stop()
        time.sleep(OUTAGE_S)
        private_pg.start()
        times.append(time.time())
        time.sleep(5.0)
        private_pg.restart(down_s=0.2)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _page_requests_match_observations(db: str, requests) -> tuple[int, list]:
    """Each page request of the test web is exactly one committed observation of its URL, at its time."""
    store = open_store(db)
    try:
        urls = {r["id"]: r["url"] for r in store.list_urls(size=10_000)}
        log = [o for o in store.observation_log() if o["why"] != "robots"]
    finally:
        store.close()
    by_url: dict[str, list] = defaultdict(list)
    for o in log:
        by_url[urls[o["page_id"]]].append(o)
    problems = []
    page_requests = [r for r in requests if r.page is not None]
    for url in {r.url for r in page_requests} | set(by_url):
        reqs = sorted(r.arrived for r in page_requests if r.url == url)
        obs = sorted(by_url.get(url, []), key=lambda o: o["time"])
        if len(reqs) != len(obs):
            problems.append((url, len(reqs), len(obs)))
            continue
        for arrived, o in zip(reqs, obs, strict=True):
            if not o["time"] - TOL_S <= arrived <= o["time"] + (o["elapsed_s"] or 0.0) + TOL_S:
                problems.append((url, arrived, o["time"]))
    return len(page_requests), problems


def test_crawl_run_pauses_through_an_outage_and_a_restart_and_loses_nothing(
    private_pg, private_db, tmp_path
):
    pages = make_pages(N_PAGES, len(HOSTS), (0.5, 2.0), seed=3)
    with TestWeb(pages, hosts=HOSTS, seed=3, max_hang_s=3.0) as web:
        urls_file = tmp_path / "urls.txt"
        urls_file.write_text("\n".join(web.urls()) + "\n")
        cli = [sys.executable, "-m", "freshcrawl", "crawl"]
        added = subprocess.run(
            [*cli, "add", "--db", private_db, str(urls_file)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert added.returncode == 0, added.stderr
        proc = subprocess.Popen(
            [
                *cli,
                "run",
                "--db",
                private_db,
                "--budget",
                "8/s",
                "--for",
                "28s",
                "--replan-every",
                "3s",
                "--min-delay",
                f"{MIN_DELAY_S}s",
                "--timeout",
                "3s",
                "--seed",
                "5",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        outage: list[float] = []
        faults = _faults(private_pg, web, 3.0, outage)
        try:
            _, stderr = proc.communicate(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
        faults.join(timeout=60)
        requests = web.requests()
        host_names = [h.name for h in web.hosts]

    assert proc.returncode == 0, stderr
    lines = stderr.splitlines()
    began = [line for line in lines if line.startswith("database outage:")]
    ended = [line for line in lines if line.startswith("database back after")]
    assert len(began) >= 1 and len(began) == len(ended), stderr
    assert "Traceback" not in stderr

    n_requests, problems = _page_requests_match_observations(private_db, requests)
    assert not problems, problems[:5]
    # requests were made before and after the outage, none during it (fetching paused)
    assert len(outage) == 2, "the crawl ended before the outage was over"
    page_times = [r.arrived for r in requests if r.page is not None]
    assert any(t < outage[0] for t in page_times) and any(t > outage[1] for t in page_times)
    in_outage = [t for t in page_times if outage[0] + 6.0 < t < outage[1]]
    assert not in_outage, f"{len(in_outage)} page requests while the database was down"
    delays = {
        name: max(MIN_DELAY_S, HOSTS[k].crawl_delay or 0.0) for k, name in enumerate(host_names)
    }
    violations = web.politeness_violations(delays)
    assert not violations, "\n".join(map(str, violations[:10]))
    print(f"\n{n_requests} page requests, all committed once; outages: {began}; {ended}")


def _worker(
    base: str, name: str, stop: threading.Event, leases: list, answers: list, errors: list
) -> None:
    """Lease, fetch, report until ``stop``; a report answered 503 is sent again after Retry-After."""
    with httpx.Client(base_url=base, timeout=10.0) as api, httpx.Client(timeout=5.0) as web:
        while not stop.is_set():
            r = api.post("/leases", json={"worker_id": name, "count": 2, "lease_s": 30})
            answers.append(r.status_code)
            if r.status_code == 503:
                assert r.headers["content-type"].startswith("application/json")
                assert r.json()["detail"][0]["type"] == "database_unavailable"
                time.sleep(min(float(r.headers["retry-after"]), 1.0))
                continue
            r.raise_for_status()
            got = r.json()["leases"]
            if not got:
                time.sleep(0.1)
                continue
            reports = []
            mine = {}
            for lease in got:
                # [url, worker, leased at, expires at, report accepted at]
                mine[lease["url"]] = [lease["url"], name, time.time(), lease["expires_at"], None]
                leases.append(mine[lease["url"]])
                if lease["kind"] == "robots":
                    resp = web.get(lease["url"])
                    body = {"url": lease["url"], "status": resp.status_code, "text": resp.text}
                    for _ in range(200):  # bounded: 200 tries of at most 1 s
                        rr = api.post("/robots", json=body)
                        answers.append(rr.status_code)
                        if rr.status_code != 503:
                            break
                        time.sleep(1.0)
                    continue
                t = time.time()
                resp = web.get(lease["url"])
                reports.append(
                    {
                        "url": lease["url"],
                        "status": resp.status_code,
                        "started_at": t,
                        "elapsed_s": time.time() - t,
                        "signature": hashlib.sha256(resp.content).hexdigest(),
                    }
                )
            for _ in range(200):  # bounded: sent again while the database is down
                if not reports:
                    break
                rr = api.post("/observations", json={"reports": reports})
                answers.append(rr.status_code)
                if rr.status_code == 503:
                    time.sleep(1.0)
                    continue
                if rr.status_code != 200 or any(x != "ok" for x in rr.json()["results"]):
                    errors.append(rr.text)
                for rep in reports:
                    mine[rep["url"]][4] = time.time()
                break


def test_serve_with_two_rest_workers_answers_503_through_an_outage_and_loses_nothing(
    private_pg, private_db
):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    pages = make_pages(N_PAGES, len(HOSTS), (0.5, 2.0), seed=4)
    with TestWeb(pages, hosts=HOSTS, seed=4, max_hang_s=3.0) as web:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "freshcrawl",
                "serve",
                "--db",
                private_db,
                "--budget",
                "8/s",
                "--http",
                f"127.0.0.1:{port}",
                "--no-grpc",
                "--min-delay",
                f"{MIN_DELAY_S}s",
                "--replan-every",
                "3s",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.time() + 90
            while time.time() < deadline:
                try:
                    if httpx.get(base + "/openapi.json", timeout=1.0).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.2)
            r = httpx.post(
                base + "/urls", json={"urls": [{"url": u} for u in web.urls()]}, timeout=30
            )
            assert r.status_code == 200, r.text
            stop = threading.Event()
            leases: list = []
            answers: list = []
            errors: list = []
            workers = [
                threading.Thread(
                    target=_worker, args=(base, f"w{k}", stop, leases, answers, errors)
                )
                for k in range(2)
            ]
            for w in workers:
                w.start()
            outage: list[float] = []
            faults = _faults(private_pg, web, 2.0, outage)
            while len(outage) < 1:
                time.sleep(0.1)
            time.sleep(2.0)
            during = httpx.get(base + "/status", timeout=30)  # the database is down now
            faults.join(timeout=60)
            time.sleep(4.0)
            stop.set()
            for w in workers:
                w.join(timeout=60)
            after = httpx.get(base + "/status", timeout=30)
            # a second writer (serve) on the same database is still refused after the restart
            with pytest.raises(DatabaseInUseError, match="already served by another process"):
                acquire_writer_lock(private_db)
        finally:
            proc.terminate()
            _, stderr = proc.communicate(timeout=60)
        requests = web.requests()
        host_names = [h.name for h in web.hosts]

    assert (
        during.status_code == 503 and during.json()["detail"][0]["type"] == "database_unavailable"
    )
    assert during.headers["retry-after"] == "5"
    assert after.status_code == 200
    assert not errors, errors[:3]
    assert 503 in answers and answers.count(200) > 10
    assert (
        "database outage:" in stderr
        and "database back after" in stderr
        and "Traceback" not in stderr
    ), stderr
    # no page was leased while a lease of it ran: from its lease until its report was accepted (or
    # the lease expired), no other lease of the URL began
    by_url: dict[str, list] = defaultdict(list)
    for url, name, t, expires, reported in leases:
        by_url[url].append((t, min(expires, reported or expires), name))
    n_twice = 0
    for url, rows in by_url.items():
        rows.sort()
        for (_, end0, _), (t1, _, _) in itertools.pairwise(rows):
            # the report was accepted before the next lease was answered (a lease's time is taken
            # when its answer arrives, a report's when it was accepted: allow the round trip)
            n_twice += t1 < end0 - 0.5
    assert n_twice == 0, f"{n_twice} leases of a URL handed out while another lease of it ran"
    n_requests, problems = _page_requests_match_observations(private_db, requests)
    assert not problems, problems[:5]
    delays = {
        name: max(MIN_DELAY_S, HOSTS[k].crawl_delay or 0.0) for k, name in enumerate(host_names)
    }
    violations = web.politeness_violations(delays)
    assert not violations, "\n".join(map(str, violations[:10]))
    print(f"\n{n_requests} page requests, all committed once; {answers.count(503)} answers 503")
