"""The URLFrontier API (gRPC) against freshcrawl's server, over a real channel on loopback.

A conformance suite written from the API's documented behaviour: URLs handed out by due time, at most
``max_queues`` queues and ``max_urls_per_queue`` URLs of each, held for ``delay_requestable`` unless
updated, never again after a date of 0,
queues named by host, blocked and delayed, crawl IDs kept apart, every item acknowledged by its ID, a
dump (ListURLs) put back into another crawl, and calls outside freshcrawl's scope UNIMPLEMENTED. Known
URLs that report a fetch become observations of freshcrawl's estimators (checked in the store).
Every test runs on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import grpc
import pytest

from freshcrawl.frontier import CrawlSettings
from freshcrawl.service import DEFAULT_CRAWL, FrontierService
from freshcrawl.service.grpc_server import serve_grpc
from freshcrawl.service.proto import urlfrontier_pb2 as pb
from freshcrawl.service.proto import urlfrontier_pb2_grpc as pb_grpc

A, B, C = "http://a.example", "http://b.example", "http://c.example:8080"


@pytest.fixture
def fr(db_url):
    """A served frontier (budget 1 visit/s, no host delay) and a stub on a loopback channel."""
    service = FrontierService(db_url, CrawlSettings(budget=86_400.0, min_delay_s=0.0, seed=0))
    server = serve_grpc(service, "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        yield SimpleNamespace(service=service, stub=pb_grpc.URLFrontierStub(channel),
                              address=f"127.0.0.1:{server.port}")
    finally:
        channel.close()
        server.stop(None).wait()
        service.close()


def md(**values) -> dict[str, pb.StringList]:
    return {k.replace("__", "."): pb.StringList(values=[str(v)]) for k, v in values.items()}


def discovered(url: str, crawl: str = "", ID: str = "", **meta) -> pb.URLItem:
    return pb.URLItem(discovered=pb.DiscoveredURLItem(info=pb.URLInfo(url=url, crawlID=crawl, metadata=md(**meta))),
                      ID=ID)


def known(url: str, date: int, crawl: str = "", ID: str = "", **meta) -> pb.URLItem:
    info = pb.URLInfo(url=url, crawlID=crawl, metadata=md(**meta))
    return pb.URLItem(known=pb.KnownURLItem(info=info, refetchable_from_date=int(date)), ID=ID)


def put(fr, *items) -> list[tuple[str, int]]:
    return [(a.ID, a.status) for a in fr.stub.PutURLs(iter(items), timeout=10)]


def get(fr, crawl: str = "", *, any_crawl: bool = False, robots: bool = False, **params) -> list[pb.URLInfo]:
    params.setdefault("delay_requestable", 60)
    params.setdefault("max_urls_per_queue", 1)
    if any_crawl:
        req = pb.GetParams(anyCrawlID=pb.AnyCrawlID(), **params)
    else:
        req = pb.GetParams(crawlID=crawl, **params)
    call_md = (("freshcrawl-robots", "lease"),) if robots else ()
    return list(fr.stub.GetURLs(req, timeout=10, metadata=call_md))


def urls(infos) -> list[str]:
    return [i.url for i in infos]


def seed(fr, *url_list: str, crawl: str = "") -> None:
    """Add URLs and answer the robots.txt of their hosts (404: everything allowed)."""
    assert {s for _, s in put(fr, *(discovered(u, crawl) for u in url_list))} == {pb.AckMessage.OK}
    for _ in range(10):
        got = get(fr, crawl, robots=True)
        robots = [i for i in got if i.metadata["freshcrawl.kind"].values[0] == "robots"]
        pages = [i for i in got if i not in robots]  # handed out: given back below
        items = [known(i.url, time.time(), crawl, fetch__statusCode=404) for i in robots]
        items += [known(i.url, time.time() - 100, crawl) for i in pages]
        put(fr, *items)
        if not robots:
            return
    raise AssertionError("robots.txt leases did not stop")


def status_code(call, *args) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as info:
        result = call(*args, timeout=10)
        if not hasattr(result, "ByteSize"):  # a stream: errors come when it is read
            list(result)
    return info.value.code()


# ------------------------------------------------------------------------------------------------ tests
def test_urls_handed_out_by_due_time_one_per_queue(fr):
    seed(fr, f"{A}/1", f"{A}/2", f"{A}/3", f"{B}/1")
    now = int(time.time())
    put(fr, known(f"{A}/2", now - 30), known(f"{A}/3", now - 20), known(f"{A}/1", now - 10),
        known(f"{B}/1", now - 25))
    first = get(fr, max_queues=1)
    assert urls(first) == [f"{A}/2"]  # the earliest due of all queues
    assert first[0].key == "a.example" and first[0].crawlID == DEFAULT_CRAWL
    both = get(fr)  # A is held: only B is handed out
    assert urls(both) == [f"{B}/1"]
    assert get(fr, max_urls_per_queue=5) == []
    order = []
    for _ in range(3):
        put(fr, *(known(u, now + 3600) for u in order[-1:] or [f"{A}/2"]))
        got = get(fr, key="a.example")
        order += urls(got)
    assert order == [f"{A}/3", f"{A}/1"]


def test_up_to_max_urls_per_queue_handed_out_together(fr):
    seed(fr, *(f"{A}/{j}" for j in range(12)), f"{B}/1", f"{B}/2")
    now = int(time.time())
    put(fr, *(known(f"{A}/{j}", now - 100 + j) for j in range(12)), known(f"{B}/1", now - 50),
        known(f"{B}/2", now - 40))
    got = get(fr, max_urls_per_queue=10, max_queues=10)
    by_queue = {}
    for info in got:
        by_queue.setdefault(info.key, []).append(info.url)
    assert by_queue == {"a.example": [f"{A}/{j}" for j in range(10)], "b.example": [f"{B}/1", f"{B}/2"]}
    assert get(fr, max_urls_per_queue=10) == []  # both queues are held until their URLs are reported
    put(fr, *(known(f"{A}/{j}", now + 3600, fetch__statusCode=200, signature="s") for j in range(9)))
    assert get(fr, key="a.example", max_urls_per_queue=10) == []  # one of the ten still out
    put(fr, known(f"{A}/9", now + 3600, fetch__statusCode=200, signature="s"))
    assert urls(get(fr, key="a.example", max_urls_per_queue=0)) == [f"{A}/10", f"{A}/11"]  # 0: no limit
    assert len(fr.service.crawl(None).frontier.store.observation_log()) == 10


def test_queue_names_are_hosts_with_their_port(fr):
    seed(fr, f"{A}/x", f"{C}/y")
    assert fr.stub.ListQueues(pb.Pagination(include_inactive=True), timeout=10).values == ["a.example",
                                                                                           "c.example:8080"]
    infos = get(fr, key="c.example:8080")
    assert [(i.url, i.key) for i in infos] == [(f"{C}/y", "c.example:8080")]
    md_ = infos[0].metadata
    assert md_["freshcrawl.kind"].values == ["page"]
    assert float(md_["freshcrawl.lease_expires"].values[0]) > time.time() + 50
    assert fr.stub.CountURLs(pb.CountUrlParams(key="c.example:8080"), timeout=10).value == 1
    status = fr.stub.GetURLStatus(pb.URLStatusRequest(url=f"{C}/y"), timeout=10)
    assert status.known.info.key == "c.example:8080" and status.known.refetchable_from_date > 0


def test_never_refetched_after_a_date_of_zero(fr):
    seed(fr, f"{A}/1", f"{A}/2")
    put(fr, known(f"{A}/1", time.time() - 50), known(f"{A}/2", time.time() - 40))
    assert urls(get(fr)) == [f"{A}/1"]
    assert put(fr, known(f"{A}/1", 0)) == [(f"{A}/1", pb.AckMessage.OK)]  # done: never again
    assert urls(get(fr)) == [f"{A}/2"]
    put(fr, known(f"{A}/2", 0, fetch__statusCode=200, signature="s"))  # fetched, and never again
    assert get(fr) == []
    st = fr.stub.GetURLStatus(pb.URLStatusRequest(url=f"{A}/1"), timeout=10)
    assert st.known.refetchable_from_date == 0
    # discovering a URL that is done does not bring it back
    put(fr, discovered(f"{A}/1"))
    assert get(fr) == []
    assert fr.service.crawl(None).frontier.store.observation_log()[-1]["outcome"] == "first"


def test_delay_requestable_holds_a_url_unless_it_is_updated(fr):
    seed(fr, f"{A}/1")
    put(fr, known(f"{A}/1", time.time() - 10))
    assert urls(get(fr, delay_requestable=2)) == [f"{A}/1"]
    assert get(fr) == []
    stats = fr.stub.GetStats(pb.QueueWithinCrawlParams(), timeout=10)
    assert (stats.size, stats.inProcess, stats.crawlID) == (1, 1, DEFAULT_CRAWL)
    time.sleep(2.3)  # the hold has run out: handed out again
    assert urls(get(fr, delay_requestable=60)) == [f"{A}/1"]
    assert get(fr) == []
    put(fr, known(f"{A}/1", time.time() - 5))  # updated: available at once
    assert urls(get(fr)) == [f"{A}/1"]


def test_block_queue_until_and_set_delay_are_enforced(fr):
    seed(fr, f"{A}/1", f"{A}/2", f"{B}/1")
    now = time.time()
    put(fr, known(f"{A}/1", now - 30), known(f"{A}/2", now - 20), known(f"{B}/1", now - 10))
    fr.stub.BlockQueueUntil(pb.BlockQueueParams(key="a.example", time=int(now) + 3600), timeout=10)
    assert urls(get(fr)) == [f"{B}/1"]
    fr.stub.BlockQueueUntil(pb.BlockQueueParams(key="a.example", time=0), timeout=10)  # unblocked
    assert urls(get(fr)) == [f"{A}/1"]
    put(fr, known(f"{A}/1", now + 3600, fetch__statusCode=200, signature="x"))
    fr.stub.BlockQueueUntil(pb.BlockQueueParams(key="a.example", time=int(time.time()) + 2), timeout=10)
    assert get(fr) == []
    time.sleep(2.2)
    assert urls(get(fr)) == [f"{A}/2"]
    # a delay of 2 s between two URLs of the queue
    fr.stub.SetDelay(pb.QueueDelayParams(key="a.example", delay_requestable=2), timeout=10)
    put(fr, known(f"{A}/2", time.time() - 1, fetch__statusCode=200, signature="y"),
        known(f"{A}/1", time.time() - 100))
    t0 = time.time()
    while not (got := get(fr)):
        time.sleep(0.1)
    assert urls(got) == [f"{A}/1"] and time.time() - t0 > 1.5
    assert status_code(fr.stub.BlockQueueUntil, pb.BlockQueueParams(key="nope.example", time=1)) \
        is grpc.StatusCode.NOT_FOUND
    assert status_code(fr.stub.SetDelay, pb.QueueDelayParams(key="nope.example")) is grpc.StatusCode.NOT_FOUND


def test_list_queues_pagination_and_inactive_queues(fr):
    seed(fr, f"{A}/1", f"{B}/1", f"{C}/1")
    now = time.time()
    put(fr, known(f"{A}/1", now - 3), known(f"{B}/1", now - 2), known(f"{C}/1", now + 3600))
    ql = fr.stub.ListQueues(pb.Pagination(), timeout=10)
    assert (list(ql.values), ql.total) == (["a.example", "b.example"], 2)
    ql = fr.stub.ListQueues(pb.Pagination(include_inactive=True, start=1, size=1), timeout=10)
    assert (list(ql.values), ql.total, ql.start, ql.size) == (["b.example"], 3, 1, 1)
    get(fr, max_queues=1)  # A leased: inactive
    assert list(fr.stub.ListQueues(pb.Pagination(), timeout=10).values) == ["b.example"]
    assert fr.stub.GetStats(pb.QueueWithinCrawlParams(key="c.example:8080"), timeout=10).size == 1
    assert fr.stub.DeleteQueue(pb.QueueWithinCrawlParams(key="b.example"), timeout=10).value == 1
    assert fr.stub.DeleteQueue(pb.QueueWithinCrawlParams(key="nope.example"), timeout=10).value == 0
    assert fr.stub.CountURLs(pb.CountUrlParams(), timeout=10).value == 2


def test_crawl_ids_are_separate_crawls(fr):
    seed(fr, f"{A}/d")
    seed(fr, f"{A}/1", f"{B}/1", crawl="one")
    seed(fr, f"{A}/1", crawl="two")
    assert list(fr.stub.ListCrawls(pb.Local(), timeout=10).values) == [DEFAULT_CRAWL, "one", "two"]
    counts = {c: fr.stub.CountURLs(pb.CountUrlParams(crawlID=c), timeout=10).value for c in ("", "one", "two")}
    assert counts == {"": 1, "one": 2, "two": 1}
    now = time.time()
    put(fr, known(f"{A}/1", now - 5, "one"), known(f"{B}/1", now - 5, "one"), known(f"{A}/1", now - 5, "two"),
        known(f"{A}/d", now - 5))
    got = get(fr, "one")
    assert sorted((i.url, i.crawlID) for i in got) == [(f"{A}/1", "one"), (f"{B}/1", "one")]
    assert [(i.url, i.crawlID) for i in get(fr, any_crawl=True)] and not get(fr, "one")
    # a report to one crawl does not touch the other
    put(fr, known(f"{A}/1", now + 99, "two", fetch__statusCode=200, signature="z"))
    assert fr.service.crawl("one").frontier.store.observation_log() == []
    assert len(fr.service.crawl("two").frontier.store.observation_log()) == 1
    assert fr.stub.DeleteCrawl(pb.DeleteCrawlMessage(value="one"), timeout=10).value == 2
    assert list(fr.stub.ListCrawls(pb.Local(), timeout=10).values) == [DEFAULT_CRAWL, "two"]
    stats = fr.stub.GetStats(pb.QueueWithinCrawlParams(crawlID="one"), timeout=10)  # deleted: nothing in it
    assert (stats.crawlID, stats.size, stats.inProcess, stats.numberOfQueues) == ("one", 0, 0, 0)
    assert get(fr, "one") == []
    assert status_code(fr.stub.ListQueues, pb.Pagination(crawlID="a/b")) is grpc.StatusCode.INVALID_ARGUMENT
    assert fr.stub.DeleteCrawl(pb.DeleteCrawlMessage(value="never"), timeout=10).value == 0


def test_acks_by_id_and_bad_input_skipped(fr):
    seed(fr, f"{A}/1")
    acks = put(fr, discovered(f"{A}/2", ID="id-2"), discovered("not a url", ID="bad"), discovered("ftp://a.example/x"),
               discovered(f"{A}/3", ID="w", freshcrawl__weight="-1"), known(f"{A}/unknown", 1),
               known(f"{A}/1", 1, ID="s", fetch__statusCode="abc"), known(f"{A}/1", 1, crawl="a/b"),
               pb.URLItem(ID="empty"), known(f"{A}/1", int(time.time()), ID="ok"))
    S, K = pb.AckMessage.SKIPPED, pb.AckMessage.OK
    # a known URL the crawl does not hold is stored at its date (a re-seeded or restarted frontier)
    assert acks == [("id-2", K), ("bad", S), ("ftp://a.example/x", S), ("w", S), (f"{A}/unknown", K), ("s", S),
                    (f"{A}/1", S), ("empty", S), ("ok", K)]
    assert fr.stub.CountURLs(pb.CountUrlParams(), timeout=10).value == 3


def test_known_url_reports_become_observations(fr):
    seed(fr, f"{A}/p")
    now = time.time()
    steps = [(200, "a", "first"), (200, "a", "unchanged"), (200, "b", "changed"), (304, None, "unchanged"),
             (500, None, "no-info")]
    for j, (code, sig, _) in enumerate(steps):
        meta = {"fetch__statusCode": code, "freshcrawl__started_at": now - 100 + 10 * j}
        if sig is not None:
            meta["signature"] = sig
        assert put(fr, known(f"{A}/p", now + 5000, **meta)) == [(f"{A}/p", pb.AckMessage.OK)]
    store = fr.service.crawl(None).frontier.store
    log = store.observation_log()
    assert [o["outcome"] for o in log] == [s[2] for s in steps]
    assert [o["status"] for o in log] == [s[0] for s in steps]
    row = store.page_by_url(f"{A}/p")
    assert row["signature"] == "b" and row["next_due"] >= int(now) + 5000  # the client's floor after an error
    # a visit with information: freshcrawl sets the due time (not the client's far date)
    fr.service.crawl(None).frontier.replan()  # the page gets its share of the budget (1 visit/s)
    put(fr, known(f"{A}/p", now + 10**6, fetch__statusCode=200, signature="b", freshcrawl__started_at=now))
    assert store.observation_log()[-1]["outcome"] == "unchanged"
    assert store.page_by_url(f"{A}/p")["next_due"] < now + 10**6
    # no answer at all (StormCrawler's fetch.exception, or freshcrawl's own error key)
    put(fr, known(f"{A}/p", now, fetch__exception="java.net.SocketTimeoutException", freshcrawl__started_at=now))
    put(fr, known(f"{A}/p", now, freshcrawl__error="timeout", freshcrawl__started_at=now))
    assert [(o["outcome"], o["error"]) for o in store.observation_log()[-2:]] == [("no-info", "network")] * 2


def test_robots_txt_handed_out_and_reported(fr):
    put(fr, discovered(f"{A}/open"), discovered(f"{A}/private/x"))
    infos = get(fr, robots=True)  # a client that asks for robots.txt leases (freshcrawl's own fetcher)
    assert [(i.url, i.metadata["freshcrawl.kind"].values[0]) for i in infos] == [(f"{A}/robots.txt", "robots")]
    text = "User-agent: *\nDisallow: /private/\nCrawl-delay: 1.5\n"
    assert put(fr, known(f"{A}/robots.txt", time.time(), fetch__statusCode=200, freshcrawl__robots=text)) == [
        (f"{A}/robots.txt", pb.AckMessage.OK)]
    t0 = time.time()
    while not (got := urls(get(fr, robots=True))) and time.time() < t0 + 5:
        time.sleep(0.1)
    assert got == [f"{A}/open"]
    assert time.time() - t0 > 1.2  # Crawl-delay: 1.5 s after the robots.txt request
    f = fr.service.crawl(None).frontier
    load = f.host_load()
    assert load.delay_s[0] == 1.5 and load.cap[0] == 86_400 / 1.5  # the host's delay and cap
    put(fr, known(f"{A}/open", 1, fetch__statusCode=200, signature="o"))
    time.sleep(1.7)
    assert get(fr) == [] and get(fr, robots=True) == []  # the disallowed page is never handed out
    assert fr.stub.GetURLStatus(pb.URLStatusRequest(url=f"{A}/private/x"), timeout=10).known.info.metadata[
        "freshcrawl.status"].values == ["disallowed"]


def test_dump_round_trip_into_another_crawl(fr):
    seed(fr, f"{A}/1", f"{A}/2", f"{B}/x?q=1", f"{C}/y")
    now = int(time.time())
    put(fr, known(f"{A}/2", now + 7000), discovered(f"{A}/3", freshcrawl__weight=2.5))
    dump = list(fr.stub.ListURLs(pb.ListUrlParams(size=1000), timeout=10))
    assert len(dump) == 5
    pages = [list(fr.stub.ListURLs(pb.ListUrlParams(start=s, size=2), timeout=10)) for s in (0, 2, 4)]
    assert [i.known.info.url for p in pages for i in p] == [i.known.info.url for i in dump]
    items = []
    for item in dump:
        info = pb.URLInfo()
        info.CopyFrom(item.known.info)
        info.crawlID = "copy"
        items.append(pb.URLItem(discovered=pb.DiscoveredURLItem(info=info)))
        items.append(pb.URLItem(known=pb.KnownURLItem(info=info, refetchable_from_date=item.known.refetchable_from_date)))
    assert {s for _, s in put(fr, *items)} == {pb.AckMessage.OK}
    copy = list(fr.stub.ListURLs(pb.ListUrlParams(size=1000, crawlID="copy"), timeout=10))

    def view(items_):
        return sorted((i.known.info.url, i.known.info.key, i.known.refetchable_from_date,
                       i.known.info.metadata["freshcrawl.weight"].values[0]) for i in items_)

    assert view(copy) == view(dump)
    assert (f"{A}/2", "a.example", now + 7000, "1.0") in view(copy)
    assert [i.known.info.url for i in fr.stub.ListURLs(pb.ListUrlParams(filter="A.EXAMPLE/", ignoreCase=True),
                                                        timeout=10)] == [f"{A}/1", f"{A}/2", f"{A}/3"]
    assert fr.stub.CountURLs(pb.CountUrlParams(filter="A.EXAMPLE/"), timeout=10).value == 0


def test_active_and_calls_outside_freshcrawl_are_unimplemented(fr):
    seed(fr, f"{A}/1")
    put(fr, known(f"{A}/1", time.time() - 1))
    fr.stub.SetActive(pb.Active(state=False), timeout=10)
    assert fr.stub.GetActive(pb.Local(), timeout=10).state is False
    assert get(fr) == []
    fr.stub.SetActive(pb.Active(state=True), timeout=10)
    assert urls(get(fr)) == [f"{A}/1"]
    for call, arg in ((fr.stub.ListNodes, pb.Empty()), (fr.stub.SetLogLevel, pb.LogLevelParams(package="x")),
                      (fr.stub.SetCrawlLimit, pb.CrawlLimitParams(key="a.example", limit=3)),
                      (fr.stub.PurgeURLs, pb.PurgeUrlParams(days=1)),
                      (fr.stub.GetCrawlStats, pb.GetCrawlStatsParams())):
        assert status_code(call, arg) is grpc.StatusCode.UNIMPLEMENTED
    assert status_code(fr.stub.GetURLStatus, pb.URLStatusRequest(url=f"{A}/none")) is grpc.StatusCode.NOT_FOUND
    assert status_code(fr.stub.GetURLStatus, pb.URLStatusRequest(url="::")) is grpc.StatusCode.INVALID_ARGUMENT


def test_client_dates_hold_across_plans_and_default_delay_of_new_queues(fr):
    """Core additions: a client's date survives a re-plan; SetDelay without key sets new queues' delay."""
    seed(fr, f"{A}/1")
    later = int(time.time()) + 5000
    put(fr, known(f"{A}/1", later))
    f = fr.service.crawl(None).frontier
    f.replan()
    assert f.store.page_by_url(f"{A}/1")["next_due"] == later
    fr.stub.SetDelay(pb.QueueDelayParams(delay_requestable=7), timeout=10)
    put(fr, discovered(f"{B}/new"))
    assert list(f.host_load().delay_s) == [7.0, 7.0]


def test_remote_frontier_leases_and_reports_for_the_crawl_loop(fr):
    from freshcrawl.crawler.outcome import FetchOutcome, Outcome, RobotsOutcome
    from freshcrawl.frontier import RobotsVisit, Visit
    from freshcrawl.service.grpc_client import RemoteFrontier

    put(fr, discovered(f"{A}/r"))
    port = fr.address.rsplit(":", 1)[1]
    with RemoteFrontier(f"grpc://127.0.0.1:{port}", worker="w1", lease_s=30) as remote:
        assert remote.next_replan == float("inf") and remote.next_wakeup(100.0) == 100.25
        (robots,) = remote.due()
        assert isinstance(robots, RobotsVisit) and robots.origin == A
        now = time.time()
        remote.record_robots(robots, RobotsOutcome(A, 200, "User-agent: *\nAllow: /\n", now, 0.01, "ok"))
        time.sleep(0.05)  # the host is ready once the robots.txt request has ended
        (visit,) = remote.due()
        assert isinstance(visit, Visit) and visit.url == f"{A}/r" and visit.request.signature is None
        assert remote.due() == []  # leased to this worker
        remote.record([(visit, FetchOutcome(visit.url, Outcome.FIRST, "first-copy", now, 0.02, 200, 10,
                                            etag='"e1"', signature="sig1"))])
        remote.record([(visit, FetchOutcome(visit.url, Outcome.NO_INFO, "timeout", now + 5, 1.0, None,
                                            error=None))])
        assert remote.counts == {"leased": 2, "reported": 3, "refused": 0}
    store = fr.service.crawl(None).frontier.store
    row = store.page_by_url(f"{A}/r")
    assert (row["etag"], row["signature"]) == ('"e1"', "sig1")
    assert [(o["outcome"], o["why"]) for o in store.observation_log()] == [("first", "first-copy"),
                                                                           ("no-info", "timeout")]


def test_crawl_run_frontier_options():
    from click.testing import CliRunner

    from freshcrawl.cli import main

    runner = CliRunner()
    res = runner.invoke(main, ["crawl", "run", "--for", "1s"])
    assert res.exit_code == 2 and "--db" in res.output
    res = runner.invoke(main, ["crawl", "run", "--frontier", "grpc://127.0.0.1:1", "--budget", "5/s"])
    assert res.exit_code == 2 and "--budget" in res.output
    res = runner.invoke(main, ["crawl", "run", "--frontier", "http://127.0.0.1:1"])
    assert res.exit_code == 2 and "grpc://HOST:PORT" in res.output
    res = runner.invoke(main, ["crawl", "run", "--db", "x.db", "--crawl-id", "c"])
    assert res.exit_code == 2 and "--crawl-id" in res.output


def test_a_token_is_needed_when_the_server_has_one(tmp_path):
    from freshcrawl.service.grpc_client import RemoteFrontier

    service = FrontierService(str(tmp_path / "t.db"), CrawlSettings(budget=100.0))
    server = serve_grpc(service, "127.0.0.1:0", token="s3cret")
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = pb_grpc.URLFrontierStub(channel)
            assert status_code(stub.ListCrawls, pb.Local()) is grpc.StatusCode.UNAUTHENTICATED
            assert status_code(stub.GetURLs, pb.GetParams()) is grpc.StatusCode.UNAUTHENTICATED
            with pytest.raises(grpc.RpcError) as err:
                list(stub.PutURLs(iter([discovered(f"{A}/1")]), timeout=10))
            assert err.value.code() is grpc.StatusCode.UNAUTHENTICATED
            auth = (("authorization", "Bearer s3cret"),)
            assert list(stub.ListCrawls(pb.Local(), metadata=auth, timeout=10).values) == []  # nothing yet
        with RemoteFrontier(f"127.0.0.1:{server.port}", token="s3cret") as remote:
            assert remote.due() == []
        with RemoteFrontier(f"127.0.0.1:{server.port}", token="wrong") as remote, pytest.raises(grpc.RpcError):
            remote.due()
    finally:
        server.stop(None).wait()
        service.close()


def test_one_url_reported_twice_in_one_stream(fr):
    """Reports are taken in batches (one lookup each): a URL twice in one batch is compared with itself."""
    seed(fr, f"{A}/t")
    now = time.time()
    put(fr, *(known(f"{A}/t", now + 99, fetch__statusCode=200, signature=sig, freshcrawl__started_at=now - 30 + j)
              for j, sig in enumerate(["a", "a", "b", "b"])))
    log = fr.service.crawl(None).frontier.store.observation_log()
    assert [o["outcome"] for o in log] == ["first", "unchanged", "changed", "unchanged"]


#: field numbers of the API's messages (the wire format): a change to the .proto must keep them
WIRE = {
    "GetParams": {"max_urls_per_queue": 1, "max_queues": 2, "key": 3, "delay_requestable": 4, "anyCrawlID": 5,
                  "crawlID": 6},
    "URLItem": {"discovered": 1, "known": 2, "ID": 3, "creation_date": 4},
    "URLInfo": {"url": 1, "key": 2, "metadata": 3, "crawlID": 4},
    "KnownURLItem": {"info": 1, "refetchable_from_date": 2},
    "DiscoveredURLItem": {"info": 1},
    "AckMessage": {"ID": 1, "status": 2},
    "Stats": {"size": 1, "inProcess": 2, "counts": 3, "numberOfQueues": 4, "crawlID": 5},
    "Pagination": {"start": 1, "size": 2, "include_inactive": 3, "crawlID": 4, "local": 5},
    "QueueList": {"values": 1, "total": 2, "start": 3, "size": 4, "crawlID": 5},
    "QueueWithinCrawlParams": {"key": 1, "crawlID": 2, "local": 3},
    "QueueDelayParams": {"key": 1, "delay_requestable": 2, "crawlID": 3, "local": 4},
    "BlockQueueParams": {"key": 1, "time": 2, "crawlID": 3, "local": 4},
    "ListUrlParams": {"start": 1, "size": 2, "key": 3, "crawlID": 4, "local": 5, "filter": 6, "ignoreCase": 7},
    "CountUrlParams": {"key": 1, "crawlID": 2, "filter": 3, "ignoreCase": 4, "local": 5},
    "URLStatusRequest": {"url": 1, "key": 2, "crawlID": 3},
    "DeleteCrawlMessage": {"value": 1, "local": 2},
}


def test_wire_format_names_and_numbers():
    assert pb.DESCRIPTOR.package == "urlfrontier"
    for name, numbers in WIRE.items():
        fields = pb.DESCRIPTOR.message_types_by_name[name].fields
        assert {f.name: f.number for f in fields} == numbers, name
    assert [(v.name, v.number) for v in pb.AckMessage.Status.DESCRIPTOR.values] == [("OK", 0), ("SKIPPED", 1),
                                                                                      ("FAIL", 2)]
    methods = {m.name for m in pb.DESCRIPTOR.services_by_name["URLFrontier"].methods}
    assert {"GetURLs", "PutURLs", "ListCrawls", "DeleteCrawl", "ListQueues", "GetStats", "DeleteQueue",
            "BlockQueueUntil", "SetDelay", "GetURLStatus", "ListURLs", "CountURLs", "ListNodes",
            "SetLogLevel"} <= methods


def test_client_metadata_round_trips(fr):
    put(fr, discovered(f"{A}/m", depth=1, url__path="seed"), discovered(f"{A}/m", depth=5))
    seed(fr, f"{A}/m")

    def kept(infos):
        return {k: list(v.values) for k, v in infos.metadata.items() if not k.startswith("freshcrawl.")}

    put(fr, known(f"{A}/m", time.time() - 10))  # no metadata: what was kept stays
    put(fr, discovered(f"{A}/m", depth=9))  # known already: ignored
    assert kept(get(fr)[0]) == {"depth": ["1"], "url.path": ["seed"]}  # the first discovery's
    put(fr, known(f"{A}/m", time.time() - 10, depth=2, fetch__loadingTime=7, fetch__statusCode=200, signature="z"))
    put(fr, known(f"{A}/m", time.time() - 10))  # due again (freshcrawl's plan would wait a period)
    (info,) = get(fr)
    assert kept(info) == {"depth": ["2"], "fetch.loadingTime": ["7"], "fetch.statusCode": ["200"], "signature": ["z"]}
    assert info.metadata["freshcrawl.kind"].values == ["page"]
    # a report that is only a fetch outcome (freshcrawl's own fetcher) leaves the client's metadata
    put(fr, known(f"{A}/m", time.time() - 10, fetch__statusCode=200, signature="q", freshcrawl__elapsed_s=0.1))
    status = fr.stub.GetURLStatus(pb.URLStatusRequest(url=f"{A}/m"), timeout=10)
    assert kept(status.known.info)["depth"] == ["2"]
    # a dump carries it into another crawl
    (item,) = fr.stub.ListURLs(pb.ListUrlParams(), timeout=10)
    info = pb.URLInfo()
    info.CopyFrom(item.known.info)
    info.crawlID = "copy"
    put(fr, pb.URLItem(discovered=pb.DiscoveredURLItem(info=info)))
    (copied,) = fr.stub.ListURLs(pb.ListUrlParams(crawlID="copy"), timeout=10)
    assert kept(copied.known.info) == kept(item.known.info) and kept(item.known.info)["depth"] == ["2"]
    assert fr.stub.DeleteCrawl(pb.DeleteCrawlMessage(value=""), timeout=10).value == 1
    assert fr.stub.CountURLs(pb.CountUrlParams(), timeout=10).value == 0
