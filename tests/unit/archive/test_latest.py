"""LatestCopies: a new body is stored once, an unchanged one writes nothing, the previous copy is
kept for the last diff and older objects are removed."""

from __future__ import annotations

import pytest

from freshcrawl.archive import LatestCopies
from freshcrawl.archive.history import latest_diff

from .test_warc import URL, visit


def files(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_latest_copy_and_the_one_before(tmp_path):
    one = b"<html><body><p>First paragraph.</p><p>Second.</p></body></html>"
    two = one.replace(b"Second.", b"Second, changed.")
    three = one.replace(b"First", b"Third")
    copies = LatestCopies(tmp_path).open()
    assert copies.write_visits([visit(1000.0, one)]) == ["written"]
    with pytest.raises(ValueError, match="1 kept copy"):
        latest_diff(tmp_path, URL)
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}
    assert (
        copies.write_visits([visit(1001.0, one), visit(1002.0, b"", status=304)])
        == ["unchanged"] * 2
    )
    assert {
        p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()
    } == before  # nothing written
    assert copies.write_visits([visit(1003.0, two)]) == ["written"]
    assert copies.read(URL) == two and copies.read(URL, "previous") == one
    d = latest_diff(tmp_path, URL)
    assert d["old"]["time"] == 1000.0 and d["new"]["time"] == 1003.0
    assert (
        "-Second." in d["diff"]
        and "+Second, changed." in d["diff"]
        and d["added"] == d["removed"] == 1
    )
    copies.write_visits([visit(1004.0, three)])
    objects = [f for f in files(tmp_path) if f.startswith("objects/")]
    assert len(objects) == 2  # the first body is linked by no page any more: removed
    assert copies.meta(URL)["previous"]["time"] == 1003.0
