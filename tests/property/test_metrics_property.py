"""Property tests of the exact metric integrals against a brute-force reference."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from freshcrawl.environments import ReplayEnvironment
from freshcrawl.traces.history import ChangeHistory

START, END = 0.0, 10.0
times_st = st.lists(
    st.floats(-3.0, 13.0, allow_nan=False).map(lambda x: round(x, 2)), max_size=8, unique=True
)


@st.composite
def pages(draw):
    born = draw(st.one_of(st.just(-5.0), st.floats(-4.0, 9.0).map(lambda x: round(x, 2))))
    died = draw(st.one_of(st.just(np.inf), st.floats(born + 0.01, 14.0).map(lambda x: round(x, 2))))
    changes = sorted(t for t in draw(times_st) if born < t)
    lo, hi = max(born, START), min(died, END)
    visits = (
        sorted(draw(st.lists(st.floats(lo, hi).filter(lambda t: lo <= t < hi), max_size=6)))
        if lo < hi
        else []
    )
    return born, died, changes, visits


def reference(born, died, changes, visits):
    """Integrals of one page by evaluating its state at the midpoint of every elementary piece."""
    lo, hi = max(born, START), min(died, END)
    if not lo < hi:
        return 0.0, 0.0, 0.0, 0.0
    cuts = sorted({lo, hi, *[c for c in changes if lo < c < hi], *visits})
    fresh = age = harm = 0.0
    for a, b in zip(cuts[:-1], cuts[1:]):
        t = 0.5 * (a + b)
        seen = [v for v in visits if v <= t]
        if seen:
            unseen = [c for c in changes if seen[-1] < c <= t]
        elif born <= START:
            unseen = [c for c in changes if START < c <= t]
        else:  # born in the window, not fetched yet: the birth is an unseen change
            unseen = [born] + [c for c in changes if born < c <= t]
        n = len(unseen)
        fresh += (b - a) * (n == 0)
        age += (b - a) * (t - unseen[0] if n else 0.0)
        harm += (b - a) * sum(1.0 / j for j in range(1, n + 1))
    return fresh, age, harm, hi - lo


@given(st.lists(pages(), min_size=1, max_size=4), st.lists(st.floats(START, END), max_size=3))
def test_integrals_match_brute_force_and_split_exactly(page_list, checkpoints):
    n = len(page_list)
    offsets = np.zeros(n + 1, dtype=np.intp)
    offsets[1:] = np.cumsum([len(p[2]) for p in page_list])
    h = ChangeHistory(
        pages=np.array([str(i) for i in range(n)], dtype=object),
        born=np.array([p[0] for p in page_list]),
        died=np.array([p[1] for p in page_list]),
        offsets=offsets,
        times=np.array([t for p in page_list for t in p[2]], dtype=float),
        first=-10.0,
        last=20.0,
    )
    vp = np.array([i for i, p in enumerate(page_list) for _ in p[3]], dtype=np.intp)
    vt = np.array([t for p in page_list for t in p[3]], dtype=float)
    order = np.argsort(vt, kind="stable")
    vp, vt = vp[order], vt[order]
    env = ReplayEnvironment(h, START, END)
    env.reset(0)
    parts, done = [], 0
    for c in sorted(checkpoints) + [END]:
        k = int(np.searchsorted(vt, c, side="left"))
        env.visit(vp[done:k], vt[done:k])
        done = k
        parts.append(env.checkpoint(c))
    ref = np.sum([reference(*p) for p in page_list], axis=0)
    got = np.array(
        [sum(getattr(p, f) for p in parts) for f in ("fresh", "age", "harmonic", "alive")]
    )
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9)
    assert 0.0 <= got[0] <= got[3] + 1e-12  # fresh time never exceeds alive time
    assert got[1] >= 0.0 and got[2] >= 0.0
    for p in parts:
        if p.alive > 0:
            assert 0.0 <= p.freshness <= 1.0
