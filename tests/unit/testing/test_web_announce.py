"""The test web's sitemaps and feeds: honest, bumped, frozen and future dates, robots.txt, 304."""

from __future__ import annotations

import time

import httpx
import pytest

from freshcrawl.crawler.announcements import parse_feed, parse_sitemap
from freshcrawl.testing import HostSpec, PageSpec, TestWeb

MODES = ["honest", "bumped", "frozen", "future", None]


@pytest.fixture(scope="module")
def web():
    pages = [
        PageSpec(f"127.0.0.{2 + h}", f"/p{i}", rate=2.0)
        for h in range(len(MODES))
        for i in range(3)
    ]
    with TestWeb(pages, hosts=[HostSpec(announce=m) for m in MODES], seed=2) as w:
        time.sleep(1.0)  # about two changes per page
        yield w


@pytest.mark.parametrize("path", ["/sitemap.xml", "/feed.xml"])
def test_dates_say_what_the_mode_says(web, path):
    for host, mode in zip(web.hosts, MODES, strict=True):
        r = httpx.get(host.origin + path, timeout=10)
        if mode is None:
            assert r.status_code == 404
            continue
        t = max(rec.arrived for rec in web.requests() if rec.path == path and rec.host == host.name)
        got = (parse_sitemap if path == "/sitemap.xml" else parse_feed)(r.content)
        urls = [p.url for p in web.pages if p.host == host.name]
        assert [e.url for e in got.entries] == urls
        tol = 1e-3 if path == "/sitemap.xml" else 1.0  # RSS dates have whole seconds
        for e, url in zip(got.entries, urls, strict=True):
            if mode == "honest":  # the last change before the request arrived (the start if none)
                changes = web.change_times(url, until=t)
                last = changes[-1] if changes.size else web.started_at
                assert abs(last - e.changed_at) <= tol
            elif mode == "bumped":  # the request's arrival
                assert abs(e.changed_at - t) <= tol
            elif mode == "frozen":
                assert abs(e.changed_at - web.started_at) <= tol
            else:
                assert e.changed_at > t + 86_000


def test_robots_lists_the_sitemap_and_an_unchanged_sitemap_answers_304(web):
    frozen = web.hosts[MODES.index("frozen")]
    robots = httpx.get(frozen.origin + "/robots.txt", timeout=10).text
    assert f"Sitemap: {frozen.origin}/sitemap.xml" in robots
    assert "Sitemap:" not in httpx.get(web.hosts[-1].origin + "/robots.txt", timeout=10).text
    first = httpx.get(frozen.origin + "/sitemap.xml", timeout=10)
    again = httpx.get(
        frozen.origin + "/sitemap.xml", headers={"If-None-Match": first.headers["ETag"]}, timeout=10
    )
    assert again.status_code == 304 and again.content == b""
    records = [r for r in web.requests() if r.path == "/sitemap.xml" and r.host == frozen.name]
    assert [r.status for r in records][-2:] == [200, 304] and all(r.page is None for r in records)


def test_announce_mode_is_checked():
    with pytest.raises(
        ValueError, match="host.announce must be None or one of honest, bumped, frozen, future"
    ):
        HostSpec(announce="sometimes")
