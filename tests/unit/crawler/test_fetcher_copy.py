"""The fetcher with ``keep_copy=True``: the body as received (content coding kept) rides on the
outcome, the signature is that of the decoded body, and the size cap and broken codings end as
without copies."""

from __future__ import annotations

from freshcrawl.crawler.outcome import ErrorKind, Outcome

from .conftest import Page
from .test_fetcher import assert_no_info, fetch


def test_the_copy_is_the_response_as_received(server):
    body = b"<html><body><p>" + b"kept as sent " * 50 + b"</p></body></html>"
    server.pages["c"] = Page(body, etag='"v1"')
    plain = fetch(server.url("/page/c"))
    kept = fetch(server.url("/page/c"), fetcher={"keep_copy": True})
    assert plain.capture is None and kept.capture is not None
    assert (kept.outcome, kept.signature, kept.n_bytes) == (
        Outcome.FIRST,
        plain.signature,
        len(body),
    )
    cap = kept.capture
    assert cap.status == 200 and cap.payload == body
    assert cap.response_head.startswith(b"HTTP/1.1 200 ") and cap.response_head.endswith(
        b"\r\n\r\n"
    )
    assert b'ETag: "v1"\r\n' in cap.response_head
    assert cap.request_head.startswith(b"GET /page/c HTTP/1.1\r\n")
    assert b"Accept-Encoding: gzip, deflate\r\n" in cap.request_head
    again = fetch(
        server.url("/page/c"), fetcher={"keep_copy": True}, etag='"v1"', signature=kept.signature
    )
    assert again.outcome is Outcome.UNCHANGED and again.capture.status == 304
    assert again.capture.payload == b"" and b'If-None-Match: "v1"' in again.capture.request_head


def test_the_cap_and_broken_codings_hold_on_the_coded_body(server):
    # (a gzip body kept as sent is checked in tests/integration/test_crawl_warc.py)
    cap = 1024 * 1024
    bomb = fetch(
        server.url("/bomb"), fetcher={"max_bytes": cap, "total_timeout_s": 60.0, "keep_copy": True}
    )
    assert_no_info(bomb, ErrorKind.CONTENT, "too-large")
    assert bomb.capture is None and bomb.n_bytes <= cap
    assert_no_info(
        fetch(server.url("/bad-gzip"), fetcher={"keep_copy": True}),
        ErrorKind.CONTENT,
        "undecodable",
    )
