"""Co-changes: groups with more changes in one batch of visits than their pages' own models predict
(a site-wide edit, a template change). Units: days.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["CoChangeAccumulator", "CoChanges", "detect_cochanges"]


@dataclass(frozen=True, slots=True)
class CoChanges:
    """Groups with more changes in one batch of visits than their pages' own models predict.

    Attributes
    ----------
    groups : ndarray of intp, shape (m,)
        Groups with a detected co-change.
    share : ndarray of float, shape (m,)
        Estimated share of the group's pages the co-change hit: (C - E) / (V - E), C the changed
        visits, E their expected number, V the visits of the group in the batch.
    since : ndarray of float, shape (m,)
        Time (days) after which the co-change happened: the latest previous-visit time of the
        changed visits of the group (each changed after it, if they share the co-change).
    """

    groups: NDArray[np.intp]
    share: NDArray[np.float64]
    since: NDArray[np.float64]


class CoChangeAccumulator:
    """Running per-group sums of visits for :func:`detect_cochanges`, tested once a group has enough.

    Visits accumulate (changed count C, expected count E = Σ p, variance Σ p(1 - p), visits V, and the
    latest previous-visit time of a changed visit) until the group has ``min_visits`` visits; then it is
    tested and its sums start again. At a low budget a group's visits of one planning period are too
    few to test, so they are pooled over consecutive periods.

    Parameters
    ----------
    n_groups : int
        Number of groups.
    min_visits : int, default=8
        Visits of a group before it is tested.
    z, min_changes
        As in :func:`detect_cochanges`.
    """

    def __init__(
        self, n_groups: int, *, min_visits: int = 8, z: float = 4.0, min_changes: int = 3
    ) -> None:
        self.n_groups = int(n_groups)
        self.min_visits = int(min_visits)
        self.z = float(z)
        self.min_changes = int(min_changes)
        self._v = np.zeros(self.n_groups)
        self._c = np.zeros(self.n_groups)
        self._e = np.zeros(self.n_groups)
        self._var = np.zeros(self.n_groups)
        self._since = np.full(self.n_groups, -np.inf)

    def add(self, groups, changed, p_change, prev_time) -> CoChanges:
        """Add one batch of visits; return the co-changes of the groups tested now."""
        has = groups >= 0
        g = groups[has]
        c = np.asarray(changed, dtype=np.float64)[has]
        p = np.asarray(p_change, dtype=np.float64)[has]
        n = self.n_groups
        self._v += np.bincount(g, minlength=n)
        self._c += np.bincount(g, weights=c, minlength=n)
        self._e += np.bincount(g, weights=p, minlength=n)
        self._var += np.bincount(g, weights=p * (1.0 - p), minlength=n)
        pt = np.asarray(prev_time, dtype=np.float64)[has]
        np.maximum.at(self._since, g[c > 0], pt[c > 0])
        ready = np.flatnonzero(self._v >= self.min_visits)
        if ready.size == 0:
            return CoChanges(np.zeros(0, np.intp), np.zeros(0), np.zeros(0))
        v, cc, e, var = self._v[ready], self._c[ready], self._e[ready], self._var[ready]
        flag = (cc >= self.min_changes) & (cc > e + self.z * np.sqrt(var) + 1.0)
        idx = ready[flag]
        share = np.clip((cc[flag] - e[flag]) / np.maximum(v[flag] - e[flag], 1e-12), 0.0, 1.0)
        since = self._since[idx].copy()
        for a in (self._v, self._c, self._e, self._var):
            a[ready] = 0.0
        self._since[ready] = -np.inf
        return CoChanges(idx.astype(np.intp), share, since)


def detect_cochanges(
    groups: NDArray[np.intp],
    changed: NDArray[np.bool_],
    p_change: NDArray[np.float64],
    prev_time: NDArray[np.float64],
    *,
    n_groups: int,
    z: float = 4.0,
    min_changes: int = 3,
) -> CoChanges:
    """Detect co-changes in one batch of visits.

    Parameters
    ----------
    groups : ndarray of intp, shape (m,)
        Group of each visited page (``-1``: none).
    changed : ndarray of bool, shape (m,)
        I of each visit.
    p_change : ndarray of float, shape (m,)
        The change probability each page's own model predicted for the visit.
    prev_time : ndarray of float, shape (m,)
        Time of the page's previous visit, days.
    n_groups : int
        Number of groups.
    z : float, default=4.0
        One-sided threshold: C > E + z·sqrt(Σ p(1-p)) + 1 flags a group (the +1 is a continuity margin).
    min_changes : int, default=3
        Fewest changed visits to flag a group.

    Returns
    -------
    CoChanges
        ``since`` is the latest previous-visit time of the group's changed visits.
    """
    acc = CoChangeAccumulator(n_groups, min_visits=1, z=z, min_changes=min_changes)
    return acc.add(np.asarray(groups, dtype=np.intp), changed, p_change, prev_time)
