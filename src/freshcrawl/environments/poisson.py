"""Synthetic pages that change as independent Poisson processes of known rates Δ_i."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from freshcrawl._validation import check_array, check_positive
from freshcrawl.environments.base import SimulatedEnvironment
from freshcrawl.environments.metrics import MODE_POISSON

__all__ = ["PoissonEnvironment"]


class PoissonEnvironment(SimulatedEnvironment):
    """Pages whose changes form independent Poisson processes of rates ``delta``.

    Change times are drawn lazily, one exponential gap at a time, as the clock passes them: by
    memorylessness this samples the change process exactly, so freshness, age and harmonic staleness
    are the exact integrals of a sampled path, at a cost proportional to visits + changes.

    Parameters
    ----------
    delta : array of float, shape (n_pages,)
        Change rates Δ_i >= 0, changes per day.
    weights : array of float, shape (n_pages,), optional
        Importance weights w_i >= 0; default 1.
    start : float, default=0.0
        Window start, days; every page is alive and synchronised at ``start``.
    end : float, default=inf
        Window end, days.

    Raises
    ------
    ValueError
        If ``delta`` or ``weights`` have the wrong shape, are negative, NaN or infinite, or the window
        is empty.

    Examples
    --------
    >>> env = PoissonEnvironment([1.0, 2.0], start=0.0, end=10.0)
    >>> env.reset(rng=0)
    >>> env.visit([0, 1], [1.0, 2.0]).shape
    (2,)
    """

    _mode = MODE_POISSON

    def __init__(
        self,
        delta: ArrayLike,
        weights: ArrayLike | None = None,
        *,
        start: float = 0.0,
        end: float = np.inf,
    ) -> None:
        self.delta = check_array("delta", delta, low=0.0, unit="changes per day")
        if self.delta.ndim != 1 or self.delta.size == 0:
            raise ValueError(f"delta must be a non-empty 1-d array; got shape {self.delta.shape}")
        self.n_pages = int(self.delta.size)
        self.weights = (
            np.ones(self.n_pages)
            if weights is None
            else check_array("weights", weights, shape=(self.n_pages,), low=0.0)
        )
        self.start = float(start)
        if not np.isfinite(self.start):
            raise ValueError(f"start must be finite days; got {start!r}")
        self.end = (
            check_positive("end - start", float(end) - self.start, unit="days", allow_inf=True)
            + self.start
        )
        self.born = np.full(self.n_pages, -np.inf)
        self.died = np.full(self.n_pages, np.inf)
        self._offsets = np.zeros(1, dtype=np.int64)
        self._ctimes = np.zeros(1)
        self._delta = self.delta

    def _initial_state(self, rng: np.random.Generator) -> None:
        self._ptr = np.zeros(self.n_pages, dtype=np.int64)
        with np.errstate(divide="ignore"):
            scale = np.where(
                self.delta > 0, 1.0 / np.where(self.delta > 0, self.delta, 1.0), np.inf
            )
        self._nxt = self.start + rng.exponential(1.0, self.n_pages) * scale

    def true_delta(self) -> NDArray[np.float64]:
        """The rates Δ_i, changes per day, shape (n_pages,)."""
        return self.delta.copy()
