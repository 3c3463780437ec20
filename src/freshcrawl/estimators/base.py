"""Shared machinery of the estimators: the protocol they follow and their common state and methods.

One class per estimator holds the state of ``n_pages`` pages (default 1) in arrays of shape ``(n_pages,)``
and learns from visits as river's models do:

- ``learn_one(page, changed, tau=None, p=None)``: one visit of one page (streaming);
- ``learn_many(pages, changed, tau=None, p=None)``: one visit of each listed page, or k visits of each
  (row by row, the same as k calls), all pages of a row at once (batch). ``pages`` has shape (m,) with
  distinct entries; ``changed``, ``tau`` and ``p`` have shape (m,) or (k, m);
- ``predict_one(page)`` / ``predict_many(pages)`` and the array ``delta_``: the current estimates.

Both learning methods check their input and then run the same update (see ``_kernels``), so they
cannot drift apart. Units: ``tau`` in days since the previous visit of the page, ``p`` in visits per day
(the rate in force before the visit), estimates in changes per day. Before a page's first visit its
estimate is the prior ``delta0``.
"""

from __future__ import annotations

import operator
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from freshcrawl.errors import InvalidObservation
from freshcrawl.estimators._checks import (
    check_batch,
    check_changed,
    check_delta0,
    check_n_pages,
    check_p,
    check_tau,
)

__all__ = ["BatchEstimator", "Estimator"]


@runtime_checkable
class Estimator(Protocol):
    """Change-rate estimators of ``n_pages`` pages held in arrays.

    Attributes
    ----------
    n_pages : int
        Number of pages (indices ``0 .. n_pages-1``).
    delta_ : ndarray of float64, shape (n_pages,)
        Current estimates, changes per day; finite and >= 0; the prior ``delta0`` before a page's first
        visit.
    n_visits_ : ndarray of int64, shape (n_pages,)
        Observations used per page.
    """

    n_pages: int
    delta_: NDArray[np.float64]
    n_visits_: NDArray[np.int64]

    def learn_one(
        self, page: int, changed: bool, tau: float | None = None, p: float | None = None
    ) -> None:
        """Learn from one visit of ``page``: ``changed`` since the previous one, ``tau`` days after it."""

    def learn_many(
        self,
        pages: ArrayLike,
        changed: ArrayLike,
        tau: ArrayLike | None = None,
        p: ArrayLike | None = None,
    ) -> None:
        """Learn from one visit of each listed page (pages distinct within a call), or k rows of them."""

    def predict_one(self, page: int = 0) -> float:
        """Current estimate of ``page``, changes per day."""


#: The protocol under the name the batch callers use.
BatchEstimator = Estimator


class _Base:
    """State, checks and dispatch common to every estimator.

    ``learn_one`` and ``learn_many`` check their input before anything is mutated, then hand 2-d arrays
    (k, m) to ``_apply(pages, changed, tau, p)``, the one method a subclass writes (it runs the
    estimator's update). ``_needs_tau`` / ``_needs_p`` say which observations the rule requires (one
    it does not use is checked when given); with ``_p_from_tau`` a missing ``p`` is 1/tau.
    """

    _needs_tau = False
    _needs_p = True
    _p_from_tau = False

    def __init__(self, n_pages: int = 1, *, delta0: float = 1.0) -> None:
        self.n_pages = check_n_pages(n_pages)
        self.delta0 = check_delta0(delta0)
        self.delta_ = np.full(self.n_pages, self.delta0)
        self.n_visits_ = np.zeros(self.n_pages, dtype=np.int64)

    def _apply(self, pages, changed, tau, p) -> None:
        raise NotImplementedError  # pragma: no cover - every estimator overrides it

    def _require(self, method: str, tau_given: bool, p_given: bool) -> None:
        if self._needs_tau and not tau_given:
            raise TypeError(
                f"{type(self).__name__}.{method} needs tau (days since the previous visit)"
            )
        if self._needs_p and not p_given and not (self._p_from_tau and tau_given):
            raise TypeError(f"{type(self).__name__}.{method} needs p (visits per day)")

    def learn_one(
        self, page: int, changed: bool, tau: float | None = None, p: float | None = None
    ) -> None:
        """Add one visit of ``page``: ``changed`` (0/1) after ``tau`` days, at ``p`` visits per day.

        Which of ``tau`` and ``p`` the rule uses is in the class docstring; one it does not use is
        checked when given. Runs the loop of :meth:`learn_many` on this one observation.

        Raises
        ------
        TypeError
            If the rule needs ``tau`` or ``p`` and it is missing, or ``page``, ``tau`` or ``p`` is not a
            number of the right kind.
        InvalidObservation
            If ``page`` is outside ``[0, n_pages)``, ``changed`` is not 0/1, or ``tau`` or ``p`` is given
            and not finite and > 0.
        """
        j = self._page(page, InvalidObservation)
        c = check_changed(changed)
        t = 1.0 if tau is None else check_tau(tau)
        pv = 1.0 if p is None else check_p(p)
        self._require("learn_one", tau is not None, p is not None)
        if p is None and tau is not None:
            pv = 1.0 / t
        one = getattr(self, "_one", None)
        if one is None:
            one = self._one = (
                np.zeros(1, np.intp),
                np.zeros((1, 1), np.bool_),
                np.ones((1, 1)),
                np.ones((1, 1)),
            )
        one[0][0] = j
        one[1][0, 0] = c
        one[2][0, 0] = t
        one[3][0, 0] = pv
        self._apply(*one)

    def learn_many(
        self,
        pages: ArrayLike,
        changed: ArrayLike,
        tau: ArrayLike | None = None,
        p: ArrayLike | None = None,
    ) -> None:
        """Add one visit of each page in ``pages`` (int, shape (m,), distinct), or k visits row by row.

        ``changed`` (bool or 0/1), ``tau`` (days since the page's previous visit) and ``p`` (visit rate in
        force before the visit, visits per day) have shape (m,) or (k, m); row r of a (k, m) call is the
        r-th of k successive visits, the same as k calls. Nothing is changed when a check fails.

        Raises
        ------
        TypeError
            If the rule needs ``tau`` or ``p`` and it is missing, or an array has the wrong kind.
        InvalidObservation
            Length mismatch, a page outside ``[0, n_pages)``, a flag not 0/1, tau or p not finite and > 0.
        ValueError
            A page listed twice.
        """
        self._require("learn_many", tau is not None, p is not None)
        pg, ch, ta, pr = check_batch(pages, changed, tau, p, self.n_pages)
        if p is None and tau is not None:
            pr = 1.0 / ta
        self._apply(pg, ch, ta, pr)

    #: :meth:`learn_many` under the name the batch callers use.
    update = learn_many

    def _page(self, page: int, error: type[Exception] = IndexError) -> int:
        try:
            j = operator.index(page)
        except TypeError:
            raise TypeError(
                f"page must be an integer page index; got {type(page).__name__} {page!r}"
            ) from None
        if not 0 <= j < self.n_pages:
            raise error(f"page must be in [0, {self.n_pages}); got {j}")
        return j

    def _pages(self, pages: ArrayLike) -> NDArray[np.intp]:
        pg = np.asarray(pages)
        if pg.size and pg.dtype.kind not in "iu":
            raise TypeError(f"pages must be an array of integer page indices; got dtype {pg.dtype}")
        pg = pg.astype(np.intp, copy=False)
        if pg.size and (pg.min() < 0 or pg.max() >= self.n_pages):
            raise IndexError(f"pages must be in [0, {self.n_pages}); got {pg.min()} .. {pg.max()}")
        return pg

    def _read(self, pages: NDArray[np.intp]) -> NDArray[np.float64]:
        """Current estimates of ``pages`` (int, shape (m,))."""
        return self.delta_[pages]

    def predict_one(self, page: int = 0) -> float:
        """Current estimate of ``page`` (default 0, the page of a one-page estimator), changes per day.

        Raises
        ------
        TypeError
            If ``page`` is not an integer.
        IndexError
            If ``page`` is outside ``[0, n_pages)``.
        """
        return float(self._read(np.array([self._page(page)], dtype=np.intp))[0])

    def predict_many(self, pages: ArrayLike) -> NDArray[np.float64]:
        """Current estimates of ``pages`` (int, shape (m,)): float64, shape (m,), changes per day.

        Raises
        ------
        TypeError
            If ``pages`` are not integers.
        IndexError
            If a page is outside ``[0, n_pages)``.
        """
        return self._read(self._pages(pages))

    @property
    def state_nbytes(self) -> int:
        """Bytes of per-page estimator state (arrays of shape ``(n_pages, ...)``)."""
        return int(sum(v.nbytes for v in vars(self).values() if isinstance(v, np.ndarray)))

    def __getstate__(self) -> dict:
        # the scratch arrays of learn_one are rebuilt on the next call: no need to pickle them
        state = dict(vars(self))
        state.pop("_one", None)
        return state

    def __setstate__(self, state: dict) -> None:
        vars(self).update(state)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_pages={self.n_pages})"


class _LazyBase(_Base):
    """An estimator whose ``delta_`` is re-solved on read, only for the pages updated since.

    Subclasses mark pages in ``_dirty`` from ``_apply`` and write ``_solve(dirty_pages)``, which updates
    ``_delta`` in place (the likelihood / moment equations of the MLE and MM forms).
    """

    def __init__(self, n_pages: int = 1, *, delta0: float = 1.0) -> None:
        super().__init__(n_pages, delta0=delta0)
        self._dirty = np.zeros(self.n_pages, dtype=np.bool_)

    def _solve(self, dirty_pages: NDArray[np.intp]) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def _read(self, pages: NDArray[np.intp]) -> NDArray[np.float64]:
        """Current estimates of ``pages`` (int, shape (m,)); only the stale ones are re-solved."""
        stale = np.unique(pages[self._dirty[pages]])
        if stale.size:
            self._solve(stale)
            self._dirty[stale] = False
        return self._delta[pages]

    @property
    def delta_(self) -> NDArray[np.float64]:
        """Estimates, shape (n_pages,), changes per day; pages updated since the last read are re-solved."""
        self._read(np.flatnonzero(self._dirty))
        return self._delta

    @delta_.setter
    def delta_(self, value: NDArray[np.float64]) -> None:
        self._delta = value
