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

The kernels below are shared by the replay and the synthetic Poisson environments; they differ only in
where the next change time comes from (the history, or an exponential draw: exact by memorylessness).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

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


@njit(cache=True)
def _exponential(rng, scale):
    """An exponential draw, kept out of line so that the hot loop stays small."""
    return rng.exponential(scale)


@njit(cache=True)
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

    Visits are answered in the order given, which must be time order within each page. Each page's
    timeline is cut at its visits and at the checkpoint; on each piece [a, e) the changes before e are
    passed once (with a visit at e, the changes at e too: a visit sees a change made at its own time),
    and the integrals of freshness, age and H(n) over the piece are added to ``acc``. One loop with
    the piece logic written once: calling a small function with the state arrays would cost
    reference counting on every piece.
    """
    m = pages.shape[0]
    n_pages = cursor.shape[0]
    total = m + (n_pages if checkpoint < np.inf else 0)
    for k in range(total):
        if k < m:
            i = pages[k]
            e = times[k]
            inclusive = True
        else:
            i = k - m
            e = checkpoint if checkpoint < died[i] else died[i]
            inclusive = False
        a = cursor[i]
        if e > a or (inclusive and e == a):
            n = n_unseen[i]
            h = h_unseen[i]
            fu = first_unseen[i]
            harm = h * (e - a)
            c = nxt[i]
            while c < e or (inclusive and c == e):
                n += 1
                h += 1.0 / n
                harm += (e - c) / n
                if n == 1:
                    fu = c
                if mode == MODE_REPLAY:
                    j = ptr[i] + 1
                    ptr[i] = j
                    c = ctimes[j] if j < offsets[i + 1] else np.inf
                else:
                    c = c + _exponential(rng, 1.0 / delta[i])
            nxt[i] = c
            fresh = (e if e < fu else fu) - a
            if fresh < 0.0:
                fresh = 0.0
            age = 0.0
            if fu < e:
                x0 = a if a > fu else fu
                age = (e - x0) * ((e - fu) + (x0 - fu)) * 0.5
            wi = w[i]
            acc[_FRESH] += wi * fresh
            acc[_AGE] += wi * age
            acc[_HARM] += wi * harm
            acc[_ALIVE] += wi * (e - a)
            n_unseen[i] = n
            h_unseen[i] = h
            first_unseen[i] = fu
            cursor[i] = e
        if inclusive:
            n = n_unseen[i]
            changed[k] = n > 0
            acc[_VISITS] += 1.0
            if synced[i] and n > 0:
                acc[_CHANGED] += 1.0
            synced[i] = True
            n_unseen[i] = 0
            h_unseen[i] = 0.0
            first_unseen[i] = np.inf
