"""The fetcher against the project's test web (freshcrawl.testing): every fault kind it serves, its
robots.txt variants and its conditional requests end as the right recorded outcome."""

from __future__ import annotations

import asyncio

import pytest

from freshcrawl.crawler import ErrorKind, Fetcher, FetchRequest, Outcome, RobotsRules
from freshcrawl.testing import FAULT_KINDS, ROBOTS_FAULTS, HostSpec, PageSpec, TestWeb

FAST = {"connect_timeout_s": 1.0, "read_timeout_s": 0.5, "total_timeout_s": 1.5}
HOST = "127.0.0.2"

# fault kind -> (error, why, retry_after_s); None: the fault gives a copy (see test_content_faults)
EXPECTED = {
    "429": (ErrorKind.THROTTLED, "http-429", None),
    "429-seconds": (ErrorKind.THROTTLED, "http-429", 5.0),
    "429-date": (ErrorKind.THROTTLED, "http-429", "about 5"),
    "503": (ErrorKind.THROTTLED, "http-503", None),
    "503-seconds": (ErrorKind.THROTTLED, "http-503", 5.0),
    "500": (ErrorKind.SERVER, "http-500", None),
    "404": (ErrorKind.PAGE, "http-404", None),
    "410": (ErrorKind.PAGE, "http-410", None),
    "timeout": (ErrorKind.NETWORK, "timeout", None),
    "slow-body": (ErrorKind.NETWORK, "timeout", None),
    "oversized": (ErrorKind.CONTENT, "too-large", None),
    "oversized-chunked": (ErrorKind.CONTENT, "too-large", None),
    "gzip-bomb": (ErrorKind.CONTENT, "too-large", None),
    "redirect-loop": (ErrorKind.PAGE, "redirect-loop", None),
    "redirect-ftp": (ErrorKind.PAGE, "bad-scheme", None),
    "reset": (ErrorKind.NETWORK, "reset", None),
    "pdf": None,
    "png": None,
    "noisy": None,
}


@pytest.fixture(scope="module")
def web():
    pages = [
        PageSpec(HOST, "/stable", rate=0.0),
        PageSpec(HOST, "/fast", rate=200.0),
        PageSpec(HOST, "/bomb-streamed", rate=0.0, fault="gzip-bomb"),
        PageSpec(HOST, "/private/page", rate=0.0),
    ]
    pages += [PageSpec(HOST, f"/fault/{kind}", rate=0.0, fault=kind) for kind in FAULT_KINDS]
    robots_hosts = list(ROBOTS_FAULTS)
    pages += [PageSpec(f"127.0.0.{3 + k}", "/page", rate=0.0) for k in range(len(robots_hosts))]
    hosts = [HostSpec(disallow=["/private/"], crawl_delay=0.5)]
    hosts += [HostSpec(robots_fault=fault) for fault in robots_hosts]
    with TestWeb(pages, hosts=hosts, seed=1, max_hang_s=3.0) as test_web:
        yield test_web


def url_of(web, path: str, host: str = HOST) -> str:
    return next(p.url for p in web.pages if p.path == path and p.host == host)


def visit(url: str, settings: dict | None = None, **request):
    async def go():
        async with Fetcher(**{**FAST, **(settings or {})}) as f:
            return await f.fetch(FetchRequest(url, **request))

    return asyncio.run(go())


def test_every_fault_kind_is_covered():
    assert set(EXPECTED) == set(FAULT_KINDS)


@pytest.mark.parametrize("kind", [k for k, v in EXPECTED.items() if v is not None])
def test_fault_ends_as_a_recorded_outcome(web, kind):
    error, why, retry = EXPECTED[kind]
    # the server builds its large bodies on the first request: give those time to arrive
    settings = (
        {"total_timeout_s": 10.0, "read_timeout_s": 5.0} if error is ErrorKind.CONTENT else {}
    )
    result = visit(url_of(web, f"/fault/{kind}"), settings, signature="previous")
    assert (result.outcome, result.error, result.why) == (Outcome.NO_INFO, error, why)
    assert result.signature is None
    assert result.elapsed_s < 10
    if retry == "about 5":
        assert 3.5 <= result.retry_after_s <= 6.0
    else:
        assert result.retry_after_s == retry
    if kind in ("oversized-chunked", "gzip-bomb"):
        assert result.n_bytes == 10 * 1024 * 1024  # decoded up to the cap (of 1 GiB), then refused
    if kind == "oversized":
        assert result.n_bytes == 0  # refused on its Content-Length, before reading


@pytest.mark.parametrize("kind", ["pdf", "png"])
def test_binary_pages_use_the_raw_signature_in_text_mode(web, kind):
    url = url_of(web, f"/fault/{kind}")
    raw = visit(url)
    text = visit(url, {"signature": "text"})
    assert raw.outcome is text.outcome is Outcome.FIRST
    assert raw.signature == text.signature


def test_noisy_page_text_mode_unchanged_raw_mode_changed(web):
    url = url_of(web, "/fault/noisy")
    for mode, expected in (("text", Outcome.UNCHANGED), ("raw", Outcome.CHANGED)):
        first = visit(url, {"signature": mode})
        assert first.etag is None and first.last_modified is None  # noisy pages send no validators
        assert visit(url, {"signature": mode}, signature=first.signature).outcome is expected


def test_conditional_requests(web):
    url = url_of(web, "/stable")
    first = visit(url)
    assert first.outcome is Outcome.FIRST and first.etag and first.last_modified
    by_etag = visit(url, etag=first.etag, signature=first.signature)
    assert (by_etag.outcome, by_etag.why, by_etag.signature) == (
        Outcome.UNCHANGED,
        "not-modified",
        first.signature,
    )
    by_date = visit(url, last_modified=first.last_modified, signature=first.signature)
    assert (by_date.outcome, by_date.why) == (Outcome.UNCHANGED, "not-modified")
    assert web.requests()[-1].user_agent.startswith("freshcrawl/")


@pytest.mark.parametrize("mode", ["raw", "text"])
def test_a_changing_page_is_seen_changed(web, mode):
    url = url_of(web, "/fast")  # 200 changes a second: two visits apart by 0.2 s see a new version
    first = visit(url, {"signature": mode})
    asyncio.run(asyncio.sleep(0.2))
    second = visit(url, {"signature": mode}, etag=first.etag, signature=first.signature)
    assert (second.outcome, second.why) == (Outcome.CHANGED, "new-signature")


def robots_of(origin: str):
    async def go():
        async with Fetcher(**FAST) as f:
            return await f.fetch_robots(origin)

    return asyncio.run(go())


def test_robots_rules_and_crawl_delay(web):
    outcome = robots_of(web.hosts[0].origin)
    rules = RobotsRules.from_outcome(outcome)
    assert (outcome.status, rules.crawl_delay) == (200, 0.5)
    assert not rules.allowed(url_of(web, "/private/page")) and rules.allowed(url_of(web, "/stable"))


@pytest.mark.parametrize(
    ("fault", "status", "allowed"),
    [
        ("5xx", 503, False),
        ("404", 404, True),
        ("timeout", None, False),
        ("malformed", 200, True),
        ("redirect", 200, True),
    ],
)
def test_robots_faults(web, fault, status, allowed):
    host = web.hosts[1 + list(ROBOTS_FAULTS).index(fault)]
    assert host.spec.robots_fault == fault
    outcome = robots_of(host.origin)
    assert outcome.status == status
    rules = RobotsRules.from_outcome(outcome)
    assert rules.allowed(url_of(web, "/page", host=host.name)) is allowed


def test_gzip_bomb_under_a_larger_cap_stops_at_the_cap(web):
    # about 1 MiB on the wire passes a 2 MiB cap on Content-Length; the decoded body does not
    cap = 2 * 1024 * 1024
    result = visit(
        url_of(web, "/bomb-streamed"),
        {"max_bytes": cap, "total_timeout_s": 10.0, "read_timeout_s": 5.0},
    )
    assert (result.outcome, result.error, result.why) == (
        Outcome.NO_INFO,
        ErrorKind.CONTENT,
        "too-large",
    )
    assert result.n_bytes == cap


def test_redirect_hops_keep_the_host_delay(web):
    """A visit that follows redirects waits ``hop_delay_s`` between its requests, outside the timeout."""
    url = url_of(web, "/fault/redirect-loop")
    before = len(web.requests())
    out = visit(url, {"total_timeout_s": 0.25}, hop_delay_s=0.3)  # the wait is longer than the timeout
    assert out.why == "redirect-loop" and out.error is ErrorKind.PAGE
    hops = [r for r in web.requests()[before:] if r.host == HOST]
    assert len(hops) == 2
    assert hops[1].arrived - hops[0].arrived >= 0.3
