"""The test web over real loopback HTTP: conditional requests, truth, faults, robots, log and audits."""

from __future__ import annotations

import asyncio
import json
import math
import re
import threading
import time
import zlib
from dataclasses import dataclass
from email.utils import formatdate, parsedate_to_datetime

import aiohttp
import numpy as np
import pytest
from click.testing import CliRunner
from multidict import CIMultiDict

from freshcrawl.cli import main
from freshcrawl.cli.testweb import parse_rates
from freshcrawl.units import parse_duration
from freshcrawl.testing import (
    FAULT_KINDS,
    Fault,
    HostSpec,
    PageSpec,
    RequestRecord,
    RobotsRules,
    TestWeb,
    _content,
    host_name,
    make_pages,
    page_freshness,
    read_request_log,
)
from freshcrawl.testing.audit import freshness as audit_freshness
from freshcrawl.testing.audit import politeness_violations
from freshcrawl.testing.changes import ChangeSchedule

H0, H1, H2, H3, H4, H5 = (host_name(i) for i in range(6))
MiB = 1 << 20


@dataclass
class Reply:
    status: int
    headers: dict
    body: bytes
    url: str


def fetch(
    url, *, method="GET", headers=None, redirects=True, timeout=5.0, decompress=True, max_bytes=None
) -> Reply:
    """One request with aiohttp's client; reads at most ``max_bytes`` of the body when given."""

    async def go():
        async with (
            aiohttp.ClientSession(
                auto_decompress=decompress, timeout=aiohttp.ClientTimeout(total=timeout)
            ) as s,
            s.request(method, url, headers=headers, allow_redirects=redirects) as r,
        ):
            if max_bytes is None:
                body = await r.read()
            else:
                body = b""
                while len(body) < max_bytes:
                    part = await r.content.read(min(MiB, max_bytes - len(body)))
                    if not part:
                        break
                    body += part
            return Reply(r.status, CIMultiDict(r.headers), body, str(r.url))

    return asyncio.run(go())


def article_page(body: bytes) -> bytes:
    """``body`` after checking it is a whole HTML page."""
    assert body.startswith(b"<!DOCTYPE html>") and body.rstrip().endswith(b"</html>")
    return body


def article(body: bytes) -> str:
    """The <article> of an HTML page (its main text)."""
    m = re.search(rb"<article>(.*)</article>", body, flags=re.DOTALL)
    assert m is not None
    return m.group(1).decode()


@pytest.fixture(scope="module")
def web():
    hosts = [
        HostSpec(disallow=["/private/"], allow=["/private/open"], crawl_delay=0.5),
        HostSpec(robots_fault="5xx"),
        HostSpec(robots_fault="404"),
        HostSpec(robots_fault="timeout"),
        HostSpec(robots_fault="malformed"),
        HostSpec(robots_fault="redirect"),
    ]
    pages = [
        PageSpec(H0, "/static", 0.0),
        PageSpec(H0, "/fast", 4.0),
        PageSpec(H0, "/private/secret", 0.01),
        PageSpec(H2, "/intermittent", 0.0, Fault("500", probability=0.5)),
        PageSpec(H2, "/runtime", 0.0),
    ]
    pages += [
        PageSpec(H1, f"/fault/{kind}", 0.0, Fault(kind, retry_after_s=7, duration_s=0.4))
        for kind in FAULT_KINDS
    ]
    pages.append(PageSpec(H1, "/fault/png-fast", 5.0, "png"))
    w = TestWeb(pages, hosts, seed=3, max_hang_s=1.0)
    with w:
        yield w


def url_of(web, path, host=H0):
    return next(p.url for p in web.pages if p.path == path and p.host == host)


# --- conditional requests ----------------------------------------------------------------------
def test_conditional_requests_etag_then_ims(web):
    url = url_of(web, "/static")
    first = fetch(url)
    assert first.status == 200 and first.body.startswith(b"<!DOCTYPE html>")
    etag, lm = first.headers["ETag"], first.headers["Last-Modified"]
    assert etag == web.etag(url, 0) and not etag.startswith("W/")
    assert parsedate_to_datetime(lm).timestamp() == math.floor(web.started_at)

    r = fetch(url, headers={"If-None-Match": etag})
    assert (r.status, r.body) == (304, b"")
    assert r.headers["ETag"] == etag
    assert (
        fetch(url, headers={"If-None-Match": f'"nope", W/{etag}'}).status == 304
    )  # weak comparison
    assert fetch(url, headers={"If-None-Match": "*"}).status == 304
    assert fetch(url, headers={"If-Modified-Since": lm}).status == 304
    later = formatdate(time.time() + 60, usegmt=True)
    assert fetch(url, headers={"If-Modified-Since": later}).status == 304
    earlier = formatdate(web.started_at - 60, usegmt=True)
    assert fetch(url, headers={"If-Modified-Since": earlier}).status == 200
    assert fetch(url, headers={"If-Modified-Since": "not a date"}).status == 200
    # If-None-Match takes precedence: a mismatching tag means 200 whatever the date says
    r = fetch(url, headers={"If-None-Match": '"other"', "If-Modified-Since": later})
    assert r.status == 200 and r.body == first.body
    head = fetch(url, method="HEAD")
    assert head.status == 200 and head.body == b"" and head.headers["ETag"] == etag


def test_versions_match_change_times_and_304_ends_with_a_change(web):
    url = url_of(web, "/fast")
    r0 = fetch(url)
    rec0 = [r for r in web.requests() if r.url == url][-1]
    v0 = rec0.version
    assert v0 == web.version_at(url, rec0.arrived) == len(web.change_times(url, rec0.arrived))
    assert r0.headers["ETag"] == web.etag(url, v0)
    title, *paras = web.main_text(url, v0).split("\n")
    text = article(r0.body)
    assert title in text and all(p in text for p in paras)
    lm = parsedate_to_datetime(r0.headers["Last-Modified"]).timestamp()
    last_change = web.change_times(url, rec0.arrived)[-1] if v0 else web.started_at
    assert math.floor(last_change) <= lm <= rec0.arrived + 1
    # wait (bounded) for the next change: the old validators then get a 200 with the new version
    nxt = web.change_times(url, rec0.arrived + 30)[v0]
    assert nxt - time.time() < 10
    time.sleep(max(nxt - time.time(), 0) + 0.01)
    r1 = fetch(url, headers={"If-None-Match": r0.headers["ETag"]})
    rec1 = [r for r in web.requests() if r.url == url][-1]
    assert r1.status == 200 and rec1.version == web.version_at(url, rec1.arrived) > v0
    assert rec1.if_none_match == r0.headers["ETag"]
    assert article(r1.body) != text
    r2 = fetch(url, headers={"If-Modified-Since": r0.headers["Last-Modified"]})
    assert r2.status == 200
    # a version's Last-Modified names it alone: If-Modified-Since with it gives 304 only while current
    for _ in range(20):
        got = fetch(url)
        rec = [r for r in web.requests() if r.url == url][-1]
        back = fetch(url, headers={"If-Modified-Since": got.headers["Last-Modified"]})
        rec_back = [r for r in web.requests() if r.url == url][-1]
        assert (back.status == 304) == (rec_back.version == rec.version)


def test_change_times_are_seeded_poisson_and_lazy():
    rates = np.array([2.0, 0.5, 0.0])
    a = ChangeSchedule(rates, seed=11, t0=1000.0)
    b = ChangeSchedule(rates, seed=11, t0=5000.0)
    c = ChangeSchedule(rates, seed=12, t0=1000.0)
    a.version_at(0, 1001.0)  # read in another order: the draws do not depend on it
    ta = a.times(0, 1500.0) - 1000.0
    tb = b.times(0, 5500.0) - 5000.0
    np.testing.assert_allclose(ta, tb, rtol=0, atol=1e-9)
    assert not np.array_equal(ta[:5], c.times(0, 1500.0)[:5] - 1000.0)
    assert a.times(2, 1e9).size == 0
    # counts over 500 s at rate 2: mean 1000, sd ~32; 6 sd
    assert abs(ta.size - 1000) < 6 * math.sqrt(1000)
    gaps = np.diff(ta)
    assert abs(gaps.mean() - 0.5) < 6 * 0.5 / math.sqrt(gaps.size)
    # Last-Modified: whole seconds, strictly increasing with the version, never before the change
    lms = [a.state_at(0, t + 1000.0)[1] for t in ta]
    assert all(np.diff(lms) >= 1) and all(lm >= math.floor(t + 1000.0) for lm, t in zip(lms, ta))


def test_two_webs_with_one_seed_change_alike():
    pages = make_pages(3, 1, (0.5, 2.0), seed=5)
    with TestWeb(pages, 1, seed=9) as w1:
        d1 = [w1.change_times(u, w1.started_at + 100) - w1.started_at for u in w1.urls()]
    with TestWeb(pages, 1, seed=9) as w2:
        d2 = [w2.change_times(u, w2.started_at + 100) - w2.started_at for u in w2.urls()]
    for x, y in zip(d1, d2, strict=True):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-6)


# --- faults --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kind,status", [("429", 429), ("503", 503), ("500", 500), ("404", 404), ("410", 410)]
)
def test_error_faults(web, kind, status):
    r = fetch(url_of(web, f"/fault/{kind}", H1))
    assert r.status == status and "Retry-After" not in r.headers


def test_retry_after_seconds_and_date(web):
    for kind in ("429-seconds", "503-seconds"):
        r = fetch(url_of(web, f"/fault/{kind}", H1))
        assert (r.status, r.headers["Retry-After"]) == (int(kind[:3]), "7")
        rec = web.requests()[-1]
        assert rec.retry_after_until == pytest.approx(rec.ended + 7, abs=0.05)
    before = time.time()
    r = fetch(url_of(web, "/fault/429-date", H1))
    assert r.status == 429
    when = parsedate_to_datetime(r.headers["Retry-After"]).timestamp()
    assert before + 7 <= when <= time.time() + 8
    assert web.requests()[-1].retry_after_until == when


def test_redirect_faults(web):
    url = url_of(web, "/fault/redirect-loop", H1)
    r = fetch(url, redirects=False)
    assert r.status == 302 and r.headers["Location"] == url + "?loop=1"
    r = fetch(url + "?loop=1", redirects=False)
    assert r.status == 302 and r.headers["Location"] == url
    with pytest.raises(aiohttp.TooManyRedirects):
        fetch(url)
    r = fetch(url_of(web, "/fault/redirect-ftp", H1), redirects=False)
    assert r.status == 301 and r.headers["Location"].startswith("ftp://")


def test_reset_and_timeout(web):
    url = url_of(web, "/fault/reset", H1)
    with pytest.raises(aiohttp.ClientConnectionError):
        fetch(url)
    recs = [r for r in web.requests() if r.url == url]
    assert recs and all(r.status is None and not r.completed and r.fault == "reset" for r in recs)
    url = url_of(web, "/fault/timeout", H1)
    t = time.monotonic()
    with pytest.raises((asyncio.TimeoutError, aiohttp.ClientError)):
        fetch(url, timeout=0.3)
    assert time.monotonic() - t < 2.0
    deadline = time.monotonic() + 3.0  # the server gives up after max_hang_s = 1 s
    while time.monotonic() < deadline and not any(r.url == url for r in web.requests()):
        time.sleep(0.05)
    rec = next(r for r in web.requests() if r.url == url)
    assert rec.status is None and 0.9 <= rec.ended - rec.arrived <= 2.0


def test_slow_body_drips(web):
    url = url_of(web, "/fault/slow-body", H1)
    t = time.monotonic()
    r = fetch(url)
    elapsed = time.monotonic() - t
    assert r.status == 200 and 0.3 <= elapsed < 2.0
    rec = web.requests()[-1]
    i = web.page_index(url)
    html = _content.render_html(web.seed, i, rec.version, web.started_at)  # rate 0: never changed
    assert r.body == b"".join(html) == article_page(r.body)
    assert rec.completed and rec.bytes_sent == len(r.body) == int(r.headers["Content-Length"])


def test_oversized_bodies(web):
    r = fetch(url_of(web, "/fault/oversized", H1), max_bytes=11 * MiB)
    assert r.status == 200 and int(r.headers["Content-Length"]) > 10 * MiB
    assert len(r.body) == 11 * MiB  # streamed: we stopped reading, more was coming
    r = fetch(url_of(web, "/fault/oversized-chunked", H1))
    assert "Content-Length" not in r.headers and r.headers["Transfer-Encoding"] == "chunked"
    assert len(r.body) > 10 * MiB


def test_gzip_bomb(web):
    r = fetch(url_of(web, "/fault/gzip-bomb", H1), decompress=False)
    assert r.status == 200 and r.headers["Content-Encoding"] == "gzip"
    assert len(r.body) == int(r.headers["Content-Length"]) < 2 * MiB
    d = zlib.decompressobj(31)
    out = d.decompress(r.body[:100_000], 200 * MiB)
    assert len(out) > 90 * MiB and not out.strip(b"\0")
    rec = web.requests()[-1]
    assert rec.bytes_sent == len(r.body) and not rec.refreshes


def test_gzip_bomb_is_a_valid_gzip_member():
    first, block, n, tail = _content.gzip_bomb(n_mib=3)
    import gzip

    assert gzip.decompress(first + block * n + tail) == bytes(3 * MiB)


def test_non_html_faults(web):
    r = fetch(url_of(web, "/fault/pdf", H1))
    assert r.headers["Content-Type"] == "application/pdf" and r.body.startswith(b"%PDF-")
    assert (
        fetch(url_of(web, "/fault/pdf", H1), headers={"If-None-Match": r.headers["ETag"]}).status
        == 304
    )
    url = url_of(web, "/fault/png-fast", H1)
    r = fetch(url)
    assert r.headers["Content-Type"] == "image/png" and r.body.startswith(b"\x89PNG\r\n\x1a\n")
    v = web.requests()[-1].version
    assert _content.render_png(web.seed, web.page_index(url), v) == r.body
    assert _content.render_png(web.seed, web.page_index(url), v + 1) != r.body
    assert _content.render_pdf(0, 1, 1) != _content.render_pdf(0, 1, 2)


def test_noisy_markup_differs_per_request_text_does_not(web):
    url = url_of(web, "/fault/noisy", H1)
    a, b = fetch(url), fetch(url)
    assert a.status == b.status == 200 and "ETag" not in a.headers
    assert a.body != b.body
    assert article(a.body) == article(b.body)
    assert re.search(rb'csrf-token" content="([0-9a-f]{32})', a.body)
    # a conditional request does not help: no validators, always 200
    assert fetch(url, headers={"If-None-Match": "*"}).status == 200


def test_intermittent_and_runtime_faults(web):
    url = url_of(web, "/intermittent", H2)
    statuses = [fetch(url).status for _ in range(30)]
    assert set(statuses) == {200, 500}
    url = url_of(web, "/runtime", H2)
    assert fetch(url).status == 200
    web.set_fault(url, Fault("429-seconds", retry_after_s=2))
    assert web.fault(url).kind == "429-seconds"
    r = fetch(url)
    assert (r.status, r.headers["Retry-After"]) == (429, "2")
    web.set_fault(url, "410")
    assert fetch(url).status == 410
    web.clear_fault(url)
    assert fetch(url).status == 200 and web.fault(url) is None
    with pytest.raises(ValueError, match="fault.kind"):
        web.set_fault(url, "teapot")
    with pytest.raises(ValueError, match="not a page"):
        web.set_fault("http://127.0.0.2:1/nope", "500")


def test_unknown_path_and_method(web):
    assert fetch(f"{web.hosts[0].origin}/nowhere").status == 404
    assert fetch(url_of(web, "/static"), method="POST").status == 405


# --- robots.txt ----------------------------------------------------------------------------------
def test_robots_variants(web):
    o = [h.origin for h in web.hosts]
    r = fetch(o[0] + "/robots.txt")
    assert r.status == 200 and r.headers["Content-Type"].startswith("text/plain")
    text = r.body.decode()
    assert (
        "Disallow: /private/" in text
        and "Allow: /private/open" in text
        and "Crawl-delay: 0.5" in text
    )
    assert fetch(o[1] + "/robots.txt").status == 503
    assert fetch(o[2] + "/robots.txt").status == 404
    with pytest.raises((asyncio.TimeoutError, aiohttp.ClientError)):
        fetch(o[3] + "/robots.txt", timeout=0.3)
    r = fetch(o[4] + "/robots.txt")
    assert r.status == 200 and b"\x00" in r.body
    with pytest.raises(UnicodeDecodeError):
        r.body.decode("utf-8")
    r = fetch(o[5] + "/robots.txt", redirects=False)
    assert r.status == 301 and r.headers["Location"] == o[5] + "/robots-redirected.txt"
    r = fetch(o[5] + "/robots.txt")
    assert (
        r.status == 200 and r.url == o[5] + "/robots-redirected.txt" and b"User-agent: *" in r.body
    )
    assert fetch(o[0] + "/robots-redirected.txt").status == 404


def test_robots_rules_matching():
    rules = RobotsRules(allow=["/a/b", "/x$"], disallow=["/a/", "/*.pdf$", "/x"])
    assert not rules.allowed("/a/c") and rules.allowed("/a/b/c") and rules.allowed("/b")
    assert not rules.allowed("/files/doc.pdf") and rules.allowed("/files/doc.pdf?x=1")
    assert rules.allowed("/x") and not rules.allowed("/xy")
    assert not RobotsRules.served_by(HostSpec(robots_fault="5xx")).allowed("/")
    assert RobotsRules.served_by(HostSpec(disallow=["/"], robots_fault="404")).allowed("/a")
    assert not RobotsRules.served_by(HostSpec(disallow=["/"], robots_fault="redirect")).allowed(
        "/a"
    )


# --- the request log -------------------------------------------------------------------------------
def test_request_log_records_everything(tmp_path):
    log = tmp_path / "requests.jsonl"
    pages = [PageSpec(H0, "/a", 0.0), PageSpec(H0, "/b", 0.0, "429-seconds")]
    with TestWeb(pages, 1, seed=1, log_path=log) as w:
        a, b = w.urls()
        t0 = time.time()
        first = fetch(a + "?q=1", headers={"User-Agent": "freshcrawl-test/1"})
        fetch(
            a,
            headers={"If-None-Match": first.headers["ETag"], "If-Modified-Since": "x"},
            method="HEAD",
        )
        fetch(b)
        fetch(w.hosts[0].origin + "/robots.txt")
        t1 = time.time()
        recs = w.requests()
    assert len(recs) == 4
    r0, r1, r2, r3 = recs
    assert (r0.host, r0.port, r0.path, r0.query, r0.method) == (
        H0,
        w.hosts[0].port,
        "/a",
        "q=1",
        "GET",
    )
    assert (r0.status, r0.bytes_sent, r0.version, r0.page, r0.user_agent) == (
        200,
        len(first.body),
        0,
        0,
        "freshcrawl-test/1",
    )
    assert r0.completed and r0.refreshes and t0 <= r0.arrived <= r0.ended <= t1
    assert (r1.method, r1.status, r1.bytes_sent, r1.if_none_match, r1.if_modified_since) == (
        "HEAD",
        304,
        0,
        first.headers["ETag"],
        "x",
    )
    assert not r1.refreshes  # HEAD gives no copy
    assert (r2.status, r2.fault, r2.version, r2.page) == (429, "429-seconds", None, 1)
    assert r2.retry_after_until is not None and not r2.refreshes
    assert (r3.path, r3.page, r3.status) == ("/robots.txt", None, 200)
    assert read_request_log(log) == recs
    line = json.loads(log.read_text().splitlines()[0])
    assert RequestRecord.from_dict(line) == r0


# --- lifecycle ---------------------------------------------------------------------------------
def test_stop_is_prompt_with_hanging_handlers():
    w = TestWeb([PageSpec(H0, "/hang", 0.0, "timeout")], 1, max_hang_s=30.0)
    w.start()
    url = w.urls()[0]
    errors = []

    def client():
        try:
            fetch(url, timeout=10.0)
        except Exception as err:  # noqa: BLE001 - recorded for the assertion
            errors.append(err)

    threads = [threading.Thread(target=client) for _ in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.5)  # let the requests arrive and hang
    t = time.monotonic()
    w.stop()
    assert time.monotonic() - t < 3.0
    for th in threads:
        th.join(timeout=10.0)
    assert len(errors) == 3 and not w.running
    assert len(w.requests()) == 3 and all(r.status is None for r in w.requests())
    w.stop()  # twice is fine
    with pytest.raises(RuntimeError, match="already started"):
        w.start()


def test_throughput_is_enough_for_a_crawl():
    """Several hundred requests over keep-alive connections finish quickly (loose bound)."""
    pages = make_pages(50, 2, (0.01, 1.0), seed=2)
    with TestWeb(pages, 2, seed=2) as w:
        urls = w.urls()

        async def go():
            async with aiohttp.ClientSession() as s:

                async def worker(k):
                    for j in range(50):
                        async with s.get(urls[(k * 50 + j) % len(urls)]) as r:
                            await r.read()

                t = time.perf_counter()
                await asyncio.gather(*(worker(k) for k in range(8)))
                return time.perf_counter() - t

        elapsed = asyncio.run(go())
        assert len(w.requests()) == 400
    assert elapsed < 4.0  # 100 req/s would do; the server serves thousands


# --- audits --------------------------------------------------------------------------------------
def _rec(
    t,
    page,
    status=200,
    *,
    host=H0,
    path=None,
    method="GET",
    fault=None,
    completed=True,
    retry_until=None,
    ended=None,
):
    return RequestRecord(
        arrived=t,
        ended=t + 0.01 if ended is None else ended,
        host=host,
        port=80,
        path=path if path is not None else f"/p{page}",
        query="",
        method=method,
        status=status,
        bytes_sent=10,
        if_none_match=None,
        if_modified_since=None,
        user_agent=None,
        version=0,
        fault=fault,
        completed=completed,
        retry_after_until=retry_until,
        page=page,
    )


def test_freshness_audit_by_hand():
    # page 0 changes at 102, 105, 109; page 1 never; window [100, 110]
    changes = {0: np.array([102.0, 105.0, 109.0, 120.0]), 1: np.array([])}
    recs = [
        _rec(101.0, 0),  # fresh 101-102
        _rec(103.0, 0, 304),  # fresh 103-105
        _rec(104.0, 0, 500),  # error: no refresh
        _rec(106.0, 0, 200, fault="oversized"),  # refused body: no refresh
        _rec(107.0, 0, 200, method="HEAD"),  # HEAD: no refresh
        _rec(108.0, 0, 200, completed=False),  # cut short: no refresh
        _rec(109.0, 0),  # a change at the fetch time is seen: fresh 109-110
        _rec(95.0, 1),  # before the window: page 1 fresh all along
    ]
    rep = audit_freshness(
        recs, ["u0", "u1"], lambda i: changes[i], 100.0, 110.0, np.array([1.0, 3.0])
    )
    assert rep.freshness[0] == pytest.approx((1 + 2 + 1) / 10)
    assert rep.freshness[1] == pytest.approx(1.0)
    assert rep.mean == pytest.approx((0.4 + 3 * 1.0) / 4)
    assert rep.n_refreshes.tolist() == [3, 0]
    assert rep.by_url() == {"u0": pytest.approx(0.4), "u1": pytest.approx(1.0)}
    # stale until the first refresh; a change between an old refresh and the window start makes it stale
    assert page_freshness(np.array([3.0]), np.array([]), 0.0, 10.0) == 0.0
    assert page_freshness(np.array([3.0]), np.array([-1.0]), 0.0, 10.0) == pytest.approx(0.3)
    assert page_freshness(np.array([-0.5, 3.0]), np.array([-1.0]), 0.0, 10.0) == 0.0
    assert page_freshness(np.array([-0.5, 3.0]), np.array([-1.0, 6.0]), 0.0, 10.0) == pytest.approx(
        0.4
    )
    with pytest.raises(ValueError, match="start < end"):
        page_freshness(np.array([]), np.array([]), 1.0, 1.0)


def test_freshness_audit_of_a_live_crawl_matches_a_hand_computation():
    pages = [
        PageSpec(H0, "/quick", 2.0),
        PageSpec(H0, "/slow", 0.2, weight=2.0),
        PageSpec(H0, "/never", 0.0),
        PageSpec(H0, "/unvisited", 1.0),
    ]
    with TestWeb(pages, 1, seed=4) as w:
        urls = w.urls()
        for k in range(6):  # bounded: 6 rounds, ~1 s
            for u in urls[:3]:
                fetch(u)
            time.sleep(0.15)
        end = time.time()
        rep = w.freshness(end=end)
        start = w.started_at
        recs = w.requests()

        def by_hand(i):
            fetches = sorted(r.arrived for r in recs if r.page == i)
            changes = w.change_times(urls[i], end + 10)
            total = 0.0
            for k, f in enumerate(fetches):
                nxt = changes[changes > f]
                stop = min(
                    nxt[0] if nxt.size else math.inf,
                    fetches[k + 1] if k + 1 < len(fetches) else end,
                )
                total += max(0.0, min(stop, end) - f)
            return total / (end - start)

        expect = [by_hand(i) for i in range(4)]
        assert rep.freshness.tolist() == pytest.approx(expect, abs=1e-9)
        assert rep.freshness[3] == 0.0 and rep.freshness[2] > 0.8
        assert rep.mean == pytest.approx(np.dot([1, 2, 1, 1], expect) / 5, abs=1e-9)
        only = w.freshness(end=end, weights={urls[1]: 1.0})
        assert only.mean == pytest.approx(expect[1], abs=1e-9)
        with pytest.raises(ValueError, match="start must be >="):
            w.freshness(start=start - 1)
        with pytest.raises(ValueError, match="end must be > start"):
            w.freshness(start=end, end=end)


def test_politeness_audit():
    hosts = {
        H0: HostSpec(disallow=["/private/"]),
        H1: HostSpec(crawl_delay=2.0),
        H2: HostSpec(robots_fault="5xx"),
    }
    clean = [
        _rec(0.0, None, path="/robots.txt"),
        _rec(1.0, 0),
        _rec(2.0, 1),
        _rec(3.05, 2),
        _rec(0.0, None, host=H1, path="/robots.txt"),
        _rec(2.0, 3, host=H1),
        _rec(4.0, 4, host=H1),
        _rec(0.0, None, host=H2, path="/robots.txt", status=503),
    ]
    assert politeness_violations(clean, hosts, 1.0) == []
    bad = clean + [
        _rec(10.0, 5, path="/private/x"),  # disallowed
        _rec(10.5, 6),  # 0.5 s after the previous: too close
        _rec(5.0, 7, host=H1),  # 1 s after 4.0: Crawl-delay 2 s
        _rec(20.0, 8, host=H2),  # robots 5xx: host disallowed
        _rec(30.0, 9, status=429, retry_until=40.0),  # Retry-After until 40
        _rec(35.0, 10),  # too early
        _rec(41.0, 11),  # fine
    ]
    v = politeness_violations(bad, hosts, {H0: 1.0})
    kinds = [(x.kind, x.host, x.time) for x in v]
    assert kinds == [
        ("too-close", H1, 5.0),
        ("disallowed", H0, 10.0),
        ("too-close", H0, 10.5),
        ("disallowed", H2, 20.0),
        ("retry-after", H0, 35.0),
    ]
    assert all(str(x) == x.message and x.url in x.message for x in v)
    assert "needs 2s" in str(v[0]) and "robots.txt disallows" in str(v[1])
    # the tolerance lets a gap just below the delay pass
    assert politeness_violations([_rec(0.0, 0), _rec(0.97, 1)], hosts, 1.0, tolerance_s=0.05) == []
    with pytest.raises(ValueError, match="unknown hosts"):
        politeness_violations(clean, hosts, {"127.0.0.99": 1.0})
    with pytest.raises(ValueError, match="tolerance_s"):
        politeness_violations(clean, hosts, 1.0, tolerance_s=-1)


def test_politeness_audit_of_a_live_crawl(web):
    pages = [PageSpec(H0, "/a", 0.0), PageSpec(H0, "/private/b", 0.0), PageSpec(H1, "/c", 0.0)]
    with TestWeb(pages, [HostSpec(disallow=["/private/"]), HostSpec()], seed=0) as w:
        a, b, c = w.urls()
        fetch(a)
        fetch(c)
        assert w.politeness_violations(delays=0.3) == []
        time.sleep(0.35)
        fetch(a)
        assert w.politeness_violations(delays=0.3) == []
        fetch(a)  # right after the previous one
        fetch(b)  # disallowed
        v = w.politeness_violations(delays={H0: 0.3})
        assert {x.kind for x in v} == {"too-close", "disallowed"}
        assert any(x.kind == "disallowed" and x.url == b for x in v)


# --- specs and errors ------------------------------------------------------------------------------
def test_make_pages():
    pages = make_pages(400, 4, (0.001, 0.1), seed=7)
    rates = np.array([p.rate for p in pages])
    assert rates.min() >= 0.001 and rates.max() <= 0.1
    logs = np.log10(rates)
    assert abs(logs.mean() - (-2.0)) < 6 * (2 / math.sqrt(12)) / math.sqrt(400)
    assert [p.host for p in pages[:5]] == [H0, H1, H2, H3, H0]
    assert len({(p.host, p.path) for p in pages}) == 400
    assert make_pages(5, 2, seed=1) == make_pages(5, 2, seed=1)


@pytest.mark.parametrize(
    "build,match",
    [
        (lambda: PageSpec(H0, "/a", -1.0), "page.rate"),
        (lambda: PageSpec(H0, "/a", math.nan), "page.rate"),
        (lambda: PageSpec(H0, "a", 1.0), "page.path"),
        (lambda: PageSpec(H0, "/robots.txt", 1.0), "page.path"),
        (lambda: PageSpec("10.0.0.1", "/a", 1.0), "page.host"),
        (lambda: PageSpec(H0, "/a", 1.0, weight=-2), "page.weight"),
        (lambda: Fault("nope"), "fault.kind"),
        (lambda: Fault("500", probability=1.5), "fault.probability"),
        (lambda: Fault("500", probability=0), "fault.probability"),
        (lambda: Fault("429-seconds", retry_after_s=-1), "fault.retry_after_s"),
        (lambda: Fault("oversized", size_bytes=0), "fault.size_bytes"),
        (lambda: HostSpec(robots_fault="teapot"), "host.robots_fault"),
        (lambda: HostSpec(crawl_delay=0), "host.crawl_delay"),
        (lambda: HostSpec(disallow=["private"]), "host.disallow"),
        (lambda: HostSpec(port=70000), "host.port"),
        (lambda: make_pages(0, 1), "n_pages"),
        (lambda: make_pages(5, 300), "n_hosts"),
        (lambda: make_pages(5, 1, (0.1, 0.01)), "rate_range"),
        (lambda: TestWeb([PageSpec(H1, "/a", 1.0)], 1), "pages\\[0\\].host"),
        (lambda: TestWeb([PageSpec(H0, "/a", 1.0)] * 2, 1), "repeats"),
        (lambda: TestWeb([PageSpec(H0, "/a", 1.0)], 1, max_hang_s=0), "max_hang_s"),
        (lambda: TestWeb([], 1), "pages"),
    ],
)
def test_bad_specs_name_the_field(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_truth_needs_a_started_web():
    w = TestWeb([PageSpec(H0, "/a", 1.0)], 1)
    with pytest.raises(RuntimeError, match="start"):
        w.urls()
    w.stop()  # a web that never started stops quietly


def test_main_text_is_extractable_prose():
    _, paras = _content.main_text(0, 1, 2)
    assert len(paras) == _content.N_PARAGRAPHS and all(p.count(".") >= 4 for p in paras)
    # each change rewrites exactly one paragraph
    for v in range(1, 12):
        before = _content.main_text(0, 1, v - 1)[1]
        after = _content.main_text(0, 1, v)[1]
        assert sum(x != y for x, y in zip(before, after, strict=True)) == 1


# --- command line --------------------------------------------------------------------------------
def test_cli_test_web(tmp_path):
    urls_out, log = tmp_path / "urls.txt", tmp_path / "requests.jsonl"
    result = CliRunner().invoke(
        main,
        [
            "test-web",
            "--pages",
            "12",
            "--hosts",
            "3",
            "--rates",
            "0.01:1",
            "--seed",
            "1",
            "--urls-out",
            str(urls_out),
            "--log",
            str(log),
            "--for",
            "0.5s",
        ],
    )
    assert result.exit_code == 0, result.output
    urls = urls_out.read_text().splitlines()
    assert len(urls) == 12 and all(
        re.fullmatch(r"http://127\.0\.0\.[234]:\d+/page/\d+", u) for u in urls
    )
    assert "http://127.0.0.2:" in result.output and "mean freshness" in result.output
    bad = CliRunner().invoke(main, ["test-web", "--rates", "1:0.1", "--for", "1s"])
    assert bad.exit_code != 0 and "--rates" in bad.output
    zero = CliRunner().invoke(main, ["test-web", "--for", "0s"])  # a run of no time is a typo, not a run
    assert zero.exit_code == 2 and "'--for': must be > 0" in zero.output


def test_cli_parsers():
    assert parse_duration("10m") == 600.0 and parse_duration("1.5h") == 5400.0
    assert parse_rates("0.001:0.1") == (0.001, 0.1)
    with pytest.raises(ValueError, match="duration"):
        parse_duration("soon")
    with pytest.raises(ValueError, match="rates"):
        parse_rates("a:b")
