"""Parquet input and output: PAGES, HOSTS and visit logs as Parquet files or directories of partitions,
read the same as the CSV forms, with errors naming the partition file and the row."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from freshcrawl import _io
from freshcrawl._io import parquet_files, write_table_atomic
from freshcrawl.errors import TraceFormatError
from freshcrawl.traces.tables import read_host_caps, read_pages, read_pages_file
from freshcrawl.traces.visit_log import read_visit_log, write_visit_log

from ...parquet_partitions import write_files, write_partitions

PAGES_CSV = (
    "page,delta,weight,host,complete\na,1,1,x.com,1\nb,4,1.5,x.com,0\nc,0.5,2,,true\nd,0,1,y.org,no\ne,2.25,0,,0\n"
)
#: The same table with Parquet types: integer delta in part, null host, integer 0/1 complete.
PAGES_ARROW = pa.table(
    {
        "page": ["a", "b", "c", "d", "e"],
        "delta": [1.0, 4.0, 0.5, 0.0, 2.25],
        "weight": [1.0, 1.5, 2.0, 1.0, 0.0],
        "host": ["x.com", "x.com", None, "y.org", ""],
        "complete": pa.array([1, 0, 1, 0, 0], pa.int8()),
    }
)


@pytest.fixture()
def pages_csv(tmp_path):
    path = tmp_path / "pages.csv"
    path.write_text(PAGES_CSV)
    return path


# ---------------------------------------------------------------- parquet_files, write_table_atomic


def test_parquet_files_lists_sorted_partitions_and_skips_markers(tmp_path):
    d = tmp_path / "pages"
    d.mkdir()
    for name in [
        "part-2.parquet",
        "part-10.parquet",
        "part-1.parquet",
        "_SUCCESS",
        "_metadata",
        "_common_metadata",
        ".part-1.parquet.crc",
        "._x.parquet",
        "_tmp.parquet",
        "notes.txt",
    ]:
        (d / name).write_bytes(b"")
    (d / "sub.parquet").mkdir()
    assert [p.name for p in parquet_files(d)] == ["part-1.parquet", "part-10.parquet", "part-2.parquet"]
    assert parquet_files(d / "part-2.parquet") == [d / "part-2.parquet"]
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "_SUCCESS").write_bytes(b"")
    with pytest.raises(ValueError, match=r"empty: directory holds no Parquet partition files"):
        parquet_files(empty)
    with pytest.raises(FileNotFoundError, match="nope"):
        parquet_files(tmp_path / "nope")


def test_write_table_atomic_parquet_round_trip_and_csv_otherwise(tmp_path):
    df = pd.DataFrame({"page": ["a", "b", "c"], "rate": [1.0, 0.1 + 0.2, 1e-300], "n": [1, 2, 3]})
    write_table_atomic(df, tmp_path / "t.parquet")
    back = pq.read_table(tmp_path / "t.parquet")
    assert back.column_names == ["page", "rate", "n"]
    assert back.schema.field("page").type == pa.string()  # not large_string
    assert back.column("rate").to_pylist() == [1.0, 0.1 + 0.2, 1e-300]  # bit for bit
    assert back.column("page").to_pylist() == ["a", "b", "c"] and back.column("n").to_pylist() == [1, 2, 3]
    write_table_atomic(df, tmp_path / "t.csv.gz")
    back_csv = pd.read_csv(tmp_path / "t.csv.gz", converters={"rate": float})  # float(): exact round trip
    assert back_csv["rate"].tolist() == df["rate"].tolist() and back_csv["page"].tolist() == ["a", "b", "c"]
    write_table_atomic(df, tmp_path / "t.csv")
    assert (tmp_path / "t.csv").read_text().splitlines()[0] == "page,rate,n"


def test_write_table_atomic_keeps_the_old_file_when_writing_fails(tmp_path, monkeypatch):
    out = tmp_path / "rates.parquet"
    out.write_bytes(b"old contents")

    def fail(table, where, **kwargs):
        with open(where, "wb") as fh:
            fh.write(b"PAR1 half a file")
        raise OSError("disk full")

    monkeypatch.setattr(_io.pq, "write_table", fail)
    with pytest.raises(OSError, match="disk full"):
        write_table_atomic(pd.DataFrame({"page": ["a"], "rate": [1.0]}), out)
    assert out.read_bytes() == b"old contents"
    assert [p.name for p in tmp_path.iterdir()] == ["rates.parquet"]  # no temporary file left


# ---------------------------------------------------------------- PAGES


def test_parquet_file_and_partitions_read_as_the_csv(pages_csv, tmp_path):
    expected = read_pages(pages_csv)
    assert expected.dtypes.to_dict() == {
        "page": expected["page"].dtype,
        "delta": np.float64,
        "weight": np.float64,
        "host": expected["host"].dtype,
        "complete": bool,
    }
    pq.write_table(PAGES_ARROW, tmp_path / "pages.parquet")
    from_file = read_pages(tmp_path / "pages.parquet")
    from_dir = read_pages(write_partitions(tmp_path / "parts", PAGES_ARROW, [2, 0, 3]))
    for got in (from_file, from_dir):
        pd.testing.assert_frame_equal(got, expected)  # values and dtypes, index 0..n-1
        assert got["host"].tolist() == ["x.com", "x.com", "", "y.org", ""]
    assert read_pages_file(tmp_path / "parts" / "part-002.parquet")["page"].tolist() == ["c", "d", "e"]


def test_parquet_types_integer_pages_dictionary_hosts_bool_and_null_complete(tmp_path):
    table = pa.table(
        {
            "page": pa.array([10, 20, 30], pa.int64()),
            "delta": pa.array([1, 2, 3], pa.int32()),
            "host": pa.array(["h", None, "h"]).dictionary_encode(),
            "complete": pa.array([True, None, False]),
            "extra": [1, 2, 3],
        }
    )
    pq.write_table(table, tmp_path / "p.parquet")
    df = read_pages(tmp_path / "p.parquet")
    assert list(df.columns) == ["page", "delta", "host", "complete"]  # other columns are not read
    assert df["page"].tolist() == ["10", "20", "30"]
    assert df["delta"].dtype == np.float64 and df["delta"].tolist() == [1.0, 2.0, 3.0]
    assert df["host"].tolist() == ["h", "", "h"]
    assert df["complete"].dtype == bool and df["complete"].tolist() == [True, False, False]


def test_partitions_written_by_pandas_with_an_empty_one_and_all_null_hosts(tmp_path, pages_csv):
    d = tmp_path / "pages"
    d.mkdir()
    df = read_pages(pages_csv).astype({"complete": int})
    df["host"] = df["host"].replace("", None).astype(object)
    df.iloc[:0].astype({"page": object, "host": object}).to_parquet(d / "part-0.parquet")  # null-typed columns
    df.iloc[:2].to_parquet(d / "part-1.parquet")
    df.iloc[2:3].to_parquet(d / "part-2.parquet")  # host None only: a column of type null
    df.iloc[3:].to_parquet(d / "part-3.parquet")
    assert pa.types.is_null(pq.read_schema(d / "part-2.parquet").field("host").type)
    pd.testing.assert_frame_equal(read_pages(d), read_pages(pages_csv))
    log = tmp_path / "log"
    log.mkdir()
    visits = pd.DataFrame({"page": ["a", "a"], "time": [0.0, 60.0], "changed": [False, True]})
    visits.iloc[:0].astype({"page": object}).to_parquet(log / "part-0.parquet")
    visits.to_parquet(log / "part-1.parquet")
    assert pa.types.is_null(pq.read_schema(log / "part-0.parquet").field("page").type)
    assert read_visit_log(log).time.tolist() == [0.0, 60.0 / 86400]


def test_parquet_without_a_parquet_name_is_recognised_by_its_magic_bytes(tmp_path, pages_csv):
    pq.write_table(PAGES_ARROW, tmp_path / "pages.pq")
    pd.testing.assert_frame_equal(read_pages(tmp_path / "pages.pq"), read_pages(pages_csv))


@pytest.mark.parametrize(
    ("second", "match"),
    [
        (
            {"page": ["c", "d", "x"], "delta": [0.5, 0.0, -1.0]},
            (
                r"part-001\.parquet: column 'delta' must be a finite number >= 0 changes/day; "
                r"row 3 \(page 'x'\) has -1\.0"
            ),
        ),
        (
            {"page": ["c", "x"], "delta": pa.array([0.5, None])},
            r"part-001\.parquet: column 'delta' must be .*; row 2 \(page 'x'\) has null",
        ),
        (
            {"page": ["x"], "delta": [np.inf]},
            r"part-001\.parquet: column 'delta' must be .*; row 1 \(page 'x'\) has inf",
        ),
        ({"page": ["c", "x"]}, r"part-001\.parquet: missing column 'delta'; expected page,delta"),
        (
            {"page": ["c", "x"], "delta": [1.0, 2.0], "weight": [1.0, -3.0]},
            r"part-001\.parquet: column 'weight' must be a finite number >= 0; row 2 \(page 'x'\) has -3\.0",
        ),
        (
            {"page": ["c", "x"], "delta": [1.0, 2.0], "complete": [1, 2]},
            r"part-001\.parquet: column 'complete' must be 0/1 or true/false; row 2 has 2",
        ),
        ({"page": ["c", None], "delta": [1.0, 2.0]}, r"part-001\.parquet: column 'page' must not be null; row 2"),
        (
            {"page": ["c"], "delta": [True]},
            r"part-001\.parquet: column 'delta' must be numeric; its Parquet type is bool",
        ),
        (b"this is not parquet at all", r"part-001\.parquet: not a valid Parquet file"),
    ],
)
def test_a_bad_partition_is_named_with_its_row(tmp_path, second, match):
    d = write_files(tmp_path / "pages", {"part-000.parquet": {"page": ["a", "b"], "delta": [1.0, 2.0]},
                                         "part-001.parquet": second,
                                         "part-002.parquet": {"page": ["z"], "delta": [3.0]}})
    with pytest.raises(ValueError, match=match):
        read_pages(d)


def test_partitions_must_share_columns_and_hold_a_page(tmp_path):
    d = tmp_path / "mixed"
    d.mkdir()
    pq.write_table(pa.table({"page": ["a"], "delta": [1.0], "weight": [2.0]}), d / "part-0.parquet")
    pq.write_table(pa.table({"page": ["b"], "delta": [1.0]}), d / "part-1.parquet")
    with pytest.raises(
        ValueError, match=r"part-1\.parquet: columns page,delta differ from those of part-0\.parquet"
    ):
        read_pages(d)
    empty = write_partitions(tmp_path / "empty", PAGES_ARROW.slice(0, 0), [0, 0])
    with pytest.raises(ValueError, match=r"empty: no pages \(its 2 partition files hold no rows\)"):
        read_pages(empty)
    with pytest.raises(ValueError, match=r"part-000\.parquet: no pages"):
        read_pages_file(empty / "part-000.parquet")
    assert read_pages_file(empty / "part-000.parquet", allow_empty=True).shape == (0, 5)


def test_csv_errors_are_unchanged(tmp_path):
    path = tmp_path / "pages.csv"
    path.write_text("page,delta,complete\na,1,1\nb,-2,0\n")
    with pytest.raises(ValueError, match=r"pages\.csv: column 'delta' must be .*; row 3 \(page 'b'\) has '-2'"):
        read_pages(path)
    path.write_text("page,delta,complete\na,1,1\nb,2,maybe\n")
    with pytest.raises(ValueError, match=r"column 'complete' must be 0/1 or true/false; row 3 has 'maybe'"):
        read_pages_file(path)
    path.write_text("page,delta\n")
    with pytest.raises(ValueError, match=r"pages\.csv: no pages"):
        read_pages(path)


def test_host_caps_from_parquet(tmp_path):
    csv = tmp_path / "hosts.csv"
    csv.write_text("host,max_rate\nx.com,1/hour\ny.org,inf\nz.net,\nw.io,12\n")
    pq.write_table(
        pa.table({"host": ["x.com", "y.org", "z.net", "w.io"], "max_rate": ["1/hour", "inf", None, "12"]}),
        tmp_path / "text.parquet",
    )
    pq.write_table(
        pa.table({"host": ["x.com", "y.org", "z.net", "w.io"], "max_rate": [24.0, np.inf, None, 12.0]}),
        tmp_path / "numbers.parquet",
    )
    expected = read_host_caps(csv)
    assert expected == {"x.com": 24.0, "y.org": np.inf, "z.net": np.inf, "w.io": 12.0}
    assert read_host_caps(tmp_path / "text.parquet") == expected
    assert read_host_caps(tmp_path / "numbers.parquet") == expected
    pq.write_table(pa.table({"host": ["a", "b"], "max_rate": [1.0, -5.0]}), tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match=r"bad\.parquet: row 2 \(host 'b'\): max_rate must be finite and >= 0"):
        read_host_caps(tmp_path / "bad.parquet")
    pq.write_table(pa.table({"host": ["a", "a"], "max_rate": [1.0, 2.0]}), tmp_path / "twice.parquet")
    with pytest.raises(ValueError, match=r"twice\.parquet: host 'a' is listed twice \(row 2\)"):
        read_host_caps(tmp_path / "twice.parquet")
    pq.write_table(pa.table({"host": ["a"]}), tmp_path / "norate.parquet")
    with pytest.raises(ValueError, match=r"norate\.parquet: missing column 'max_rate'"):
        read_host_caps(tmp_path / "norate.parquet")


# ---------------------------------------------------------------- visit logs

VISITS = pa.table(
    {
        "page": ["a", "b", "a", "c", "b", "a", "c", "a"],
        "time": pa.array([0, 10, 3600, 50, 7200, 86400, 90000, 172800], pa.int64()),
        "changed": [False, False, True, True, False, True, False, False],
    }
)


def assert_same_log(got, expected):
    np.testing.assert_array_equal(got.page_names, expected.page_names)
    np.testing.assert_array_equal(got.pages, expected.pages)
    np.testing.assert_array_equal(got.time, expected.time)
    np.testing.assert_array_equal(got.changed, expected.changed)


def test_visit_log_parquet_file_and_partitions_read_as_the_csv(tmp_path):
    csv = tmp_path / "log.csv"
    csv.write_text(VISITS.to_pandas().astype({"changed": int}).to_csv(index=False))
    expected = read_visit_log(csv)
    assert expected.page_names.tolist() == ["a", "b", "c"] and expected.time.size == 8
    pq.write_table(VISITS, tmp_path / "log.parquet")
    assert_same_log(read_visit_log(tmp_path / "log.parquet"), expected)
    # page 'a' spans the three partitions; one partition has the schema and no row
    parts = write_partitions(tmp_path / "parts", VISITS, [3, 0, 1, 4])
    (parts / "_SUCCESS").write_bytes(b"")
    assert_same_log(read_visit_log(parts), expected)
    # integer pages and 0/1 flags
    ints = pa.table(
        {"page": pa.array([1, 2, 1]), "time": [0.0, 5.0, 86400.0], "changed": pa.array([0, 1, 1], pa.int8())}
    )
    pq.write_table(ints, tmp_path / "ints.parquet")
    log = read_visit_log(tmp_path / "ints.parquet")
    assert log.page_names.tolist() == ["1", "2"] and log.changed.tolist() == [False, True, True]


def test_visit_log_timestamp_times_are_days_since_the_epoch(tmp_path):
    secs = np.array([1_700_000_000, 1_700_003_600, 1_700_090_000], dtype=np.int64)
    csv = tmp_path / "log.csv"
    csv.write_text("page,time,changed\n" + "".join(f"a,{s},{k % 2}\n" for k, s in enumerate(secs)))
    expected = read_visit_log(csv)
    changed = [False, True, False]
    # seconds, naive (read as UTC): the same division as for unix seconds, so the same days exactly
    pq.write_table(
        pa.table({"page": ["a"] * 3, "time": pa.array(secs, pa.timestamp("s")), "changed": changed}),
        tmp_path / "s.parquet",
    )
    assert_same_log(read_visit_log(tmp_path / "s.parquet"), expected)
    # nanoseconds and milliseconds with a time zone: the same instants
    for unit, scale, tz in [("ns", 10**9, None), ("ms", 10**3, "Europe/Paris"), ("us", 10**6, "UTC")]:
        f = tmp_path / f"{unit}.parquet"
        pq.write_table(
            pa.table(
                {"page": ["a"] * 3, "time": pa.array(secs * scale, pa.timestamp(unit, tz=tz)), "changed": changed}
            ),
            f,
        )
        log = read_visit_log(f)
        np.testing.assert_allclose(log.time, expected.time, rtol=1e-15, atol=0)
        np.testing.assert_allclose(log.observations()[2], [3600 / 86400, 86400 / 86400], rtol=1e-9)
    # pandas datetimes with a zone, as to_parquet writes them
    pd.DataFrame(
        {
            "page": ["a"] * 3,
            "time": pd.to_datetime(secs, unit="s", utc=True).tz_convert("America/New_York"),
            "changed": changed,
        }
    ).to_parquet(tmp_path / "pandas.parquet")
    np.testing.assert_allclose(read_visit_log(tmp_path / "pandas.parquet").time, expected.time, rtol=1e-15)


@pytest.mark.parametrize(
    ("second", "match"),
    [
        (
            {"page": ["a", "b"], "time": [100.0, 200.0], "changed": [0, 2]},
            r"part-1\.parquet: row 2: changed must be 0 or 1; got 2",
        ),
        (
            {"page": ["a", "b"], "time": [100.0, np.inf], "changed": [0, 1]},
            r"part-1\.parquet: row 2: time must be finite; got inf",
        ),
        (
            {"page": ["a", "b"], "time": pa.array([100.0, None]), "changed": [0, 1]},
            r"part-1\.parquet: row 2: time is null",
        ),
        ({"page": ["a", ""], "time": [100.0, 200.0], "changed": [0, 1]}, r"part-1\.parquet: row 2: page is empty"),
        (
            {"page": ["a", "b"], "time": ["100", "soon"], "changed": ["0", "1"]},
            r"part-1\.parquet: row 2: time must be unix seconds or ISO 8601; got 'soon'",
        ),
        # page 'a' was visited at 50 in part-0: a visit at 20 in part-1 goes back in time
        (
            {"page": ["b", "a"], "time": [100.0, 20.0], "changed": [0, 1]},
            r"part-1\.parquet: row 2: time must increase within page 'a'; 20\.0 is not after its previous visit",
        ),
        (
            {"page": ["a"], "changed": [0]},
            r"part-1\.parquet: missing column 'time'; expected columns page,time,changed",
        ),
        ({"page": ["a"], "time": [True], "changed": [0]}, r"part-1\.parquet: column 'time' must be unix seconds"),
        (b"PAR1 garbage", r"part-1\.parquet: not a valid Parquet file"),
    ],
)
def test_a_bad_visit_log_partition_is_named_with_its_row(tmp_path, second, match):
    d = write_files(tmp_path / "log", {"part-0.parquet": {"page": ["a", "a"], "time": [0.0, 50.0], "changed": [0, 1]},
                                       "part-1.parquet": second})
    with pytest.raises(TraceFormatError, match=match):
        read_visit_log(d)


def test_visit_log_directory_without_partitions_and_empty_partitions(tmp_path):
    d = tmp_path / "log"
    d.mkdir()
    with pytest.raises(TraceFormatError, match=r"log: directory holds no Parquet partition files"):
        read_visit_log(d)
    pq.write_table(VISITS.slice(0, 0), d / "part-0.parquet")
    assert read_visit_log(d).n_pages == 0


def test_write_visit_log_parquet_round_trip(tmp_path):
    f = tmp_path / "log.parquet"
    write_visit_log(f, ["p", "q", "p"], [0.0, 10.0, 86400.0], [0, 1, 1])
    table = pq.read_table(f)
    assert table.column_names == ["page", "time", "changed"]
    assert table.schema.field("changed").type == pa.bool_()
    assert table.column("time").to_pylist() == [0.0, 10.0, 86400.0]
    log = read_visit_log(f)
    assert log.page_names.tolist() == ["p", "q"] and log.changed.tolist() == [False, True, True]
    np.testing.assert_array_equal(log.time, [0.0, 10 / 86400, 1.0])
