"""Replay of a real change history: pages change exactly when the history says."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from freshcrawl._validation import check_array
from freshcrawl.environments.base import SimulatedEnvironment
from freshcrawl.environments.metrics import MODE_REPLAY
from freshcrawl.traces.history import ChangeHistory

__all__ = ["ReplayEnvironment"]


class ReplayEnvironment(SimulatedEnvironment):
    """Pages whose changes, births and deaths are replayed from a :class:`ChangeHistory`.

    Parameters
    ----------
    history : ChangeHistory
        The change history (times in days since the unix epoch).
    start, end : float, optional
        The window, days since the epoch; default the whole history. It must lie inside
        ``[history.first, history.last]`` and be non-empty.
    weights : array of float, shape (n_pages,), optional
        Importance weights w_i >= 0; default 1.

    Raises
    ------
    ValueError
        If the window is empty or outside the data, or the weights are malformed or all zero.

    Notes
    -----
    Pages alive at ``start`` are synchronised at ``start``; a page born inside the window is stale from
    its birth until its first visit; a page only counts while it is alive. The true change rate of a
    page (used by the oracle) is its number of changes inside the window divided by the time it was
    alive inside the window.

    Examples
    --------
    >>> from freshcrawl.traces.history import read_history
    >>> env = ReplayEnvironment(read_history("data/ota-pga-versions"))
    >>> env.n_pages
    133
    """

    _mode = MODE_REPLAY

    def __init__(
        self,
        history: ChangeHistory,
        start: float | None = None,
        end: float | None = None,
        weights: ArrayLike | None = None,
    ) -> None:
        self.history = history
        start = history.first if start is None else float(start)
        end = history.last if end is None else float(end)
        if not (np.isfinite(start) and np.isfinite(end)):
            raise ValueError(f"the window must be finite days; got start={start!r}, end={end!r}")
        if not start < end:
            raise ValueError(
                f"the window must have start < end (days); got start={start!r}, end={end!r}"
            )
        if start < history.first or end > history.last:
            raise ValueError(
                f"the window [{start:.3f}, {end:.3f}] (days since the epoch) must lie inside the data "
                f"[{history.first:.3f}, {history.last:.3f}]"
            )
        self.start, self.end = start, end
        self.n_pages = history.n_pages
        self.born = history.born
        self.died = history.died
        if weights is None:
            self.weights = np.ones(self.n_pages)
        else:
            self.weights = check_array("weights", weights, shape=(self.n_pages,), low=0.0)
            if not self.weights.sum() > 0:
                raise ValueError("weights must not all be 0")
        self._offsets = history.offsets.astype(np.int64)
        self._ctimes = history.times
        self._delta = np.zeros(1)

    def _initial_state(self, rng: np.random.Generator) -> None:
        # first change strictly after the page's reference time (window start or birth)
        ref = np.maximum(self.born, self.start)
        ptr = np.empty(self.n_pages, dtype=np.int64)
        for i in range(self.n_pages):
            lo, hi = self._offsets[i], self._offsets[i + 1]
            ptr[i] = lo + np.searchsorted(self._ctimes[lo:hi], ref[i], side="right")
        self._ptr = ptr
        has = ptr < self._offsets[1:]
        self._nxt = np.full(self.n_pages, np.inf)
        self._nxt[has] = self._ctimes[ptr[has]]

    def alive_time(self) -> NDArray[np.float64]:
        """Days each page is alive inside the window, shape (n_pages,)."""
        lo = np.maximum(self.born, self.start)
        hi = np.minimum(self.died, self.end)
        return np.maximum(hi - lo, 0.0)

    def true_delta(self) -> NDArray[np.float64]:
        """Changes inside the window and the page's life, per day alive in the window, shape (n_pages,)."""
        lo = np.maximum(self.born, self.start)
        hi = np.minimum(self.died, self.end)
        page = np.repeat(np.arange(self.n_pages), np.diff(self._offsets))
        inside = (self._ctimes > lo[page]) & (self._ctimes <= hi[page])
        counts = np.bincount(page[inside], minlength=self.n_pages).astype(np.float64)
        alive = self.alive_time()
        out = np.zeros(self.n_pages)
        np.divide(counts, alive, out=out, where=alive > 0)
        return out
