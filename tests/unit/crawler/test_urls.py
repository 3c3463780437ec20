"""URL normalisation and host keys: exact values and error messages."""

from __future__ import annotations

import pytest

from freshcrawl.crawler import host_of, normalize_url


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://example.com/a", "http://example.com/a"),
        ("HTTP://Example.COM/Path", "http://example.com/Path"),  # the path keeps its case
        ("http://example.com", "http://example.com/"),
        ("https://example.com?q=1", "https://example.com/?q=1"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("https://example.com:443", "https://example.com/"),
        ("http://example.com:443/a", "http://example.com:443/a"),
        ("https://example.com:80/a", "https://example.com:80/a"),
        ("http://example.com:8080", "http://example.com:8080/"),
        ("http://example.com/a#section", "http://example.com/a"),
        ("http://example.com/a?b=2&a=1#x", "http://example.com/a?b=2&a=1"),
        ("http://example.com/a/./b/../c", "http://example.com/a/c"),
        ("http://example.com/a b", "http://example.com/a%20b"),
        ("http://b\u00fccher.example/", "http://xn--bcher-kva.example/"),
        ("http://[::1]:80/x", "http://[::1]/x"),
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000/"),
        ("  http://example.com/a  ", "http://example.com/a"),
    ],
)
def test_normalize_url(url, expected):
    assert normalize_url(url) == expected
    assert normalize_url(expected) == expected  # idempotent


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("", "url must be an absolute http\\(s\\) URL; got an empty string"),
        ("   ", "got an empty string"),
        ("/relative/path", "url must be absolute \\(scheme://host/path\\); got '/relative/path'"),
        ("//example.com/a", "url must be absolute"),
        ("example.com", "url must be absolute"),
        (
            "ftp://example.com/f",
            "url scheme must be http or https; got 'ftp' in 'ftp://example.com/f'",
        ),
        ("mailto:someone@example.com", "url scheme must be http or https; got 'mailto'"),
        ("javascript:alert(1)", "got 'javascript'"),
        ("http://", "url must have a host; got 'http://'"),
        ("http:///path", "url must have a host"),
        (
            "http://example.com:99999/",
            "url is malformed \\(.*Port out of range.*\\); got 'http://example.com:99999/'",
        ),
        ("http://example.com:port/", "url is malformed"),
        ("http://[::1/", "url is malformed"),
        ("http://example.com:0/", "url port must be in 1-65535; got 0"),
    ],
)
def test_normalize_url_rejects(url, match):
    with pytest.raises(ValueError, match=match):
        normalize_url(url)
    with pytest.raises(ValueError, match=match):
        host_of(url)


def test_normalize_url_type():
    with pytest.raises(TypeError, match="url must be a str; got bytes"):
        normalize_url(b"http://example.com/")


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://example.com/a", "example.com"),
        ("https://WWW.Example.COM:8443/a?b", "www.example.com"),
        ("http://127.0.0.1:8080/", "127.0.0.1"),
        ("http://[::1]:8080/", "::1"),
        ("http://B\u00fccher.example/", "xn--bcher-kva.example"),
        ("http://user:pw@example.com/", "example.com"),
    ],
)
def test_host_of(url, host):
    assert host_of(url) == host


def test_host_of_agrees_with_normalize_url():
    url = "HTTPS://Sub.Example.com:443/x"
    assert host_of(url) == host_of(normalize_url(url)) == "sub.example.com"
