"""The environment interface: pages that change, answering visits.

:class:`Environment` is all a runner needs to drive a policy: ``visit(pages, times) -> changed``. A live
crawler implements it with HTTP; the simulation engine uses :class:`SimulatedEnvironment`, which also
knows the truth and measures exact freshness integrals between checkpoints.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from freshcrawl._validation import check_array, check_rng
from freshcrawl.environments.metrics import N_ACC, Integrals, advance_kernel

__all__ = ["Environment", "SimulatedEnvironment"]


@runtime_checkable
class Environment(Protocol):
    """Pages that can be visited.

    Attributes
    ----------
    n_pages : int
        Pages are the integers ``0 .. n_pages-1``.
    """

    n_pages: int

    def visit(self, pages: NDArray[np.intp], times: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Visit ``pages`` (intp, shape (m,)) at ``times`` (days, shape (m,), non-decreasing).

        Returns, for each visit, whether the page changed since its previous visit (bool, shape (m,)).
        """


class SimulatedEnvironment:
    """Base class of the simulated environments: state of every page's copy and the exact integrals.

    Subclasses set ``n_pages``, ``weights``, ``born``, ``died``, ``start``, ``end`` and implement
    :meth:`_initial_state` and :meth:`true_delta`.

    Attributes
    ----------
    n_pages : int
        Number of pages.
    weights : ndarray of float, shape (n_pages,)
        Importance weights w_i >= 0.
    born, died : ndarray of float, shape (n_pages,)
        Birth and death times, days (``died`` is ``inf`` for a page that never dies).
    start, end : float
        The window simulated, days.
    """

    n_pages: int
    weights: NDArray[np.float64]
    born: NDArray[np.float64]
    died: NDArray[np.float64]
    start: float
    end: float
    _mode: int

    # --- to implement -------------------------------------------------------------------------
    def _initial_state(self, rng: np.random.Generator) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def true_delta(self) -> NDArray[np.float64]:  # pragma: no cover - abstract
        """True change rate of each page over the window, changes per day, shape (n_pages,)."""
        raise NotImplementedError

    # --- shared ---------------------------------------------------------------------------------
    def reset(self, rng: np.random.Generator | int | None = None) -> None:
        """Put every page's copy back to the start of the window.

        Pages alive at ``start`` are synchronised at ``start``; a page born later has no copy (stale)
        until its first visit. ``rng`` drives the synthetic change times (unused by a replay).
        """
        rng = check_rng(rng)
        self._rng = rng
        n = self.n_pages
        self._n_unseen = np.zeros(n, dtype=np.int64)
        self._h_unseen = np.zeros(n, dtype=np.float64)
        self._first_unseen = np.full(n, np.inf)
        newborn = self.born > self.start
        self._n_unseen[newborn] = 1
        self._h_unseen[newborn] = 1.0
        self._first_unseen[newborn] = self.born[newborn]
        self._synced = ~newborn
        self._cursor = np.maximum(self.born, self.start).astype(np.float64)
        self._cursor[self.died <= self.start] = np.inf
        self._acc = np.zeros(N_ACC)
        self._last_time = self.start
        self._initial_state(rng)

    def alive_between(self, t0: float, t1: float) -> NDArray[np.bool_]:
        """Pages alive at some time of ``[t0, t1)`` (bool, shape (n_pages,))."""
        return (self.born < t1) & (self.died > t0)

    def visit(
        self, pages: ArrayLike, times: ArrayLike, *, grouped: bool = False
    ) -> NDArray[np.bool_]:
        """Visit ``pages`` at ``times`` and say which changed since their previous visit.

        Parameters
        ----------
        pages : array of int, shape (m,)
            Page of each visit, in ``0 .. n_pages-1``, alive at the visit time.
        times : array of float, shape (m,)
            Visit times, days; non-decreasing, not before the last visit or checkpoint, within the
            window.
        grouped : bool, default=False
            If True, the visits are grouped by page instead (``pages`` non-decreasing, ``times``
            non-decreasing within each page), which is faster for many pages; each page's visits are
            answered in time order either way.

        Returns
        -------
        ndarray of bool, shape (m,)
            Whether the page changed since its previous visit (True for the first visit of a page born
            in the window, whose copy did not exist).

        Raises
        ------
        ValueError
            If a page is out of range or not alive at its visit, or a time is not finite, goes back in
            time, or lies outside the window.
        RuntimeError
            If :meth:`reset` was not called first.
        """
        if not hasattr(self, "_acc"):
            raise RuntimeError("call reset() before visit()")
        pages = check_array("pages", pages, dtype=np.intp, low=0, high=self.n_pages - 1)
        times = check_array("times", times, dtype=np.float64, shape=pages.shape, unit="days")
        if pages.ndim != 1:
            raise ValueError(f"pages must be one-dimensional; got shape {pages.shape}")
        if times.size:
            if grouped:
                dp = np.diff(pages)
                back = (dp < 0) | ((dp == 0) & (np.diff(times) < 0))
                what = "pages non-decreasing and times non-decreasing within each page"
            else:
                back = np.diff(times) < 0
                what = "times non-decreasing days"
            if back.any():
                k = int(np.flatnonzero(back)[0]) + 1
                raise ValueError(
                    f"visits must have {what}; visit {k} (page {pages[k]}, {times[k]!r}) comes after "
                    f"(page {pages[k - 1]}, {times[k - 1]!r})"
                )
            t_lo, t_hi = (
                (float(times.min()), float(times.max())) if grouped else (times[0], times[-1])
            )
            if t_lo < self._last_time or t_hi > self.end:
                raise ValueError(
                    f"times must lie in [{self._last_time}, {self.end}] days (not before the last visit or "
                    f"checkpoint, within the window); got [{t_lo!r}, {t_hi!r}]"
                )
            dead = (times < self.born[pages]) | (times >= self.died[pages])
            if dead.any():
                k = int(np.flatnonzero(dead)[0])
                raise ValueError(
                    f"pages must be alive at their visit; page {pages[k]} is not alive at {times[k]!r} days "
                    f"(born {self.born[pages[k]]!r}, died {self.died[pages[k]]!r})"
                )
            self._last_time = float(t_hi)
        changed = np.zeros(pages.shape[0], dtype=np.bool_)
        self._advance(pages, times, np.inf, changed)
        return changed

    def _advance(self, pages, times, checkpoint, changed) -> None:
        advance_kernel(
            pages,
            times,
            checkpoint,
            self.died,
            self._mode,
            self._delta,
            self._rng,
            self._offsets,
            self._ctimes,
            self._ptr,
            self._nxt,
            self._n_unseen,
            self._h_unseen,
            self._first_unseen,
            self._cursor,
            self._synced,
            self.weights,
            self._acc,
            changed,
        )

    def checkpoint(self, t: float) -> Integrals:
        """Integrate every page up to ``t`` (days) and return the integrals since the last checkpoint.

        Raises
        ------
        ValueError
            If ``t`` is before the last visit or checkpoint, or after the window.
        """
        if not (self._last_time <= t <= self.end):
            raise ValueError(f"t must be in [{self._last_time}, {self.end}] days; got {t!r}")
        self._advance(
            np.empty(0, dtype=np.intp), np.empty(0), float(t), np.empty(0, dtype=np.bool_)
        )
        self._last_time = float(t)
        out = Integrals.from_array(self._acc)
        self._acc[:] = 0.0
        return out
