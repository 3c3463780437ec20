"""POST /announcements over a real uvicorn server, and URLFrontier discovered URLs that announce."""

from __future__ import annotations

import time

import httpx
import pytest

from freshcrawl.service.rest import create_app
from tests.integration.rest_server import AUTH, TOKEN, make_service, populate, replan, running


@pytest.fixture
def service(db_url):
    svc = make_service(db_url)
    yield svc
    svc.close()


def test_announcements_are_logged_judged_and_refused_whole_when_bad(service):
    app = create_app(service, token=TOKEN)
    with running(app) as base, httpx.Client(base_url=base, headers=AUTH, timeout=30) as c:
        urls = populate(base, n_hosts=2, per_host=2)
        now = time.time()
        body = {
            "announcements": [
                {"url": urls[0], "changed_at": now - 5, "source": "cms"},
                {
                    "url": urls[1],
                    "changed_at": "2026-11-28T10:00:00",
                    "source": "cms",
                },  # no zone: UTC
                {"url": urls[2], "changed_at": now + 86_400, "source": "hub"},  # in the future
                {"url": "http://h0.test/not-in-crawl", "changed_at": now, "source": "cms"},
            ]
        }
        r = c.post("/announcements", json=body)
        assert r.status_code == 200, r.text
        assert r.json() == {
            "n_entries": 4,
            "n_new": 2,
            "n_future": 1,
            "n_unknown": 1,
            "n_followed": 0,
            "n_naive_dates": 1,
        }
        # the same again: nothing new (the source's last announcement for each page is known)
        again = c.post("/announcements", json=body).json()
        assert again["n_new"] == 0 and again["n_future"] == 1
        ex = c.get("/explain", params={"url": urls[0]}).json()["announcements"]
        assert [a["source"] for a in ex["recent"]] == ["rest:cms"]
        assert ex["sources"][0]["state"] == "learning" and not ex["completely_observed"]
        replan(service)  # trust is saved with each plan
        st = c.get("/status").json()["announcements"]
        assert {(t["source"], t["n_future"]) for t in st["trust"]} == {("rest:hub", 2)}

        # bad input: the whole request is refused, naming the item
        bad = c.post(
            "/announcements",
            json={
                "announcements": [
                    {"url": urls[0], "changed_at": now, "source": "cms"},
                    {"url": "http://user:pw@h0.test/x", "changed_at": now, "source": "cms"},
                ]
            },
        )
        assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == [
            "body",
            "announcements",
            1,
            "url",
        ]
        for item in (
            {"url": urls[0], "changed_at": "soon", "source": "cms"},
            {"url": urls[0], "changed_at": now, "source": ""},
            {"url": urls[0], "changed_at": now},
        ):
            r = c.post("/announcements", json={"announcements": [item]})
            assert r.status_code == 422, (item, r.text)
        r = c.post(
            "/announcements",
            json={"announcements": [{"url": urls[0], "changed_at": "NaN", "source": "x"}]},
        )
        assert r.status_code == 422
        assert (
            c.post("/announcements", json={"crawl_id": "nope", "announcements": []}).status_code
            == 404
        )
        assert httpx.post(f"{base}/announcements", json={"announcements": []}).status_code == 401


def test_urlfrontier_discovered_urls_with_sitemap_or_feed_dates_announce(db_url):
    import grpc

    from freshcrawl.frontier import CrawlSettings
    from freshcrawl.service import FrontierService
    from freshcrawl.service.grpc_server import serve_grpc
    from freshcrawl.service.proto import urlfrontier_pb2 as pb
    from freshcrawl.service.proto import urlfrontier_pb2_grpc as pb_grpc

    def item(url: str, **meta: str) -> pb.URLItem:
        md = {k: pb.StringList(values=[v]) for k, v in meta.items()}
        return pb.URLItem(
            discovered=pb.DiscoveredURLItem(info=pb.URLInfo(url=url, metadata=md)), ID=url
        )

    service = FrontierService(db_url, CrawlSettings(budget=86_400.0, min_delay_s=0.0, seed=0))
    server = serve_grpc(service, "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        stub = pb_grpc.URLFrontierStub(channel)
        acks = list(
            stub.PutURLs(
                iter(
                    [
                        item("http://a.test/1", **{"sitemap.lastModified": "2026-11-28T10:00:00Z"}),
                        item(
                            "http://a.test/2",
                            **{"feed.publishedDate": "Sat Nov 28 10:00:00 UTC 2026"},
                        ),
                        item("http://a.test/3", **{"sitemap.lastModified": "not a date"}),
                        item("http://a.test/4"),
                    ]
                ),
                timeout=10,
            )
        )
        assert [a.status for a in acks] == [pb.AckMessage.Status.OK] * 4
        from freshcrawl.store import open_store

        store = open_store(db_url)
        try:
            log = store.announcement_log()
        finally:
            store.close()
        assert sorted((r[1], r[2]) for r in log) == [
            ("grpc:feed", 1795860000.0),
            ("grpc:sitemap", 1795860000.0),
        ]
    finally:
        channel.close()
        server.stop(None).wait()
        service.close()
