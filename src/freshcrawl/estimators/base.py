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

from freshcrawl.estimators._checks import (
    check_batch,
    check_changed,
    check_delta0,
    check_n_pages,
    check_p,
    check_tau,
)

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
    """State and update dispatch common to every batch estimator.

    ``update`` checks the whole batch (:func:`check_batch`) before anything is mutated, then hands the
    converted arrays to ``_apply(pages, changed, tau, p)``, the one method a subclass writes (it runs the
    estimator's numba loop). ``_needs_tau`` / ``_needs_p`` say which observations the rule requires; a
    missing ``p`` is 1/tau when ``tau`` is given.
    """

    _needs_tau = False
    _needs_p = True

    def __init__(self, n_pages: int, *, delta0: float = 1.0) -> None:
        self.n_pages = check_n_pages(n_pages)
        self.delta0 = check_delta0(delta0)
        self.delta_ = np.full(self.n_pages, self.delta0)
        self.n_visits_ = np.zeros(self.n_pages, dtype=np.int64)

    def update(
        self, pages: ArrayLike, changed: ArrayLike, tau: ArrayLike | None = None, p: ArrayLike | None = None
    ) -> None:
        """Add one visit of each page in ``pages`` (intp, shape (m,), distinct), or k visits row by row.

        ``changed`` (bool or 0/1), ``tau`` (days since the page's previous visit) and ``p`` (visit rate in
        force before the visit, visits per day) have shape (m,) or (k, m). Observations the rule does not
        use are checked when given; a missing ``p`` is 1/tau. Nothing is changed when a check fails.

        Raises
        ------
        TypeError
            If the rule needs ``tau`` or ``p`` and it is missing, or an array has the wrong kind.
        InvalidObservation
            Length mismatch, a page outside ``[0, n_pages)``, a flag not 0/1, tau or p not finite and > 0.
        ValueError
            A page listed twice.
        """
        self._apply(*self._checked(pages, changed, tau, p))

    def _apply(self, pages, changed, tau, p) -> None:  # pragma: no cover - every estimator overrides it
        raise NotImplementedError

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

    def __getstate__(self) -> dict:
        # the duplicate-detection scratch is rebuilt on the next update: no need to pickle it
        state = dict(vars(self))
        state.pop("_mark", None)
        return state

    def __setstate__(self, state: dict) -> None:
        vars(self).update(state)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_pages={self.n_pages})"


class _LazyBatchBase(_BatchBase):
    """A batch estimator whose ``delta_`` is re-solved on read, only for the pages updated since.

    Subclasses mark pages in ``_dirty`` from ``_apply`` and write ``_solve(dirty_pages)``, which updates
    ``_delta`` in place (the likelihood / moment equations of the MLE and MM forms).
    """

    def __init__(self, n_pages: int, *, delta0: float = 1.0) -> None:
        super().__init__(n_pages, delta0=delta0)
        self._dirty = np.zeros(self.n_pages, dtype=np.bool_)

    def _solve(self, dirty_pages: NDArray[np.intp]) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    @property
    def delta_(self) -> NDArray[np.float64]:
        """Estimates, shape (n_pages,), changes per day; pages updated since the last read are re-solved."""
        if self._dirty.any():
            self._solve(np.flatnonzero(self._dirty))
            self._dirty[:] = False
        return self._delta

    @delta_.setter
    def delta_(self, value: NDArray[np.float64]) -> None:
        self._delta = value


class _StreamBase:
    """State and update dispatch common to every streaming estimator.

    ``update`` checks one observation, then calls ``_step(changed, tau, p)``, the one method a subclass
    writes. ``_needs_tau`` / ``_needs_p`` say which observations the rule requires (the other is checked
    when given and passed as None when not); with ``_p_from_tau`` a missing ``p`` is 1/tau.
    """

    _needs_tau = False
    _needs_p = True
    _p_from_tau = False

    def __init__(self, *, delta0: float = 1.0) -> None:
        self.delta0 = check_delta0(delta0)
        self.delta_ = self.delta0
        self.n_visits_ = 0

    def update(self, changed: bool, tau: float | None = None, p: float | None = None) -> None:
        """Add one visit: ``changed`` (0/1) after ``tau`` days, at ``p`` visits per day.

        Which of ``tau`` and ``p`` the rule uses is in the class docstring; one it does not use is
        checked when given.

        Raises
        ------
        TypeError
            If the rule needs ``tau`` or ``p`` and it is missing, or it is not a real number.
        InvalidObservation
            If ``changed`` is not 0/1, or ``tau`` or ``p`` is given and not finite and > 0.
        """
        # checks inline (not in a separate method): this is the per-visit path of the streaming objects
        c = check_changed(changed)
        if tau is None:
            if self._needs_tau:
                raise TypeError(f"{type(self).__name__}.update needs tau (days since the previous visit)")
            t = None
        else:
            t = check_tau(tau)
        if p is not None:
            pv = check_p(p)
        elif self._p_from_tau and t is not None:
            pv = 1.0 / t
        elif self._needs_p:
            raise TypeError(f"{type(self).__name__}.update needs p (visits per day)")
        else:
            pv = None
        self._step(c, t, pv)

    def _step(self, changed: bool, tau: float | None, p: float | None) -> None:  # pragma: no cover
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(delta_={self.delta_:.6g}, n_visits_={self.n_visits_})"
