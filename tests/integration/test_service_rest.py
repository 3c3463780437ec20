"""The REST API on SQLite and PostgreSQL, over a real uvicorn server on loopback.

Add, lease, report, explain, status, hosts, overdue, history, metrics; auth; 4xx that name the field
with nothing half-applied; lease expiry; concurrent workers never holding one URL at once.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import defaultdict

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from freshcrawl.service.rest import create_app
from tests.integration.rest_server import AUTH, TOKEN, make_service, populate, replan, running


@pytest.fixture
def service(db_url):
    # plans on the clock only: the leases below are read against the plan made when pages were added
    # (a plan due because a tenth of the pages had news would give the new page a random phase)
    svc = make_service(db_url, replan_after=0.0)
    yield svc
    svc.close()


def _metrics(text: str) -> dict[tuple[str, tuple], float]:
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_add_lease_report_explain_status_metrics(service):
    app = create_app(service, token=TOKEN)
    with running(app) as base, httpx.Client(base_url=base, headers=AUTH, timeout=30) as c:
        urls = populate(base, n_hosts=3, per_host=4)
        # known URLs are counted, not added again
        r = c.post("/urls", json={"urls": [{"url": urls[0]}, {"url": "http://h9.test/new", "weight": 2}]})
        assert r.json() == {"crawl_id": "DEFAULT", "added": 1, "known": 1}
        got = c.post("/leases", json={"worker_id": "w1", "count": 10, "lease_s": 120}).json()
        assert got["worker_id"] == "w1"
        leases = got["leases"]
        # one per host: three hosts with pages due, and the new host's robots.txt
        assert len({x["queue"] for x in leases}) == len(leases) == 4
        assert {x["kind"] for x in leases} == {"page", "robots"}
        page = next(x for x in leases if x["kind"] == "page")
        assert page["expires_at"] == pytest.approx(time.time() + 120, abs=10)
        r = c.post("/observations", json={"reports": [
            {"url": page["url"], "status": 500, "elapsed_s": 0.2},
            {"url": "http://h0.test/not-in-crawl", "status": 200, "signature": "x"},
        ]})
        assert r.status_code == 200
        assert r.json()["results"] == ["ok", "unknown-url"]
        replan(service)

        st = c.get("/status").json()
        assert st["n_pages"] == 13 and st["hosts"] == 4
        assert st["observations"] == {"first": 3, "changed": 3, "unchanged": 3, "no-info": 1}
        assert 0 < st["estimated_freshness"] <= 1
        assert st["budget"] == 10_000 and st["budget_in_use"] == pytest.approx(10_000)
        assert st["leased"] == 2 and st["plan_age_s"] >= 0

        ex = c.get("/explain", params={"url": "http://H0.test/p0"}).json()  # normalised
        assert ex["url"] == "http://h0.test/p0"
        assert ex["n_observations"] == 2 and ex["n_changes"] == 1
        assert [o["outcome"] for o in ex["observations"]] == ["unchanged", "changed", "first"]
        lo, hi = ex["delta_interval"]
        assert 0 <= lo < ex["delta_hat"] < hi
        assert ex["rate"] > 0 and ex["next_due"] > 0
        assert set(ex["limits"]) == {"budget", "host_cap", "backoff", "robots", "errors"}
        assert ex["limits"]["host_cap"]["cap_per_day"] is None  # no delay: no cap (inf is served as null)

        hosts = c.get("/hosts").json()
        assert hosts["n_hosts"] == 4 and hosts["budget_in_use"] == pytest.approx(10_000)
        assert sum(h["rate_per_day"] for h in hosts["hosts"]) == pytest.approx(10_000)
        assert {h["queue"] for h in hosts["hosts"]} == {"h0.test", "h1.test", "h2.test", "h9.test"}

        over = c.get("/overdue", params={"limit": 5}).json()
        assert over["n_due"] >= 1 and len(over["pages"]) <= 5
        due = [p["next_due"] for p in over["pages"]]
        assert due == sorted(due) and all(p["overdue_s"] >= 0 for p in over["pages"])

        hist = c.get("/history").json()["samples"]
        assert hist and hist[-1]["n_pages"] == 13

        m = _metrics(c.get("/metrics").text)
        d = (("crawl", "DEFAULT"),)
        assert m[("freshcrawl_visits_total", d + (("outcome", "changed"),))] == 3
        assert m[("freshcrawl_visits_total", d + (("outcome", "no-info"),))] == 1
        assert m[("freshcrawl_changes_detected_total", d)] == 3
        assert m[("freshcrawl_errors_total", d + (("kind", "server"),))] == 1
        assert m[("freshcrawl_errors_total", d + (("kind", "throttled"),))] == 0
        assert m[("freshcrawl_pages", d + (("status", "active"),))] == 13
        assert m[("freshcrawl_hosts", d)] == 4
        assert 0 <= m[("freshcrawl_due_pages", d)] <= 13  # pages come due as time passes
        assert m[("freshcrawl_estimated_freshness_ratio", d)] == pytest.approx(st["estimated_freshness"])
        assert m[("freshcrawl_budget_visits_per_day", d)] == 10_000
        assert m[("freshcrawl_budget_in_use_visits_per_day", d)] == pytest.approx(10_000)
        assert 0 <= m[("freshcrawl_plan_age_seconds", d)] < 60
        assert m[("freshcrawl_leased_pages", d)] == 2
        assert m[("freshcrawl_rest_leases_total", (("kind", "robots"),))] == 4
        assert m[("freshcrawl_rest_reports_total", (("result", "unknown-url"),))] == 1
        assert m[("freshcrawl_http_requests_total",
                  (("code", "200"), ("method", "POST"), ("route", "/leases")))] == 2

        assert c.get("/openapi.json").json()["paths"].keys() >= {
            "/urls", "/leases", "/observations", "/robots", "/explain", "/status", "/hosts", "/overdue",
            "/history", "/metrics"}
        page_html = c.get("/")
        assert page_html.status_code == 200 and "freshcrawl" in page_html.text


def test_auth_writes_need_the_token_reads_configurable(tmp_path):
    svc = make_service(str(tmp_path / "c.db"))
    try:
        with running(create_app(svc, token=TOKEN)) as base, httpx.Client(base_url=base, timeout=30) as c:
            body = {"urls": [{"url": "http://a.test/"}]}
            for headers, kind in (({}, "missing_token"), ({"Authorization": "Bearer nope"}, "invalid_token"),
                                  ({"Authorization": f"Basic {TOKEN}"}, "missing_token")):
                for path, payload in (("/urls", body), ("/leases", {"worker_id": "w"}),
                                      ("/observations", {"reports": []}), ("/robots", {"url": "http://a.test/",
                                                                                        "status": 404})):
                    r = c.post(path, json=payload, headers=headers)
                    assert r.status_code == 401, (path, headers, r.text)
                    assert r.json()["detail"][0]["type"] == kind
                    assert r.json()["detail"][0]["loc"] == ["header", "Authorization"]
                    assert r.headers["www-authenticate"].startswith("Bearer")
            assert svc.count_urls(None) == 0  # nothing written
            assert c.post("/urls", json=body, headers=AUTH).status_code == 200
            for path in ("/status", "/hosts", "/overdue", "/history", "/metrics", "/", "/openapi.json"):
                assert c.get(path).status_code == 200, path
        with running(create_app(svc, token=TOKEN, public_reads=False)) as base, \
                httpx.Client(base_url=base, timeout=30) as c:
            for path in ("/status", "/hosts", "/overdue", "/history", "/metrics"):
                assert c.get(path).status_code == 401, path
                assert c.get(path, headers={"Authorization": "Bearer nope"}).status_code == 401, path
                assert c.get(path, headers=AUTH).status_code == 200, path
            assert c.get("/explain", params={"url": "http://a.test/"}).status_code == 401
            assert c.get("/explain", params={"url": "http://a.test/"}, headers=AUTH).status_code == 200
            assert c.get("/").status_code == 200  # the page itself; its data needs the token
            assert c.get("/openapi.json").status_code == 200
    finally:
        svc.close()
    with pytest.raises(ValueError, match="public_reads=False needs a token"):
        create_app(svc, token=None, public_reads=False)
    with pytest.raises(ValueError, match="token must be a non-empty string"):
        create_app(svc, token=" ")


def test_no_token_leaves_writes_open(tmp_path):
    svc = make_service(str(tmp_path / "c.db"))
    try:
        with running(create_app(svc, token=None)) as base, httpx.Client(base_url=base, timeout=30) as c:
            assert c.post("/urls", json={"urls": [{"url": "http://a.test/"}]}).status_code == 200
    finally:
        svc.close()


def _loc(r: httpx.Response) -> list[list]:
    return [e["loc"] for e in r.json()["detail"]]


def test_bad_requests_name_the_field_and_apply_nothing(service):
    with running(create_app(service, token=TOKEN)) as base, \
            httpx.Client(base_url=base, headers=AUTH, timeout=30) as c:
        good = [{"url": f"http://a.test/{i}"} for i in range(3)]
        cases = [
            ({"urls": good + [{"url": "ftp://a.test/x"}]}, ["body", "urls", 3, "url"]),
            ({"urls": good + [{"url": "http://a.test/w", "weight": -1}]}, ["body", "urls", 3, "weight"]),
            ({"urls": [{"url": "not a url"}] + good}, ["body", "urls", 0, "url"]),
            ({"urls": good, "crawl_id": "no/slash"}, ["body", "crawl_id"]),
            ({"urls": good, "extra": 1}, ["body", "extra"]),
            ({"urls": [{"url": "http://a.test/" + "x" * 3000}]}, ["body", "urls", 0, "url"]),
            ({"urls": [{"url": "http://a.test/\x00"}]}, ["body", "urls", 0, "url"]),
            ({}, ["body", "urls"]),
        ]
        for body, loc in cases:
            r = c.post("/urls", json=body)
            assert r.status_code == 422, (body, r.text)
            assert loc in _loc(r), (body, r.text)
        r = c.post("/urls", content=b'{"urls": [{"url": "http://a.test/", "weight": NaN}]}',
                   headers={"Content-Type": "application/json"})
        assert r.status_code == 422 and ["body", "urls", 0, "weight"] in _loc(r)
        r = c.post("/urls", content=b"{not json", headers={"Content-Type": "application/json"})
        assert r.status_code == 422 and r.json()["detail"][0]["type"] == "json_invalid"
        assert service.count_urls(None) == 0  # nothing of a refused batch was added

        assert c.post("/urls", json={"urls": good}).status_code == 200
        ok = {"url": "http://a.test/0", "status": 200, "signature": "s"}
        obs_cases = [
            ([ok, {"url": "http://a.test/1", "status": 99}], ["body", "reports", 1, "status"]),
            ([ok, {"url": "http://a.test/1", "status": 200, "elapsed_s": -1}], ["body", "reports", 1, "elapsed_s"]),
            ([ok, {"url": "http://a.test/1", "status": 200, "n_bytes": 2**53 + 2}], ["body", "reports", 1, "n_bytes"]),
            ([ok, {"url": "mailto:x@a.test", "status": 200}], ["body", "reports", 1, "url"]),
            ([ok, {"url": "http://a.test/1", "status": 200, "signature": "x" * 200}],
             ["body", "reports", 1, "signature"]),
            ([ok, {"url": "http://a.test/1"}], ["body", "reports", 1, "status"]),
            ([ok, {"url": "http://a.test/1", "status": 200, "error": "e" * 65}], ["body", "reports", 1, "error"]),
            ([ok, {"url": "http://A.test/0", "status": 304}], ["body", "reports", 1, "url"]),  # twice
        ]
        # PostgreSQL refuses NUL characters in text: refused here, before anything is written
        obs_cases += [([ok, {"url": "http://a.test/1", "status": 200, key: "a\x00b"}], ["body", "reports", 1, key])
                      for key in ("signature", "etag", "last_modified", "error")]
        for reports, loc in obs_cases:
            r = c.post("/observations", json={"reports": reports})
            assert r.status_code == 422, (reports, r.text)
            assert loc in _loc(r), r.text
        assert c.get("/status").json()["observations"] == {}  # not even the good first report

        lease_cases = [
            ({"count": 1}, ["body", "worker_id"]),
            ({"worker_id": "w", "count": 0}, ["body", "count"]),
            ({"worker_id": "w", "count": 10**6}, ["body", "count"]),
            ({"worker_id": "w", "lease_s": 0}, ["body", "lease_s"]),
            ({"worker_id": "w", "lease_s": "soon"}, ["body", "lease_s"]),
        ]
        for body, loc in lease_cases:
            r = c.post("/leases", json=body)
            assert r.status_code == 422 and loc in _loc(r), (body, r.text)
        r = c.post("/leases", json={"worker_id": "w", "crawl_id": "nothere"})
        assert r.status_code == 404 and _loc(r) == [["body", "crawl_id"]]
        r = c.post("/leases", json={"worker_id": "w\x00"})
        assert r.status_code == 422 and _loc(r) == [["body", "worker_id"]]
        r = c.post("/robots", json={"url": "http://a.test/robots.txt", "status": 200, "text": "User-agent: *\x00"})
        assert r.status_code == 422 and _loc(r) == [["body", "text"]]
        r = c.post("/robots", json={"url": "http://b.test/robots.txt", "status": 200, "text": ""})
        assert r.status_code == 404 and _loc(r) == [["body", "url"]]
        r = c.get("/explain", params={"url": "http://a.test/9"})
        assert r.status_code == 404 and _loc(r) == [["query", "url"]]
        r = c.get("/explain", params={"url": "gopher://a.test/"})
        assert r.status_code == 422 and _loc(r) == [["query", "url"]]
        r = c.get("/explain")
        assert r.status_code == 422 and _loc(r) == [["query", "url"]]
        r = c.get("/status", params={"crawl_id": "nothere"})
        assert r.status_code == 404 and _loc(r) == [["query", "crawl_id"]]
        r = c.get("/overdue", params={"limit": 0})
        assert r.status_code == 422 and _loc(r) == [["query", "limit"]]
        assert service.stats(None)["in_process"] == 0  # no refused lease leased anything


def test_unreported_lease_goes_back_after_its_timeout(service):
    with running(create_app(service, token=TOKEN)) as base, \
            httpx.Client(base_url=base, headers=AUTH, timeout=30) as c:
        c.post("/urls", json={"urls": [{"url": "http://a.test/1"}]})
        robots = c.post("/leases", json={"worker_id": "w", "lease_s": 60}).json()["leases"]
        c.post("/robots", json={"url": robots[0]["url"], "status": 404})
        first = c.post("/leases", json={"worker_id": "w1", "lease_s": 1.0}).json()["leases"]
        assert [x["url"] for x in first] == ["http://a.test/1"]
        assert c.post("/leases", json={"worker_id": "w2"}).json()["leases"] == []  # held
        time.sleep(1.2)
        again = c.post("/leases", json={"worker_id": "w2"}).json()["leases"]
        assert [x["url"] for x in again] == ["http://a.test/1"]  # the lease ran out: handed out again


def test_concurrent_workers_never_hold_one_url_at_once(service):
    """Six workers lease, report (some), and drop (others) at once; no URL is leased twice while held."""
    n_hosts, per_host, n_workers = 40, 5, 6
    urls = [{"url": f"http://h{h}.test/p{i}"} for h in range(n_hosts) for i in range(per_host)]
    events: list[tuple] = []  # (url, worker, received_at, expires_at, report_sent_at or None)
    lock = threading.Lock()
    errors: list[BaseException] = []
    with running(create_app(service, token=TOKEN)) as base:
        with httpx.Client(base_url=base, headers=AUTH, timeout=30) as c:
            assert c.post("/urls", json={"urls": urls}).status_code == 200

        def worker(k: int) -> None:
            try:
                with httpx.Client(base_url=base, headers=AUTH, timeout=30) as c:
                    idle = 0
                    for i in range(200):  # bounded; stops earlier when nothing is left to lease
                        r = c.post("/leases", json={"worker_id": f"w{k}", "count": 7, "lease_s": 600})
                        got_at = time.monotonic()
                        assert r.status_code == 200, r.text
                        leases = r.json()["leases"]
                        idle = 0 if leases else idle + 1
                        if idle >= 20:
                            return
                        pages, mine = [], []
                        for x in leases:
                            if x["kind"] == "robots":
                                sent = time.monotonic()
                                assert c.post("/robots", json={"url": x["url"], "status": 404}).status_code == 200
                                mine.append((x["url"], f"w{k}", got_at, x["expires_at"], sent))
                            elif (i + len(pages)) % 3:  # two in three are reported, the rest dropped
                                pages.append(x)
                            else:
                                mine.append((x["url"], f"w{k}", got_at, x["expires_at"], None))
                        if pages:
                            sent = time.monotonic()
                            r = c.post("/observations", json={"reports": [
                                {"url": x["url"], "status": 200, "signature": "s"} for x in pages]})
                            assert r.status_code == 200 and r.json()["n_ok"] == len(pages), r.text
                            mine += [(x["url"], f"w{k}", got_at, x["expires_at"], sent) for x in pages]
                        with lock:
                            events.extend(mine)
            except BaseException as err:  # surfaced in the main thread
                errors.append(err)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(n_workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    by_url = defaultdict(list)
    for e in events:
        by_url[e[0]].append(e)
    robots = [u for u in by_url if u.endswith("/robots.txt")]
    assert len(robots) == n_hosts
    pages = [u for u in by_url if not u.endswith("/robots.txt")]
    # each host's pages go one at a time; a dropped lease blocks its host (lease_s = 600 s)
    assert len(pages) >= n_hosts
    assert len({e[1] for e in events}) >= 4  # the work was spread over the workers
    for url, evs in by_url.items():
        evs.sort(key=lambda e: e[2])
        for a, b in itertools.pairwise(evs):
            # b was leased only after a's report was sent (a's lease would otherwise still hold)
            assert a[4] is not None and b[2] >= a[4], (url, a, b)
