"""The input limits and the egress policy's judgement of addresses and hosts, bound by bound."""

from __future__ import annotations

import math

import pytest

from freshcrawl.crawler.egress import address_verdict, check_url_host, is_loopback_host
from freshcrawl.crawler.urls import check_host, normalize_url
from freshcrawl.errors import EgressRefused
from freshcrawl.frontier import limits, parse_url_list

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("address", "verdict"),
    [
        ("8.8.8.8", None),
        ("2606:4700::1111", None),
        ("169.254.169.254", "metadata"),
        ("fd00:ec2::254", "metadata"),
        ("100.100.100.200", "metadata"),
        ("168.63.129.16", "metadata"),
        ("127.0.0.1", "loopback"),
        ("127.5.6.7", "loopback"),
        ("::1", "loopback"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("169.254.1.1", "link-local"),
        ("fe80::1%eth0", "link-local"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("10.0.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.0.1", "private"),
        ("fd12:3456::1", "private"),
        ("::ffff:10.0.0.1", "private"),
        ("::ffff:127.0.0.1", "loopback"),
        ("64:ff9b::a9fe:a9fe", "metadata"),  # NAT64 of 169.254.169.254
        ("2002:a00:1::1", "private"),  # 6to4 of 10.0.0.1
        ("100.64.0.1", "reserved"),  # shared address space
    ],
)
def test_address_verdicts(address, verdict):
    assert address_verdict(address) == verdict


def test_url_hosts():
    check_url_host("example.com")
    check_url_host("127.0.0.2")  # the URL's own host: a local rehearsal
    check_url_host("::1")
    for host in ("10.0.0.1", "[fd00::1]", "metadata.google.internal", "METADATA.google.internal."):
        with pytest.raises(EgressRefused):
            check_url_host(host)
        check_url_host(host, allow_private=True)
    assert is_loopback_host("localhost.") and not is_loopback_host("localhost.example")


@pytest.mark.parametrize(
    "host",
    [
        "exa mple.com",
        "a..b",
        "-a.com",
        "a-.com",
        "x" * 64 + ".com",
        "1.2.3",
        "0x7f.1",
        "xn--zz.com",
        "",
    ],
)
def test_invalid_hosts(host):
    with pytest.raises(ValueError, match="valid host name or IP address"):
        check_host(host)


def test_urls_normalised_once():
    assert (
        normalize_url("http://B\u00fccher.Example/a/./b c")
        == "http://xn--bcher-kva.example/a/b%20c"
    )
    assert limits.check_url("https://[::1]:443/") == "https://[::1]/"
    with pytest.raises(ValueError, match="at most 2048"):
        limits.check_url("http://a.test/" + "x" * 2048)
    with pytest.raises(ValueError, match="user name or password"):
        limits.check_url("http://user@a.test/")


def test_report_time_window_edges():
    assert limits.check_report_time(NOW - 7 * 86400, now=NOW) == NOW - 7 * 86400
    assert limits.check_report_time(NOW + 300, now=NOW) == NOW + 300
    for bad in (NOW - 7 * 86400 - 1, NOW + 301, math.nan, math.inf):
        with pytest.raises(ValueError, match="started_at"):
            limits.check_report_time(bad, now=NOW)
    with pytest.raises(TypeError):
        limits.check_report_time("1", now=NOW)


def test_other_bounds():
    assert limits.check_lease(86400) == 86400.0
    assert limits.check_size(2**53) == 2**53
    assert limits.check_status(599) == 599
    assert limits.check_not_before(NOW + 366 * 86400, now=NOW) == NOW + 366 * 86400
    for call in (
        lambda: limits.check_lease(0),
        lambda: limits.check_lease(86401),
        lambda: limits.check_size(2**53 + 2),
        lambda: limits.check_size(1.5),
        lambda: limits.check_status(600),
        lambda: limits.check_duration(-0.1),
        lambda: limits.check_retry_after(1e8),
        lambda: limits.check_not_before(NOW + 367 * 86400, now=NOW),
        lambda: limits.check_text("a\x00b"),
    ):
        with pytest.raises(ValueError):
            call()
    with pytest.raises(TypeError):
        limits.check_status(True)


def test_url_list_lines_refused_by_the_policy():
    lines = ["http://127.0.0.2/a", "http://10.0.0.1/", "# a comment", "http://[fd00::1]/ 2"]
    with pytest.raises(ValueError) as info:
        parse_url_list(lines, source="urls.txt")
    assert "urls.txt:2: url: host 10.0.0.1 is a private address" in str(info.value)
    assert "urls.txt:4:" in str(info.value) and "urls.txt:1:" not in str(info.value)
    rows = parse_url_list(lines, source="urls.txt", allow_private=True)
    assert [r[0] for r in rows] == ["http://127.0.0.2/a", "http://10.0.0.1/", "http://[fd00::1]/"]
