"""Bad input to the frontier service: the same refusals over REST and over gRPC.

One service, served by a real uvicorn server and a real gRPC server on loopback. Each row of
``CASES`` is one bad value (the table of docs/limits-and-egress.md); it is sent to both APIs, and
the answer is checked: REST 422 naming the field (413 for a body over the cap), gRPC SKIPPED for an
item of a PutURLs stream, INVALID_ARGUMENT for a call. Nothing of a refused report is recorded.
"""

from __future__ import annotations

import json
import socket
import time
from types import SimpleNamespace

import grpc
import httpx
import pytest

from freshcrawl.service.core import Report
from freshcrawl.service.grpc_server import serve_grpc
from freshcrawl.service.proto import urlfrontier_pb2 as pb
from freshcrawl.service.proto import urlfrontier_pb2_grpc as pb_grpc
from freshcrawl.service.rest import create_app
from freshcrawl.store.schema import observations
from tests.integration.rest_server import make_service, running

PAGE = "http://h0.test/p0"
NOW = time.time()


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    """A crawl with one page (robots.txt answered), served over REST and gRPC on loopback."""
    db = str(tmp_path_factory.mktemp("bad") / "crawl.db")
    service = make_service(db)
    service.add_urls(None, [(PAGE, 1.0)])
    service.report_robots(None, PAGE, 404, None)
    server = serve_grpc(service, "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        with (
            running(create_app(service, token=None)) as base,
            httpx.Client(base_url=base, timeout=30) as http,
        ):
            yield SimpleNamespace(
                service=service,
                http=http,
                base=base,
                channel=channel,
                stub=pb_grpc.URLFrontierStub(channel),
            )
    finally:
        channel.close()
        server.stop(None).wait()
        service.close()


def n_observations(service) -> int:
    store = service.crawl(None).frontier.store
    with store.engine.connect() as conn:
        return len(conn.execute(observations.select()).all())


def md(values: dict[str, object]) -> dict[str, pb.StringList]:
    return {k: pb.StringList(values=[str(v)]) for k, v in values.items()}


def put(api, item: pb.URLItem) -> int:
    acks = list(api.stub.PutURLs(iter([item]), timeout=10))
    assert len(acks) == 1
    return acks[0].status


def known(url: str = PAGE, date: int = 0, **meta) -> pb.URLItem:
    info = pb.URLInfo(url=url, metadata=md(meta))
    return pb.URLItem(known=pb.KnownURLItem(info=info, refetchable_from_date=date), ID="x")


def discovered(url: str) -> pb.URLItem:
    return pb.URLItem(discovered=pb.DiscoveredURLItem(info=pb.URLInfo(url=url)), ID="x")


# name, REST report fields (or a URL to add), gRPC item metadata (or a URL to discover), field
REPORTS = [
    ("started_at epoch 1", {"started_at": 1}, {"freshcrawl.started_at": 1}, "started_at"),
    ("started_at 9.9e10", {"started_at": 9.9e10}, {"freshcrawl.started_at": 9.9e10}, "started_at"),
    (
        "started_at 8 days ago",
        {"started_at": NOW - 8 * 86400},
        {"freshcrawl.started_at": NOW - 8 * 86400},
        "started_at",
    ),
    (
        "started_at 1 h ahead",
        {"started_at": NOW + 3600},
        {"freshcrawl.started_at": NOW + 3600},
        "started_at",
    ),
    ("started_at -1e300", {"started_at": -1e300}, {"freshcrawl.started_at": -1e300}, "started_at"),
    ("started_at 1e300", {"started_at": 1e300}, {"freshcrawl.started_at": 1e300}, "started_at"),
    ("status 999", {"status": 999}, {"fetch.statusCode": 999}, "status"),
    ("status 99", {"status": 99}, {"fetch.statusCode": 99}, "status"),
    ("n_bytes 1e300", {"n_bytes": 1e300}, {"freshcrawl.n_bytes": 1e300}, "n_bytes"),
    ("n_bytes 2^53 + 2", {"n_bytes": 2**53 + 2}, {"freshcrawl.n_bytes": 2**53 + 2}, "n_bytes"),
    ("n_bytes -1", {"n_bytes": -1}, {"freshcrawl.n_bytes": -1}, "n_bytes"),
    (
        "elapsed_s 2 days",
        {"elapsed_s": 2 * 86400},
        {"freshcrawl.elapsed_s": 2 * 86400},
        "elapsed_s",
    ),
]

URLS = [
    ("space in host", "http://exa mple.com/", "url"),
    ("numeric host 0x7f.1", "http://0x7f.1/", "url"),
    ("lone surrogate", "http://example.com/\ud800", "url"),
    ("credentials", "http://user:pw@example.com/", "url"),
    ("metadata address", "http://169.254.169.254/latest/meta-data/", "url"),
    ("private address", "http://10.0.0.1/", "url"),
    ("private IPv6", "http://[fd00::1]/", "url"),
    ("metadata IPv6", "http://[fd00:ec2::254]/", "url"),
    ("metadata name", "http://metadata.google.internal/computeMetadata/v1/", "url"),
    ("unspecified", "http://0.0.0.0:8080/", "url"),
    ("multicast", "http://224.0.0.1/", "url"),
    ("mapped private", "http://[::ffff:192.168.1.1]/", "url"),
]


@pytest.mark.parametrize(("name", "fields", "meta", "field"), REPORTS, ids=[r[0] for r in REPORTS])
def test_bad_report_refused_by_rest_and_grpc(api, name, fields, meta, field):
    before = n_observations(api.service)
    report = {"url": PAGE, "status": 200, "signature": "s", **fields}
    r = api.http.post("/observations", json={"reports": [report]})
    assert r.status_code == 422, r.text
    locs = [e["loc"] for e in r.json()["detail"]]
    assert ["body", "reports", 0, field] in locs, locs
    grpc_meta = {"fetch.statusCode": 200, "signature": "s", **meta}
    assert put(api, known(**grpc_meta)) == pb.AckMessage.SKIPPED
    assert n_observations(api.service) == before


@pytest.mark.parametrize(("name", "url", "field"), URLS, ids=[u[0] for u in URLS])
def test_bad_url_refused_by_rest_and_grpc(api, name, url, field):
    body = json.dumps({"urls": [{"url": "http://ok.test/"}, {"url": url}]})  # \ud800 as an escape
    r = api.http.post("/urls", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert [e["loc"] for e in detail] == [["body", "urls", 1, field]], detail
    if (
        "\ud800" not in url
    ):  # a lone surrogate cannot be put in a protobuf string (see the UTF-8 test)
        assert put(api, discovered(url)) == pb.AckMessage.SKIPPED
    assert api.service.url_status(None, "http://ok.test/") is None  # the batch was refused whole


def test_future_refetch_floor_refused(api):
    r = api.http.post(
        "/observations",
        json={"reports": [{"url": PAGE, "status": 500, "refetch_not_before": 9.9e10}]},
    )
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body", "reports", 0, "refetch_not_before"]
    assert put(api, known(date=int(9.9e10), **{"fetch.statusCode": 500})) == pb.AckMessage.SKIPPED
    assert put(api, known(date=int(9.9e10))) == pb.AckMessage.SKIPPED  # a client's date alone


def test_lease_longer_than_a_day_refused(api):
    r = api.http.post("/leases", json={"worker_id": "w", "lease_s": 2**32 - 1})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body", "lease_s"]
    with pytest.raises(grpc.RpcError) as info:
        list(api.stub.GetURLs(pb.GetParams(delay_requestable=2**32 - 1), timeout=10))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "delay_requestable" in info.value.details()
    with pytest.raises(grpc.RpcError) as info:
        api.stub.SetDelay(
            pb.QueueDelayParams(key="h0.test", delay_requestable=2**32 - 1), timeout=10
        )
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_invalid_utf8_is_invalid_argument_over_grpc(api):
    """A string field holding invalid UTF-8: INVALID_ARGUMENT (it was INTERNAL), unary and stream."""
    good = pb.URLStatusRequest(url="http://h0.test/XX").SerializeToString()
    bad = good.replace(b"XX", b"\xed\xa0")  # an encoded lone surrogate: not UTF-8
    call = api.channel.unary_unary(
        "/urlfrontier.URLFrontier/GetURLStatus",
        request_serializer=lambda b: b,
        response_deserializer=pb.URLItem.FromString,
    )
    with pytest.raises(grpc.RpcError) as info:
        call(bad, timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    item = discovered("http://h0.test/XX").SerializeToString().replace(b"XX", b"\xff\xfe")
    stream = api.channel.stream_stream(
        "/urlfrontier.URLFrontier/PutURLs",
        request_serializer=lambda b: b,
        response_deserializer=pb.AckMessage.FromString,
    )
    with pytest.raises(grpc.RpcError) as info:
        list(stream(iter([item]), timeout=10))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_oversized_grpc_message_refused(api):
    big = known(**{"fetch.statusCode": 200, "client.blob": "x" * (17 * 1024 * 1024)})
    with pytest.raises(grpc.RpcError) as info:
        list(api.stub.PutURLs(iter([big]), timeout=30))
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def _raw_request(base: str, head: bytes, body: bytes = b"") -> tuple[int, bytes, float]:
    """Send a raw HTTP request; return the status, the response and the seconds to the answer."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        t0 = time.perf_counter()
        sock.sendall(head + body)
        data = b""
        while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < 10:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        elapsed = time.perf_counter() - t0
    return int(data.split(b" ", 2)[1]), data, elapsed


def test_body_over_the_cap_is_413_before_it_is_read(api):
    """A declared 64 MiB body is refused from its headers: the answer comes with no byte sent."""
    head = (
        b"POST /urls HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 67108864\r\n\r\n"
    )
    status, data, elapsed = _raw_request(api.base, head)
    assert status == 413, data
    assert b'"too_large"' in data and b"16777216" in data
    assert elapsed < 5.0


def test_chunked_body_over_the_cap_is_413(api):
    chunk = b"x" * (1024 * 1024)
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(17)) + b"0\r\n\r\n"
    head = (
        b"POST /urls HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    status, data, _ = _raw_request(api.base, head, body)
    assert status == 413, data


def test_body_under_the_cap_is_served(api):
    r = api.http.post("/urls", json={"urls": [{"url": "http://h1.test/a"}]})
    assert r.status_code == 200, r.text


def test_read_endpoints_never_show_credentials(tmp_path):
    """A URL stored with credentials before they were refused is shown without them."""
    service = make_service(str(tmp_path / "crawl.db"))
    try:
        store = service.crawl(None).frontier.store
        store.add_pages(
            [("http://user:secret@h0.test/p", "http://h0.test", 1.0)], now=time.time() - 10
        )
        with service.lock:
            f = service.crawl(None).frontier
            f.replan(time.time())
            f.next_due[0] = time.time() - 5.0  # overdue now
        with (
            running(create_app(service, token=None)) as base,
            httpx.Client(base_url=base, timeout=30) as http,
        ):
            over = http.get("/overdue").json()
            assert over["pages"], over
            assert all("secret" not in p["url"] and "user" not in p["url"] for p in over["pages"])
            assert "secret" not in http.get("/status").text
    finally:
        service.close()


def test_sizes_up_to_2_pow_53_are_stored(db_url):
    """n_bytes at the bound is accepted and kept, on SQLite and on PostgreSQL (a 64-bit column)."""
    service = make_service(db_url)
    try:
        service.add_urls(None, [(PAGE, 1.0)])
        got = service.report(None, [Report(url=PAGE, status=200, signature="s", n_bytes=2**53)])
        assert got == ["ok"]
        store = service.crawl(None).frontier.store
        assert [r["n_bytes"] for r in store.observation_log()] == [2**53]
    finally:
        service.close()
