"""The shared machinery of the likelihood-based estimators: maximum likelihood and moment matching.

Both solve one monotone equation in Δ on a page's visits (eq. (15) of seed 001 for the MLE; Σ(1 − I_j) =
Σ e^{−Δτ_j} for moment matching), either on the whole history (exact, O(k) per update) or on interval
slots (binned, O(n_bins) per update). The classes here hold the history or the slots and call the
vectorised solve of :mod:`freshcrawl.estimators._kernels`; the class attribute ``_use_mm`` picks the
equation. :mod:`~freshcrawl.estimators.mle` and :mod:`~freshcrawl.estimators.moments` define the public
classes as the two variants of these bases (``_use_mm = False`` / ``True``).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from freshcrawl._validation import check_int, check_positive
from freshcrawl.errors import InvalidObservation
from freshcrawl.estimators import _kernels as K
from freshcrawl.estimators._checks import check_half_life
from freshcrawl.estimators.base import _LazyBase

__all__ = ["_Binned", "_Exact", "_history", "exact_path", "solve_exact"]


def _history(changed: ArrayLike, tau: ArrayLike) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    ch = np.asarray(changed)
    ta = np.asarray(tau, dtype=np.float64)
    if ch.ndim != 1 or ta.ndim != 1 or ch.shape != ta.shape:
        raise InvalidObservation(
            f"changed and tau must be 1-d arrays of the same length; got shapes {ch.shape} and {ta.shape}"
        )
    if ch.dtype != np.bool_:
        if ch.size and (ch.dtype.kind not in "iuf" or not np.all((ch == 0) | (ch == 1))):
            bad = (
                np.flatnonzero(~((ch == 0) | (ch == 1)))
                if ch.dtype.kind in "iuf"
                else np.array([0])
            )
            raise InvalidObservation(
                f"changed must be 0 or 1; first offender at index {bad[0]} ({ch[bad[0]].item()!r})"
            )
        ch = ch.astype(np.bool_)
    bad = ~((ta > 0) & np.isfinite(ta))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidObservation(
            f"tau must be finite and > 0 days since the previous visit; {int(bad.sum())} of {ta.size} entries "
            f"are not, first at index {i} ({ta[i].item()!r})"
        )
    return np.ascontiguousarray(ch), np.ascontiguousarray(ta)


def solve_exact(changed: ArrayLike, tau: ArrayLike, delta0: float, use_mm: bool) -> float:
    """The exact MLE (or, with ``use_mm``, moment-matching) estimate of one page's whole history;
    ``delta0`` when it has no visit. Raises InvalidObservation as :func:`_history`."""
    ch, ta = _history(changed, tau)
    if ta.size == 0:
        return float(delta0)
    return float(K.exact_roots(ch, ta, np.zeros(ta.size, dtype=np.intp), 1, use_mm)[0])


def exact_path(changed: ArrayLike, tau: ArrayLike, use_mm: bool) -> NDArray[np.float64]:
    """The exact MLE (or MM) estimate after each visit 1..k of one page: shape (k,)."""
    ch, ta = _history(changed, tau)
    return K.exact_path(ch, ta, use_mm)


class _Exact(_LazyBase):
    """Every visit kept in one log of (page, changed, tau); a page's equation is re-solved on read."""

    _needs_tau = True
    _needs_p = False
    _use_mm = False

    def __init__(self, n_pages: int = 1, *, delta0: float = 1.0) -> None:
        super().__init__(n_pages, delta0=delta0)
        self._log_pages = np.empty(0, dtype=np.intp)
        self._log_changed = np.empty(0, dtype=np.bool_)
        self._log_tau = np.empty(0)
        self._n_log = 0

    def _apply(self, pg, ch, ta, pr) -> None:
        """Append k visits of each page in ``pg`` (m,); ``ta`` (k, m) days. The solve is deferred."""
        k = ch.shape[0]
        m = pg.shape[0] * k
        need = self._n_log + m
        if need > self._log_tau.shape[0]:
            cap = max(need, 2 * self._log_tau.shape[0], 1024)
            for name in ("_log_pages", "_log_changed", "_log_tau"):
                old = getattr(self, name)
                new = np.empty(cap, dtype=old.dtype)
                new[: self._n_log] = old[: self._n_log]
                setattr(self, name, new)
        self._log_pages[self._n_log : need] = pg if k == 1 else np.tile(pg, k)
        self._log_changed[self._n_log : need] = ch.ravel()
        self._log_tau[self._n_log : need] = ta.ravel()
        self._n_log = need
        self.n_visits_[pg] += k
        self._dirty[pg] = True

    def _solve(self, dirty: NDArray[np.intp]) -> None:
        n = self._n_log
        K.exact_batch_solve(
            self._log_pages[:n],
            self._log_changed[:n],
            self._log_tau[:n],
            dirty,
            self._delta,
            self._use_mm,
        )


class _Binned(_LazyBase):
    """Per page, ``n_bins`` interval slots on a log scale (optionally decayed); re-solved on read."""

    _needs_tau = True
    _needs_p = False
    _use_mm = False

    def __init__(
        self,
        n_pages: int = 1,
        *,
        n_bins: int = 16,
        bin_ratio: float = 1.1,
        delta0: float = 1.0,
        half_life: float | None = None,
    ) -> None:
        super().__init__(n_pages, delta0=delta0)
        self.n_bins = check_int("n_bins", n_bins, low=2, what=" (interval slots per page)")
        self.bin_ratio = check_positive("bin_ratio", bin_ratio)
        if not self.bin_ratio > 1.0:
            raise ValueError(
                f"bin_ratio must be > 1 (ratio of a slot's largest to smallest interval); got {bin_ratio!r}"
            )
        self._log_width = math.log(self.bin_ratio)
        self.half_life = check_half_life(half_life)
        self._key = np.full((self.n_pages, self.n_bins), np.nan)  # NaN: a free slot
        self._st = np.zeros((self.n_pages, self.n_bins, 6))
        if self.half_life is not None:
            self._n_eff = np.zeros(self.n_pages)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        # a free slot has a NaN key (saved states may hold any key there)
        self._key[self._st[:, :, 0] + self._st[:, :, 1] == 0.0] = np.nan

    def _apply(self, pg, ch, ta, pr) -> None:
        """k visits of each page in ``pg`` (m,); ``ta`` (k, m) days. O(n_bins) per visit."""
        K.binned_batch(
            pg,
            ch,
            ta,
            self.n_visits_,
            self._key,
            self._st,
            self._log_width,
            decay_per_day=None if self.half_life is None else math.log(2.0) / self.half_life,
            n_eff=getattr(self, "_n_eff", None),
        )
        self._dirty[pg] = True

    def _solve(self, dirty: NDArray[np.intp]) -> None:
        K.binned_solve(dirty, self._st, self.n_visits_, self._delta, self._use_mm)

    @property
    def n_eff_(self) -> NDArray[np.float64]:
        """Effective number of visits per page, shape (n_pages,): Σ_j 2^{-(t - t_j)/half_life} over the
        page's visits j, t its last visit (``n_visits_`` as floats without forgetting)."""
        if self.half_life is None:
            return self.n_visits_.astype(np.float64)
        return self._n_eff
