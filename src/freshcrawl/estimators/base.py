"""Shared machinery of the estimators: the protocols both shapes follow and their common state.

Every estimator exists in two shapes that call the same numba step (see ``_kernels``):

- a streaming object for one page, ``update(changed, tau, p) -> None``, attribute ``delta_`` (float);
- a batch object over ``n_pages`` pages, ``update(pages, changed, tau, p) -> None``, attributes
  ``delta_`` and ``n_visits_`` of shape ``(n_pages,)``. ``pages`` has shape (m,) with distinct entries;
  ``changed``, ``tau`` and ``p`` have shape (m,), or (k, m) for k successive visits of each listed page
  (row by row, the same as k calls).

Units: ``tau`` in days since the previous visit of the page, ``p`` in visits per day, ``delta_`` in changes
per day. Before the first visit ``delta_`` is the prior ``delta0``.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from freshcrawl.estimators._checks import check_batch, check_delta0, check_n_pages

__all__ = ["StreamingEstimator", "BatchEstimator"]


@runtime_checkable
class StreamingEstimator(Protocol):
    """One page's change-rate estimator.

    Attributes
    ----------
    delta_ : float
        Current estimate, changes per day; finite and >= 0; the prior ``delta0`` before any visit.
    n_visits_ : int
        Number of observations used.
    """

    delta_: float
    n_visits_: int

    def update(self, changed: bool, tau: float | None = None, p: float | None = None) -> None:
        """Learn from one visit: ``changed`` since the previous visit, ``tau`` days after it, rate ``p``."""


@runtime_checkable
class BatchEstimator(Protocol):
    """Change-rate estimators of ``n_pages`` pages held in arrays.

    Attributes
    ----------
    n_pages : int
        Number of pages (indices ``0 .. n_pages-1``).
    delta_ : ndarray of float64, shape (n_pages,)
        Current estimates, changes per day; finite and >= 0.
    n_visits_ : ndarray of int64, shape (n_pages,)
        Observations used per page.
    """

    n_pages: int
    delta_: NDArray[np.float64]
    n_visits_: NDArray[np.int64]

    def update(
        self, pages: ArrayLike, changed: ArrayLike, tau: ArrayLike | None = None, p: ArrayLike | None = None
    ) -> None:
        """Learn from one observation of each listed page (pages distinct within a call)."""


class _BatchBase:
    """State common to every batch estimator: ``n_pages``, ``delta0``, ``delta_``, ``n_visits_``."""

    _needs_tau = False
    _needs_p = True

    def __init__(self, n_pages: int, *, delta0: float = 1.0) -> None:
        self.n_pages = check_n_pages(n_pages)
        self.delta0 = check_delta0(delta0)
        self.delta_ = np.full(self.n_pages, self.delta0)
        self.n_visits_ = np.zeros(self.n_pages, dtype=np.int64)

    def _checked(self, pages, changed, tau, p):
        if self._needs_tau and tau is None:
            raise TypeError(f"{type(self).__name__}.update needs tau (days since the previous visit)")
        if self._needs_p and p is None:
            if not self._needs_tau or tau is None:
                raise TypeError(f"{type(self).__name__}.update needs p (visits per day)")
        if getattr(self, "_mark", None) is None:
            self._mark = np.zeros(self.n_pages, dtype=np.bool_)
        pg, ch, ta, pr = check_batch(pages, changed, tau, p, self.n_pages, self._mark)
        if p is None and tau is not None:
            pr = 1.0 / ta
        return pg, ch, ta, pr

    @property
    def state_nbytes(self) -> int:
        """Bytes of per-page estimator state (arrays of shape ``(n_pages, ...)``), not counting the
        1-byte-per-page scratch used to detect duplicate pages in unsorted updates."""
        return int(sum(v.nbytes for k, v in vars(self).items() if isinstance(v, np.ndarray) and k != "_mark"))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_pages={self.n_pages})"


class _StreamBase:
    """State common to every streaming estimator."""

    def __init__(self, *, delta0: float = 1.0) -> None:
        self.delta0 = check_delta0(delta0)
        self.delta_ = self.delta0
        self.n_visits_ = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(delta_={self.delta_:.6g}, n_visits_={self.n_visits_})"
