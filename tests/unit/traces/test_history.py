"""Reading change histories: the shipped files, and malformed ones with line numbers."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from freshcrawl.errors import TraceFormatError
from freshcrawl.traces.history import read_history
from freshcrawl.units import SECONDS_PER_DAY


def write(tmp_path, changes: str, pages: str, name="h"):
    with gzip.open(tmp_path / f"{name}.changes.csv.gz", "wt") as f:
        f.write(changes)
    (tmp_path / f"{name}.pages.csv").write_text(pages)
    return tmp_path / name


GOOD_PAGES = "page,born,died,n_changes\nb,100,,2\na,50,400,1\n"
GOOD_CHANGES = "page,time\na,200\nb,150\nb,300\n"


@pytest.mark.parametrize(
    ("name", "pages", "changes"), [("ota-pga-versions", 133, 4394), ("peps", 739, 14194)]
)
def test_shipped_histories(data_dir, name, pages, changes):
    h = read_history(data_dir / name)
    assert (h.n_pages, h.n_changes) == (pages, changes)
    assert np.all(np.diff(h.offsets) >= 0) and h.offsets[-1] == changes
    for i in range(h.n_pages):
        assert np.all(np.diff(h.page_times(i)) > 0)
    assert h.first < h.last


def test_small_history_in_page_order_of_pages_csv(tmp_path):
    h = read_history(write(tmp_path, GOOD_CHANGES, GOOD_PAGES))
    assert h.pages.tolist() == ["b", "a"]
    np.testing.assert_allclose(h.page_times(0) * SECONDS_PER_DAY, [150, 300])
    np.testing.assert_allclose(h.page_times(1) * SECONDS_PER_DAY, [200])
    assert h.died[0] == np.inf and h.died[1] * SECONDS_PER_DAY == pytest.approx(400)
    assert h.first * SECONDS_PER_DAY == pytest.approx(
        50
    ) and h.last * SECONDS_PER_DAY == pytest.approx(400)


@pytest.mark.parametrize(
    ("changes", "pages", "match"),
    [
        (
            "page,time\na,200\nb,300\nb,150\n",
            GOOD_PAGES,
            r"changes.csv.gz: line 4: rows must be sorted",
        ),
        ("page,time\nb,150\nb,300\na,200\n", GOOD_PAGES, r"line 4: rows must be sorted"),
        ("page,time\na,200\nb,150\nb,150\n", GOOD_PAGES, r"line 4: rows must be sorted"),
        ("page,time\na,200\nb,xyz\nb,300\n", GOOD_PAGES, r"line 3: time must be an integer"),
        ("page,time\na,200\nb,1.5\nb,300\n", GOOD_PAGES, r"line 3: time must be an integer"),
        ("page,time\na,200\nb,\nb,300\n", GOOD_PAGES, r"line 3: time must be an integer"),
        ("page,time\na,200\nb,150,7\nb,300\n", GOOD_PAGES, r"malformed CSV.*line 3"),
        ("page,when\na,200\n", GOOD_PAGES, r"line 1: header must be page,time"),
        ("page,time\na,200\nb,150\nc,300\n", GOOD_PAGES, r"line 4: page 'c' is not in"),
        (
            GOOD_CHANGES,
            "page,born,died,n_changes\nb,100,,2\na,50,400,3\n",
            r"pages.csv: line 3: n_changes",
        ),
        (
            GOOD_CHANGES,
            "page,born,died,n_changes\nb,100,,2\na,500,400,1\n",
            r"line 3: died must be >= born",
        ),
        (
            GOOD_CHANGES,
            "page,born,died,n_changes\nb,100,,2\nb,50,400,1\n",
            r"line 3: page 'b' listed twice",
        ),
        (
            GOOD_CHANGES,
            "page,born,died,n_changes\nb,nan,,2\na,50,400,1\n",
            r"line 2: born must be an integer",
        ),
    ],
)
def test_malformed_histories_name_the_line(tmp_path, changes, pages, match):
    with pytest.raises(TraceFormatError, match=match):
        read_history(write(tmp_path, changes, pages))


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_history(tmp_path / "nothing")
