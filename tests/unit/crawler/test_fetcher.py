"""The fetcher against real HTTP over loopback: every answer and every fault becomes an outcome."""

from __future__ import annotations

import asyncio
import email.utils
import time
import urllib.parse

import aiohttp
import pytest

from freshcrawl.crawler import (
    ErrorKind,
    Fetcher,
    FetchRequest,
    Outcome,
    RobotsRules,
    default_user_agent,
    parse_retry_after,
    signature,
)
from freshcrawl.errors import UnknownNameError

from .conftest import Page

# short timeouts keep the faults fast; the server's slow handlers outlast them
FAST = {"connect_timeout_s": 1.0, "read_timeout_s": 0.5, "total_timeout_s": 2.0}


def fetch(url: str, *, fetcher: dict | None = None, **request):
    """One visit with a fresh fetcher, run to completion."""

    async def visit():
        async with Fetcher(**{**FAST, **(fetcher or {})}) as f:
            return await f.fetch(FetchRequest(url, **request))

    return asyncio.run(visit())


def fetch_robots(origin: str, **settings):
    async def visit():
        async with Fetcher(**{**FAST, **settings}) as f:
            return await f.fetch_robots(origin)

    return asyncio.run(visit())


def assert_no_info(result, kind: ErrorKind, why: str) -> None:
    assert (result.outcome, result.error, result.why) == (Outcome.NO_INFO, kind, why)
    assert result.signature is None and result.etag is None


# ----------------------------------------------------------------------------- observations
def test_first_unchanged_changed(server):
    server.pages["a"] = Page(b"<html><body><p>version one</p></body></html>")
    url = server.url("/page/a")
    before = time.time()
    first = fetch(url)
    assert (first.outcome, first.why, first.error, first.status) == (
        Outcome.FIRST,
        "first-copy",
        None,
        200,
    )
    assert first.signature == signature(server.pages["a"].body, "text/html", "raw")
    assert first.n_bytes == len(server.pages["a"].body)
    assert before <= first.started_at <= time.time()
    assert 0 < first.elapsed_s < 2
    assert first.final_url is None and first.url == url

    same = fetch(url, signature=first.signature)
    assert (same.outcome, same.why, same.signature) == (
        Outcome.UNCHANGED,
        "same-signature",
        first.signature,
    )

    server.pages["a"] = Page(b"<html><body><p>version two</p></body></html>")
    changed = fetch(url, signature=first.signature)
    assert (changed.outcome, changed.why) == (Outcome.CHANGED, "new-signature")
    assert changed.signature != first.signature


def test_304_on_etag_carries_the_request_validators(server):
    server.pages["e"] = Page(
        b"<p>tagged</p>", etag='"v1"', last_modified="Wed, 21 Oct 2015 07:28:00 GMT"
    )
    url = server.url("/page/e")
    first = fetch(url)
    assert (first.outcome, first.etag, first.last_modified) == (
        Outcome.FIRST,
        '"v1"',
        "Wed, 21 Oct 2015 07:28:00 GMT",
    )

    again = fetch(url, etag='"v1"', last_modified=first.last_modified, signature="abc123")
    assert server.headers_of("/page/e")["If-None-Match"] == '"v1"'
    assert server.headers_of("/page/e")["If-Modified-Since"] == first.last_modified
    assert (again.outcome, again.why, again.status, again.error) == (
        Outcome.UNCHANGED,
        "not-modified",
        304,
        None,
    )
    assert (again.etag, again.last_modified, again.signature) == (
        '"v1"',
        first.last_modified,
        "abc123",
    )
    assert again.n_bytes == 0

    stale = fetch(url, etag='"v0"', signature=first.signature)
    assert (stale.outcome, stale.why, stale.etag) == (Outcome.UNCHANGED, "same-signature", '"v1"')


def test_304_on_if_modified_since(server):
    server.pages["lm"] = Page(b"<p>dated</p>", last_modified="Wed, 21 Oct 2015 07:28:00 GMT")
    result = fetch(
        server.url("/page/lm"), last_modified="Wed, 21 Oct 2015 07:28:00 GMT", signature="s"
    )
    assert (result.outcome, result.why, result.signature) == (
        Outcome.UNCHANGED,
        "not-modified",
        "s",
    )
    assert "If-None-Match" not in server.headers_of("/page/lm")


def test_unconditional_304_is_no_information(server):
    assert_no_info(fetch(server.url("/status/304")), ErrorKind.PAGE, "unexpected-304")


def test_user_agent_is_sent(server):
    server.pages["ua"] = Page(b"ua")
    fetch(server.url("/page/ua"), fetcher={"contact_url": "https://example.org/bot"})
    sent = server.headers_of("/page/ua")["User-Agent"]
    assert sent == default_user_agent("https://example.org/bot")
    assert sent.startswith("freshcrawl/") and sent.endswith("(+https://example.org/bot)")
    fetch(server.url("/page/ua"), fetcher={"user_agent": "custom-bot/2.0"})
    assert server.headers_of("/page/ua")["User-Agent"] == "custom-bot/2.0"


def test_text_mode_ignores_noisy_markup_raw_mode_does_not(server):
    url = server.url("/noisy")
    for mode, expected in (("text", Outcome.UNCHANGED), ("raw", Outcome.CHANGED)):
        first = fetch(url, fetcher={"signature": mode})
        assert first.outcome is Outcome.FIRST
        second = fetch(url, fetcher={"signature": mode}, signature=first.signature)
        assert second.outcome is expected, mode


def test_text_mode_sees_a_change_of_the_main_text(server):
    server.pages["t"] = Page(
        b"<html><body><article><p>The first text of this page.</p></article></body></html>"
    )
    first = fetch(server.url("/page/t"), fetcher={"signature": "text"})
    server.pages["t"] = Page(
        b"<html><body><article><p>The second text of this page.</p></article></body></html>"
    )
    second = fetch(server.url("/page/t"), fetcher={"signature": "text"}, signature=first.signature)
    assert second.outcome is Outcome.CHANGED


def test_text_mode_on_non_html_uses_the_bytes(server):
    server.pages["j"] = Page(b'{"value": 1}', content_type="application/json")
    first = fetch(server.url("/page/j"), fetcher={"signature": "text"})
    assert first.signature == signature(b'{"value": 1}', None, "raw")
    server.pages["j"] = Page(b'{"value": 2}', content_type="application/json")
    second = fetch(server.url("/page/j"), fetcher={"signature": "text"}, signature=first.signature)
    assert second.outcome is Outcome.CHANGED


# --------------------------------------------------------------------------------- statuses
@pytest.mark.parametrize(
    ("path", "kind", "retry"),
    [
        ("/status/429", ErrorKind.THROTTLED, None),
        ("/status/429?retry_after=120", ErrorKind.THROTTLED, 120.0),
        ("/status/429?retry_after=whenever", ErrorKind.THROTTLED, None),
        ("/status/503?retry_after=7", ErrorKind.THROTTLED, 7.0),
        ("/status/503", ErrorKind.THROTTLED, None),
        ("/status/500", ErrorKind.SERVER, None),
        ("/status/502", ErrorKind.SERVER, None),
        ("/status/404", ErrorKind.PAGE, None),
        ("/status/410", ErrorKind.PAGE, None),
        ("/status/403", ErrorKind.PAGE, None),
    ],
)
def test_error_statuses(server, path, kind, retry):
    result = fetch(server.url(path), signature="previous")
    status = int(path.split("/")[2].split("?")[0])
    assert_no_info(result, kind, f"http-{status}")
    assert (result.status, result.retry_after_s) == (status, retry)


def test_retry_after_as_a_date(server):
    date = email.utils.formatdate(time.time() + 120, usegmt=True)
    result = fetch(server.url(f"/status/429?retry_after={date}"))
    assert result.error is ErrorKind.THROTTLED
    assert 115 <= result.retry_after_s <= 121
    past = email.utils.formatdate(time.time() - 3600, usegmt=True)
    assert fetch(server.url(f"/status/503?retry_after={past}")).retry_after_s == 0.0


@pytest.mark.parametrize(
    ("value", "now", "expected"),
    [
        ("0", None, 0.0),
        (" 30 ", None, 30.0),
        ("Thu, 01 Jan 1970 00:02:00 GMT", 60.0, 60.0),
        ("Thursday, 01-Jan-70 00:02:00 GMT", 60.0, 60.0),
        ("Thu, 01 Jan 1970 00:00:10 GMT", 60.0, 0.0),
        (None, None, None),
        ("", None, None),
        ("-5", None, None),
        ("1.5", None, None),
        ("tomorrow", None, None),
    ],
)
def test_parse_retry_after(value, now, expected):
    assert parse_retry_after(value, now=now) == expected


# ---------------------------------------------------------------------------------- faults
def test_timeout_before_headers(server):
    result = fetch(server.url("/sleep"))
    assert_no_info(result, ErrorKind.NETWORK, "timeout")
    assert result.status is None and result.elapsed_s < 1.5


def test_slow_body_ends_at_the_total_timeout(server):
    result = fetch(
        server.url("/slow-body"), fetcher={"read_timeout_s": 1.0, "total_timeout_s": 0.4}
    )
    assert_no_info(result, ErrorKind.NETWORK, "timeout")
    assert result.status == 200 and 0.3 < result.elapsed_s < 1.5


def test_connection_refused(closed_port):
    result = fetch(f"http://127.0.0.1:{closed_port}/")
    assert_no_info(result, ErrorKind.NETWORK, "connect-error")
    assert result.status is None


def test_connection_reset(server):
    result = fetch(f"http://127.0.0.1:{server.reset_port}/")
    assert_no_info(result, ErrorKind.NETWORK, "reset")


def test_body_cut_short(server):
    result = fetch(f"http://127.0.0.1:{server.cut_port}/")
    assert_no_info(result, ErrorKind.NETWORK, "incomplete-body")
    assert result.status == 200


def test_not_http(server):
    assert_no_info(
        fetch(f"http://127.0.0.1:{server.garbage_port}/"), ErrorKind.SERVER, "bad-response"
    )


def test_declared_length_over_the_cap_is_refused_before_reading(server):
    result = fetch(server.url("/big-declared"), fetcher={"max_bytes": 1024})
    assert_no_info(result, ErrorKind.CONTENT, "too-large")
    assert (result.status, result.n_bytes) == (200, 0)


def test_streamed_body_over_the_cap(server):
    result = fetch(server.url("/big-chunked"), fetcher={"max_bytes": 10_000})
    assert_no_info(result, ErrorKind.CONTENT, "too-large")
    assert result.n_bytes == 10_000


def test_body_exactly_at_the_cap_is_accepted(server):
    server.pages["cap"] = Page(b"c" * 1000, content_type="text/plain")
    result = fetch(server.url("/page/cap"), fetcher={"max_bytes": 1000})
    assert (result.outcome, result.n_bytes) == (Outcome.FIRST, 1000)


def test_gzip_bomb_stops_at_the_cap(server):
    cap = 1024 * 1024
    server.bomb_bytes_sent = 0
    result = fetch(server.url("/bomb"), fetcher={"max_bytes": cap, "total_timeout_s": 10.0})
    assert_no_info(result, ErrorKind.CONTENT, "too-large")
    # decoded bytes read stay within the cap; the 1 GiB behind it was never inflated
    assert cap - 64 * 1024 <= result.n_bytes <= cap
    assert result.elapsed_s < 5
    # and the server could send only a small part of its ~1 MiB of gzip before the client left
    assert server.bomb_bytes_sent < 256 * 1024


def test_broken_content_coding(server):
    assert_no_info(fetch(server.url("/bad-gzip")), ErrorKind.CONTENT, "undecodable")


# ------------------------------------------------------------------------------- redirects
def test_redirects_are_followed_and_counted(server):
    result = fetch(server.url("/redirect/chain/3"))
    assert (result.outcome, result.status) == (Outcome.FIRST, 200)
    assert result.final_url == server.url("/redirect/chain/0")

    at_limit = fetch(server.url("/redirect/chain/5"), fetcher={"max_redirects": 5})
    assert at_limit.outcome is Outcome.FIRST

    over = fetch(server.url("/redirect/chain/6"), fetcher={"max_redirects": 5})
    assert_no_info(over, ErrorKind.PAGE, "too-many-redirects")
    assert (over.status, over.final_url) == (302, server.url("/redirect/chain/1"))

    none = fetch(server.url("/redirect/chain/1"), fetcher={"max_redirects": 0})
    assert_no_info(none, ErrorKind.PAGE, "too-many-redirects")


def test_redirect_loop(server):
    result = fetch(server.url("/redirect/loop-a"), fetcher={"max_redirects": 20})
    assert_no_info(result, ErrorKind.PAGE, "redirect-loop")
    assert result.status == 301


@pytest.mark.parametrize(
    ("location", "why"),
    [
        ("ftp://127.0.0.1/file", "bad-scheme"),
        ("file:///etc/hostname", "bad-scheme"),
        ("http://127.0.0.1:99999/", "bad-redirect"),
    ],
)
def test_redirect_off_the_web(server, location, why):
    result = fetch(server.url("/redirect/to?location=" + urllib.parse.quote(location, safe="")))
    assert_no_info(result, ErrorKind.PAGE, why)
    assert result.status == 307


def test_relative_redirect(server):
    server.pages["target"] = Page(b"<p>target</p>")
    result = fetch(server.url("/redirect/to?location=..%2Fpage%2Ftarget"))
    assert result.outcome is Outcome.FIRST
    assert result.final_url == server.url("/page/target")


def test_redirect_status_without_location(server):
    assert_no_info(fetch(server.url("/redirect/to")), ErrorKind.PAGE, "http-302")


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://127.0.0.1/x", "bad-scheme"),
        ("http:///nohost", "bad-url"),
        ("http://127.0.0.1:99999/", "bad-url"),
    ],
)
def test_bad_request_urls_are_not_sent(url, why):
    assert_no_info(fetch(url), ErrorKind.PAGE, why)


# ----------------------------------------------------------------------------- robots.txt
def test_robots_parsed(server):
    server.robots = (200, b"User-agent: *\nDisallow: /private\nCrawl-delay: 3\n", {})
    outcome = fetch_robots(server.origin + "/any/path")
    assert (outcome.origin, outcome.status, outcome.why) == (server.origin, 200, "ok")
    rules = RobotsRules.from_outcome(outcome)
    assert not rules.allowed(server.url("/private/x")) and rules.allowed(server.url("/public"))
    assert rules.crawl_delay == 3.0
    assert server.headers_of("/robots.txt")["User-Agent"].startswith("freshcrawl/")


@pytest.mark.parametrize(
    ("status", "allowed"),
    [(404, True), (410, True), (403, True), (429, False), (500, False), (503, False)],
)
def test_robots_error_statuses(server, status, allowed):
    server.robots = (status, b"User-agent: *\nDisallow: /\n", {"Retry-After": "60"})
    outcome = fetch_robots(server.origin)
    assert (outcome.status, outcome.text, outcome.why) == (status, None, f"http-{status}")
    assert outcome.retry_after_s == 60.0
    assert RobotsRules.from_outcome(outcome).allowed(server.url("/x")) is allowed


def test_robots_unreachable_disallows_everything(closed_port):
    outcome = fetch_robots(f"http://127.0.0.1:{closed_port}")
    assert (outcome.status, outcome.text, outcome.why) == (None, None, "connect-error")
    rules = RobotsRules.from_outcome(outcome)
    assert not rules.allowed(f"http://127.0.0.1:{closed_port}/page")
    assert rules.allowed(f"http://127.0.0.1:{closed_port}/robots.txt")


def test_robots_timeout_is_unreachable(server):
    server.robots = (302, b"", {"Location": "/sleep"})
    outcome = fetch_robots(server.origin)
    assert (outcome.status, outcome.why) == (None, "timeout")


def test_robots_redirects(server):
    server.robots = (301, b"", {"Location": "/page/robots-moved"})
    server.pages["robots-moved"] = Page(
        b"User-agent: *\nDisallow: /moved\n", content_type="text/plain"
    )
    outcome = fetch_robots(server.origin)
    assert (outcome.status, outcome.why) == (200, "ok")
    assert not RobotsRules.from_outcome(outcome).allowed(server.url("/moved"))

    server.robots = (301, b"", {"Location": "/redirect/chain/5"})  # 1 + 5 hops: one too many
    assert (fetch_robots(server.origin).status, fetch_robots(server.origin).why) == (
        None,
        "too-many-redirects",
    )


def test_robots_malformed_and_oversized(server):
    server.robots = (
        200,
        b"\xff\xfe<html>not robots</html>\nUser-agent: *\nDisallow: /a\nnonsense: yes\n",
        {},
    )
    outcome = fetch_robots(server.origin)
    assert outcome.status == 200 and "\ufffd" in outcome.text
    rules = RobotsRules.from_outcome(outcome)  # the lines that parse are kept
    assert not rules.allowed(server.url("/a")) and rules.allowed(server.url("/b"))

    line = b"Disallow: /" + b"x" * 88 + b"\n"  # 100 bytes a line
    server.robots = (200, b"User-agent: *\n" + line * 6000, {})  # 600 kB
    outcome = fetch_robots(server.origin)
    assert outcome.status == 200
    assert len(outcome.text) <= 500 * 1024 and outcome.text.endswith("\n")


def test_robots_bad_origin():
    with pytest.raises(ValueError, match="origin must be scheme://host"):
        fetch_robots("ftp://127.0.0.1")


# ------------------------------------------------------------------------- lifecycle, setup
def test_many_visits_to_one_host_share_one_connection(server):
    server.pages["many"] = Page(b"<p>many</p>")

    async def visit_many():
        async with Fetcher(**FAST) as f:
            return await asyncio.gather(
                *(f.fetch(FetchRequest(server.url("/page/many"))) for _ in range(8))
            )

    results = asyncio.run(visit_many())
    assert [r.outcome for r in results] == [Outcome.FIRST] * 8


def test_injected_session_is_left_open(server):
    server.pages["inj"] = Page(b"<p>injected</p>")

    async def visit():
        async with aiohttp.ClientSession() as session:
            async with Fetcher(session=session, **FAST) as f:
                result = await f.fetch(FetchRequest(server.url("/page/inj")))
            assert not session.closed
            return result

    assert asyncio.run(visit()).outcome is Outcome.FIRST


def test_fetch_without_a_session_raises():
    async def visit():
        return await Fetcher().fetch(FetchRequest("http://127.0.0.1/"))

    with pytest.raises(RuntimeError, match="no open session"):
        asyncio.run(visit())


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"signature": "html"},
            UnknownNameError,
            "signature must be one of 'raw', 'text'; got 'html'",
        ),
        ({"max_bytes": 0}, ValueError, "max_bytes must be >= 1; got 0"),
        ({"max_bytes": 1.5}, TypeError, "max_bytes must be an int >= 1; got float 1.5"),
        ({"max_redirects": -1}, ValueError, "max_redirects must be >= 0; got -1"),
        ({"limit_per_host": 0}, ValueError, "limit_per_host must be >= 1; got 0"),
        ({"total_timeout_s": 0}, ValueError, "total_timeout_s must be finite and > 0"),
        ({"read_timeout_s": float("nan")}, ValueError, "read_timeout_s must not be NaN"),
        (
            {"connect_timeout_s": float("inf")},
            ValueError,
            "connect_timeout_s must be finite and > 0",
        ),
        (
            {"user_agent": "a\r\nX-Injected: 1"},
            ValueError,
            "user_agent must be a non-empty single line",
        ),
    ],
)
def test_bad_settings(kwargs, error, match):
    with pytest.raises(error, match=match):
        Fetcher(**kwargs)


def test_a_kept_body_is_read_past_the_page_cap(server):
    server.pages["sitemap"] = Page(b"<urlset>" + b" " * 3000 + b"</urlset>", content_type="application/xml")
    kept = fetch(server.url("/page/sitemap"), fetcher={"max_bytes": 1000}, keep_body=True)
    assert (kept.outcome, kept.n_bytes, len(kept.body)) == (Outcome.FIRST, 3017, 3017)
    page = fetch(server.url("/page/sitemap"), fetcher={"max_bytes": 1000})
    assert_no_info(page, ErrorKind.CONTENT, "too-large")


def test_a_sitemap_over_the_protocols_50_mb_is_read_up_to_the_limit_and_reported(server):
    from freshcrawl.crawler.announcements import SITEMAP_MAX_BYTES, parse_sitemap
    from freshcrawl.crawler.fetcher import KEPT_BODY_MAX_BYTES

    head = b'<?xml version="1.0"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
    head += b"<url><loc>http://a.test/first</loc></url>\n<!-- "
    body = head + b"x" * (KEPT_BODY_MAX_BYTES - len(head) + 4096) + b" -->\n</urlset>\n"
    server.pages["big"] = Page(body, content_type="application/xml")
    kept = fetch(server.url("/page/big"), keep_body=True, fetcher={"total_timeout_s": 30.0})
    assert kept.outcome is Outcome.FIRST
    assert len(kept.body) == KEPT_BODY_MAX_BYTES + 1 == SITEMAP_MAX_BYTES + 1
    parsed = parse_sitemap(kept.body)
    assert parsed.truncated
    assert any("read up to the limit" in problem for problem in parsed.problems), parsed.problems
    assert [entry.url for entry in parsed.entries] == ["http://a.test/first"]
