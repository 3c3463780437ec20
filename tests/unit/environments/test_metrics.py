"""Exact freshness, age and harmonic-staleness integrals on small hand-computed histories."""

from __future__ import annotations

import numpy as np
import pytest

from freshcrawl.environments import ReplayEnvironment
from freshcrawl.traces.history import ChangeHistory


def history(
    changes: list[list[float]], born=None, died=None, first=-100.0, last=100.0
) -> ChangeHistory:
    n = len(changes)
    offsets = np.zeros(n + 1, dtype=np.intp)
    offsets[1:] = np.cumsum([len(c) for c in changes])
    return ChangeHistory(
        pages=np.array([f"p{i}" for i in range(n)], dtype=object),
        born=np.array(born if born is not None else [first] * n, dtype=float),
        died=np.array(died if died is not None else [np.inf] * n, dtype=float),
        offsets=offsets,
        times=np.array([t for c in changes for t in c], dtype=float),
        first=first,
        last=last,
    )


def run(h, start, end, pages, times, checkpoints=()):
    env = ReplayEnvironment(h, start, end)
    env.reset(0)
    out = []
    pages, times = np.asarray(pages, dtype=np.intp), np.asarray(times, dtype=float)
    done = 0
    changed = []
    for c in [*checkpoints, end]:
        k = int(np.searchsorted(times, c, side="left"))
        changed.extend(env.visit(pages[done:k], times[done:k]).tolist())
        done = k
        out.append(env.checkpoint(c))
    return out, changed


def test_page_alive_throughout():
    # changes at 1, 2, 5; visits at 3, 6; window [0, 10)
    # fresh [0,1) [3,5) [6,10) = 7; age: int_1^3 (t-1) + int_5^6 (t-5) = 2 + 0.5;
    # H: [1,2) H1 + [2,3) H2 + [5,6) H1 = 1 + 1.5 + 1
    (res,), changed = run(history([[1.0, 2.0, 5.0]]), 0.0, 10.0, [0, 0], [3.0, 6.0])
    assert (res.fresh, res.age, res.harmonic, res.alive) == (7.0, 2.5, 3.5, 10.0)
    assert (res.visits, res.changed) == (2, 2)
    assert changed == [True, True]
    assert res.freshness == 0.7 and res.mean_age == 0.25 and res.harmonic_staleness == 0.35


def test_page_born_in_window_is_stale_until_first_visit():
    # born at 2, change at 4, visits at 3 and 6, window [0, 10): alive 8 days
    # stale [2,3) (age from birth 0.5, H(1) = 1), fresh [3,4), stale [4,6) (age 2, H 2), fresh [6,10)
    (res,), changed = run(history([[4.0]], born=[2.0]), 0.0, 10.0, [0, 0], [3.0, 6.0])
    assert (res.fresh, res.age, res.harmonic, res.alive) == (5.0, 2.5, 3.0, 8.0)
    assert res.visits == 2 and res.changed == 1  # the first visit after the birth is no observation
    assert changed == [True, True]


def test_page_dying_in_window_counts_only_alive_time():
    # changes at 1 and 8 (after death), dies at 7, visit at 3: fresh [0,1) + [3,7)
    (res,), _ = run(history([[1.0, 8.0]], died=[7.0]), 0.0, 10.0, [0], [3.0])
    assert (res.fresh, res.age, res.harmonic, res.alive) == (5.0, 2.0, 2.0, 7.0)


def test_changes_before_the_window_are_already_synchronised():
    (res,), changed = run(history([[-5.0, -1.0, 2.0]]), 0.0, 4.0, [0], [1.0])
    assert changed == [False]
    assert (res.fresh, res.age, res.harmonic) == (2.0, 2.0, 2.0)


def test_a_change_at_the_visit_time_is_picked_up():
    (res,), changed = run(history([[2.0]]), 0.0, 4.0, [0, 0], [2.0, 3.0])
    assert changed == [True, False]
    assert res.fresh == 4.0 and res.age == 0.0


def test_many_unseen_changes_give_harmonic_numbers():
    # changes at 1, 2, 3 and no visit until 4: H = 1 on [1,2), 1.5 on [2,3), 11/6 on [3,4)
    (res,), _ = run(history([[1.0, 2.0, 3.0]]), 0.0, 4.0, [0], [4.0 - 1e-12])
    assert res.harmonic == pytest.approx(1 + 1.5 + 11 / 6)
    assert res.age == pytest.approx(4.5)  # int_1^4 (t - 1) dt


def test_weights_average_over_pages():
    h = history([[1.0], []])
    env = ReplayEnvironment(h, 0.0, 2.0, weights=[3.0, 1.0])
    env.reset(0)
    res = env.checkpoint(2.0)
    # page 0 fresh 1 of 2 days (weight 3), page 1 fresh 2 of 2 days (weight 1)
    assert res.freshness == pytest.approx((3 * 1 + 1 * 2) / (3 * 2 + 1 * 2))


def test_checkpoints_split_the_integrals_exactly():
    h = history(
        [[0.5, 1.5, 2.2, 7.0], [3.0], [0.1, 0.2, 0.3]],
        born=[-1.0, 1.0, -1.0],
        died=[np.inf, 9.0, 5.0],
    )
    pages, times = [0, 2, 1, 0, 0, 1], [1.0, 1.2, 2.0, 2.5, 6.0, 8.0]
    (whole,), c1 = run(h, 0.0, 10.0, pages, times)
    parts, c2 = run(h, 0.0, 10.0, pages, times, checkpoints=(1.1, 2.5, 2.6, 7.0))
    assert c1 == c2
    for field in ("fresh", "age", "harmonic", "alive"):
        assert sum(getattr(p, field) for p in parts) == pytest.approx(
            getattr(whole, field), rel=1e-12
        )
    assert sum(p.visits for p in parts) == whole.visits == 6


def test_true_delta_counts_changes_in_window_per_alive_day():
    h = history([[1.0, 2.0, 50.0], [5.0, 6.0]], born=[-10.0, 4.0])
    env = ReplayEnvironment(h, 0.0, 10.0)
    np.testing.assert_allclose(env.true_delta(), [2 / 10, 2 / 6])


@pytest.mark.parametrize(
    ("pages", "times", "match"),
    [
        ([0, 0], [3.0, 2.0], "non-decreasing"),
        ([1], [1.0], r"pages must be <= 0"),
        ([0], [np.nan], "finite"),
        ([0], [20.0], "must lie in"),
    ],
)
def test_bad_visits_are_rejected(pages, times, match):
    env = ReplayEnvironment(history([[1.0]]), 0.0, 10.0)
    env.reset(0)
    with pytest.raises(ValueError, match=match):
        env.visit(pages, times)


def test_visit_to_a_dead_page_is_rejected():
    env = ReplayEnvironment(history([[1.0]], died=[5.0]), 0.0, 10.0)
    env.reset(0)
    with pytest.raises(ValueError, match="alive at their visit"):
        env.visit([0], [6.0])


def test_visit_before_reset_is_rejected():
    env = ReplayEnvironment(history([[1.0]]), 0.0, 10.0)
    with pytest.raises(RuntimeError, match="reset"):
        env.visit([0], [1.0])


@pytest.mark.parametrize(
    ("start", "end", "match"),
    [(5.0, 5.0, "start < end"), (-200.0, 5.0, "inside the data"), (0.0, 101.0, "inside the data")],
)
def test_window_must_lie_inside_the_data(start, end, match):
    with pytest.raises(ValueError, match=match):
        ReplayEnvironment(history([[1.0]]), start, end)
