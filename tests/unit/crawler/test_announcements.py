"""Sitemaps and feeds read from bytes: dates, hints, indexes, gzip, limits and bad input as outcomes."""

from __future__ import annotations

import gzip
import json

import pytest

from freshcrawl.crawler import announcements as ann
from freshcrawl.crawler.announcements import (
    parse_announced_time,
    parse_date,
    parse_feed,
    parse_sitemap,
)

T = 1795860000.0  # 2026-11-28T10:00:00Z


def _urlset(rows: str) -> bytes:
    return (
        f'<?xml version="1.0"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{rows}'
        "</urlset>\n"
    ).encode()


def test_sitemap_dates_hints_and_naive_dates_taken_as_utc():
    body = _urlset(
        "<url><loc>http://a.test/1</loc><lastmod>2026-11-28T10:00:00Z</lastmod>"
        "<changefreq>hourly</changefreq><priority>0.9</priority></url>\n"
        "<url><loc>http://a.test/2</loc><lastmod>2026-11-28T11:00:00+01:00</lastmod></url>\n"
        "<url><loc>http://a.test/3</loc><lastmod>2026-11-28T10:00:00</lastmod></url>\n"
        "<url><loc>http://a.test/4</loc></url>\n"
    )
    got = parse_sitemap(body)
    assert got.kind == "sitemap" and not got.truncated
    assert [e.url for e in got.entries] == [f"http://a.test/{i}" for i in range(1, 5)]
    assert [e.changed_at for e in got.entries] == [T, T, T, None]
    assert (got.entries[0].changefreq, got.entries[0].priority) == ("hourly", 0.9)
    assert got.n_naive_dates == 1
    assert got.problems == ["1 dates without a time zone, taken as UTC"]


def test_sitemap_index_gives_its_sitemaps_and_gzip_is_undone():
    index = (
        b'<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<sitemap><loc>http://a.test/s1.xml.gz</loc></sitemap><sitemap><loc>http://a.test/s2.xml</loc>"
        b"</sitemap></sitemapindex>"
    )
    got = parse_sitemap(gzip.compress(index))
    assert got.kind == "sitemap-index"
    assert got.children == ["http://a.test/s1.xml.gz", "http://a.test/s2.xml"]
    plain = parse_sitemap(gzip.compress(_urlset("<url><loc>http://a.test/1</loc></url>")))
    assert [e.url for e in plain.entries] == ["http://a.test/1"]


def test_malformed_sitemap_is_read_up_to_the_error_which_names_its_line():
    body = _urlset(
        "<url><loc>http://a.test/1</loc><lastmod>2026-11-28T10:00:00Z</lastmod></url>\n"
        "<url><loc>http://a.test/2</loc></oops>\n"
    )
    got = parse_sitemap(body)
    assert [e.url for e in got.entries] == ["http://a.test/1"]
    assert got.problems[0].startswith("line 4, column ")
    assert "mismatched tag" in got.problems[0]
    assert "line 4" in got.why


@pytest.mark.parametrize(
    "body", [b"", b"\x00\x01garbage", b"<html><body>hi</body></html>", b"\x1f\x8bnot gzip"]
)
def test_what_is_not_a_sitemap_is_an_outcome_with_a_reason(body):
    got = parse_sitemap(body)
    assert got.entries == [] and got.problems, got


def test_sitemaps_over_the_protocol_limits_are_read_up_to_them(monkeypatch):
    n = ann.SITEMAP_MAX_URLS + 1
    rows = "".join(f"<url><loc>http://a.test/{i}</loc></url>" for i in range(n))
    got = parse_sitemap(_urlset(rows))
    assert len(got.entries) == ann.SITEMAP_MAX_URLS and got.truncated
    assert got.entries[-1].url == f"http://a.test/{ann.SITEMAP_MAX_URLS - 1}"
    assert "50,001 URLs, over the protocol's limit of 50,000" in got.problems[0]
    # the byte limit: a gzip whose body inflates past it is cut there (the limit is lowered to keep it fast)
    monkeypatch.setattr(ann, "SITEMAP_MAX_BYTES", 4096)
    big = _urlset("".join(f"<url><loc>http://a.test/{i}</loc></url>" for i in range(500)))
    got = parse_sitemap(gzip.compress(big))
    assert got.truncated and "over 4,096 bytes uncompressed" in got.problems[0]
    assert 0 < len(got.entries) < 500


def test_feeds_rss_atom_json():
    rss = (
        b'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>'
        b"<item><link>http://a.test/1</link><pubDate>Sat, 28 Nov 2026 10:00:00 +0000</pubDate></item>"
        b"<item><link>http://a.test/2</link></item><item><title>no link</title></item></channel></rss>"
    )
    got = parse_feed(rss)
    assert got.kind == "feed"
    assert [(e.url, e.changed_at) for e in got.entries] == [
        ("http://a.test/1", T),
        ("http://a.test/2", None),
    ]
    assert got.problems == ["entry 3: no link"]
    atom = (
        b'<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>'
        b'<entry><link href="http://a.test/1"/><updated>2026-11-28T10:00:00Z</updated>'
        b"<published>2020-01-01T00:00:00Z</published></entry></feed>"
    )
    assert [(e.url, e.changed_at) for e in parse_feed(atom).entries] == [("http://a.test/1", T)]
    js = json.dumps(
        {
            "version": "https://jsonfeed.org/version/1.1",
            "items": [
                {"url": "http://a.test/1", "date_modified": "2026-11-28T10:00:00"},
                {"id": "x"},
            ],
        }
    ).encode()
    got = parse_feed(js)
    assert [(e.url, e.changed_at) for e in got.entries] == [("http://a.test/1", T)]
    assert got.problems == ["item 2: no url", "1 dates without a time zone, taken as UTC"]


def test_bad_feeds_are_outcomes_with_their_line():
    cut = parse_feed(
        b'<?xml version="1.0"?>\n<rss version="2.0"><channel>\n<item><link>http://a.test/1</link>'
        b"<pubDate>Sat, 28 Nov 2026 10:00:00 +0000</pubDate></item>\n<item><link>"
    )
    assert [e.url for e in cut.entries] == ["http://a.test/1"]
    assert cut.problems[0].startswith("line ")
    assert parse_feed(b"{not json").kind == "invalid"
    assert parse_feed(b"plain text, no feed").kind == "invalid"
    odd = parse_feed(
        b'<rss version="2.0"><channel><item><link>http://a.test/1</link><pubDate>yesterday'
        b"</pubDate></item></channel></rss>"
    )
    assert odd.entries[0].changed_at is None and odd.problems == [
        "entry 1: unreadable date 'yesterday'"
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-28T10:00:00Z", (T, False)),
        ("2026-11-28T10:00:00.5+00:00", (T + 0.5, False)),
        ("2026-11-28T10:00:00", (T, True)),
        ("Sat, 28 Nov 2026 10:00:00 GMT", (T, False)),
        ("", None),
        ("soon", None),
    ],
)
def test_parse_date(text, expected):
    assert parse_date(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1795860000", (T, False)),
        ("1795860000000", (T, False)),  # milliseconds
        ("Sat Nov 28 10:00:00 UTC 2026", (T, False)),  # java.util.Date.toString()
        ("-5", None),
        ("nan", None),
        ("whenever", None),
    ],
)
def test_parse_announced_time(text, expected):
    assert parse_announced_time(text) == expected
