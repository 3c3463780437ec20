"""WarcArchive on synthetic visits: record kinds, revisit references, rotation, recovery after a cut
write, and the refusal of a directory that cannot be written."""

from __future__ import annotations

import gzip
import os

import pytest

from freshcrawl.archive import (
    PROFILE_IDENTICAL,
    PROFILE_NOT_MODIFIED,
    WarcArchive,
    payload_digest,
    recover_open_file,
)
from freshcrawl.crawler.capture import HttpCapture, decode_content
from freshcrawl.crawler.outcome import FetchOutcome, Outcome
from freshcrawl.errors import ArchiveError

from ...warc_checks import check_structure, read_records, warcio_check

URL = "http://127.0.0.2:8000/a"


def visit(t: float, body: bytes, status: int = 200, url: str = URL) -> tuple[None, FetchOutcome]:
    head = f"HTTP/1.1 {status} X\r\nContent-Type: text/html\r\n".encode()
    head += b"" if status == 304 else f"Content-Length: {len(body)}\r\n".encode()
    cap = HttpCapture(
        url,
        b"GET /a HTTP/1.1\r\nHost: 127.0.0.2:8000\r\n\r\n",
        head + b"\r\n",
        b"" if status == 304 else body,
        status,
        "text/html",
    )
    return None, FetchOutcome(url, Outcome.CHANGED, "x", t, 0.01, status, len(body), capture=cap)


def test_responses_revisits_and_references(tmp_path):
    with WarcArchive(tmp_path) as archive:
        stored = archive.write_visits(
            [
                visit(1000.0, b"<p>one</p>"),
                visit(1001.0, b"<p>one</p>"),
                visit(1002.0, b"", status=304),
                visit(1003.0, b"<p>two</p>"),
                (None, FetchOutcome(URL, Outcome.NO_INFO, "timeout", 1004.0, 1.0)),
            ]
        )
    assert [s and (s.kind, s.profile) for s in stored] == [
        ("response", None),
        ("revisit", PROFILE_IDENTICAL),
        ("revisit", PROFILE_NOT_MODIFIED),
        ("response", None),
        None,
    ]
    assert stored[1].digest == stored[2].digest == payload_digest(b"<p>one</p>")
    warcio_check(tmp_path)
    records = read_records(tmp_path)
    check_structure(tmp_path, records)
    revisits = [r for r in records if r["type"] == "revisit"]
    first = next(r for r in records if r["type"] == "response")
    assert all(r["refers_to"] == first["id"] for r in revisits)
    assert first["date"] == "1970-01-01T00:16:40.000000Z"


def test_a_new_archive_refers_to_responses_of_earlier_runs(tmp_path):
    with WarcArchive(tmp_path) as archive:
        archive.write_visits([visit(1000.0, b"same")])
    with WarcArchive(tmp_path) as archive:
        (s,) = archive.write_visits([visit(2000.0, b"same")])
    assert s.kind == "revisit" and s.profile == PROFILE_IDENTICAL
    records = read_records(tmp_path)
    check_structure(tmp_path, records)  # the reference resolves into the first run's file
    assert len(list(tmp_path.glob("*.warc.gz"))) == 2


def test_rotation_at_the_size_limit(tmp_path):
    with WarcArchive(tmp_path, max_file_bytes=2000) as archive:
        archive.write_visits(
            [visit(1000.0 + k, os.urandom(600).hex().encode(), url=f"{URL}{k}") for k in range(6)]
        )
    files = sorted(tmp_path.glob("*.warc.gz"))
    assert len(files) >= 3 and not list(tmp_path.glob("*.open"))
    assert all(f.with_name(f.name[:-8] + ".cdxj").exists() for f in files)
    warcio_check(tmp_path)


def test_recovery_cuts_a_partial_record_and_closes_the_file(tmp_path):
    archive = WarcArchive(tmp_path).open()
    archive.write_visits([visit(1000.0, b"one"), visit(1001.0, b"two", url=URL + "b")])
    (path,) = tmp_path.glob("*.warc.gz.open")
    whole = path.stat().st_size
    with open(path, "ab") as fh:  # a record cut short, as kill -9 leaves it
        fh.write(gzip.compress(b"WARC/1.1\r\nWARC-Type: response\r\n" + os.urandom(5000))[:700])
    archive._fh.close()  # the process dies: no close(), no rename
    assert recover_open_file(path) == whole
    with open(path, "ab") as fh:
        fh.write(b"\x1f\x8b\x08garbage")
    with WarcArchive(tmp_path) as again:  # recovers, renames and indexes it
        again.write_visits([visit(1002.0, b"one")])
    assert not list(tmp_path.glob("*.open"))
    warcio_check(tmp_path)
    records = read_records(tmp_path)
    check_structure(tmp_path, records)
    assert [r["type"] for r in records if r["type"] != "warcinfo"] == [
        "response",
        "request",
        "response",
        "request",
        "revisit",
        "request",
    ]


def test_a_directory_that_cannot_be_written_is_refused(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(
        ArchiveError, match="cannot write the WARC archive in .*: Not a directory"
    ) as info:
        WarcArchive(blocker / "warc").open()
    assert isinstance(info.value, OSError) and info.value.n_done == 0


def test_decode_content():
    body = b"hello " * 100
    assert decode_content(gzip.compress(body), "gzip", 10_000) == (body, False)
    assert decode_content(gzip.compress(body), "gzip", 10) == (body[:10], True)
    import zlib

    assert decode_content(zlib.compress(body), "deflate", 10_000) == (body, False)
    raw = zlib.compressobj(wbits=-15)
    assert decode_content(raw.compress(body) + raw.flush(), "deflate", 10_000) == (body, False)
    with pytest.raises(ValueError, match="'br' is not decoded"):
        decode_content(body, "br", 10)
    with pytest.raises(ValueError, match="broken gzip"):
        decode_content(b"not gzip", "gzip", 10)
