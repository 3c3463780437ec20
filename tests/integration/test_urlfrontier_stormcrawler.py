"""``freshcrawl serve`` as the frontier of a StormCrawler topology, with what StormCrawler really sends.

The calls are shaped as apache/stormcrawler's URLFrontier module makes them: the spout asks GetURLs
for 10 queues of 10 URLs each, held for the topology's message timeout; the status updater sends
each URL as it was fetched (a known URL with the client's next fetch date, the partition key as the
queue key, the URL as the ID) carrying only the metadata listed in ``metadata.persist``, and the
URLs a page links to in batches of 100 through PutDiscovered (API 2.6). The fetcher keeps a status
persisted from the previous fetch when a fetch fails and adds ``fetch.exception`` (and the status
updater ``fetch.error.count``). Client stubs are generated from the API 2.6 definition; the
frontier's state is read through its REST API.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import grpc
import httpx
import pytest

from tests.integration.urlfrontier_v2_6 import build_stubs, new_database, start_serve, stop_serve

DAY_S = 86_400
#: StormCrawler's metadata.persist by default (crawler-default.yaml), with the keys its metadata
#: tracking adds (url.path, depth)
DEFAULT_PERSISTED = ("_redirTo", "error.cause", "error.source", "isSitemap", "isFeed")
TIMEOUT_S = 300  # topology.message.timeout.secs: the spout's delay_requestable


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    return build_stubs(tmp_path_factory.mktemp("urlfrontier_v2_6"))


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def sc(api, tmp_path_factory, request):
    pb, pb_grpc = api
    with new_database(request.param, tmp_path_factory.mktemp("stormcrawler")) as db:
        proc, address, base = start_serve(db, "--min-delay", "0s")
        channel = grpc.insecure_channel(address)
        try:
            grpc.channel_ready_future(channel).result(timeout=30)
            yield SimpleNamespace(stub=pb_grpc.URLFrontierStub(channel), pb=pb, base=base)
        finally:
            channel.close()
            stop_serve(proc)


def md(pb, **values) -> dict:
    return {k.replace("__", "."): pb.StringList(values=[str(v)]) for k, v in values.items()}


def spout(sc, crawl: str, **params) -> list:
    """The spout's GetURLs: 10 queues, 10 URLs per queue, held for the message timeout."""
    params = {"max_urls_per_queue": 10, "max_queues": 10, "delay_requestable": TIMEOUT_S, **params}
    return list(sc.stub.GetURLs(sc.pb.GetParams(crawlID=crawl, **params), timeout=10))


def status(sc, crawl: str, url: str, key: str, next_fetch: float, **persisted) -> int:
    """The status updater's PutURLs of one fetched URL; return its ack status."""
    pb = sc.pb
    info = pb.URLInfo(url=url, key=key, crawlID=crawl, metadata=md(pb, **persisted))
    item = pb.URLItem(
        known=pb.KnownURLItem(info=info, refetchable_from_date=int(next_fetch)), ID=url
    )
    (ack,) = sc.stub.PutURLs(iter([item]), timeout=10)
    assert ack.ID == url
    return ack.status


def outlinks(sc, crawl: str, urls: list[str], batch: int = 100) -> list:
    """The newer status updater's PutDiscovered, in batches of ``batch`` URLs."""
    pb = sc.pb
    batches = [
        pb.DiscoveredBatch(
            ID=f"b{j // batch}",
            items=[
                pb.URLInfo(
                    url=u,
                    key=u.split("/")[2] if "://" in u else "",
                    crawlID=crawl,
                    metadata=md(pb, depth=1),
                )
                for u in urls[j : j + batch]
            ],
        )
        for j in range(0, len(urls), batch)
    ]
    return list(sc.stub.PutDiscovered(iter(batches), timeout=30))


def rest(sc, path: str, **params) -> dict:
    r = httpx.get(sc.base + path, params=params, timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def observations(sc, crawl: str, url: str) -> list[str]:
    """Outcomes recorded for a page, oldest first."""
    return [
        o["outcome"]
        for o in reversed(rest(sc, "/explain", url=url, crawl_id=crawl)["observations"])
    ]


def due_again(sc, crawl: str, url: str, key: str) -> None:
    """Make a fetched page due now (a known URL with a past date and no outcome: a schedule)."""
    assert status(sc, crawl, url, key, time.time() - 60) == sc.pb.AckMessage.OK


def test_discovered_batches_of_100_through_put_discovered(sc):
    pb = sc.pb
    urls = [f"http://h{j % 3}.example/p{j}" for j in range(230)]
    urls[57] = "not a url"
    urls[120] = urls[119]  # a page linking twice to one URL
    acks = outlinks(sc, "batches", urls)
    assert [a.ID for a in acks] == ["b0", "b1", "b2"]
    assert [len(a.statuses) for a in acks] == [100, 100, 30]
    flat = [s for a in acks for s in a.statuses]
    assert flat[57] == pb.AckMessage.SKIPPED
    assert flat[:57] + flat[58:] == [pb.AckMessage.OK] * 229
    n = sc.stub.CountURLs(pb.CountUrlParams(crawlID="batches"), timeout=10).value
    assert n == 228  # 230, less the malformed one and the duplicate
    assert (
        outlinks(sc, "batches", urls[:5])[0].statuses == [pb.AckMessage.OK] * 5
    )  # known: left as is
    assert sc.stub.CountURLs(pb.CountUrlParams(crawlID="batches"), timeout=10).value == 228


def test_ten_urls_per_queue_as_the_spout_asks(sc):
    pb = sc.pb
    urls = [f"http://a.example/{j}" for j in range(12)] + [
        f"http://b.example/{j}" for j in range(10)
    ]
    urls += [f"http://c.example/{j}" for j in range(4)]
    assert all(s == pb.AckMessage.OK for a in outlinks(sc, "ten", urls) for s in a.statuses)
    got = spout(sc, "ten")
    per_key: dict[str, int] = {}
    for info in got:
        per_key[info.key] = per_key.get(info.key, 0) + 1
        assert not info.url.endswith("/robots.txt")  # StormCrawler enforces robots.txt itself
    assert per_key == {"a.example": 10, "b.example": 10, "c.example": 4}
    assert spout(sc, "ten") == []  # every queue is held until its URLs come back
    now = time.time()
    for info in got:  # fetched; the status updater sends each back with the next fetch date
        ok = status(
            sc, "ten", info.url, info.key, now + DAY_S, fetch__statusCode=200, signature="s"
        )
        assert ok == pb.AckMessage.OK
    st = rest(sc, "/status", crawl_id="ten")
    assert st["observations"] == {"first": 24} and st["reports_without_outcome"] == 0
    assert sorted(i.url for i in spout(sc, "ten")) == ["http://a.example/10", "http://a.example/11"]


def test_default_persist_list_learns_nothing_and_says_so(sc):
    pb = sc.pb
    outlinks(sc, "defaults", [f"http://d.example/{j}" for j in range(3)])
    got = spout(sc, "defaults")
    assert len(got) == 3
    for info in got:  # the persisted keys only: no fetch.statusCode, no signature
        kept = {"url__path": "http://d.example/", "depth": 1, "isSitemap": "false"}
        assert (
            status(sc, "defaults", info.url, info.key, time.time() + DAY_S, **kept)
            == pb.AckMessage.OK
        )
    st = rest(sc, "/status", crawl_id="defaults")
    assert st["observations"] == {}
    assert st["reports_without_outcome"] == 3
    assert any("metadata.persist" in w and "fetch.statusCode" in w for w in st["warnings"])
    metrics = httpx.get(sc.base + "/metrics", timeout=10).text
    assert 'freshcrawl_reports_without_outcome_total{crawl="defaults"} 3.0' in metrics
    # a schedule of a URL that was not handed out (a re-seed) is no report: not counted
    due_again(sc, "defaults", "http://d.example/0", "d.example")
    assert rest(sc, "/status", crawl_id="defaults")["reports_without_outcome"] == 3


@pytest.mark.parametrize("persisted_exception", [True, False])
def test_a_stale_status_with_an_error_is_no_information(sc, persisted_exception):
    pb = sc.pb
    crawl = f"stale-{int(persisted_exception)}"
    url, key = "http://s.example/page", "s.example"
    outlinks(sc, crawl, [url])
    assert [i.url for i in spout(sc, crawl)] == [url]
    assert (
        status(sc, crawl, url, key, time.time() + DAY_S, fetch__statusCode=200, signature="a") == 0
    )
    due_again(sc, crawl, url, key)
    assert [i.url for i in spout(sc, crawl)] == [url]
    # the fetch failed: the metadata still holds the previous fetch's status and signature
    failed = {"fetch__statusCode": 200, "signature": "a", "fetch__error__count": 1}
    if persisted_exception:
        failed["fetch__exception"] = "java.net.SocketTimeoutException"
    assert status(sc, crawl, url, key, time.time() + 7200, **failed) == pb.AckMessage.OK
    assert observations(sc, crawl, url) == ["first", "no-info"]
    # the next fetch succeeds: fetch.error.count and fetch.exception are gone, the copy is the same
    due_again(sc, crawl, url, key)
    assert spout(sc, crawl) == []  # the host backs off after a network error
    sc.stub.BlockQueueUntil(
        pb.BlockQueueParams(key=key, time=0, crawlID=crawl), timeout=10
    )  # lifted
    assert [i.url for i in spout(sc, crawl)] == [url]
    assert (
        status(sc, crawl, url, key, time.time() + DAY_S, fetch__statusCode=200, signature="a") == 0
    )
    assert observations(sc, crawl, url) == ["first", "no-info", "unchanged"]


def test_not_modified_is_unchanged_and_validators_reach_the_client(sc):
    pb = sc.pb
    crawl, url, key = "conditional", "http://v.example/doc", "v.example"
    outlinks(sc, crawl, [url])
    spout(sc, crawl)
    # protocol.* keys persisted: the response headers of the fetch (names lowercased by the protocol)
    headers = {"protocol.etag": '"v1"', "protocol.last-modified": "Wed, 21 Oct 2015 07:28:00 GMT"}
    info = pb.URLInfo(
        url=url,
        key=key,
        crawlID=crawl,
        metadata={
            **md(pb, fetch__statusCode=200, signature="a"),
            **{k: pb.StringList(values=[v]) for k, v in headers.items()},
        },
    )
    item = pb.URLItem(
        known=pb.KnownURLItem(info=info, refetchable_from_date=int(time.time()) + DAY_S), ID=url
    )
    assert [a.status for a in sc.stub.PutURLs(iter([item]), timeout=10)] == [pb.AckMessage.OK]
    due_again(sc, crawl, url, key)
    (leased,) = spout(sc, crawl)
    # what StormCrawler's HTTP protocols turn into If-None-Match and If-Modified-Since
    assert leased.metadata["protocol.etag"].values == ['"v1"']
    assert leased.metadata["last-modified"].values == ["2015-10-21T07:28:00Z"]
    assert (
        status(sc, crawl, url, key, time.time() + DAY_S, fetch__statusCode=304, signature="a") == 0
    )
    assert observations(sc, crawl, url) == ["first", "unchanged"]


def test_client_queue_keys_by_domain_and_default(sc):
    """partition.url.mode byDomain: two hosts in one queue named by the client; _DEFAULT_ for a URL
    the partitioner could not place. Every queue call takes the client's key."""
    pb = sc.pb
    crawl = "bydomain"
    urls = [f"http://www.k.example/{j}" for j in range(6)] + [
        f"http://blog.k.example/{j}" for j in range(6)
    ]
    items = [pb.URLInfo(url=u, key="k.example", crawlID=crawl) for u in urls]
    items.append(pb.URLInfo(url="http://noip.example/x", key="_DEFAULT_", crawlID=crawl))
    (ack,) = sc.stub.PutDiscovered(iter([pb.DiscoveredBatch(ID="o", items=items)]), timeout=10)
    assert list(ack.statuses) == [pb.AckMessage.OK] * 13
    queues = sc.stub.ListQueues(pb.Pagination(crawlID=crawl, include_inactive=True), timeout=10)
    assert list(queues.values) == ["_DEFAULT_", "k.example"]
    assert (
        sc.stub.GetStats(pb.QueueWithinCrawlParams(key="k.example", crawlID=crawl), timeout=10).size
        == 12
    )
    assert (
        sc.stub.CountURLs(pb.CountUrlParams(key="k.example", crawlID=crawl), timeout=10).value == 12
    )
    status = sc.stub.GetURLStatus(pb.URLStatusRequest(url=urls[0], crawlID=crawl), timeout=10)
    assert status.known.info.key == "k.example"
    # a block of the client's queue holds both of its hosts
    until = int(time.time()) + 3600
    sc.stub.BlockQueueUntil(
        pb.BlockQueueParams(key="k.example", time=until, crawlID=crawl), timeout=10
    )
    sc.stub.SetDelay(
        pb.QueueDelayParams(key="_DEFAULT_", delay_requestable=2, crawlID=crawl), timeout=10
    )
    assert [(i.url, i.key) for i in spout(sc, crawl)] == [("http://noip.example/x", "_DEFAULT_")]
    sc.stub.BlockQueueUntil(pb.BlockQueueParams(key="k.example", time=0, crawlID=crawl), timeout=10)
    got = spout(sc, crawl, max_urls_per_queue=8)
    assert {i.key for i in got} == {"k.example"} and len(got) == 8  # one queue, its two hosts
    assert {i.url.split("/")[2] for i in got} == {"www.k.example", "blog.k.example"}
    assert spout(sc, crawl) == []
    # the plan still knows each host on its own (delay and cap per origin)
    hosts = rest(sc, "/hosts", crawl_id=crawl)
    assert {h["origin"] for h in hosts["hosts"]} >= {
        "http://www.k.example",
        "http://blog.k.example",
    }
