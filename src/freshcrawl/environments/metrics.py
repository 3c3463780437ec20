"""Exact freshness, age and harmonic-staleness integrals from change times and visit times.

A page's copy is fresh from a visit until the first change after that visit; its age at time t is
``t - c`` where c is the first change not yet picked up by a visit (0 while fresh); its harmonic
staleness at time t is ``H(n(t)) = 1 + 1/2 + ... + 1/n(t)`` where n(t) is the number of changes not yet
picked up (Kolobov, Peres, Lu, Horvitz, NeurIPS 2019). Each is integrated exactly over time: the
timeline of every page is cut at its visits and at the report checkpoints, and each change is passed
exactly once, so the cost is O(visits + changes + pages x checkpoints), independent of any time step.

Under Poisson visits of rate p and Poisson changes of rate Δ, n(t) is geometric with
``P(n >= j) = (Δ/(p+Δ))^j``, so ``E[H(n)] = sum_j (Δ/(p+Δ))^j / j = -log(p/(p+Δ))``: the time average
of the harmonic staleness reported here is the cost whose expectation Kolobov et al. minimise and seed
001 Sec. 5 writes as ``-sum_i w_i ln(p_i/(p_i+Δ_i))``.

A page born inside the window has no copy until its first visit: its birth counts as one change not yet
picked up (stale, age counted from the birth, n(t) >= 1).

:func:`advance_kernel` serves the replay and the synthetic Poisson environments; they differ only in
where the next change time comes from (the history, or an exponential draw: exact by memorylessness).
The replay is vectorised over pages with numpy; the synthetic pages draw their change times one after
another from one random stream, in a compiled loop (:mod:`freshcrawl.environments._poisson_advance`,
loaded on first use).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Integrals"]

#: where the next change of a page comes from
MODE_REPLAY = 0
MODE_POISSON = 1

#: slots of the accumulator array
_FRESH, _AGE, _HARM, _ALIVE, _VISITS, _CHANGED = range(6)
N_ACC = 6


@dataclass(frozen=True, slots=True)
class Integrals:
    """Weighted integrals over a stretch of time, summed over pages.

    Attributes
    ----------
    fresh : float
        ``sum_i w_i * (days page i was alive and fresh)``, weight x days.
    age : float
        ``sum_i w_i * integral of age_i(t) dt`` over alive time, weight x days².
    harmonic : float
        ``sum_i w_i * integral of H(n_i(t)) dt`` over alive time, weight x days.
    alive : float
        ``sum_i w_i * (days page i was alive)``, weight x days.
    visits : int
        Visits made.
    changed : int
        Visits that found the page changed since its previous visit (first visits after a birth
        excluded).
    """

    fresh: float
    age: float
    harmonic: float
    alive: float
    visits: int
    changed: int

    @classmethod
    def from_array(cls, acc: np.ndarray) -> Integrals:
        """Build from the accumulator of the kernels, shape (6,)."""
        return cls(
            fresh=float(acc[_FRESH]),
            age=float(acc[_AGE]),
            harmonic=float(acc[_HARM]),
            alive=float(acc[_ALIVE]),
            visits=int(round(acc[_VISITS])),
            changed=int(round(acc[_CHANGED])),
        )

    @property
    def freshness(self) -> float:
        """Time- and weight-averaged freshness in [0, 1] (NaN when nothing was alive)."""
        return self.fresh / self.alive if self.alive > 0 else float("nan")

    @property
    def mean_age(self) -> float:
        """Time- and weight-averaged age, days (NaN when nothing was alive)."""
        return self.age / self.alive if self.alive > 0 else float("nan")

    @property
    def harmonic_staleness(self) -> float:
        """Time- and weight-averaged H(n(t)) (NaN when nothing was alive)."""
        return self.harmonic / self.alive if self.alive > 0 else float("nan")


def advance_kernel(
    pages,
    times,
    checkpoint,
    died,
    mode,
    delta,
    rng,
    offsets,
    ctimes,
    ptr,
    nxt,
    n_unseen,
    h_unseen,
    first_unseen,
    cursor,
    synced,
    w,
    acc,
    changed,
):
    """Answer visits, then (if ``checkpoint`` is finite) integrate every page up to it.

    ``pages`` (m,) and ``times`` (m,, days): the visits, in time order within each page; ``changed``
    (m,) receives whether each visit found its page changed. The page state (shape (n_pages,):
    ``ptr``/``nxt`` the next change, ``n_unseen``/``h_unseen``/``first_unseen`` the changes not yet
    picked up, ``cursor`` the time integrated to, ``synced``) and ``acc`` (6,) are updated in place.
    Each page's timeline is cut at its visits and at the checkpoint; on each piece [a, e) the changes
    before e are passed once (with a visit at e, the changes at e too: a visit sees a change made at
    its own time), and the integrals of freshness, age and H(n) over the piece are added to ``acc``.
    ``mode``: MODE_REPLAY takes change times from ``ctimes`` (page i's in ``offsets[i]:offsets[i+1]``,
    sorted); MODE_POISSON draws them from ``rng`` at rates ``delta``.
    """
    if mode != MODE_REPLAY:
        from freshcrawl.environments._poisson_advance import poisson_advance

        poisson_advance(
            pages, times, checkpoint, died, delta, rng, nxt, n_unseen, h_unseen, first_unseen,
            cursor, synced, w, acc, changed,
        )  # fmt: skip
        return
    state = (offsets, ctimes, ptr, nxt, n_unseen, h_unseen, first_unseen, cursor, w, acc)
    if pages.shape[0]:
        # round r: the r-th visit of every page visited r + 1 times or more (pages distinct in a round)
        order = np.argsort(pages, kind="stable")
        sp = pages[order]
        first = np.ones(sp.shape[0], dtype=bool)
        first[1:] = sp[1:] != sp[:-1]
        starts = np.flatnonzero(first)
        rank = np.arange(sp.shape[0]) - np.repeat(starts, np.diff(np.append(starts, sp.shape[0])))
        by_rank = order[np.argsort(rank, kind="stable")]
        bounds = np.searchsorted(rank[np.argsort(rank, kind="stable")], np.arange(rank.max() + 2))
        for r in range(bounds.shape[0] - 1):
            k = by_rank[bounds[r] : bounds[r + 1]]
            i = pages[k]
            _pieces(i, times[k], True, *state)
            n = n_unseen[i]
            changed[k] = n > 0
            acc[_VISITS] += k.shape[0]
            acc[_CHANGED] += np.count_nonzero(synced[i] & (n > 0))
            synced[i] = True
            n_unseen[i] = 0
            h_unseen[i] = 0.0
            first_unseen[i] = np.inf
    if checkpoint < np.inf:
        i = np.arange(cursor.shape[0])
        _pieces(i, np.minimum(checkpoint, died), False, *state)


def _pieces(
    i, e, inclusive, offsets, ctimes, ptr, nxt, n_unseen, h_unseen, first_unseen, cursor, w, acc
):
    """Integrate pages ``i`` (distinct) from their cursor to ``e``, passing the changes before ``e``
    (at ``e`` too when ``inclusive``)."""
    a = cursor[i]
    on = (e > a) | (e == a) if inclusive else e > a
    if not on.all():
        i, e, a = i[on], e[on], a[on]
    n0 = n_unseen[i]
    h = h_unseen[i]
    fu = first_unseen[i]
    harm = h * (e - a)
    c = nxt[i]
    hit = np.flatnonzero((c < e) | (c == e) if inclusive else c < e)
    if hit.size:
        # the changes passed: ptr .. q - 1, q the first change after e (at or after, if not inclusive)
        ih, eh = i[hit], e[hit]
        lo = ptr[ih] + 1
        hi = offsets[ih + 1]
        while True:
            go = np.flatnonzero(lo < hi)
            if not go.size:
                break
            mid = (lo[go] + hi[go]) // 2
            cm = ctimes[mid]
            right = cm <= eh[go] if inclusive else cm < eh[go]
            lo[go] = np.where(right, mid + 1, lo[go])
            hi[go] = np.where(right, hi[go], mid)
        start = ptr[ih]
        count = lo - start
        # each page's sums run in the order of its changes, from its running value (slot 0 of its
        # stretch), as the sums of one change at a time do
        seg = np.repeat(np.arange(hit.size), count + 1)
        j = np.arange(seg.shape[0]) - np.repeat(np.cumsum(count + 1) - (count + 1), count + 1)
        head = j == 0
        j = np.maximum(j - 1, 0)
        ct = ctimes[start[seg] + j]
        nn = n0[hit][seg] + j + 1.0
        h[hit] = np.bincount(seg, weights=np.where(head, h[hit][seg], 1.0 / nn), minlength=hit.size)
        harm[hit] = np.bincount(
            seg, weights=np.where(head, harm[hit][seg], (eh[seg] - ct) / nn), minlength=hit.size
        )
        new_first = hit[n0[hit] == 0]
        fu[new_first] = c[new_first]
        n0[hit] += count
        ptr[ih] = lo
        c[hit] = np.where(lo < offsets[ih + 1], ctimes[np.minimum(lo, ctimes.shape[0] - 1)], np.inf)
        nxt[i] = c
    fresh = np.maximum(np.minimum(e, fu) - a, 0.0)
    wi = w[i]
    stale = np.flatnonzero(fu < e)  # age is 0 elsewhere
    fs, es = fu[stale], e[stale]
    x0 = np.maximum(a[stale], fs)
    age = (es - x0) * ((es - fs) + (x0 - fs)) * 0.5
    # weighted sums by einsum: a BLAS dot product may start threads, which costs milliseconds on a
    # loaded machine
    acc[_FRESH] += np.einsum("i,i->", wi, fresh)
    acc[_AGE] += np.einsum("i,i->", wi[stale], age)
    acc[_HARM] += np.einsum("i,i->", wi, harm)
    acc[_ALIVE] += np.einsum("i,i->", wi, e - a)
    n_unseen[i] = n0
    h_unseen[i] = h
    first_unseen[i] = fu
    cursor[i] = e
