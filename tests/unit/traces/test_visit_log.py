"""Visit-log reading: formats, observations, and line-numbered errors."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from freshcrawl.errors import TraceFormatError
from freshcrawl.traces.visit_log import read_visit_log, write_visit_log


def write(tmp_path, text, name="log.csv"):
    f = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(f, "wt") as fh:
            fh.write(text)
    else:
        f.write_text(text)
    return f


def test_unix_and_iso_times_give_the_same_intervals(tmp_path):
    unix = write(tmp_path, "page,time,changed\na,1700000000,0\nb,1700000000,1\na,1700003600,1\na,1700090000,0\n")
    iso = write(
        tmp_path,
        "page,time,changed\na,2023-11-14T22:13:20Z,0\nb,2023-11-14T22:13:20+00:00,1\n"
        "a,2023-11-14T23:13:20Z,1\na,2023-11-16T00:13:20+01:00,0\n",
        "iso.csv.gz",
    )
    for f in (unix, iso):
        log = read_visit_log(f)
        assert log.page_names.tolist() == ["a", "b"]
        pages, changed, tau, rank = log.observations()
        assert pages.tolist() == [0, 0] and changed.tolist() == [True, False] and rank.tolist() == [0, 1]
        # times are days since the epoch (~2e4): differences carry ~2e4 * 2.2e-16 days of rounding
        np.testing.assert_allclose(tau, [3600 / 86400, 86400 / 86400], rtol=0, atol=2e4 * 2.3e-16 * 4)


def test_interleaved_pages_and_first_visit_flag_ignored(tmp_path):
    f = write(tmp_path, "page,time,changed\nx,10,1\ny,5,0\nx,20,0\ny,15,1\nx,40,1\n")
    pages, changed, tau, rank = read_visit_log(f).observations()
    assert pages.tolist() == [0, 0, 1] and changed.tolist() == [False, True, True]
    np.testing.assert_allclose(tau * 86400, [10, 20, 10])
    assert rank.tolist() == [0, 1, 0]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("page,time,changed\na,0,0\na,100,1,9\n", r"line 3: malformed row"),
        ("page,time,changed\na,0,0\na,yesterday,1\n", r"line 3: time must be unix seconds or ISO 8601; got 'yesterday'"),
        ("page,time,changed\na,0,0\na,100,2\n", r"line 3: changed must be 0 or 1; got '2'"),
        ("page,time,changed\na,0,0\na,100,\n", r"line 3: changed must be 0 or 1; got ''"),
        ("page,time,changed\na,100,0\nb,5,0\na,50,1\n", r"line 4: time must increase within page 'a'"),
        ("page,time,changed\na,100,0\na,100,1\n", r"line 3: time must increase within page 'a'"),
        ("page,time,changed\na,0,0\n,100,1\n", r"line 3: page is empty"),
        ("page,time,changed\na,0,0\na,inf,1\n", r"line 3: time must be finite"),
        ("page,when,changed\na,0,0\n", r"line 1: header must be 'page,time,changed'"),
        ("", r"empty file"),
    ],
)
def test_malformed_rows_report_their_line(tmp_path, text, match):
    with pytest.raises(TraceFormatError, match=match):
        read_visit_log(write(tmp_path, text))


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_visit_log(tmp_path / "nope.csv")


def test_write_then_read_round_trip(tmp_path):
    f = tmp_path / "out.csv.gz"
    write_visit_log(f, ["p", "q", "p"], [0.0, 10.0, 86400.0], [False, True, True])
    log = read_visit_log(f)
    assert log.page_names.tolist() == ["p", "q"]
    assert log.changed.tolist() == [False, True, True]
    np.testing.assert_allclose(log.time, [0.0, 10 / 86400, 1.0])
    with pytest.raises(ValueError, match="same length"):
        write_visit_log(tmp_path / "bad.csv", ["p"], [0.0, 1.0], [0])
    assert not (tmp_path / "bad.csv").exists()
