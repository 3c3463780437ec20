"""The per-page data of an allocation problem and the pass from multipliers to rates.

A :class:`PageProblem` holds the checked per-page inputs of :func:`freshcrawl.allocation.allocate`.
Its :meth:`PageProblem.rates` is the one pass every solver step makes: each page's optimal rate
``p_i(λ_i) = clip(g_i(λ_i), p_min_i, p_max_i)`` for its multiplier λ_i (``g_i`` the inverse of its
marginal value ``w_i f_i'``) and the derivative ``dp_i/dλ_i``; :func:`group_sums` adds them up per
host with ``np.bincount``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from freshcrawl.allocation import _kinds as Q
from freshcrawl.allocation.objectives import Objective

__all__ = ["CHUNK", "PageProblem", "group_sums"]

#: Pages per chunk of a pass (Poisson and periodic freshness, harmonic staleness, detection): each of
#: the pass's dozen array operations then works on arrays that stay in the core's cache instead of
#: streaming arrays of n pages through memory.
CHUNK = 1 << 14

Array = NDArray[np.float64]


@dataclass
class PageProblem:
    """Per-page data of one allocation problem.

    Attributes
    ----------
    n : int
        Number of pages.
    kind : int
        Objective kind of the pages (a code of ``freshcrawl.allocation._kinds``), or -1 for a
        user-defined :class:`Objective` solved through its numpy methods.
    w, a, b, lo, hi : ndarray of float, shape (n,) or (1,)
        Weight, the kind's parameters, and the bounds p_min, p_max (visits/day); shape (1,) when
        shared by every page.
    others : list of (int, ndarray of intp)
        Pages of another kind than ``kind`` (pages observed completely), as (kind, page indices).
    offset : float
        Constant added to every page's f (the binary synchronization cost).
    custom : Objective or None
        A user-defined objective (with ``delta``, shape (n,)) when ``kind`` is -1.
    lam0, host_lam0 : float or None, ndarray or None
        A warm start: λ and per-host multipliers of a previous solve.
    """

    n: int
    kind: int
    w: Array
    a: Array
    b: Array
    lo: Array
    hi: Array
    others: list = field(default_factory=list)
    offset: float = 0.0
    custom: Objective | None = None
    delta: Array | None = None
    lam0: float | None = None
    host_lam0: Array | None = None
    _scratch: Q.Scratch | None = field(default=None, repr=False)
    _static: Array | None = field(default=None, repr=False)
    _out: tuple | None = field(default=None, repr=False)

    def has_jumps(self) -> bool:
        """Whether Σp may jump where a page enters (a flat or constant marginal value)."""
        return self.kind in Q.FLAT_KINDS or any(k in Q.FLAT_KINDS for k, _ in self.others)

    def _parts(self):
        """(kind, page indices or None, w, a, b, lo, hi) of each kind's pages."""
        main = (self.kind, None, self.w, self.a, self.b, self.lo, self.hi)
        return [main] + [
            (k, i, *(_pick(x, i) for x in (self.w, self.a, self.b, self.lo, self.hi)))
            for k, i in self.others
        ]

    def rates(self, lam: float | Array, *, scratch: bool = False) -> tuple[Array, Array]:
        """Rates p_i(λ_i) and dp_i/dλ_i, each of shape (n,), for λ a scalar or of shape (n,).

        λ = 0 gives p_max to pages of positive marginal value; λ = inf gives p_min. With ``scratch``
        the arrays may be the problem's own, valid until its next pass (no allocation of n-arrays for
        the objectives of :func:`freshcrawl.allocation._kinds.response_into`).
        """
        if self.kind < 0:
            return self._custom_rates(lam)
        if self._fast(lam):
            if scratch:
                if self._out is None:
                    self._out = (np.empty(self.n), np.empty(self.n))
                p, dp = self._out
            else:
                p, dp = np.empty(self.n), np.empty(self.n)
            for sl, pc, dc in self._chunks(lam):
                p[sl], dp[sl] = pc, dc
            return p, dp
        p = dp = None
        for kind, idx, w, a, b, lo, hi in self._parts():
            lam_k = lam if idx is None or np.ndim(lam) == 0 else lam[idx]
            pk, dk = Q.response(kind, lam_k, w, a, b, lo, hi)
            if idx is None:
                p, dp = np.broadcast_to(pk, (self.n,)).copy(), np.broadcast_to(dk, (self.n,)).copy()
            else:
                p[idx], dp[idx] = pk, dk
        return p, dp

    def _fast(self, lam) -> bool:
        """Whether the chunked pass of :func:`_kinds.response_into` covers this problem at λ."""
        if self.kind not in (Q.POISSON, Q.HARMONIC, Q.PERIODIC, Q.DETECTION) or self.others:
            return False
        if not (lam > 0 if np.ndim(lam) == 0 else np.all(lam > 0)):
            return False
        if self._scratch is None:
            self._scratch = Q.Scratch(min(self.n, CHUNK))
            with np.errstate(all="ignore"):
                self._static = (
                    np.sqrt(self.w * self.a)
                    if self.kind == Q.POISSON
                    else (self.w > 0) & (self.a > 0) & (self.hi > self.lo)
                )
        return True

    def _chunks(self, lam):
        """(slice, rates, derivatives) of the pages, CHUNK pages at a time (views of the scratch)."""
        n = self.n
        per_page = [
            x if x.shape[0] > 1 else None for x in (self.w, self.a, self.b, self.lo, self.hi)
        ]
        static = self._static if np.ndim(self._static) and self._static.shape[0] > 1 else None
        for start in range(0, n, CHUNK):
            sl = slice(start, min(n, start + CHUNK))
            m = sl.stop - start
            s = self._scratch if m == self._scratch.p.shape[0] else self._scratch.head(m)
            w, a, b, lo, hi = (
                x[sl] if x is not None else y
                for x, y in zip(per_page, (self.w, self.a, self.b, self.lo, self.hi), strict=True)
            )
            st = static[sl] if static is not None else self._static
            Q.response_into(
                self.kind, lam if np.ndim(lam) == 0 else lam[sl], w, a, b, lo, hi, s, st
            )
            yield sl, s.p, s.dp

    def sums(
        self, lam: float | Array, groups: NDArray[np.intp] | None = None, n_groups: int = 1
    ) -> tuple[Array, Array]:
        """Σ p_i(λ_i) and Σ dp_i/dλ_i per group (shape (n_groups,); one group without ``groups``)."""
        if not self._fast(lam):
            p, dp = self.rates(lam, scratch=True)
            if groups is None:
                return np.array([p.sum()]), np.array([dp.sum()])
            return group_sums(p, dp, groups, n_groups)
        s, ds = np.zeros(n_groups), np.zeros(n_groups)
        for sl, p, dp in self._chunks(lam):
            if groups is None:
                s[0] += p.sum()
                ds[0] += dp.sum()
            else:
                s += np.bincount(groups[sl], weights=p, minlength=n_groups)
                ds += np.bincount(groups[sl], weights=dp, minlength=n_groups)
        return s, ds

    def marginal(self, p: Array) -> Array:
        """w_i f_i'(p_i), shape (n,): 0 for a page of no value."""
        if self.kind < 0:
            with np.errstate(all="ignore"):
                m = self.w * np.asarray(self.custom.derivative(p, self.delta), dtype=np.float64)
            return np.where(self.w > 0, m, 0.0)
        m = None
        for kind, idx, w, a, b, _, _ in self._parts():
            mk = Q.marginal(kind, p if idx is None else p[idx], w, a, b)
            if idx is None:
                m = np.broadcast_to(mk, (self.n,)).copy()
            else:
                m[idx] = mk
        return m

    def objective(self, p: Array) -> float:
        """Σ_i w_i (f_i(p_i) + offset), pages with w_i = 0 left out."""
        if self.kind < 0:
            with np.errstate(all="ignore"):
                v = np.asarray(self.custom.value(p, self.delta), dtype=np.float64)
            return float(np.sum(np.where(self.w > 0, self.w * v, 0.0)))
        if not self.others and self.n > CHUNK:  # by chunks: no n-sized temporaries
            return sum(
                self.chunk(slice(i, min(self.n, i + CHUNK))).objective(p[i : i + CHUNK])
                for i in range(0, self.n, CHUNK)
            )
        v = None
        with np.errstate(all="ignore"):
            for kind, idx, w, a, b, _, _ in self._parts():
                vk = w * (Q.value(kind, p if idx is None else p[idx], a, b) + self.offset)
                vk = np.where(np.broadcast_to(w, vk.shape) > 0, vk, 0.0)
                if idx is None:
                    v = np.broadcast_to(vk, (self.n,)).copy()
                else:
                    v[idx] = vk
        return float(np.sum(v))

    def active(self) -> NDArray[np.bool_]:
        """Pages with a positive marginal value at some rate, shape (n,)."""
        if self.kind < 0:
            return self._custom_active()
        out = None
        for kind, idx, w, a, b, _, _ in self._parts():
            ak = np.broadcast_to(Q.active(kind, w, a, b), (self.n,) if idx is None else idx.shape)
            if idx is None:
                out = ak.copy()
            else:
                out[idx] = ak
        return out

    def chunk(self, sl: slice) -> PageProblem:
        """The pages of ``sl`` (views), for a problem of one kind."""
        return PageProblem(
            sl.stop - sl.start,
            self.kind,
            *(x if x.shape[0] == 1 else x[sl] for x in (self.w, self.a, self.b, self.lo, self.hi)),
            offset=self.offset,
        )

    def subset(self, idx: NDArray[np.intp]) -> PageProblem:
        """The problem of the pages ``idx`` alone (same objective and bounds; no start)."""
        pos = np.full(self.n, -1, dtype=np.intp)
        pos[idx] = np.arange(idx.size)
        others = [(k, pos[i][pos[i] >= 0]) for k, i in self.others]
        return PageProblem(
            idx.size,
            self.kind,
            *(_pick(x, idx) for x in (self.w, self.a, self.b, self.lo, self.hi)),
            others=[(k, i) for k, i in others if i.size],
            offset=self.offset,
            custom=self.custom,
            delta=None if self.delta is None else self.delta[idx],
        )

    def jump_points(self) -> Array | None:
        """Per page the multiplier at which it may enter with a jump of its rate, NaN where none, shape (n,);
        None when no page has one: a constant marginal value, or a flat one where the rate leaves p_min
        (periodic freshness and detection, whose rate a/x jumps from p_min to about a/37 where the
        float64 y = λ/(w f'(0)) reaches 1)."""
        if self.kind < 0 or not self.has_jumps():
            return None
        out = np.full(self.n, np.nan)
        with np.errstate(all="ignore"):
            for kind, idx, w, a, b, lo, hi in self._parts():
                if kind not in Q.FLAT_KINDS:
                    continue
                e = {Q.PERIODIC: w / a, Q.DETECTION: w, Q.LINEAR: w * a}[kind]
                ok = (
                    (w > 0)
                    & (hi > lo)
                    & ((30.0 * lo < a) | (kind == Q.LINEAR))
                    & np.isfinite(e)
                    & (e > 0)
                )
                e = np.where(ok, e, np.nan)
                if idx is None:
                    out[:] = e
                else:
                    out[idx] = e
        return out

    # -- user-defined objectives: the rates by bisection on w f'(p) = λ -----------------------------
    def _deriv(self, p):
        with np.errstate(all="ignore"):
            return np.asarray(self.custom.derivative(p, self.delta), dtype=np.float64)

    def _custom_active(self):
        w, lo, hi = (np.broadcast_to(x, (self.n,)) for x in (self.w, self.lo, self.hi))
        with np.errstate(all="ignore"):
            m0 = w * self._deriv(lo.copy())
        return (w > 0) & (m0 > 0) & (hi > lo)

    def _custom_rates(self, lam):
        p = self._custom_response(lam)
        p2 = self._custom_response(np.asarray(lam) * (1.0 + 1e-7))
        with np.errstate(all="ignore"):
            dp = (p2 - p) / (np.asarray(lam) * 1e-7)
        return p, np.where(np.isfinite(dp), dp, 0.0)

    def _custom_response(self, lam):
        n = self.n
        w, lo, hi = (np.broadcast_to(x, (n,)) for x in (self.w, self.lo, self.hi))
        lam = np.broadcast_to(np.asarray(lam, dtype=np.float64), (n,))
        act = self._custom_active() & (lam < np.inf)
        p = lo.copy()
        zero = act & (lam <= 0)
        p[zero] = hi[zero]
        act &= lam > 0
        if not act.any():
            return p
        obj = self.custom
        with np.errstate(all="ignore"):
            if type(obj).inverse_marginal is not Objective.inverse_marginal:
                g = np.asarray(
                    obj.inverse_marginal(lam / np.where(w > 0, w, 1.0), self.delta),
                    dtype=np.float64,
                )
                p[act] = np.clip(g[act], lo[act], hi[act])
                return p
            a = lo.copy()
            b = np.where(np.isfinite(hi), hi, np.maximum(lo, 1.0))
            need = act & ~np.isfinite(hi)
            for _ in range(2100):  # grow the upper end until the marginal value falls below λ
                if not need.any():
                    break
                need &= (w * self._deriv(b) > lam) & (b < 1e300)
                b[need] *= 2.0
            top = act & (w * self._deriv(b) >= lam)
            p[top] = b[top]
            p[act & ~np.isfinite(hi) & (b >= 1e300) & (w * self._deriv(b) > lam)] = np.inf
            run = act & ~top & ~(w * self._deriv(lo) <= lam)
            done = run.copy()
            for _ in range(2200):
                if not run.any():
                    break
                mid = np.where(
                    b > 4.0 * a, np.where(a > 0, np.sqrt(a * b), 0.25 * b), 0.5 * (a + b)
                )
                up = w * self._deriv(mid) > lam
                a = np.where(run & up, mid, a)
                b = np.where(run & ~up, mid, b)
                run &= (b - a) > 4e-16 * b
            p[done] = (0.5 * (a + b))[done]
        return p


def _pick(x, idx):
    """The entries idx of a per-page input; a shared one (shape (1,)) as it is."""
    return x if x.shape[0] == 1 else x[idx]


def group_sums(p: Array, dp: Array, groups: NDArray[np.intp], n_groups: int) -> tuple[Array, Array]:
    """Σ p and Σ dp/dλ per group, each of shape (n_groups,); ``groups`` of shape (n,) in [0, n_groups)."""
    return (
        np.bincount(groups, weights=p, minlength=n_groups),
        np.bincount(groups, weights=dp, minlength=n_groups),
    )
