"""Change rate as a function of page age, pooled per group (:class:`AgeProfile`). Units: days,
changes per day.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["AGE_EDGES", "AgeProfile"]


#: Edges of the age bins of :class:`AgeProfile`, days: 1 h, 3 h, 6 h, 12 h, then doubling from 1 day to
#: 512 days, and one open bin beyond.
AGE_EDGES = np.array(
    [0.0, 1 / 24, 1 / 8, 1 / 4, 1 / 2, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, np.inf]
)


class AgeProfile:
    """Change rate as a function of page age, pooled per group: a piecewise-constant hazard of age.

    Each visit's interval (τ days, outcome I) is counted in the age bin of its midpoint: group g and
    bin k collect C_gk changed intervals in E_gk days. The rate of bin k over all groups is
    h_k = (C_k + a0) / (E_k + a0 / m), m = (C + a0) / (E + a0) the rate over all bins; a group's is
    shrunk towards it, h_gk = (C_gk + a0) / (E_gk + a0 / h_k), with a0 = ``prior_changes`` pseudo
    changes, so a bin no visit has reached yet takes the rate of the bins around it in the pooled
    profile, and a group's bin with many visits its own rate. C/E counts changed intervals, not
    changes: it is (1 - e^(-hτ))/τ for intervals of τ days at a constant rate h, a lower bound of h
    that is close where visits are frequent against changes, as a prior's should be (the page's own
    estimate, the interval-aware MLE, corrects it as its visits accumulate).

    Parameters
    ----------
    n_groups : int
        Number of groups (pages without a group use the pooled profile).
    edges : ndarray of float, default=AGE_EDGES
        Increasing bin edges in days, from 0, the last ``inf``.
    prior_changes : float, default=2.0
        a0 > 0, pseudo changes of each bin's prior.

    Examples
    --------
    >>> prof = AgeProfile(1)
    >>> prof.add(np.zeros(4, np.intp), np.array([0.5, 0.5, 300.0, 300.0]),
    ...          np.array([True, True, False, True]), np.full(4, 1.0))
    >>> prof.rate(np.zeros(2, np.intp), np.array([0.5, 300.0])).round(3).tolist()
    [0.952, 0.608]
    """

    def __init__(self, n_groups: int, *, edges=AGE_EDGES, prior_changes: float = 2.0) -> None:
        self.edges = np.asarray(edges, dtype=np.float64)
        if (
            self.edges.ndim != 1
            or self.edges.size < 2
            or self.edges[0] != 0.0
            or not np.all(np.diff(self.edges) > 0)
            or self.edges[-1] != np.inf
        ):
            raise ValueError("edges must increase from 0 to inf (days)")
        if not (np.isfinite(prior_changes) and prior_changes > 0):
            raise ValueError(f"prior_changes must be finite and > 0; got {prior_changes!r}")
        self.prior_changes = float(prior_changes)
        self.n_groups = int(n_groups)
        shape = (self.n_groups + 1, self.edges.size - 1)  # the last row: pages without a group
        self.changes_ = np.zeros(shape)
        self.exposure_ = np.zeros(shape)

    def bins(self, age) -> NDArray[np.intp]:
        """Age bin of each age (days; ``inf`` and NaN in the last bin), shape of ``age``."""
        age = np.asarray(age, dtype=np.float64)
        k = np.searchsorted(self.edges, np.where(np.isnan(age), np.inf, age), side="right") - 1
        return np.clip(k, 0, self.edges.size - 2)

    def _rows(self, groups) -> NDArray[np.intp]:
        g = np.asarray(groups, dtype=np.intp)
        return np.where(g >= 0, g, self.n_groups)

    def add(self, groups, age, changed, tau) -> None:
        """Count visits: ``groups`` (m,), ``age`` at the middle of each interval (m,) days, I (m,), τ (m,) days."""
        cell = self._rows(groups) * (self.edges.size - 1) + self.bins(age)
        size = self.changes_.size
        c = np.asarray(changed, dtype=np.float64)
        self.changes_ += np.bincount(cell, weights=c, minlength=size).reshape(self.changes_.shape)
        self.exposure_ += np.bincount(
            cell, weights=np.asarray(tau, dtype=np.float64), minlength=size
        ).reshape(self.exposure_.shape)

    def table(self) -> NDArray[np.float64]:
        """h_gk for every group (rows; the last: no group) and bin, shape (n_groups + 1, n_bins), per day."""
        a0 = self.prior_changes
        c, e = self.changes_, self.exposure_
        m = (c.sum() + a0) / (e.sum() + a0)
        h_k = (c.sum(0) + a0) / (e.sum(0) + a0 / m)
        return (c + a0) / (e + a0 / h_k[None, :])

    def rate(self, groups, age) -> NDArray[np.float64]:
        """Prior change rate of pages of ``groups`` at ``age`` days, shape (m,), changes per day."""
        return self.table()[self._rows(groups), self.bins(age)]
