"""Checks of a crawl's WARC files shared by the tests: read with an independent reader (FastWARC) and
validated with ``warcio check``."""

from __future__ import annotations

import datetime
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from fastwarc.warc import ArchiveIterator

PROFILE_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
PROFILE_IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"


def epoch(warc_date: str) -> float:
    """Seconds since the epoch of a WARC-Date (with or without fraction)."""
    text = warc_date.rstrip("Z")
    fmt = "%Y-%m-%dT%H:%M:%S.%f" if "." in text else "%Y-%m-%dT%H:%M:%S"
    when = datetime.datetime.strptime(text, fmt).replace(tzinfo=datetime.UTC)
    return when.timestamp()


def read_records(directory: Path) -> list[dict]:
    """Every record of every ``*.warc.gz`` in `directory`, in file order, as plain dicts."""
    rows = []
    for path in sorted(directory.glob("*.warc.gz")):
        for k, rec in enumerate(ArchiveIterator(str(path), parse_http=False, verify_digests=True)):
            h = rec.headers
            kind = str(rec.record_type)
            payload = rec.reader.read() if kind == "response" else b""
            body = payload.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in payload else b""
            rows.append(
                {
                    "file": path.name,
                    "index": k,
                    "pos": rec.stream_pos,
                    "type": kind,
                    "id": rec.record_id,
                    "url": h.get("WARC-Target-URI"),
                    "date": h.get("WARC-Date"),
                    "profile": h.get("WARC-Profile"),
                    "refers_to": h.get("WARC-Refers-To"),
                    "refers_uri": h.get("WARC-Refers-To-Target-URI"),
                    "refers_date": h.get("WARC-Refers-To-Date"),
                    "digest": h.get("WARC-Payload-Digest"),
                    "concurrent": h.get("WARC-Concurrent-To"),
                    "body": body,
                }
            )
    return rows


def warcio_check(directory: Path) -> None:
    """``warcio check`` passes on every WARC file of `directory` (digests verified)."""
    files = sorted(str(p) for p in directory.glob("*.warc.gz"))
    assert files
    res = subprocess.run(
        [sys.executable, "-m", "warcio.cli", "check", "-v", *files],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert "digest pass" in res.stdout and "fail" not in res.stdout


def check_structure(directory: Path, records: list[dict]) -> None:
    """A warcinfo first in each file, no file left open, a CDXJ per file, every reference resolving."""
    assert not list(directory.glob("*.open"))
    ids = {r["id"] for r in records}
    for path in directory.glob("*.warc.gz"):
        first = [r for r in records if r["file"] == path.name and r["index"] == 0]
        assert first and first[0]["type"] == "warcinfo", path
        assert path.with_name(path.name[: -len(".warc.gz")] + ".cdxj").exists()
    by_id = {r["id"]: r for r in records}
    for r in records:
        if r["type"] == "request":
            assert r["concurrent"] in ids
        if r["type"] == "revisit":
            assert r["profile"] in (PROFILE_NOT_MODIFIED, PROFILE_IDENTICAL)
            if r["profile"] == PROFILE_IDENTICAL or r["refers_to"] is not None:
                target = by_id[r["refers_to"]]  # resolves
                assert target["type"] == "response" and target["url"] == r["refers_uri"] == r["url"]
                assert target["date"] == r["refers_date"] and target["digest"] == r["digest"]


def match_observations(records: list[dict], observations: list[dict], url_of: dict) -> dict:
    """Each committed first/changed/unchanged observation's main record (same URL, same time);
    fails if one has none. Returns {observation id: record}."""
    main = defaultdict(list)
    for r in records:
        if r["type"] in ("response", "revisit"):
            main[r["url"]].append(r)
    out = {}
    for o in observations:
        if o["outcome"] not in ("first", "changed", "unchanged"):
            continue
        url = url_of[o["page_id"]]
        hits = [r for r in main[url] if abs(epoch(r["date"]) - o["time"]) < 2e-6]
        assert len(hits) == 1, (url, o, len(hits))
        out[o["id"]] = hits[0]
    return out
