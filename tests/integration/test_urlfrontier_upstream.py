"""The URLFrontier project's own service tests, ported to pytest, against ``freshcrawl serve``.

crawler-commons/url-frontier checks any frontier service with five tests (``URLFrontierServiceTest``:
a URL never refetched, URLs handed out in the right order, updates and in-process counts, queue names,
crawl IDs). The same checks run here over a real gRPC channel to a ``freshcrawl serve`` process, with
client stubs generated at test time from the API 2.6 definition in ``urlfrontier_v2_6/`` (not from
freshcrawl's own modules). As upstream, each test starts by deleting the crawls ``BESPOKE`` and the
default one.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import grpc
import pytest

from tests.integration.urlfrontier_v2_6 import build_stubs, new_database, start_serve, stop_serve

DEFAULT = "DEFAULT"  # the API's name of the default crawl


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    pb, pb_grpc = build_stubs(tmp_path_factory.mktemp("urlfrontier_v2_6"))
    return SimpleNamespace(pb=pb, pb_grpc=pb_grpc)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def served(api, tmp_path_factory, request):
    with new_database(request.param, tmp_path_factory.mktemp("upstream")) as db:
        proc, address, base = start_serve(db)
        channel = grpc.insecure_channel(address)
        try:
            grpc.channel_ready_future(channel).result(timeout=30)
            yield SimpleNamespace(stub=api.pb_grpc.URLFrontierStub(channel), pb=api.pb, base=base)
        finally:
            channel.close()
            stop_serve(proc)


@pytest.fixture
def fr(served):
    pb = served.pb
    served.stub.DeleteCrawl(pb.DeleteCrawlMessage(value="BESPOKE"), timeout=10)
    served.stub.DeleteCrawl(pb.DeleteCrawlMessage(), timeout=10)
    return served


def send(fr, *items) -> int:
    """PutURLs the items; return how many acknowledgements came back (upstream counts every ack)."""
    return sum(1 for _ in fr.stub.PutURLs(iter(items), timeout=10))


def test_never_refetched(fr):
    pb = fr.pb
    info = pb.URLInfo(url="http://key1.com/", key="key1.com")
    assert send(fr, pb.URLItem(known=pb.KnownURLItem(info=info))) == 1
    req = pb.GetParams(key="key1.com", max_urls_per_queue=1, delay_requestable=2, crawlID=DEFAULT)
    assert list(fr.stub.GetURLs(req, timeout=10)) == []


def test_right_order(fr):
    pb = fr.pb
    now = int(time.time())
    later = pb.KnownURLItem(
        info=pb.URLInfo(url="http://key1.com/later", key="key1.com"), refetchable_from_date=now
    )
    sooner = pb.KnownURLItem(
        info=pb.URLInfo(url="http://key1.com/sooner", key="key1.com"),
        refetchable_from_date=now - 10_000,
    )
    assert send(fr, pb.URLItem(known=later), pb.URLItem(known=sooner)) == 2
    req = pb.GetParams(key="key1.com", max_urls_per_queue=2, delay_requestable=2, crawlID=DEFAULT)
    first = next(iter(fr.stub.GetURLs(req, timeout=10)))
    assert first.url == "http://key1.com/sooner"


def test_updates(fr):
    pb = fr.pb
    info = pb.URLInfo(url="http://key1.com/", key="key1.com")
    item = pb.URLItem(discovered=pb.DiscoveredURLItem(info=info))
    assert send(fr, item, item) == 2  # the same URL discovered twice: two acks, one URL
    assert len(fr.stub.ListQueues(pb.Pagination(), timeout=10).values) == 1
    req = pb.GetParams(key="key1.com", max_urls_per_queue=1, delay_requestable=2, crawlID=DEFAULT)
    assert [i.url for i in fr.stub.GetURLs(req, timeout=10)] == ["http://key1.com/"]
    stats = fr.stub.GetStats(pb.QueueWithinCrawlParams(key="key1.com"), timeout=10)
    assert (stats.numberOfQueues, stats.inProcess) == (1, 1)
    assert list(fr.stub.GetURLs(req, timeout=10)) == []  # in process: not handed out again
    time.sleep(2)  # delay_requestable has run out
    stats = fr.stub.GetStats(pb.QueueWithinCrawlParams(key="key1.com"), timeout=10)
    assert (stats.numberOfQueues, stats.inProcess) == (1, 0)
    assert fr.stub.DeleteQueue(pb.QueueWithinCrawlParams(key="key1.com"), timeout=10).value == 1
    stats = fr.stub.GetStats(pb.QueueWithinCrawlParams(key="key1.com"), timeout=10)
    assert stats.numberOfQueues == 0


def test_queue_names(fr):
    pb = fr.pb
    info = pb.URLInfo(url="http://gac.icann.org?language_id=9")  # no key: the host names the queue
    send(fr, pb.URLItem(discovered=pb.DiscoveredURLItem(info=info)))
    stats = fr.stub.GetStats(pb.QueueWithinCrawlParams(key="gac.icann.org"), timeout=10)
    assert stats.size == 1
    assert (
        fr.stub.DeleteQueue(pb.QueueWithinCrawlParams(key="gac.icann.org"), timeout=10).value == 1
    )


def test_crawl_ids(fr):
    pb = fr.pb
    assert list(fr.stub.ListCrawls(pb.Local(), timeout=10).values) == []
    for crawl in (
        "BESPOKE",
        "",
        DEFAULT,
    ):  # a crawl of its own, the default implicitly and explicitly
        info = pb.URLInfo(url="http://urlfrontier.net/", crawlID=crawl)
        send(fr, pb.URLItem(discovered=pb.DiscoveredURLItem(info=info)))
    stats = fr.stub.GetStats(pb.QueueWithinCrawlParams(), timeout=10)
    assert (stats.size, stats.crawlID, stats.numberOfQueues) == (1, DEFAULT, 1)
    stats = fr.stub.GetStats(pb.QueueWithinCrawlParams(crawlID="BESPOKE"), timeout=10)
    assert (stats.size, stats.crawlID, stats.numberOfQueues) == (1, "BESPOKE", 1)
    fr.stub.DeleteCrawl(pb.DeleteCrawlMessage(value="BESPOKE"), timeout=10)
    stats = fr.stub.GetStats(pb.QueueWithinCrawlParams(crawlID="BESPOKE"), timeout=10)
    assert (stats.crawlID, stats.size) == ("BESPOKE", 0)
    fr.stub.DeleteCrawl(pb.DeleteCrawlMessage(), timeout=10)
    assert fr.stub.GetStats(pb.QueueWithinCrawlParams(crawlID=""), timeout=10).size == 0


def test_server_speaks_the_whole_2_6_wire_format(api):
    """freshcrawl's own .proto carries every message, field number and call of the API 2.6."""
    from freshcrawl.service.proto import urlfrontier_pb2 as ours

    theirs = api.pb.DESCRIPTOR
    assert ours.DESCRIPTOR.package == theirs.package == "urlfrontier"
    for name, message in theirs.message_types_by_name.items():
        mine = ours.DESCRIPTOR.message_types_by_name[name]
        assert {f.name: (f.number, f.type) for f in message.fields} == {
            f.name: (f.number, f.type) for f in mine.fields
        }, name
    service = ours.DESCRIPTOR.services_by_name["URLFrontier"]
    for method in theirs.services_by_name["URLFrontier"].methods:
        mine = service.methods_by_name[method.name]
        assert (mine.input_type.full_name, mine.output_type.full_name) == (
            method.input_type.full_name,
            method.output_type.full_name,
        ), method.name
        assert (mine.client_streaming, mine.server_streaming) == (
            method.client_streaming,
            method.server_streaming,
        ), method.name
