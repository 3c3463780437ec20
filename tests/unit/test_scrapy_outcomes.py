"""freshcrawl.scrapy: how a visit's final Scrapy answer becomes an outcome, and the settings it refuses."""

from __future__ import annotations

import time

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse, Response
from scrapy.utils.test import get_crawler
from twisted.internet.error import DNSLookupError, TCPTimedOutError

from freshcrawl.crawler.outcome import ErrorKind, FetchRequest, Outcome
from freshcrawl.crawler.signature import signature
from freshcrawl.frontier import Visit
from freshcrawl.scrapy import (
    Lease,
    Scheduler,
    _allows_304,
    _failure_outcome,
    _response_outcome,
)
from freshcrawl.service.rest_client import RestFrontier
from freshcrawl.service.tls import ClientTLS

URL = "http://127.0.0.2:8000/page/0"
BODY = b"<html><body><p>Hello</p></body></html>"
HTML = {"Content-Type": "text/html; charset=utf-8"}


def _lease(etag=None, last_modified=None, sig=None) -> Lease:
    lease = Lease(Visit(1, 1, FetchRequest(URL, etag, last_modified, sig), 0.0))
    lease.started_at = 100.0
    return lease


def test_304_to_a_conditional_request_is_unchanged_with_the_old_validators():
    lease = _lease(etag='"v1"', sig="abc")
    out = _response_outcome(lease, Response(URL, status=304), now=100.5, mode="raw")
    assert (out.outcome, out.why, out.etag, out.signature) == (
        Outcome.UNCHANGED,
        "not-modified",
        '"v1"',
        "abc",
    )
    assert out.elapsed_s == pytest.approx(0.5)


def test_304_to_an_unconditional_request_is_no_information():
    out = _response_outcome(_lease(), Response(URL, status=304), now=101.0, mode="raw")
    assert (out.outcome, out.error, out.why) == (Outcome.NO_INFO, ErrorKind.PAGE, "unexpected-304")


@pytest.mark.parametrize("mode", ["raw", "text"])
def test_200_is_compared_by_the_signature_crawl_run_computes(mode):
    sig = signature(BODY, HTML["Content-Type"], mode)
    response = HtmlResponse(URL, status=200, body=BODY, headers={**HTML, "ETag": '"v2"'})
    first = _response_outcome(_lease(), response, now=101.0, mode=mode)
    same = _response_outcome(_lease(sig=sig), response, now=101.0, mode=mode)
    new = _response_outcome(_lease(sig="0" * len(sig)), response, now=101.0, mode=mode)
    assert (first.outcome, same.outcome, new.outcome) == (
        Outcome.FIRST,
        Outcome.UNCHANGED,
        Outcome.CHANGED,
    )
    assert first.signature == sig and first.etag == '"v2"' and first.n_bytes == len(BODY)


def test_throttling_keeps_retry_after_and_errors_are_sorted():
    out = _response_outcome(
        _lease(), Response(URL, status=503, headers={"Retry-After": "120"}), now=101.0, mode="raw"
    )
    assert (out.outcome, out.error, out.retry_after_s) == (
        Outcome.NO_INFO,
        ErrorKind.THROTTLED,
        120.0,
    )
    assert (
        _response_outcome(_lease(), Response(URL, status=500), now=101.0, mode="raw").error
        is ErrorKind.SERVER
    )
    assert (
        _response_outcome(_lease(), Response(URL, status=404), now=101.0, mode="raw").error
        is ErrorKind.PAGE
    )


@pytest.mark.parametrize(
    ("exc", "error", "why"),
    [
        (TCPTimedOutError(), ErrorKind.NETWORK, "timeout"),
        (DNSLookupError(), ErrorKind.NETWORK, "dns-error"),
        (IgnoreRequest(), ErrorKind.PAGE, "robots-disallowed"),
    ],
)
def test_exceptions_are_no_information(exc, error, why):
    out = _failure_outcome(_lease(), exc, now=102.0)
    assert (out.outcome, out.error, out.why, out.status) == (Outcome.NO_INFO, error, why, None)


def test_304_reaches_the_callback_only_when_the_spider_asks():
    crawler = get_crawler()

    class Asks:
        handle_httpstatus_list = (304,)

    assert not _allows_304(Request(URL), object(), crawler.settings)
    assert _allows_304(Request(URL), Asks(), crawler.settings)
    assert _allows_304(
        Request(URL, meta={"handle_httpstatus_list": [304]}), object(), crawler.settings
    )


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        ({}, "exactly one of FRESHCRAWL_DB"),
        ({"FRESHCRAWL_DB": "a.db", "FRESHCRAWL_SERVER": "http://127.0.0.1:8080"}, "exactly one"),
        ({"FRESHCRAWL_DB": "a.db", "FRESHCRAWL_SIGNATURE": "md5"}, "FRESHCRAWL_SIGNATURE"),
        ({"FRESHCRAWL_DB": "a.db", "FRESHCRAWL_BUDGET": "lots"}, "FRESHCRAWL_BUDGET"),
        ({"FRESHCRAWL_SERVER": "ftp://127.0.0.1:8080"}, "http://HOST:PORT"),
    ],
)
def test_bad_settings_are_refused_by_name(settings, match):
    with pytest.raises(NotConfigured, match=match):
        Scheduler.from_crawler(get_crawler(settings_dict=settings))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"base_url": "grpc://127.0.0.1:7071"}, "http://HOST:PORT"),
        ({"base_url": "http://127.0.0.1:8080", "lease_s": 0.0}, "lease_s"),
        ({"base_url": "http://127.0.0.1:8080", "tls": ClientTLS()}, "plaintext"),
    ],
)
def test_rest_frontier_refuses_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RestFrontier(**kwargs)


def test_a_plan_is_computed_beside_the_leasing_thread_and_new_pages_wait_for_it(tmp_path):
    """An in-process frontier's plan runs in a worker thread (the frontier thread keeps leasing);
    URLs discovered meanwhile join once it is applied; a plan that fails leaves the one in force."""
    settings = {"FRESHCRAWL_DB": str(tmp_path / "c.db"), "FRESHCRAWL_BUDGET": "10/s"}
    sched = Scheduler.from_crawler(get_crawler(settings_dict=settings))
    sched.frontier = sched._open_frontier()
    try:
        sched.frontier.add_urls([(f"http://127.0.0.2:8000/p{k}", 1.0) for k in range(5)])
        now = time.time()
        sched._start_plan(now)
        assert sched.frontier.planning and sched.frontier.next_replan == float("inf")
        assert sched.frontier.due(now, 10)  # leasing goes on with the plan in force
        sched._inbox.put(("discover", "http://127.0.0.2:8000/new", 1.0))
        sched._drain(timeout=0.0)
        assert sched._unsent_urls == {"http://127.0.0.2:8000/new": 1.0}
        sched._finish_plan(wait=True)
        assert not sched.frontier.planning and sched.frontier.planned_at == now
        sched._drain(timeout=0.0)
        assert not sched._unsent_urls and sched.counts["discovered"] == 1

        def fails(job):
            raise RuntimeError("no plan")

        sched.frontier.frontier.compute_plan = fails
        failed_at = time.time()
        sched._start_plan(failed_at)
        sched._finish_plan(wait=True)
        assert not sched.frontier.planning and sched.frontier.planned_at == now
        assert sched._plan_retry_at >= failed_at + 1.0  # the next try in 1 s, not at every round
    finally:
        sched._planner.shutdown()
        sched.frontier.close()
