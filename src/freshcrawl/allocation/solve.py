"""Exact allocation of a crawl budget: maximise Σ w_i f(p_i; Δ_i) subject to Σ p_i = B.

Method
------
At the optimum every page sits at ``p_i(λ_i) = clip(g_i(λ_i), p_min_i, p_max_i)``, with ``g_i`` the
inverse of its marginal value ``w_i f_i'`` and ``λ_i = max(λ, λ_h)`` for a page on host h, where ``λ_h``
solves ``Σ_{i∈h} p_i(λ_h) = c_h``: the host's cap binds exactly when ``λ_h > λ`` (Kolobov, Lubetzky,
Peres, Horvitz, SIGIR 2019), and λ solves the budget equation ``Σ_h min(c_h, S_h(λ)) + S_free(λ) = B``.

Without host caps λ is found by a safeguarded Newton iteration on ``log Σ p = log target`` in ``log λ``
inside a bracket (a pure power law ``Σ p ∝ λ^-α`` is solved in one step), with breakpoint-aware
fallbacks (see :func:`_newton`), from the exact λ of a strided sample of the pages. With host caps λ and
every binding host's λ_h are found together (:func:`_solve_capped`, :func:`_kernels.capped_newton`):
each pass evaluates every host at its own multiplier (λ_h while it surely binds, or its model says it
binds by a clear margin; else λ), one gather-compute-scatter over the pages, and fits each host a model
of ``S_h`` from which the next λ and λ_h follow. Under Poisson freshness, whose rates are affine in
λ^(-1/2) between their bounds, once λ's step is small a pass lists the pages near a bound within each
host's window, and the next passes run over those only, the rest of each host exactly affine while its
multiplier stays inside the window. Hosts still unsettled when λ has converged are finished
host by host in one compiled loop over their pages grouped by host (a counting sort). When that
iteration cannot settle λ, the general path finds λ first from the per-host sums at λ, then the binding
hosts' λ_h. The last pass applies the first-order correction ``p_i += p_i'(λ) δλ`` that makes the budget
exact; when the bracket collapses onto a jump of ``Σ p(λ)`` (pages with a constant marginal value, or a
flat one that falls to p_min within an ulp) the rates are interpolated across the jump instead. The KKT
residual of the result is computed and reported.

Pages whose marginal value is 0 at every rate (``w_i = 0``, ``Δ_i = 0``) sit at their lower bound as
long as the other pages can absorb the budget (λ > 0). When they cannot (finite ``p_max`` and caps),
λ = 0 and the remaining budget is spread over the zero-value pages as evenly as their bounds and host
caps allow (the maximiser of Σ log p over them): any split is optimal, this one is defined.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray

from freshcrawl._validation import check_array, check_int, check_positive
from freshcrawl.allocation import _kernels as K
from freshcrawl.allocation.objectives import Objective, get_objective
from freshcrawl.allocation.result import AllocationResult, Status
from freshcrawl.errors import ConvergenceWarning, InfeasibleAllocation

__all__ = ["allocate"]

_EMPTY_HOSTS = np.zeros(0, dtype=np.intp)
_ONE = np.ones(1)
_NONE = np.zeros(0)  # an empty float array: no per-host data


class _MultiplierOverflow(Exception):
    """The multiplier of a solve exceeds the largest float64 (rates near 1e-308 under a log objective)."""


# ---------------------------------------------------------------------------------------------------
# Problems: the per-page data and the passes over it
# ---------------------------------------------------------------------------------------------------
def _pick(x, idx):
    """The entries idx of a per-page input; a shared one (shape (1,)) as it is."""
    return x if x.shape[0] == 1 else np.ascontiguousarray(x[idx])


class _KernelProblem:
    """Per-page data of a built-in objective; every method is one compiled pass over the pages.

    ``k`` (int8), ``w``, ``b``, ``lo``, ``hi`` have shape (1,) when shared by every page, else (n,);
    ``a`` has shape (n,).
    """

    def __init__(self, n, kinds, w, a, b, lo, hi, offset=0.0):
        self.n = n
        self.k = K.per_page(kinds, np.int8)
        self.tok = K.TOKENS[int(self.k[0])] if self.k.shape[0] == 1 else K.ANY_TOKEN
        self.w = K.per_page(w)
        a = np.asarray(a, dtype=np.float64)
        self.a = np.full(n, a.reshape(-1)[0]) if a.size == 1 else K.writable(a)
        self.b = K.per_page(b)
        self.lo, self.hi = K.per_page(lo), K.per_page(hi)
        self.offset = offset
        self.lam0 = None  # a starting λ (``allocate(warm_start=...)``), else from a sample
        self.host_lam0 = None  # starting multipliers of this problem's hosts, shape (n_hosts,), or None

    def _args(self):
        return self.k, self.w, self.a, self.b, self.lo, self.hi

    def has_flat_marginals(self):
        """Whether Σp may be singular or jump where a page leaves p_min: some page's marginal value is
        flat there (periodic freshness, detection) or constant (completely observed, freshness)."""
        return bool(np.isin(self.k, (K.PERIODIC, K.DETECTION, K.LINEAR)).any())

    def global_sum(self, lam):
        return K.global_sum(self.tok, self.n, lam, *self._args())

    def capped_sum(self, lam, hosts, cap, s_h, ds_h):
        return K.capped_sum(self.tok, self.n, lam, *self._args(), hosts, cap, s_h, ds_h)

    def group_sums(self, lam_g, active_g, hosts, idx=None):
        if idx is not None:
            return K.group_sums_idx(self.tok, idx, lam_g, *self._args(), hosts)
        return K.group_sums(self.tok, lam_g, active_g, *self._args(), hosts)

    def global_breakpoint(self, la, lb, lt, hosts, lamhat):
        return K.global_breakpoint(self.tok, self.n, la, lb, lt, *self._args(), hosts, lamhat)

    def count_infinite(self, lam, hosts, lam_g, active_g):
        return K.count_infinite(self.tok, self.n, lam, *self._args(), hosts, lam_g, active_g)

    def host_sums(self, lam, hosts, n_hosts):
        """Per host Σ_{i∈h} p_i(λ) and its derivative; entry n_hosts: pages without a host."""
        s_h, ds_h = np.empty(n_hosts + 1), np.empty(n_hosts + 1)
        K.capped_sum(self.tok, self.n, lam, *self._args(), hosts, np.full(n_hosts, np.inf), s_h, ds_h)
        return s_h, ds_h

    def group_breakpoints(self, idx, la_g, lb_g, lt_g, active_g, hosts):
        return K.group_breakpoints(self.tok, idx, la_g, lb_g, lt_g, active_g, *self._args(), hosts)

    def host_bounds(self, n_hosts, hosts):
        if hosts.shape[0] == 0:
            return K.bounds_total(self.tok, self.n, *self._args())
        return K.host_bounds(self.tok, self.n, n_hosts, *self._args(), hosts)

    def mean_marginal(self, p_g, hosts, n_groups):
        return K.mean_marginal(self.tok, self.n, p_g, *self._args(), hosts, n_groups)

    def final(self, out, lam, lam2, theta, dlam, hosts, lamhat, h_lam2, h_theta, h_dlam):
        if hosts.shape[0] == 0:
            K.final_rates(self.tok, out, lam, lam2, theta, dlam, *self._args())
        else:
            K.final_rates_hosts(self.tok, out, lam, lam2, theta, dlam, *self._args(), hosts, lamhat, h_lam2,
                                h_theta, h_dlam)

    def kkt(self, p, lam, hosts, lamhat):
        if hosts.shape[0] == 0:
            return K.kkt_residual(self.tok, p, lam, *self._args())
        return K.kkt_residual_hosts(self.tok, p, lam, *self._args(), hosts, lamhat)

    def objective(self, p):
        return K.objective_sum(self.tok, p, self.k, self.w, self.a, self.b, self.offset)

    def active(self):
        out = np.empty(self.n, dtype=np.bool_)
        K.active_mask(self.tok, out, self.k, self.w, self.a, self.b)
        return out

    def take(self, idx):
        return _pick(self.lo, idx), _pick(self.hi, idx)

    def subset(self, idx):
        """The problem of the pages idx alone (same objective and bounds; no start)."""
        return _KernelProblem(idx.size, _pick(self.k, idx), _pick(self.w, idx), self.a[idx], _pick(self.b, idx),
                              _pick(self.lo, idx), _pick(self.hi, idx))


class _NumpyProblem:
    """Per-page data of a user-defined objective, evaluated through its numpy methods."""

    def __init__(self, n, obj, delta, w, lo, hi):
        self.n, self.obj, self.delta = n, obj, delta
        self.w = np.broadcast_to(w, (n,))
        self.lo = np.broadcast_to(lo, (n,))
        self.hi = np.broadcast_to(hi, (n,))
        self.has_inverse = type(obj).inverse_marginal is not Objective.inverse_marginal
        with np.errstate(all="ignore"):
            m0 = self.w * np.asarray(obj.derivative(self.lo.copy(), delta), dtype=np.float64)
        self._active = (self.w > 0) & (m0 > 0) & (self.hi > self.lo)
        self.lam0 = None  # as _KernelProblem.lam0
        self.host_lam0 = None

    def _deriv(self, p):
        with np.errstate(all="ignore"):
            return np.asarray(self.obj.derivative(p, self.delta), dtype=np.float64)

    def responses(self, lam_page):
        """clip(g(λ_i), lo, hi) for every page (λ_i an array or a scalar)."""
        lam_page = np.broadcast_to(np.asarray(lam_page, dtype=np.float64), (self.n,))
        act = self._active & (lam_page < np.inf)
        p = self.lo.copy()
        zero = act & (lam_page <= 0)
        p[zero] = self.hi[zero]
        act &= lam_page > 0
        if not act.any():
            return p
        if self.has_inverse:
            with np.errstate(all="ignore"):
                g = np.asarray(self.obj.inverse_marginal(lam_page / np.where(self.w > 0, self.w, 1.0),
                                                          self.delta), dtype=np.float64)
            p[act] = np.clip(g[act], self.lo[act], self.hi[act])
            return p
        # bisection on w f'(p) = λ inside [lo, hi]; f' is nonincreasing
        with np.errstate(all="ignore"):
            a = self.lo.copy()
            b = np.where(np.isfinite(self.hi), self.hi, np.maximum(self.lo, 1.0))
            need = act & ~np.isfinite(self.hi)
            for _ in range(2100):
                if not need.any():
                    break
                grow = need & (self.w * self._deriv(b) > lam_page) & (b < 1e300)
                b[grow] *= 2.0
                need = grow
            unbounded = act & ~np.isfinite(self.hi) & (b >= 1e300) & (self.w * self._deriv(b) > lam_page)
            top = act & (self.w * self._deriv(b) >= lam_page)
            p[top] = b[top]
            p[unbounded] = np.inf  # the marginal value never falls to λ: the rate is unbounded
            low = act & (self.w * self._deriv(self.lo) <= lam_page)
            run = act & ~top & ~low
            done_set = act & ~top & ~low
            for _ in range(2200):
                if not run.any():
                    break
                mid = np.where(b > 4.0 * a, np.where(a > 0, np.sqrt(a * b), 0.25 * b), 0.5 * (a + b))
                up = self.w * self._deriv(mid) > lam_page
                a = np.where(run & up, mid, a)
                b = np.where(run & ~up, mid, b)
                run &= (b - a) > 4e-16 * b
            p[done_set] = (0.5 * (a + b))[done_set]
        return p

    def _page_lambda(self, lam, hosts, lamhat):
        if hosts.shape[0] == 0:
            return np.full(self.n, lam)
        lh = np.where(hosts >= 0, lamhat[np.maximum(hosts, 0)] if lamhat.size else 0.0, 0.0)
        return np.maximum(lam, lh)

    def _fd(self, lam_page):
        p = self.responses(lam_page)
        h = 1e-7
        p2 = self.responses(lam_page * (1.0 + h))
        with np.errstate(all="ignore"):
            dp = (p2 - p) / (lam_page * h)
        return p, np.where(np.isfinite(dp), dp, 0.0)

    def global_sum(self, lam):
        p, dp = self._fd(np.full(self.n, lam))
        return float(np.sum(p)), float(np.sum(np.where(np.isfinite(dp), dp, 0.0)))

    def group_sums(self, lam_g, active_g, hosts, idx=None):
        sel = (hosts >= 0) & active_g[np.maximum(hosts, 0)]
        lp = np.where(sel, lam_g[np.maximum(hosts, 0)], np.inf)
        p, dp = self._fd(lp)
        p = np.where(sel, p, 0.0)
        dp = np.where(sel & np.isfinite(dp), dp, 0.0)
        h = np.maximum(hosts, 0)
        return (np.bincount(h, weights=p, minlength=lam_g.size),
                np.bincount(h, weights=dp, minlength=lam_g.size))

    def global_breakpoint(self, la, lb, lt, hosts, lamhat):
        return np.nan, np.inf, 0.0  # no breakpoint search: plain bisection as fallback

    def group_breakpoints(self, idx, la_g, lb_g, lt_g, active_g, hosts):
        g = la_g.size
        return np.full(g, np.nan), np.full(g, np.inf), np.zeros(g)

    def count_infinite(self, lam, hosts, lam_g, active_g):
        n_groups = lam_g.size
        if hosts.shape[0]:
            on = (hosts >= 0) & active_g[np.maximum(hosts, 0)]
            lp = np.where(on, lam_g[np.maximum(hosts, 0)], lam)
            g = np.where(on, hosts, n_groups)
        else:
            lp, g = np.full(self.n, lam), np.full(self.n, n_groups)
        inf = self.responses(lp) == np.inf
        return np.bincount(g[inf], minlength=n_groups + 1).astype(np.float64)

    def capped_sum(self, lam, hosts, cap, s_h, ds_h):
        n_hosts = cap.shape[0]
        s_h[:], ds_h[:] = self.host_sums(lam, hosts, n_hosts)
        over = s_h[:n_hosts] > cap
        return (float(s_h[n_hosts] + np.sum(np.where(over, cap, s_h[:n_hosts]))),
                float(ds_h[n_hosts] + np.sum(np.where(over, 0.0, ds_h[:n_hosts]))))

    def host_sums(self, lam, hosts, n_hosts):
        p, dp = self._fd(np.full(self.n, lam))
        g = np.where(hosts >= 0, hosts, n_hosts)
        dp = np.where(np.isfinite(dp), dp, 0.0)
        return (np.bincount(g, weights=p, minlength=n_hosts + 1),
                np.bincount(g, weights=dp, minlength=n_hosts + 1))

    def host_bounds(self, n_hosts, hosts):
        g = np.where(hosts >= 0, hosts, n_hosts) if hosts.shape[0] else np.full(self.n, n_hosts)
        s0 = np.where(self._active, self.hi, self.lo)
        return (np.bincount(g, weights=self.lo, minlength=n_hosts + 1),
                np.bincount(g, weights=s0, minlength=n_hosts + 1),
                np.bincount(g, weights=self.hi, minlength=n_hosts + 1))

    def mean_marginal(self, p_g, hosts, n_groups):
        g = np.where(hosts >= 0, hosts, n_groups - 1) if hosts.shape[0] else np.full(self.n, n_groups - 1)
        with np.errstate(invalid="ignore"):  # w = 0 against an infinite derivative: left out below
            m = self.w * self._deriv(np.clip(p_g[g], self.lo, self.hi))
        ok = (m > 0) & np.isfinite(m)
        cnt = np.bincount(g[ok], minlength=n_groups)
        acc = np.bincount(g[ok], weights=np.log(m[ok]), minlength=n_groups)
        return np.where(cnt > 0, np.exp(acc / np.maximum(cnt, 1)), 1.0)

    def final(self, out, lam, lam2, theta, dlam, hosts, lamhat, h_lam2, h_theta, h_dlam):
        lp = self._page_lambda(lam, hosts, lamhat)
        on_host = lp > lam
        hh = np.maximum(hosts, 0) if hosts.shape[0] else np.zeros(self.n, dtype=np.intp)
        l2 = np.where(on_host, h_lam2[hh] if h_lam2.size else lam2, lam2)
        th = np.where(on_host, h_theta[hh] if h_theta.size else theta, theta)
        dl = np.where(on_host, h_dlam[hh] if h_dlam.size else dlam, dlam)
        p, dp = self._fd(lp)
        v = p + np.where(np.isfinite(dp), dp, 0.0) * dl
        if np.any(th != 0):
            p2 = self.responses(l2)
            with np.errstate(all="ignore"):
                across = np.where(th > 0, p + th * (p2 - p), np.where(p2 == np.inf, p - th, p))
            v = np.where(th != 0, across, v)
        out[:] = np.clip(v, self.lo, self.hi)

    def kkt(self, p, lam, hosts, lamhat):
        lp = self._page_lambda(lam, hosts, lamhat)
        with np.errstate(invalid="ignore"):  # (w = 0 against an infinite derivative at p = 0; inf - inf)
            m = np.where(self.w > 0, self.w * self._deriv(p), 0.0)
            r = np.where(p <= self.lo, np.maximum(0.0, m - lp),
                         np.where(p >= self.hi, np.maximum(0.0, lp - m), np.abs(m - lp)))
        r = np.where((self.hi <= self.lo) | ~np.isfinite(lp), 0.0, r)
        r = np.where(lp > 0, r / np.where(lp > 0, lp, 1.0), r)
        return float(np.max(r)) if r.size else 0.0

    def objective(self, p):
        with np.errstate(all="ignore"):
            v = np.asarray(self.obj.value(p, self.delta), dtype=np.float64)
        return float(np.sum(np.where(self.w > 0, self.w * v, 0.0)))

    def active(self):
        return self._active.copy()

    def take(self, idx):
        return np.ascontiguousarray(self.lo[idx]), np.ascontiguousarray(self.hi[idx])


# ---------------------------------------------------------------------------------------------------
# Root-finding
# ---------------------------------------------------------------------------------------------------
class _Roots:
    """Outcome of a vectorised root-find: per group λ, and how to finish the rates."""

    __slots__ = ("lam", "lam2", "theta", "dlam", "n_iter", "converged", "inf_jump", "gap", "pages")

    def __init__(self, G):
        self.lam = np.zeros(G)
        self.lam2 = np.zeros(G)
        self.theta = np.zeros(G)
        self.inf_jump = np.zeros(G, dtype=bool)  # collapsed onto a jump to an infinite Σp
        self.gap = np.zeros(G)  # target - S(λb) at such a jump
        self.dlam = np.zeros(G)
        self.n_iter = 0
        self.converged = np.zeros(G, dtype=bool)
        self.pages = None  # (perm, start) of the groups' pages, where the compiled per-host loop grouped them


def _newton(evaluate, target, lam0, tol, max_iter, breakpoint=None, la0=None, s_a0=None,
            snap_wide=True, ulps_stop=np.inf) -> _Roots:
    """Solve S_g(λ_g) = target_g (S_g nonincreasing in λ) for every group g at once.

    Safeguarded Newton on log S_g against log λ_g, inside a bracket [λa, λb] with S(λa) >= target >=
    S(λb) (``la0``, ``s_a0``: a known lower end). When a step leaves the bracket or does not halve the
    error, the next point is, in this order: just right of λa when λa sits on a breakpoint where S is
    far steeper than across the bracket (a page entering from p = 0 with a flat marginal, which jumps
    there in floating point); the breakpoint of S (a page leaving a bound, ``w f'(p_min)`` or
    ``w f'(p_max)``) inside the bracket nearest to the proposal; a Newton step in log(e - λ), or the
    bisection of that log-distance, when the next breakpoint e >= λb makes S singular; else the
    midpoint (geometric while the bracket is wide). Breakpoints are looked up in any bracket when
    ``snap_wide`` (groups of few pages, where each is a kink worth landing on), else only in brackets
    narrower than 1e-7 relative. A group is finished when |S - target| <= tol * target, or the Newton
    step is below a few ulps of λ with |S - target| <= ``ulps_stop`` target (then the first-order
    correction dλ = (target - S) / S' is kept), or
    when its bracket has collapsed onto a jump of S (then θ interpolates between p(λb) and p(λa);
    θ < 0 marks a jump to an infinite S, shared by the pages whose rate is unbounded).
    """
    G = target.size
    out = _Roots(G)
    lam = np.asarray(lam0, dtype=np.float64).copy()
    la = np.zeros(G) if la0 is None else np.asarray(la0, dtype=np.float64).copy()
    lb = np.full(G, np.inf)
    s_a = np.full(G, np.nan) if s_a0 is None else np.asarray(s_a0, dtype=np.float64).copy()
    s_b = np.full(G, np.nan)
    ds_a = np.zeros(G)
    done = np.zeros(G, dtype=bool)
    prev = np.full(G, np.inf)
    slow = np.zeros(G, dtype=np.int64)
    grow = np.full(G, 2.0 * np.sqrt(2.0))  # squared before use: first expansion by 8
    last_s = np.zeros(G)
    last_ds = np.zeros(G)
    last_lam = lam.copy()
    eps = np.finfo(np.float64).eps
    with np.errstate(all="ignore"):
        while out.n_iter < max_iter and not done.all():
            out.n_iter += 1
            act = ~done
            s, ds = evaluate(lam, act)
            last_s = np.where(act, s, last_s)
            last_ds = np.where(act, ds, last_ds)
            last_lam = np.where(act, lam, last_lam)
            err = s - target
            # converged: within tolerance, or the Newton step is below a few ulps of λ (the rest of the
            # error is removed by the first-order correction of the rates)
            conv = act & ((np.abs(err) <= tol * target)
                          | ((np.abs(err) <= -ds * 4.0 * eps * lam) & (np.abs(err) <= ulps_stop * target)))
            if conv.any():
                out.lam[conv] = lam[conv]
                out.dlam[conv] = np.where(ds[conv] < 0, -err[conv] / ds[conv], 0.0)
                out.converged[conv] = True
                done |= conv
                act &= ~conv
            pos = act & (err > 0)
            neg = act & (err < 0)
            la = np.where(pos, lam, la)
            s_a = np.where(pos, s, s_a)
            ds_a = np.where(pos, ds, ds_a)
            lb = np.where(neg, lam, lb)
            s_b = np.where(neg, s, s_b)
            # a bracket that has collapsed onto a jump of S
            jump = act & (la > 0) & np.isfinite(lb) & (lb - la <= 8.0 * eps * lb)
            if jump.any():
                out.lam[jump] = lb[jump]
                out.lam2[jump] = la[jump]
                gap = s_a[jump] - s_b[jump]
                out.theta[jump] = np.where((gap > 0) & np.isfinite(gap), (target[jump] - s_b[jump]) / gap, 0.0)
                out.inf_jump[jump] = ~np.isfinite(s_a[jump])
                out.gap[jump] = target[jump] - s_b[jump]
                out.converged[jump] = True
                done |= jump
                act &= ~jump
            step = -(np.log(s) - np.log(target)) * s / (lam * ds)
            ln = lam * np.exp(step)
            ok = np.isfinite(ln) & (ln > 0)
            aerr = np.abs(err)
            slow = np.where(aerr > 0.5 * prev, slow + 1, 0)
            prev = aerr
            both = (la > 0) & np.isfinite(lb)
            inside = ok & (ln > la) & (ln < lb)
            need = act & both & ~(inside & (slow == 0))
            if need.any():
                mid = np.sqrt(la * lb)
                half = 0.5 * (la + lb)
                width = lb - la
                # bisection (geometric while the bracket is wide), unless a breakpoint step applies
                ln = np.where(need, np.where(width <= 1e-3 * lb, half, mid), ln)
                # breakpoints are looked up in any bracket (few pages per group: each breakpoint is a
                # kink worth landing on) or only in narrow ones (many pages: breakpoints are dense)
                narrow = need if snap_wide else need & (width <= 1e-7 * lb)
                if narrow.any() and breakpoint is not None:
                    e_in, e_up, e_dn = breakpoint(la, lb, np.where(inside, ln, half), narrow)
                    # 0. λa sits on a breakpoint (within rounding) where S is far steeper than across the
                    #    bracket (a page entering with f'(0) flat jumps there in floating point): probe
                    #    just right of it
                    right = la * (1.0 + 6.0 * eps)
                    steep = -ds_a * width > 100.0 * (s_a - s_b)
                    at_a = narrow & (la - e_dn <= 4.0 * eps * la) & (right < lb) & steep
                    # 1. a breakpoint inside the bracket: go there
                    has = narrow & ~at_a & np.isfinite(e_in) & (e_in > la) & (e_in < lb)
                    # 2. else S may be singular at the next breakpoint e_up >= λb (a page entering from
                    #    p = 0 with f'(0) flat): Newton in log(e_up - λ), else bisect that log-distance
                    dist_a = e_up - la
                    dist_b = np.maximum(e_up - lb, 4.0 * eps * e_up)
                    sing = narrow & ~at_a & ~has & np.isfinite(e_up) & (dist_b < 0.25 * dist_a)
                    dist = np.maximum(e_up - lam, 4.0 * eps * e_up)
                    l_sing = e_up - dist * np.exp(err / (ds * dist))
                    l_sing = np.where(np.isfinite(l_sing) & (l_sing > la) & (l_sing < lb) & (slow < 2),
                                      l_sing, e_up - np.sqrt(dist_a * dist_b))
                    ln = np.where(at_a, right, np.where(has, e_in, np.where(sing, l_sing, ln)))
                ln = np.where(need & ~((ln > la) & (ln < lb)), half, ln)
            # no bracket yet: Newton, else expand by a factor that squares at each expansion
            only_a = act & (la > 0) & ~np.isfinite(lb)
            only_b = act & ~(la > 0) & np.isfinite(lb)
            expand_a = only_a & ~(ok & (ln > lam))
            expand_b = only_b & ~(ok & (ln < lam))
            grow = np.where(expand_a | expand_b, np.minimum(grow * grow, 1e30), 8.0)
            ln = np.where(expand_a, lam * grow, np.where(expand_b, lam / grow, ln))
            ln = np.where(only_a, np.minimum(ln, lam * 1e30), ln)
            ln = np.where(only_b, np.maximum(ln, lam * 1e-30), ln)
            lam = np.where(act, ln, lam)
    left_g = ~done
    with np.errstate(all="ignore"):
        if left_g.any():
            out.lam[left_g] = last_lam[left_g]
            err = last_s[left_g] - target[left_g]
            out.dlam[left_g] = np.where(last_ds[left_g] < 0, -err / last_ds[left_g], 0.0)
        out.dlam = np.where(np.isfinite(out.dlam), out.dlam, 0.0)
    return out


def _solve(prob, budget, hosts, caps, tol, max_iter):
    """Rates, λ, per-host multipliers, passes and convergence of one problem.

    With host caps a seventh entry may follow, ``(KKT residual, per-host sums)`` of the returned rates,
    when the pass that wrote them measured both (:func:`_kernels.finish_groups`); the sums are exact
    for the capped hosts and the total, while an uncapped host's pages may be counted with the pages
    without a host (entry n_hosts). Many hosts that need no multiplier of their own (see
    :func:`_reduce_hosts`) are first taken out of the problem.
    """
    if hosts.shape[0] and caps.shape[0] and isinstance(prob, _KernelProblem):
        reduced = _reduce_hosts(prob, hosts, caps)
        if reduced is not None:
            return _solve_reduced(prob, budget, hosts, caps, tol, max_iter, *reduced)
    return _solve_groups(prob, budget, hosts, caps, tol, max_iter)


_REDUCE_SHARE = 1.0 / 64.0  # reduce when the hosts taken out number at least this share of the pages


def _reduce_hosts(prob, hosts, caps):
    """The same problem without the hosts that need no multiplier of their own, or None.

    Such hosts are those without pages, without a cap, with one page (its cap becomes part of that
    page's p_max) and those pinned at their lower bounds (cap <= Σ p_min; each page's p_max becomes its
    p_min). The other hosts are renumbered in order, and the pages of the hosts taken out join the
    pages without a host. Each host costs the joint iteration about as much as ten pages a
    pass, so this pays where there are many such hosts for the pages (a long tail of one-page hosts);
    it costs one more array of host indices (and of p_max, when caps are folded). Returns None where
    it does not pay, or where a cap is below its host's Σ p_min (for :func:`_solve_groups` to report).
    Otherwise ``(reduced problem, reduced host indices, kept hosts, pinned hosts, one-page hosts,
    their pages, Σ p_min per host)``.
    """
    n, n_hosts = prob.n, caps.shape[0]
    if n_hosts < _REDUCE_SHARE * n:
        return None
    if K.capped_multi_page_hosts(hosts, caps) > n_hosts - _REDUCE_SHARE * n:
        return None
    count, low, page = K.host_census(hosts, n_hosts, prob.lo)
    new_id, fold, kept, singles, pinned, infeasible, folds = K.reduction_plan(count, low, caps, hosts[:0])
    if infeasible or n_hosts - kept.size < _REDUCE_SHARE * n:
        return None
    lo, hi = prob.lo, prob.hi
    if folds:
        hi = np.array(np.broadcast_to(hi, (n,)), dtype=np.float64)
        hosts_r = K.remap_hosts(hosts, new_id, fold, lo, hi)
    else:
        hosts_r = K.remap_hosts(hosts, new_id, fold[:0], lo, np.zeros(0))
    red = copy.copy(prob)  # the same pages, with the folded bounds
    red.lo, red.hi = lo, hi
    if prob.host_lam0 is not None:
        red.host_lam0 = np.ascontiguousarray(prob.host_lam0[kept])
    return red, hosts_r, kept, pinned, singles, page[singles], low


def _solve_reduced(prob, budget, hosts, caps, tol, max_iter, red, hosts_r, kept, pinned, singles, pages, low):
    """:func:`_solve_groups` on the problem of :func:`_reduce_hosts`, its multipliers and sums mapped back.

    A one-page host binds where its page sits at the cap (below the page's own p_max), with the
    page's marginal value w f'(c_h) as its multiplier when that exceeds λ; a pinned host takes inf.
    """
    p, lam, lamhat_r, _, n_iter, converged, *checked = _solve_groups(red, budget, hosts_r, caps[kept], tol,
                                                                        max_iter)
    lamhat = K.reduced_multipliers(prob.tok, p, lam, lamhat_r, kept, pinned, singles, pages, caps, prob.k, prob.w,
                                   prob.a, prob.b, prob.hi)
    out = (p, lam, lamhat, np.maximum(lam, lamhat), n_iter, converged)
    if not checked:
        return out
    kkt, sums_r = checked[0]
    return out + ((kkt, K.reduced_sums(sums_r, p, kept, singles, pages, pinned, low)),)


def _solve_groups(prob, budget, hosts, caps, tol, max_iter):
    """:func:`_solve` on the hosts as given."""
    n = prob.n
    n_hosts = caps.shape[0]
    use_hosts = hosts.shape[0] > 0 and n_hosts > 0
    first = None  # (λ0, Σp and Σdp/dλ per host at λ0): the first pass of the joint iteration
    if use_hosts and isinstance(prob, _KernelProblem) and not prob.has_flat_marginals():
        lam0 = float(_initial_lambda(prob, budget, tol)[0])
        if lam0 > 0 and np.isfinite(lam0):
            low, s0, up, s_1, ds_1 = K.host_bounds_at(prob.tok, n, n_hosts, lam0, *prob._args(), hosts)
            first = (lam0, s_1, ds_1)
    if first is None:
        low, s0, up = prob.host_bounds(n_hosts, hosts)
    total_low = float(low.sum())
    if budget < total_low:
        raise InfeasibleAllocation(
            f"budget {budget:g} visits/day is below the sum of the lower bounds p_min, {total_low:g} visits/day"
        )
    capped = np.isfinite(caps)
    low_h, s0_h, up_h = low[:n_hosts], s0[:n_hosts], up[:n_hosts]
    bad = capped & (low_h > caps)
    if bad.any():
        h = int(np.flatnonzero(bad)[0])
        raise InfeasibleAllocation(
            f"host_caps: {int(bad.sum())} hosts have a cap below the sum of their pages' p_min, first host {h} "
            f"(cap {caps[h]:g} visits/day < {low_h[h]:g} visits/day)"
        )
    max_total = float(up[n_hosts] + np.sum(np.where(capped, np.minimum(caps, up_h), up_h)))
    if budget > max_total:
        raise InfeasibleAllocation(
            f"budget {budget:g} visits/day exceeds the most the pages can take, {max_total:g} visits/day "
            f"(sum of p_max, each host limited to its cap)"
        )
    cap_eff = np.where(capped, caps, np.inf)
    lamhat = np.zeros(n_hosts)
    lamhat[capped & (caps <= low_h)] = np.inf  # pinned at the lower bounds
    n_iter = 0
    converged = True
    s0_total = float(s0[n_hosts] + np.sum(np.minimum(cap_eff, s0_h)))
    lam = dlam = lam2 = theta = 0.0
    at_lam = None  # (λb, per-host sums, derivatives) at the point where the binding hosts are found
    if budget >= s0_total:
        # λ = 0: the valued pages take all they can; hosts whose cap binds even then get their own λ_h
        bind = capped & (s0_h > caps) & (caps > low_h)
    else:
        if use_hosts and isinstance(prob, _KernelProblem):
            fast, passes = _solve_capped(prob, budget, hosts, caps, lamhat, tol, max_iter, first, low)
            if fast is not None:
                return fast
            n_iter += passes
        buf_s, buf_ds = np.empty(n_hosts + 1), np.empty(n_hosts + 1)
        last = [np.nan, buf_s, buf_ds]  # λ, per-host sums and derivatives of the latest pass

        def eval_global(lam_v, act):
            if not use_hosts:
                s, ds = prob.global_sum(float(lam_v[0]))
                return np.array([s]), np.array([ds])
            s, ds = prob.capped_sum(float(lam_v[0]), hosts, cap_eff, buf_s, buf_ds)
            last[0] = float(lam_v[0])
            return np.array([s]), np.array([ds])

        def bp_global(la, lb, lt, act):
            e_in, e_up, e_dn = prob.global_breakpoint(float(la[0]), float(lb[0]), float(lt[0]), hosts, lamhat)
            return np.array([e_in]), np.array([e_up]), np.array([e_dn])

        roots = _newton(eval_global, np.array([budget]), _initial_lambda(prob, budget, tol), tol, max_iter,
                        bp_global, snap_wide=prob.n <= 1000, ulps_stop=K.ULPS_STOP)
        n_iter += roots.n_iter
        converged &= bool(roots.converged.all())
        lam, dlam = float(roots.lam[0]), float(roots.dlam[0])
        lam2, theta = float(roots.lam2[0]), float(roots.theta[0])
        if roots.inf_jump[0]:
            # the pages that take the gap: those whose rate is infinite at λ2, less those on capped hosts
            # (counted per host here: such a host is over its cap at λ2 and gets its own multiplier below)
            count = prob.count_infinite(lam2, hosts, np.full(n_hosts, lam2), capped)[-1]
            theta = -float(roots.gap[0]) / max(count, 1.0)
        bind, at_lam = _binding(prob, lam, lam2, theta, hosts, caps, low_h, last)
    p, lam_out, lamhat_out, host_lam, more, ok, *checked = _rates_at(
        prob, budget, hosts, caps, lam, dlam, lam2, theta, lamhat, bind, at_lam, tol, max_iter)
    n_iter += more
    converged &= ok
    if budget > s0_total:
        _spread_leftover(prob, p, budget, hosts, caps, bind, tol, max_iter)
        checked = ()
    return (p, lam_out, lamhat_out, host_lam, n_iter, converged, *checked)


def _binding(prob, lam, lam2, theta, hosts, caps, low_h, last=None):
    """The hosts whose cap binds at the root λ, and ``(λb, per-host sums, derivatives)`` where they do.

    A host binds where its pages' Σp at λ (at the lower end λ2 of a jump, when the root sits on one)
    exceeds its cap and the cap exceeds its pages' Σ p_min. ``last = [λ, sums, derivatives]`` of the
    latest pass, reused when taken at that point. Without hosts: no host binds, and None.
    """
    n_hosts = caps.shape[0]
    if not (hosts.shape[0] and n_hosts):
        return np.zeros(n_hosts, dtype=bool), None
    lam_b = min(lam, lam2) if theta != 0.0 else lam
    if last is not None and last[0] == lam_b:
        s_h, ds_h = last[1], last[2]
    else:
        s_h, ds_h = prob.host_sums(lam_b, hosts, n_hosts)
    bind = (s_h[:n_hosts] > caps) & (caps > low_h)  # an uncapped host's cap is inf
    return bind, (lam_b, s_h, ds_h)


def _rates_at(prob, budget, hosts, caps, lam, dlam, lam2, theta, lamhat, bind, at_lam, tol, max_iter):
    """Rates at the root (λ, dλ, λ2, θ) of the budget equation: each binding host's λ_h, then every page.

    ``lamhat``: per-host multipliers so far (inf for a host pinned at its lower bounds; overwritten);
    ``bind``, ``at_lam``: from :func:`_binding`. ``budget`` is what these pages' rates sum to (used to
    mix the two ends of a jump, θ > 0). Returns ``(p, λ + dλ, λ_h, host λ, passes, converged[, (KKT
    residual, per-host sums)])`` as :func:`_solve` does.
    """
    n_hosts = caps.shape[0]
    use_hosts = hosts.shape[0] > 0 and n_hosts > 0
    h_lam2 = np.zeros(n_hosts)
    h_theta = np.zeros(n_hosts)
    h_dlam = np.zeros(n_hosts)
    n_iter = 0
    converged = True
    if bind.any():
        idx = np.flatnonzero(bind)
        roots = _solve_hosts(prob, idx, lam, hosts, caps, tol, max_iter, at_lam)
        _store_host_roots(prob, roots, idx, hosts, lamhat, h_lam2, h_theta, h_dlam)
        n_iter += roots.n_iter
        converged &= bool(roots.converged.all())
    p = np.empty(prob.n)
    checked = ()
    if use_hosts and isinstance(prob, _KernelProblem) and theta == 0.0 and not np.any(h_theta != 0.0):
        # no jumps: each page at its host's multiplier (or λ) with its correction, checked in the same pass
        bind_h = lamhat > lam
        mu = np.append(np.where(bind_h, lamhat, lam), lam)
        dmu = np.append(np.where(bind_h, h_dlam, dlam), dlam)
        sums = np.empty(n_hosts + 1)
        checked = ((K.finish_groups(prob.tok, p, mu, dmu, *prob._args(), hosts, sums), sums),)
    else:
        _final(prob, p, lam, lam2, theta, dlam, hosts, lamhat, h_lam2, h_theta, h_dlam, budget)
    # the multipliers of the returned rates include the final first-order correction
    lam_out = lam + dlam
    lamhat_out = np.where(np.isfinite(lamhat) & (lamhat > lam), lamhat + h_dlam, lamhat)
    host_lam = np.maximum(lam_out, lamhat_out) if n_hosts else lamhat_out
    return (p, lam_out, lamhat_out, host_lam, n_iter, converged, *checked)


_FAST_PASSES = 30  # passes of the joint root-find before the general solver takes over
#: Poisson freshness: once λ's steps are small, the joint iteration lists the pages within a window (in
#: λ^(-1/2), relative; at least this wide, wider after a larger step) of a bound and passes over those only
#: while every group stays inside its window (:func:`_kernels.window_pass`), where there are at least
#: _WINDOW_PAGES pages a group.
_WINDOW = 0.01
_WINDOW_PAGES = 4


def _solve_capped(prob, budget, hosts, caps, lamhat, tol, max_iter, first=None, low=None):
    """λ > 0 and the multipliers of all binding hosts together (:func:`_kernels.capped_newton`).

    Returns ``((p, λ, λ_h, host λ, passes, converged[, (KKT residual, per-host sums)]), passes)``, or
    ``(None, passes)`` when the joint Newton iteration does not settle λ (for the general solver to
    take over). Hosts it leaves unsettled (a root near a breakpoint where S_h is singular, or on a
    jump) are finished by :func:`_solve_hosts`. Without jumps the rates, their KKT residual and the
    per-host sums come from one pass (:func:`_kernels.finish_groups`). ``first = (λ0, sums,
    derivatives)``: the starting λ and the first pass, done with the feasibility sums (``low``: Σ p_min
    per host) by :func:`_kernels.host_bounds_at`.
    """
    n_hosts = caps.shape[0]
    groups = n_hosts + 1  # the hosts, then the pages without a host
    cap_g = np.full(groups, np.inf)
    cap_g[:n_hosts] = caps
    fixed = np.zeros(groups, dtype=np.bool_)
    fixed[:n_hosts] = np.isinf(lamhat)  # pinned at their lower bounds
    first_sums = None
    if first is None:
        lam0 = _capped_lambda(prob, budget, tol, hosts, caps)
    else:
        lam0, s_1, ds_1 = first
        # the hosts pinned at their lower bounds are evaluated at λ = inf in the joint iteration
        first_sums = (np.where(fixed, low, s_1), np.where(fixed, 0.0, ds_1))
    if not (lam0 > 0 and np.isfinite(lam0)):
        return None, 0
    singular = prob.has_flat_marginals()
    mu, dmu = np.empty(groups), np.empty(groups)
    if first_sums is None:
        s_g, ds_g = np.empty(groups), np.empty(groups)
    else:
        s_g, ds_g = first_sums[0].copy(), first_sums[1].copy()  # capped_newton writes its passes over them
    bind, done = np.zeros(groups, dtype=np.bool_), np.zeros(groups, dtype=np.bool_)
    la_g, s_la, ds_la = np.zeros(groups), np.zeros(groups), np.zeros(groups)
    jump = np.zeros(2)
    window = _WINDOW if prob.tok is K.TOKENS[K.POISSON] and prob.n >= _WINDOW_PAGES * groups else 0.0
    mu0 = np.zeros(0)
    if prob.host_lam0 is not None:  # a warm start (periodic freshness, detection): each host from its multiplier
        mu0 = np.zeros(groups)
        mu0[:n_hosts] = prob.host_lam0
    status, lam, dlam, passes = K.capped_newton(prob.tok, prob.n, *prob._args(), hosts, cap_g, fixed, budget, lam0,
                                                tol, min(max_iter, _FAST_PASSES), mu, dmu, s_g, ds_g, bind, done,
                                                la_g, s_la, ds_la, singular, jump,
                                                first_sums is not None, window, np.zeros(5, dtype=np.int64), mu0)
    if status == K.JOINT_FAILED:
        return None, passes
    p = np.empty(prob.n)
    converged = True
    roots, idx = _Roots(0), np.zeros(0, dtype=np.intp)
    left = ~done[:n_hosts]
    if status == K.JOINT_ON_JUMP:
        # λ sits on a jump [λa, λb]: a host found over its cap at or above λa but under it at λb binds at
        # λa only, its own root on the same jump; it needs its own multiplier for the rates at λa
        left |= ~bind[:n_hosts] & ~fixed[:n_hosts] & (la_g[:n_hosts] >= jump[0])
    if left.any():
        # λ is settled; the hosts left (all binding at λ) go to the per-host loop with breakpoint steps
        idx = np.flatnonzero(left)
        # each host's last point too: where it was under its cap, its first step is taken from there
        last = (mu, s_g, ds_g)
        roots = _solve_hosts(prob, idx, lam, hosts, caps, tol, max_iter, (la_g, s_la, ds_la), last)
        passes += roots.n_iter
        converged = bool(roots.converged.all())
    on_jump = roots.theta != 0.0
    if (status == K.JOINT_ON_JUMP or roots.inf_jump.any()
            or (on_jump.any() and (roots.pages is None or not converged))):
        lam2, theta = (float(jump[0]), float(jump[1])) if status == K.JOINT_ON_JUMP else (0.0, 0.0)
        return _finish_with_jumps(prob, p, budget, lam, dlam, lam2, theta, mu, dmu, bind, fixed, roots, idx, hosts,
                                  passes, converged), passes
    if idx.size:
        mu[idx], dmu[idx] = roots.lam, roots.dlam
        # a host whose root sits on a jump of its Σp (the compiled loop found both ends) is left at its
        # lower bounds by the pass below, then finished over its own pages, grouped by that loop
        mu[idx[on_jump]], dmu[idx[on_jump]] = np.inf, 0.0
    binding = bind[:n_hosts] & ~fixed[:n_hosts]
    lam_out = lam + dlam
    # rates, KKT residual and per-host sums in one pass (``allocate`` would otherwise make three)
    sums = np.empty(groups)
    kkt = K.finish_groups(prob.tok, p, mu, dmu, *prob._args(), hosts, sums)
    lamhat_out = np.where(binding, mu[:n_hosts] + dmu[:n_hosts], lamhat)
    if on_jump.any():
        sel = np.flatnonzero(on_jump)
        s_sel = np.empty(sel.size)
        kkt = max(kkt, K.finish_jump_hosts(prob.tok, p, *roots.pages, sel, roots.lam[sel], roots.lam2[sel],
                                           roots.theta[sel], *prob._args(), s_sel))
        sums[idx[sel]] = s_sel
        lamhat_out[idx[sel]] = roots.lam[sel]
    return (p, lam_out, lamhat_out, np.maximum(lam_out, lamhat_out), passes, converged, (kkt, sums)), passes


def _finish_with_jumps(prob, p, budget, lam, dlam, lam2, theta, mu, dmu, bind, fixed, roots, idx, hosts, passes,
                       converged):
    """Rates when λ or some host roots sit on a jump of Σp (θ: interpolate across it), by the general final pass."""
    n_hosts = fixed.shape[0] - 1
    mu_h, dmu_h = mu[:n_hosts], dmu[:n_hosts]
    binding = bind[:n_hosts] & ~fixed[:n_hosts]
    at_own = binding & (mu_h > lam)
    # a host found just over its cap at λ takes λ + dλ_h itself (its rates then miss the cap by O(dλ_h²))
    lamhat = np.where(at_own, mu_h, np.where(binding, lam + dmu_h, np.where(fixed[:n_hosts], np.inf, 0.0)))
    h_dlam = np.where(at_own, dmu_h, 0.0)
    h_lam2, h_theta = np.zeros(n_hosts), np.zeros(n_hosts)
    if idx.size:
        _store_host_roots(prob, roots, idx, hosts, lamhat, h_lam2, h_theta, h_dlam)
    _final(prob, p, lam, lam2, theta, dlam, hosts, lamhat, h_lam2, h_theta, h_dlam, budget)
    lamhat_out = np.where(np.isfinite(lamhat) & (lamhat > lam), lamhat + h_dlam, lamhat)
    lam_out = lam + dlam
    return p, lam_out, lamhat_out, np.maximum(lam_out, lamhat_out), passes, converged


def _final(prob, p, lam, lam2, theta, dlam, hosts, lamhat, h_lam2, h_theta, h_dlam, budget):
    """Final rates; across a finite jump of Σp at λ (θ > 0), each page's rate at either end, mixed.

    At a jump between λa = λ2 and λb = λ every page takes (1 - θ) r_i(λb) + θ r_i(λa), r_i(λ) its rate
    at λ under its host's cap: a host whose own root sits on the same jump binds at λa and not at λb,
    so its pages cannot simply be interpolated between their uncapped rates. θ is taken again from the
    sums of the two rate vectors written here, so that Σp = B holds for them: on a page in the
    float-resolved tail of a flat marginal the rate at λa depends on the last bits of λ/w, which a
    vectorised pass and this one may round differently.
    """
    if theta > 0.0:
        p_b = np.empty_like(p)

        def rates_at(lam_v, out):
            prob.final(out, lam_v, 0.0, 0.0, 0.0, hosts, lamhat, h_lam2, h_theta, h_dlam)
            return float(np.sum(out))

        s_b, s_a = rates_at(lam, p_b), rates_at(lam2, p)
        if not s_b <= budget <= s_a:
            # this pass rounds the page's λ/w otherwise than the one that found the jump, so the jump sits
            # a few ulps off for it: move the ends apart (doubling steps) until they straddle B, then
            # bisect back to adjacent floats, evaluating with this pass
            lam_a, lam_b, step = lam2, lam, 4.0 * np.finfo(float).eps * lam
            for _ in range(60):
                if s_b > budget:
                    lam_a, lam_b, s_a = lam_b, lam_b + step, s_b
                    s_b = rates_at(lam_b, p_b)
                elif s_a < budget:
                    lam_a, lam_b, s_b = max(lam_a - step, 0.0), lam_a, s_a
                    s_a = rates_at(lam_a, p)
                else:
                    break
                step *= 2.0
            for _ in range(60):
                mid = 0.5 * (lam_a + lam_b)
                if not lam_a < mid < lam_b:
                    break
                if rates_at(mid, p) > budget:
                    lam_a = mid
                else:
                    lam_b = mid
            s_b, s_a = rates_at(lam_b, p_b), rates_at(lam_a, p)
        if s_a > s_b:
            theta = min(max((budget - s_b) / (s_a - s_b), 0.0), 1.0)
        p -= p_b
        p *= theta
        p += p_b  # p_b + θ (p_a - p_b): exactly p_b where both ends agree (a page at a bound stays there)
        np.clip(p, prob.lo, prob.hi, out=p)
        return
    prob.final(p, lam, lam2, theta, dlam, hosts, lamhat, h_lam2, h_theta, h_dlam)


def _store_host_roots(prob, roots, idx, hosts, lamhat, h_lam2, h_theta, h_dlam):
    """Write the per-host roots of the hosts idx into the per-host arrays (θ < 0: a jump to inf)."""
    lamhat[idx] = roots.lam
    h_lam2[idx] = roots.lam2
    h_theta[idx] = roots.theta
    if roots.inf_jump.any():
        n_hosts = lamhat.shape[0]
        act = np.zeros(n_hosts, dtype=np.bool_)
        act[idx] = True
        lam_g = np.zeros(n_hosts)
        lam_g[idx] = roots.lam2
        count = prob.count_infinite(0.0, hosts, lam_g, act)[:n_hosts][idx]
        h_theta[idx] = np.where(roots.inf_jump, -roots.gap / np.maximum(count, 1.0), roots.theta)
    h_dlam[idx] = roots.dlam


def _solve_hosts(prob, idx, lam, hosts, caps, tol, max_iter, at_lam=None, last=None) -> _Roots:
    """λ_h > λ with Σ_{i∈h} p_i(λ_h) = c_h for the hosts idx whose cap binds.

    With a built-in objective, λ > 0 and the per-host sums known at a point λb where every host in idx
    exceeds its cap (``at_lam = (λb, sums, derivatives)``, each indexed by host; λb a scalar <= λ, below
    λ when the global root sits on a jump, or one point >= λ per host), the pages of the binding hosts
    are grouped by host once (a counting sort) and the hosts are solved together in one compiled loop, a
    Newton step of every open host a round, their pages evaluated together by chunks
    (:func:`_kernels.host_newton`). Hosts that loop leaves (a jump to an infinite Σp, no convergence,
    or a root not above λ) and all other cases go to :func:`_solve_hosts_general`.
    """
    if at_lam is None or not lam > 0 or not np.all(np.broadcast_to(at_lam[0], at_lam[1].shape)[idx] > 0) or \
            not isinstance(prob, _KernelProblem):
        return _solve_hosts_general(prob, idx, lam, hosts, caps, tol, max_iter)
    perm, start = K.group_pages(hosts, idx, caps.shape[0])
    lam_b, s_h, ds_h = at_lam
    lam_b = np.ascontiguousarray(np.broadcast_to(np.asarray(lam_b, dtype=np.float64), s_h.shape)[idx])
    g = idx.size
    lam_h, dlam_h, lam2_h, theta_h = np.zeros(g), np.zeros(g), np.zeros(g), np.zeros(g)
    iters = np.zeros(g, dtype=np.int64)
    # Newton in S against λ^(-1/2) where rates go as λ^(-1/2) (minus Δ for Poisson freshness), else log-log
    sqrt_step = prob.k.shape[0] == 1 and int(prob.k[0]) in (K.POISSON, K.PERIODIC, K.DETECTION)
    pt = (_NONE, _NONE, _NONE) if last is None else (last[0][idx], last[1][idx], last[2][idx])
    K.host_newton(prob.tok, perm, start, caps[idx], lam_b, s_h[idx], ds_h[idx], *prob._args(), tol,
                  min(max_iter, _HOST_ITER), sqrt_step, lam_h, dlam_h, lam2_h, theta_h, iters, *pt)
    out = _Roots(g)
    out.pages = (perm, start)
    ok = (iters >= 0) & (lam_h >= lam_b)  # a root at or above its lower end (on a jump of λ, maybe below λ)
    out.lam[ok], out.dlam[ok], out.converged[ok] = lam_h[ok], dlam_h[ok], True
    out.lam2[ok], out.theta[ok] = lam2_h[ok], theta_h[ok]
    out.dlam = np.where(np.isfinite(out.dlam), out.dlam, 0.0)
    out.n_iter = int(iters.max(initial=0))
    if not ok.all():
        # from where those hosts were found over their caps: below λ when λ sits on a jump of Σp (at λ
        # itself such a host may be under its cap, its own root on the same jump)
        lam_low = min(lam, float(np.min(lam_b[~ok])))
        rest = _solve_hosts_general(prob, idx[~ok], lam_low, hosts, caps, tol, max_iter)
        for name in ("lam", "lam2", "theta", "dlam", "converged", "inf_jump", "gap"):
            getattr(out, name)[~ok] = getattr(rest, name)
        out.n_iter = max(out.n_iter, min(max_iter, _HOST_ITER)) + rest.n_iter
    return out


_HOST_ITER = 40  # passes per host in the compiled loop before a host goes to the general solver


def _solve_hosts_general(prob, idx, lam, hosts, caps, tol, max_iter) -> _Roots:
    """As :func:`_solve_hosts`, vectorised across hosts with :func:`_newton` (one pass per iteration).

    Only the pages of those hosts are visited; the start is one log-log Newton step from λ.
    """
    n_hosts = caps.shape[0]
    act_all = np.zeros(n_hosts, dtype=np.bool_)
    act_all[idx] = True
    pages = K.pages_of_hosts(hosts, act_all)
    counts = np.bincount(hosts[pages], minlength=n_hosts).astype(np.float64)
    lam_all = np.zeros(n_hosts)
    la0 = s_a0 = None
    if lam > 0:
        # λ is a lower end of every bracket (the cap is exceeded there); start one log-log Newton step on
        lam_all[:] = lam
        s, ds = prob.group_sums(lam_all, act_all, hosts, pages)
        la0, s_a0 = np.full(idx.size, lam), s[idx]
        with np.errstate(all="ignore"):
            lam0 = lam * np.exp(np.log(s[idx] / caps[idx]) * s[idx] / (-lam * ds[idx]))
        ok = np.isfinite(lam0) & (lam0 > lam)
    else:
        lam0 = np.zeros(idx.size)
        ok = np.zeros(idx.size, dtype=bool)
    if not ok.all():
        # the marginal value at the even split of the cap over the host's pages
        p_g = np.zeros(n_hosts + 1)
        p_g[:n_hosts] = caps / np.maximum(counts, 1.0)
        guess = prob.mean_marginal(p_g, hosts, n_hosts + 1)[:n_hosts][idx]
        lam0 = np.where(ok, lam0, np.maximum(guess, 2.0 * lam))
    state = {"pages": pages}

    def eval_hosts(lam_v, act):
        lam_all[idx] = lam_v
        act_all[:] = False
        act_all[idx] = act
        n_act = float(np.sum(counts[idx[act]]))
        if n_act < 0.8 * state["pages"].size:
            state["pages"] = state["pages"][act_all[hosts[state["pages"]]]]
        s, ds = prob.group_sums(lam_all, act_all, hosts, state["pages"])
        return s[idx], ds[idx]

    def bp_hosts(la, lb, lt, act):
        la_all = np.zeros(n_hosts)
        lb_all = np.zeros(n_hosts)
        lt_all = np.ones(n_hosts)
        a_all = np.zeros(n_hosts, dtype=np.bool_)
        la_all[idx], lb_all[idx], lt_all[idx], a_all[idx] = la, lb, lt, act
        e_in, e_up, e_dn = prob.group_breakpoints(state["pages"], la_all, lb_all, lt_all, a_all, hosts)
        return e_in[idx], e_up[idx], e_dn[idx]

    return _newton(eval_hosts, caps[idx], lam0, tol, max_iter, bp_hosts, la0, s_a0, ulps_stop=K.HOST_ULPS_STOP)


_SAMPLE = 1 << 14


#: With host caps and a Σp that may be singular (periodic freshness, detection), problems of at least
#: four times this many pages start from the λ of a sample of about this many pages, drawn by host.
_CAPPED_SAMPLE = 1 << 13
_CAPPED_START = 1.05  # that λ is raised by this factor (see _capped_lambda)


def _capped_lambda(prob, budget, tol, hosts, caps):
    """Starting λ of the joint iteration for a Σp that may be singular: the λ of a sample of the hosts.

    One host in m = n // _CAPPED_SAMPLE (drawn with a fixed seed) with all its pages, and every m-th
    page without a host, with their caps and the budget in proportion to the pages drawn, solved with
    host caps; its λ is raised by _CAPPED_START. A start above λ keeps the hosts found over their caps
    in the first pass known to bind at every λ below it, so that the next passes take each host's own
    step instead of evaluating the hosts again at λ to learn whether they bind; and the λ of the pages
    alone (:func:`_initial_lambda`) may lie far from it where many caps bind (3.5 times above under
    detection at 10^5 pages of the benchmark). Smaller problems, warm starts, samples of no page or of
    4 * _CAPPED_SAMPLE pages or more (a few large hosts drawn) and samples that cannot be solved
    (infeasible, or leaving λ = 0) start from :func:`_initial_lambda`.
    """
    n = prob.n
    if prob.lam0 is not None or n < 4 * _CAPPED_SAMPLE:
        return float(_initial_lambda(prob, budget, tol)[0])
    m = n // _CAPPED_SAMPLE
    chosen = np.random.default_rng(0).random(caps.shape[0]) * m < 1.0
    idx, hosts_s = K.host_sample(hosts, chosen, m)
    lam = 0.0
    if 0 < idx.size < 4 * _CAPPED_SAMPLE:  # (a large host drawn can make the sample as costly as the problem)
        try:
            lam = _solve(prob.subset(idx), budget * idx.size / n, hosts_s, caps[chosen], max(tol, 1e-9), 50)[1]
        except (InfeasibleAllocation, _MultiplierOverflow):
            lam = 0.0
    if lam > 0 and np.isfinite(lam):
        return float(lam) * _CAPPED_START
    return float(_initial_lambda(prob, budget, tol)[0])


def _initial_lambda(prob, budget, tol):
    """Starting λ: the exact λ of a strided sample of the pages with a proportional budget.

    Off by the sampling error (about 1/sqrt(sample size)), which Newton removes in two or three passes.
    Small problems (and samples that are infeasible) start from the marginal value at B/n instead,
    and a warm start (``prob.lam0``) from the λ it gives.
    """
    if prob.lam0 is not None:
        return np.array([prob.lam0])
    n = prob.n
    if n > 4 * _SAMPLE and isinstance(prob, _KernelProblem):
        idx = np.arange(0, n, n // _SAMPLE)
        try:
            _, lam, *_ = _solve(prob.subset(idx), budget * idx.size / n, _EMPTY_HOSTS, np.zeros(0), max(tol, 1e-9), 50)
        except InfeasibleAllocation:
            lam = 0.0
        if lam > 0 and np.isfinite(lam):
            return np.array([lam])
    return prob.mean_marginal(np.array([budget / n]), _EMPTY_HOSTS, 1)


def _spread_leftover(prob, p, budget, hosts, caps, bind, tol, max_iter):
    """λ = 0: spread what the valued pages cannot take evenly over the zero-value pages (max Σ log p).

    Hosts whose cap already binds on their valued pages (``bind``) keep their zero-value pages at p_min:
    those pages are left out of the spread (a cap of Σ p_min for them, summed in another order, could
    hand them a rounding residue above p_min, which the KKT check reads as a rate off its bound).
    """
    zero = ~prob.active()
    n_hosts = caps.shape[0]
    if n_hosts and hosts.shape[0]:
        held = zero & (hosts >= 0) & bind[np.maximum(hosts, 0)]
        if held.any():
            p[held] = np.broadcast_to(prob.lo, (prob.n,))[held]
            zero &= ~held
    idx = np.flatnonzero(zero)
    lo_z, hi_z = prob.take(idx)
    lo_arr = np.broadcast_to(np.asarray(lo_z, dtype=np.float64), (idx.size,))
    placed = ~zero  # the valued pages, and the zero-value pages held at p_min
    used = max(budget - float(np.sum(p[placed])), float(np.sum(lo_arr)))
    if n_hosts and hosts.shape[0]:
        h_all = np.where(hosts >= 0, hosts, n_hosts)
        taken = np.bincount(h_all[placed], weights=p[placed], minlength=n_hosts + 1)[:n_hosts]
        low_z = np.bincount(h_all[idx], weights=lo_arr, minlength=n_hosts + 1)[:n_hosts]
        caps_z = np.where(np.isfinite(caps), np.maximum(caps - taken, low_z), np.inf)
        hosts_z = np.ascontiguousarray(hosts[idx])
    else:
        caps_z = caps
        hosts_z = _EMPTY_HOSTS
    sub = _KernelProblem(idx.size, K.LOG, 1.0, np.ones(idx.size), 1.0, lo_z, hi_z)
    p_z, lam_z, *_ = _solve(sub, used, hosts_z, caps_z, tol, max_iter)
    if not np.isfinite(lam_z):
        raise _MultiplierOverflow
    p[idx] = p_z


# ---------------------------------------------------------------------------------------------------
# Public entry point
# ---------------------------------------------------------------------------------------------------
def _make_problem(delta, *, weights=None, objective="freshness-poisson", p_min=0.0, p_max=np.inf,
                  observed_completely=None):
    """The checked per-page data of :func:`allocate`, as a problem: ``(problem, n_pages)``.

    Raises the ValueError and UnknownNameError of :func:`allocate` for its page arguments.
    """
    obj = get_objective(objective)
    n_obj = obj._n_params() if isinstance(obj, Objective) else None
    if delta is None:
        if n_obj is None:
            raise ValueError("delta must be given (changes per day, shape (n_pages,)); got None")
        delta = np.zeros(n_obj)
    delta = check_array("delta", delta, low=0.0, unit="changes/day")
    if delta.ndim != 1 or delta.shape[0] < 1:
        raise ValueError(f"delta must have shape (n_pages,) with n_pages >= 1; got shape {delta.shape}")
    n = delta.shape[0]
    if n_obj is not None and n_obj != n:
        raise ValueError(f"delta has {n} pages but the objective {obj!r} holds parameters for {n_obj}")
    w = _ONE if weights is None else check_array("weights", weights, shape=(n,), low=0.0)
    lo = _bound("p_min", p_min, n, allow_inf=False)
    hi = _bound("p_max", p_max, n, allow_inf=True)
    if lo.shape[0] == 1 and hi.shape[0] == 1:
        if lo[0] > hi[0]:
            raise ValueError(f"p_min must be <= p_max; got p_min={lo[0]!r} > p_max={hi[0]!r} visits/day")
    else:
        bad = np.broadcast_to(lo, (n,)) > np.broadcast_to(hi, (n,))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"p_min must be <= p_max for every page; {int(bad.sum())} of {n} pages are not, first at "
                f"index {i} (p_min={np.broadcast_to(lo, (n,))[i]!r} > p_max={np.broadcast_to(hi, (n,))[i]!r})"
            )
    complete = None
    if observed_completely is not None:
        complete = np.asarray(observed_completely)
        if complete.dtype != np.bool_ or complete.shape != (n,):
            raise ValueError(
                f"observed_completely must be a bool array of shape ({n},); got {complete.dtype} {complete.shape}"
            )
        if not complete.any():
            complete = None

    if obj._kind is None if isinstance(obj, Objective) else True:
        if complete is not None:
            raise ValueError(
                f"observed_completely is supported with the harmonic and freshness objectives; got {obj!r}"
            )
        prob = _NumpyProblem(n, obj, delta, w, lo, hi)
    else:
        a, b = obj._params(delta)
        kinds = obj._kind
        if complete is not None:
            mode = obj._complete()
            if mode is None:
                raise ValueError(
                    "observed_completely is supported with the harmonic and freshness objectives; "
                    f"got objective {obj.name!r}"
                )
            kinds = np.where(complete, K.LOG if mode == "log" else K.LINEAR, obj._kind).astype(np.int8)
            with np.errstate(divide="ignore"):
                a_c = delta if mode == "log" else 1.0 / delta
            a = np.where(complete, a_c, a)
            lo = np.where(complete, np.minimum(lo, delta), lo)
            hi = np.where(complete, np.minimum(hi, delta), hi)
        prob = _KernelProblem(n, kinds, w, a, b, lo, hi, obj._offset)

    return prob, n


def _bound(name: str, value: ArrayLike, n: int, *, allow_inf: bool) -> NDArray[np.float64]:
    arr = np.asarray(value, dtype=np.float64) if not isinstance(value, np.ndarray) else value
    if np.ndim(arr) == 0:
        arr = check_array(name, np.atleast_1d(arr), low=0.0, allow_inf=allow_inf, unit="visits/day")
        return arr
    return check_array(name, arr, shape=(n,), low=0.0, allow_inf=allow_inf, unit="visits/day")


def allocate(
    delta: ArrayLike | None,
    budget: float,
    *,
    weights: ArrayLike | None = None,
    objective: str | Objective = "freshness-poisson",
    p_min: float | ArrayLike = 0.0,
    p_max: float | ArrayLike = np.inf,
    hosts: ArrayLike | None = None,
    host_caps: ArrayLike | None = None,
    observed_completely: ArrayLike | None = None,
    warm_start: AllocationResult | None = None,
    tol: float = 1e-12,
    max_iter: int = 100,
) -> AllocationResult:
    """Optimal visit rates: maximise Σ w_i f(p_i; Δ_i) subject to Σ p_i = B, bounds and host caps.

    Parameters
    ----------
    delta : array_like of float, shape (n_pages,)
        Change rates Δ_i >= 0, changes per day (for ``"detection-discrete"``: change probability per
        step, in [0, 1]). May be None for objectives that hold their own per-page parameters
        (:class:`SyncCost`).
    budget : float
        Crawl budget B > 0, visits per day. The rates sum to B exactly.
    weights : array_like of float, shape (n_pages,), optional
        Importance weights w_i >= 0; default all ones.
    objective : str or Objective, default="freshness-poisson"
        One of :data:`OBJECTIVE_NAMES` or an :class:`Objective`.
    p_min, p_max : float or array_like of float, shape (n_pages,)
        Bounds on each rate, visits per day; ``p_max`` may be inf.
    hosts : array_like of int, shape (n_pages,), optional
        Host index of each page, ``-1`` for a page without a host.
    host_caps : array_like of float, shape (n_hosts,), optional
        Politeness cap c_h of each host, visits per day; ``inf`` for an uncapped host. Required with
        ``hosts``.
    observed_completely : array_like of bool, shape (n_pages,), optional
        Pages whose every change is announced (sitemaps, feeds, pings). Such a page is visited with
        probability ρ_i = p_i/Δ_i at each announced change, so ``p_i <= Δ_i`` (``p_min`` is lowered to
        Δ_i where it exceeds it); its objective is ``log ρ_i`` with ``"harmonic"`` (LambdaCrawl) and
        ρ_i with the freshness objectives. Solved with the same λ as the other pages.
    warm_start : AllocationResult, optional
        A previous solution, typically the last period's plan for the same pages with updated Δ: its λ
        (when > 0) starts the root-find instead of the λ of a sample of the pages, and with host caps
        its ``host_lam`` (shape (n_hosts,), the same hosts) starts each binding host from its own
        multiplier. With host caps it is used only where Σp may be singular (periodic freshness,
        detection, completely observed pages under freshness): where it is smooth the first pass places
        the hosts as well as a start would, and a λ0 that settles before the hosts cost time. The rates
        are those of a solve without it, to the tolerance; a start far off costs passes, not exactness.
    tol : float, default=1e-12
        Relative tolerance on the budget at which the root-finds stop (before the final correction);
        with host caps and a smooth objective they also stop once their Newton step is below 1e-11
        relative, and the rates are then checked against 10 tol.
    max_iter : int, default=100
        Most passes per root-find.

    Returns
    -------
    AllocationResult
        Rates, λ, per-host multipliers, objective, status and KKT residual.

    Raises
    ------
    ValueError
        If an input is NaN, negative, of the wrong shape, or ``p_min > p_max`` for a page (the message
        names the first offending page), or ``warm_start.host_lam`` does not have one entry a host or
        holds NaN, or the budget is so small that λ would overflow float64 (rates near 1e-308
        visits/day under the harmonic objective or the even spread over pages of no value).
    TypeError
        If ``warm_start`` is not an :class:`AllocationResult`.
    InfeasibleAllocation
        If B is below Σ p_min, above what the pages can take (Σ p_max with each host limited to its
        cap), or a host's cap is below the sum of its pages' ``p_min``.
    UnknownNameError
        If ``objective`` is an unknown name.

    Notes
    -----
    Pages with zero marginal value (``w_i = 0`` or ``Δ_i = 0``) stay at ``p_min`` unless the others
    cannot absorb the budget; then λ = 0 and the rest is spread evenly over them (see the module notes).

    Rates are resolved as responses to a float64 multiplier: a page whose optimal rate lies far below
    what that resolves (p_i / Δ_i below about 1e-16 under Poisson freshness, say with a host cap of
    1e-240 visits/day) can miss the KKT conditions; the solve then reports ``NOT_OPTIMAL`` with a
    ``ConvergenceWarning`` rather than success.

    References
    ----------
    .. [1] Azar, Horvitz, Lubetzky, Peres, Shahaf, "Tractable near-optimal policies for crawling",
       PNAS 2018 (seed 001, Sec. 5).
    .. [2] Kolobov, Peres, Lu, Horvitz, NeurIPS 2019 (LambdaCrawl; mixed observations).
    .. [3] Kolobov, Lubetzky, Peres, Horvitz, "Optimal freshness crawl under politeness constraints",
       SIGIR 2019 (host caps).

    Examples
    --------
    >>> import numpy as np
    >>> res = allocate([1.0, 4.0], budget=4.0)  # p = sqrt(Δ/λ) - Δ with 1/sqrt(λ) = 3
    >>> np.round(res.p, 9), res.success
    (array([2., 2.]), True)
    """
    budget = check_positive("budget", budget, unit="visits/day")
    tol = check_positive("tol", tol)
    max_iter = check_int("max_iter", max_iter, low=1)
    prob, n = _make_problem(delta, weights=weights, objective=objective, p_min=p_min, p_max=p_max,
                            observed_completely=observed_completely)
    hosts_arr, caps = _check_hosts(hosts, host_caps, n)
    n_hosts = caps.shape[0]
    if not np.isfinite(caps).any():  # no host, or no finite cap: nothing to cap, every λ_h = λ
        hosts_arr, caps = _EMPTY_HOSTS, np.zeros(0)  # (and no per-host kernels to compile on a first call)
    start = _warm_start(warm_start, caps.shape[0] if hosts_arr.shape[0] else 0)

    if start[0] is not None and hosts_arr.shape[0] and isinstance(prob, _KernelProblem) and \
            not prob.has_flat_marginals():
        # with host caps where Σp is smooth the first pass, at λ0 with the feasibility sums, fits each host
        # a model that places it as well as a start would, and a λ0 closer than the sample's can settle λ
        # before the hosts, which then go to the per-host loop instead of the cheap passes over the listed
        # pages: Poisson freshness re-planned at 10^6 pages took 22.9 ms warm against 18.6 cold (at 10^5
        # pages it was faster, 3.2 against 4.3). Not used there, so that a warm start does not cost time
        start = None, None
    prob.lam0, prob.host_lam0 = start
    try:
        p, lam, lamhat, host_lam, n_iter, converged, *checked = _solve(prob, budget, hosts_arr, caps, tol, max_iter)
    except _MultiplierOverflow:  # in the even spread over the pages of no value
        lam = np.inf
    if not np.isfinite(lam):
        raise ValueError(
            f"budget {budget:g} visits/day is too small to solve in float64: the multiplier λ (marginal value "
            f"of a visit per day) would exceed the largest float, {np.finfo(float).max:.3g}; express the rates "
            f"in a larger time unit"
        )
    if checked:  # the KKT residual and per-host sums, computed with the rates
        kkt, sums = checked[0]
        used = float(np.sum(sums))
    else:
        kkt = prob.kkt(p, lam, hosts_arr, lamhat)
        used = float(np.sum(p))
        sums = K.sum_by_host(p, hosts_arr, caps.shape[0]) if caps.shape[0] and hosts_arr.shape[0] else None
    kkt = max(kkt, abs(used - budget) / budget)
    if sums is not None:
        sums = sums[: caps.shape[0]]
        fin = np.isfinite(caps)
        over = (sums[fin] - caps[fin]) / np.maximum(caps[fin], np.finfo(float).tiny)
        kkt = max(kkt, float(np.max(over, initial=0.0)))
    value = prob.objective(p)
    status = Status.CONVERGED if converged else Status.MAX_ITER
    if converged and not kkt <= _KKT_ALARM:
        status = Status.NOT_OPTIMAL
        message = (f"the root-finds converged but the rates miss the optimality conditions: {used:.12g} of "
                   f"{budget:.12g} visits/day used, KKT residual {kkt:.2e} (a solver defect; please report)")
        warnings.warn(message, ConvergenceWarning, stacklevel=2)
    elif converged:
        message = f"converged: {used:.12g} of {budget:.12g} visits/day used, KKT residual {kkt:.2e}"
    else:
        message = (f"stopped at max_iter={max_iter} before reaching tol={tol:g}: {used:.12g} of "
                   f"{budget:.12g} visits/day used, KKT residual {kkt:.2e}")
        warnings.warn(message, ConvergenceWarning, stacklevel=2)
    if hosts is None:
        host_lam = None
    elif not caps.shape[0]:  # solved without hosts (no finite cap): every host's multiplier is λ
        host_lam = np.full(n_hosts, lam)
    return AllocationResult(
        p=p,
        lam=lam,
        host_lam=host_lam,
        objective=float(value),
        status=status,
        message=message,
        n_iter=int(n_iter),
        kkt_residual=float(kkt),
    )


_KKT_ALARM = 1e-6  # a converged solve whose rates miss the KKT conditions by more is reported NOT_OPTIMAL


def _warm_start(start, n_hosts):
    """(λ0 or None, per-host multipliers or None) from ``allocate(warm_start=...)``, checked.

    With hosts, a ``host_lam`` of another shape or with NaN is refused (a result of another problem).
    A λ that is not finite and positive (a solve that ended at λ = 0) gives no start, nor do host
    multipliers without hosts; inf (a host pinned at its lower bounds) and entries at or below λ0
    (hosts that did not bind) start from λ0.
    """
    if start is None:
        return None, None
    if not isinstance(start, AllocationResult):
        raise TypeError(f"warm_start must be an AllocationResult (a previous solve's result); got {type(start).__name__}")
    host_lam = None
    if n_hosts and start.host_lam is not None:
        host_lam = K.writable(start.host_lam)
        if host_lam.shape != (n_hosts,):
            raise ValueError(
                f"warm_start.host_lam must have one entry a host, shape ({n_hosts},) as host_caps; got shape "
                f"{host_lam.shape}"
            )
        if np.isnan(host_lam).any():
            i = int(np.flatnonzero(np.isnan(host_lam))[0])
            raise ValueError(f"warm_start.host_lam must not be NaN; host {i} is")
    if not (np.isfinite(start.lam) and start.lam > 0):
        return None, None
    return float(start.lam), host_lam


def _check_hosts(hosts, host_caps, n):
    if hosts is None and host_caps is None:
        return _EMPTY_HOSTS, np.zeros(0)
    if hosts is None:
        raise ValueError("host_caps was given without hosts; pass hosts, shape (n_pages,), too")
    h = np.asarray(hosts)
    if h.shape != (n,):
        raise ValueError(f"hosts must have shape ({n},); got {h.shape}")
    if h.dtype.kind not in "iu":
        if h.dtype.kind == "f" and np.all(np.isfinite(h)) and np.all(h == np.round(h)):
            h = h.astype(np.intp)
        else:
            raise ValueError(f"hosts must be integer host indices (-1 for none); got dtype {h.dtype}")
    h = K.writable(h, np.intp)
    h_min, h_max = (int(h.min()), int(h.max())) if n else (0, -1)  # numpy masks below only on error
    if host_caps is None:
        n_hosts = int(h_max) + 1
        caps = np.full(max(n_hosts, 0), np.inf)
    else:
        caps = check_array("host_caps", np.atleast_1d(np.asarray(host_caps, dtype=np.float64)), low=0.0,
                           allow_inf=True, unit="visits/day")
        if caps.ndim != 1:
            raise ValueError(f"host_caps must have shape (n_hosts,); got {caps.shape}")
        caps = K.writable(caps)
    n_hosts = caps.shape[0]
    if h_min < -1 or h_max >= n_hosts:
        bad = (h < -1) | (h >= n_hosts)
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"hosts must be in [-1, {n_hosts - 1}] (index into host_caps, -1 for none); "
            f"{int(bad.sum())} of {n} pages are not, first at index {i} ({int(h[i])})"
        )
    return h, caps
