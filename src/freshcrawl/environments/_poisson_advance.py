"""The compiled loop of the synthetic Poisson environment: change times drawn one after another.

Each page's next change is an exponential draw of rate Δ_i after its previous one (exact by
memorylessness), taken from one random stream in the order the pieces are met, which is why this loop is
sequential. Notation and accumulator slots as in :mod:`freshcrawl.environments.metrics`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from freshcrawl.environments.metrics import _AGE, _ALIVE, _CHANGED, _FRESH, _HARM, _VISITS


@njit(cache=True)
def _exponential(rng, scale):
    """An exponential draw, kept out of line so that the hot loop stays small."""
    return rng.exponential(scale)


@njit(cache=True)
def poisson_advance(
    pages,
    times,
    checkpoint,
    died,
    delta,
    rng,
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
    """:func:`~freshcrawl.environments.metrics.advance_kernel` of the synthetic Poisson pages.

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
            e = min(died[i], checkpoint)
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
                c = c + _exponential(rng, 1.0 / delta[i])
            nxt[i] = c
            fresh = min(fu, e) - a
            fresh = max(fresh, 0.0)
            age = 0.0
            if fu < e:
                x0 = max(fu, a)
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
