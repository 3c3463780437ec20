"""Exact allocation of a crawl budget: maximise Σ w_i f(p_i; Δ_i) subject to Σ p_i = B.

Method
------
At the optimum every page sits at ``p_i(ν) = clip(g_i(ν), p_min_i, p_max_i)``, with ``g_i`` the inverse
of its marginal value ``w_i f_i'`` and ν its multiplier: ``ν = λ`` for a page without a host or on a
host whose cap does not bind, ``ν = μ_h > λ`` on a host h whose cap binds (Kolobov, Lubetzky, Peres,
Horvitz, SIGIR 2019). Write ``S_h(ν) = Σ_{i∈h} p_i(ν)``, nonincreasing. Two facts make the problem
one scalar equation and one independent equation per host:

* ``μ_h`` solves ``S_h(μ_h) = c_h`` and does not depend on λ; the cap binds exactly when ``μ_h > λ``,
  that is when ``S_h(λ) > c_h``;
* λ solves the budget equation ``T(λ) = Σ_h min(c_h, S_h(λ)) + S_free(λ) = B``, which needs only the
  sums at λ.

Both are solved by one vectorised safeguarded root-finder (:class:`_Roots`: Newton on log S against
log ν inside a bracket, bisection where a step leaves it or stalls, interpolation across a jump of S),
the global λ as one group and the binding hosts as many, in the same passes: each pass
(:func:`_kernels.sweep`) sums every page's rate and slope at λ and, for each host known to bind, at its
μ_h. A host is known to bind once a pass finds it over its cap at λ; it starts from that λ, a lower
end of its bracket. The last pass writes the rates with the first-order correction
``p_i += p_i'(ν) δν`` that makes the budget and each binding cap exact, or, where a root-find ended
on a jump of a sum (pages whose marginal value is constant, or flat where they leave p_min), the rates
interpolated across it. The KKT residual of the result is computed from the rates and reported.

Pages whose marginal value is 0 at every rate (``w_i = 0``, ``Δ_i = 0``) sit at their lower bound as
long as the other pages can absorb the budget (λ > 0). When they cannot (finite ``p_max`` and caps),
λ = 0 and the remaining budget is spread over the zero-value pages as evenly as their bounds and host
caps allow (the maximiser of Σ log p over them, solved the same way): any split is optimal, this one
is defined.
"""

from __future__ import annotations

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
_EPS = np.finfo(np.float64).eps
_KKT_ALARM = 1e-6  # a converged solve whose rates miss the KKT conditions by more is reported NOT_OPTIMAL
_ULPS_STOP = 1e-8  # a root-find also stops when its Newton step is below a few ulps and |S - target| below this


def _per_page(x, dtype=np.float64):
    """x as a contiguous, writable array of shape (1,) (one value for every page) or (n,).

    The passes take every per-page input in this one form, so that each compiles once (a read-only
    array, a scalar or a strided view would each be a type of its own).
    """
    x = np.ascontiguousarray(np.atleast_1d(np.asarray(x, dtype=dtype)).reshape(-1))
    return x if x.flags.writeable else x.copy()


# ---------------------------------------------------------------------------------------------------
# Problems: the per-page data and the passes over it
# ---------------------------------------------------------------------------------------------------
class _KernelProblem:
    """Per-page data of a built-in objective; every method is one compiled pass over the pages."""

    def __init__(self, n, kinds, w, a, b, lo, hi, offset=0.0):
        self.n = n
        self.k = _per_page(kinds, np.int8)
        # one compiled version of each pass per objective kind, or the mixed one (completely observed pages)
        self.tok = K.TOKENS[int(self.k[0])] if np.all(self.k == self.k[0]) else K.MIXED_TOKEN
        self.w, self.a, self.b = _per_page(w), _per_page(a), _per_page(b)
        self.lo, self.hi = _per_page(lo), _per_page(hi)
        self.offset = float(offset)
        self.hosts, self.G = _EMPTY_HOSTS, 0

    def _data(self):
        return self.tok, self.n, self.k, self.w, self.a, self.b, self.lo, self.hi, self.hosts

    def sweep(self, nu):
        """Per group g, Σ p_i(ν_g) and Σ dp_i/dν_g, shape (2, G + 1) (groups with ν_g < 0: zeros)."""
        out = np.empty((self.G + 1, 2))
        K.sweep(*self._data(), nu, out)
        return out.T

    def rates(self, nu, dnu, nu2, theta):
        p, sums = np.empty(self.n), np.empty(self.G + 1)
        K.rates(*self._data(), nu, dnu, nu2, theta, p, sums)
        return p, sums

    def certificate(self, nu, p):
        return K.certificate(*self._data(), nu, p, self.offset)

    def bounds(self):
        out = np.empty((3, self.G + 1))
        K.group_bounds(*self._data(), out)
        return out

    def breakpoints(self, la, lb, mid, by_host):
        """Per group, the breakpoint of Σp in (la, lb) nearest to mid (NaN: none); one group without by_host."""
        out = np.empty(la.shape[0])
        K.breakpoints(self.tok, self.n, self.k, self.w, self.a, self.b, self.lo, self.hi,
                      self.hosts if by_host else _EMPTY_HOSTS, la, lb, mid, out)
        return out

    def active(self):
        out = np.empty(self.n, dtype=np.bool_)
        K.active(self.tok, self.n, self.k, self.w, self.a, self.b, out)
        return out

    def start(self, budget):
        """A starting λ: the geometric mean of the marginal values w f'(B/n) of a strided sample of pages."""
        idx = np.arange(0, self.n, max(1, self.n // 1024))
        pick = lambda x: x if x.shape[0] == 1 else np.ascontiguousarray(x[idx])  # noqa: E731
        p = np.full(idx.size, budget / self.n)
        m = pick(self.w) * K.marginals(self.tok, pick(self.k), p, np.ascontiguousarray(np.broadcast_to(self.a, (self.n,))[idx]),
                                       pick(self.b))
        m = m[(m > 0) & np.isfinite(m)]
        return float(np.exp(np.mean(np.log(m)))) if m.size else 1.0


class _NumpyProblem:
    """Per-page data of a user-defined objective, evaluated through its numpy methods (the same passes)."""

    def __init__(self, n, obj, delta, w, lo, hi):
        self.n, self.obj, self.delta = n, obj, delta
        self.w = np.broadcast_to(w, (n,))
        self.lo = np.broadcast_to(lo, (n,))
        self.hi = np.broadcast_to(hi, (n,))
        self.has_inverse = type(obj).inverse_marginal is not Objective.inverse_marginal
        with np.errstate(all="ignore"):
            m0 = self.w * np.asarray(obj.derivative(self.lo.copy(), delta), dtype=np.float64)
        self._active = (self.w > 0) & (m0 > 0) & (self.hi > self.lo)
        self.hosts, self.G = _EMPTY_HOSTS, 0

    def _deriv(self, p):
        with np.errstate(all="ignore"):
            return np.asarray(self.obj.derivative(p, self.delta), dtype=np.float64)

    def _groups(self):
        return np.where(self.hosts >= 0, self.hosts, self.G) if self.hosts.shape[0] else np.full(self.n, self.G)

    def responses(self, lam_page):
        """clip(g(ν_i), lo, hi) for every page (ν_i an array of shape (n,)): the inverse marginal, or bisection."""
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
        # bisection on w f'(p) = ν inside [lo, hi]; f' is nonincreasing
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
            p[unbounded] = np.inf  # the marginal value never falls to ν: the rate is unbounded
            low = act & (self.w * self._deriv(self.lo) <= lam_page)
            run = act & ~top & ~low
            inner = run.copy()
            for _ in range(2200):
                if not run.any():
                    break
                mid = np.where(b > 4.0 * a, np.where(a > 0, np.sqrt(a * b), 0.25 * b), 0.5 * (a + b))
                up = self.w * self._deriv(mid) > lam_page
                a = np.where(run & up, mid, a)
                b = np.where(run & ~up, mid, b)
                run &= (b - a) > 4e-16 * b
            p[inner] = (0.5 * (a + b))[inner]
        return p

    def _with_slope(self, lam_page):
        p = self.responses(lam_page)
        h = 1e-7
        with np.errstate(all="ignore"):
            dp = (self.responses(lam_page * (1.0 + h)) - p) / (lam_page * h)
        return p, np.where(np.isfinite(dp), dp, 0.0)

    def sweep(self, nu):
        g = self._groups()
        out = np.zeros((2, self.G + 1))
        on = nu[g] >= 0
        if on.any():
            p, dp = self._with_slope(np.where(on, nu[g], np.inf))
            out[0] = np.bincount(g[on], weights=p[on], minlength=self.G + 1)
            out[1] = np.bincount(g[on], weights=dp[on], minlength=self.G + 1)
        return out

    def rates(self, nu, dnu, nu2, theta):
        g = self._groups()
        p, dp = self._with_slope(nu[g])
        t = theta[g]
        v = p + dp * dnu[g]
        if np.any(t != 0):
            p2 = self.responses(nu2[g])
            with np.errstate(all="ignore"):
                across = np.where(t > 0, p + t * (p2 - p), np.where(p2 == np.inf, p - t, p))
            v = np.where(t != 0, across, v)
        p = np.clip(v, self.lo, self.hi)
        return p, np.bincount(g, weights=p, minlength=self.G + 1)

    def certificate(self, nu, p):
        lp = nu[self._groups()]
        with np.errstate(invalid="ignore"):  # (w = 0 against an infinite derivative at p = 0; inf - inf)
            m = np.where(self.w > 0, self.w * self._deriv(p), 0.0)
            r = np.where(p <= self.lo, np.maximum(0.0, m - lp),
                         np.where(p >= self.hi, np.maximum(0.0, lp - m), np.abs(m - lp)))
            r = np.where((self.hi <= self.lo) | ~np.isfinite(lp), 0.0, r)
            r = np.where(lp > 0, r / np.where(lp > 0, lp, 1.0), r)
            v = np.asarray(self.obj.value(p, self.delta), dtype=np.float64)
        value = float(np.sum(np.where(self.w > 0, self.w * v, 0.0)))
        return (float(np.max(r)) if r.size else 0.0), value

    def breakpoints(self, la, lb, mid, by_host):
        return np.full(la.shape[0], np.nan)  # none known: bisection

    def bounds(self):
        g = self._groups()
        top = np.where(self._active, self.hi, self.lo)
        return np.stack([np.bincount(g, weights=x, minlength=self.G + 1) for x in (self.lo, top, self.hi)])

    def active(self):
        return self._active.copy()

    def start(self, budget):
        with np.errstate(all="ignore"):
            m = self.w * self._deriv(np.clip(np.full(self.n, budget / self.n), self.lo, self.hi))
        m = m[(m > 0) & np.isfinite(m)]
        return float(np.exp(np.mean(np.log(m)))) if m.size else 1.0


# ---------------------------------------------------------------------------------------------------
# The root-finder
# ---------------------------------------------------------------------------------------------------
class _Roots:
    """A vectorised safeguarded root-find of ``S_g(x_g) = target_g``, each S_g nonincreasing in x_g >= 0.

    The caller evaluates S and S' at ``x`` and passes them to :meth:`observe`, which narrows each
    group's bracket [la, lb] (S(la) > target > S(lb)) and sets the next ``x``: a Newton step on log S
    against log x when it stays inside the bracket and at least halves the error, else the bisection of
    the bracket (geometric while it is wide), or, before a bracket exists, an expansion by a factor that
    squares at each expansion. A group is finished (``done``) when ``|S - target| <= tol target``, or
    its Newton step is below a few ulps of x with ``|S - target| <= 1e-8 target`` (``dx`` then holds the
    first-order correction ``(target - S) / S'``), or when its bracket has collapsed onto a jump of S:
    then ``x = lb``, ``x2 = la`` and ``theta = (target - S(lb)) / (S(la) - S(lb))`` interpolates the rates
    between p(lb) and p(la); ``theta < 0`` marks a jump to an infinite S(la), ``gap`` what it must give.
    """

    def __init__(self, target, x0, tol, breakpoints=None):
        G = target.shape[0]
        self.target, self.tol, self.breakpoints = target, tol, breakpoints
        self._probe = np.zeros(G, dtype=bool)  # x is a breakpoint of S: probe its other side next
        self.x = np.array(x0, dtype=np.float64)
        self.la, self.lb = np.zeros(G), np.full(G, np.inf)
        self.s_a, self.s_b = np.full(G, np.inf), np.full(G, np.nan)
        self.done = np.zeros(G, dtype=bool)
        self.dx, self.x2, self.theta, self.gap = np.zeros(G), np.zeros(G), np.zeros(G), np.zeros(G)
        self.last_s, self.last_ds = np.full(G, np.nan), np.zeros(G)
        self._err = np.full(G, np.inf)
        self._grow = np.full(G, 8.0)

    def narrow(self, sel, x, s):
        """Raise the lower bracket end of the groups ``sel`` (a mask) to x, where S(x) > target there."""
        sel = sel & ~self.done & (x > self.la) & (s > self.target)
        self.la[sel] = x
        self.s_a[sel] = s[sel]
        out = sel & (self.x <= self.la)  # the next iterate fell out of the bracket: its middle
        self.x[out] = np.where(np.isfinite(self.lb[out]), np.sqrt(self.la[out] * self.lb[out]), 8.0 * self.la[out])

    def observe(self, sel, x, s, ds, step=True):
        """Take S(x) and S'(x) for the groups ``sel`` (index arrays or a mask); set the next x of those not done.

        With ``step=False`` the observation narrows the brackets only, and the next x is moved only
        where it fell outside.
        """
        with np.errstate(all="ignore"):
            sel = np.flatnonzero(sel) if np.asarray(sel).dtype == bool else np.asarray(sel)
            x = np.broadcast_to(np.asarray(x, dtype=np.float64), sel.shape)
            keep = ~self.done[sel]
            sel, x, s, ds = sel[keep], x[keep], np.asarray(s)[keep], np.asarray(ds)[keep]
            if sel.size == 0:
                return
            tgt = self.target[sel]
            err = s - tgt
            la, lb = self.la[sel], self.lb[sel]
            self.last_s[sel], self.last_ds[sel] = s, ds
            conv = (np.abs(err) <= self.tol * tgt) | ((np.abs(err) <= -ds * 4.0 * _EPS * x)
                                                       & (np.abs(err) <= _ULPS_STOP * tgt))
            up = (err > 0) & (x > la)
            dn = (err < 0) & (x < lb)
            la, lb = np.where(up, x, la), np.where(dn, x, lb)
            s_a, s_b = np.where(up, s, self.s_a[sel]), np.where(dn, s, self.s_b[sel])
            self.la[sel], self.lb[sel], self.s_a[sel], self.s_b[sel] = la, lb, s_a, s_b
            # converged: the correction dx removes the rest of the error
            c = sel[conv]
            self.x[c] = x[conv]
            self.dx[c] = np.where(ds[conv] < 0, -err[conv] / ds[conv], 0.0)
            self.done[c] = True
            # a bracket collapsed onto a jump of S
            jump = ~conv & (la > 0) & np.isfinite(lb) & (lb - la <= 8.0 * _EPS * lb)
            j = sel[jump]
            gap = s_a[jump] - s_b[jump]
            self.x[j], self.x2[j] = lb[jump], la[jump]
            self.theta[j] = np.where((gap > 0) & np.isfinite(gap), (tgt[jump] - s_b[jump]) / gap, 0.0)
            self.gap[j] = np.where(np.isfinite(s_a[jump]), 0.0, tgt[jump] - s_b[jump])
            self.done[j] = True
            live = ~conv & ~jump
            sel, x, s, ds, err, la, lb = sel[live], x[live], s[live], ds[live], err[live], la[live], lb[live]
            # the next x: Newton on log S against log x, inside the bracket
            # Newton on S against u = x^(-1/2), in which S is affine where the rates are sqrt(w Δ / x) - Δ
            # (Poisson freshness between breakpoints) and near affine for the others; else on log S against log x
            u = 1.0 / np.sqrt(x)
            un = u - (tgt[live] - s) * u / (2.0 * x * ds)
            xn = np.where(un > 0, 1.0 / (un * un), x * np.exp((np.log(tgt[live]) - np.log(s)) * s / (x * ds)))
            stalled = np.abs(err) > 0.5 * self._err[sel]
            self._err[sel] = np.abs(err)
            inside = np.isfinite(xn) & (xn > la) & (xn < lb) & ~stalled
            if not step:
                pending = self.x[sel]
                keep = (pending > la) & (pending < lb)
                inside &= ~keep
            bracket = (la > 0) & np.isfinite(lb)
            mid = np.where(lb > 4.0 * la, np.sqrt(la * lb), 0.5 * (la + lb))
            grow = self._grow[sel]
            expand_up = ~np.isfinite(lb) & ~(np.isfinite(xn) & (xn > x))
            expand_dn = ~(la > 0) & np.isfinite(lb) & ~(np.isfinite(xn) & (xn > 0) & (xn < x))
            nxt = np.where(inside, xn, np.where(bracket, mid, xn))
            # a breakpoint just evaluated: its other side, a few ulps away, closes a bracket on a jump
            probe = self._probe[sel]
            side = np.where(err < 0, x * (1.0 - 4.0 * _EPS), x * (1.0 + 4.0 * _EPS))
            probe &= (side > la) & (side < lb)
            nxt = np.where(probe, side, nxt)
            # a bisection: to the breakpoint of S inside the bracket nearest its middle, where there is one
            bisect = bracket & ~inside & ~probe & (lb - la <= 1e-7 * lb)
            self._probe[sel] = False
            if bisect.any() and self.breakpoints is not None:
                e = self.breakpoints(sel[bisect], la[bisect], lb[bisect], mid[bisect])
                found = np.isfinite(e)
                idx = np.flatnonzero(bisect)[found]
                nxt[idx] = e[found]
                self._probe[sel[idx]] = True
            nxt = np.where(expand_up, x * grow, np.where(expand_dn, x / grow, nxt))
            nxt = np.where(~np.isfinite(lb) & ~expand_up, np.minimum(nxt, x * 1e30), nxt)
            nxt = np.where(~(la > 0) & ~expand_dn, np.maximum(nxt, x * 1e-30), nxt)
            self._grow[sel] = np.where(expand_up | expand_dn, np.minimum(grow * grow, 1e30), 8.0)
            if not step:
                nxt = np.where(keep, self.x[sel], nxt)
            self.x[sel] = nxt


# ---------------------------------------------------------------------------------------------------
# The solve
# ---------------------------------------------------------------------------------------------------
class _Solution:
    __slots__ = ("p", "lam", "host_lam", "n_iter", "converged", "kkt", "value", "sums")


def _check_feasible(prob, budget, caps):
    """Per group Σ p_min, Σp at λ = 0+ and Σ p_max; raises InfeasibleAllocation where no rates exist."""
    G = prob.G
    low, top, up = prob.bounds()
    if budget < low.sum():
        raise InfeasibleAllocation(
            f"budget {budget:g} visits/day is below the sum of the lower bounds p_min, {low.sum():g} visits/day"
        )
    bad = np.isfinite(caps) & (low[:G] > caps)
    if bad.any():
        h = int(np.flatnonzero(bad)[0])
        raise InfeasibleAllocation(
            f"host_caps: {int(bad.sum())} hosts have a cap below the sum of their pages' p_min, first host {h} "
            f"(cap {caps[h]:g} visits/day < {low[h]:g} visits/day)"
        )
    max_total = float(up[G] + np.sum(np.minimum(caps, up[:G])))
    if budget > max_total:
        raise InfeasibleAllocation(
            f"budget {budget:g} visits/day exceeds the most the pages can take, {max_total:g} visits/day "
            f"(sum of p_max, each host limited to its cap)"
        )
    return low, top, up


def capped_total(out, caps):
    """``(T(λ), T'(λ))`` from a pass's sums at λ: ``T = Σ_h min(c_h, S_h(λ)) + S_free(λ)``.

    ``out`` is :meth:`_KernelProblem.sweep`'s array, shape (4, G + 1); ``caps`` has shape (G,).
    """
    s_h, ds_h = out[0, :-1], out[1, :-1]
    under = ~(s_h > caps)
    return (float(out[0, -1] + np.sum(np.minimum(caps, s_h))),
            float(out[1, -1] + np.sum(ds_h[under])))


def _solve(prob, budget, caps, tol, max_iter, lam0=None, mu0=None, at_lam=None) -> _Solution:
    """Rates and multipliers of one problem whose hosts (``prob.hosts``, ``prob.G``) have caps ``caps``.

    ``at_lam``: ``(λ, dλ, λ2, θ)`` of a budget root found elsewhere (the partitioned solver); then only the
    binding hosts' multipliers are solved here, and ``budget`` is this problem's share of the budget
    (used only on a jump, θ != 0).
    """
    G = prob.G
    capped = np.isfinite(caps)
    if at_lam is None:
        low, top, up = _check_feasible(prob, budget, caps)
    else:
        low, top, up = prob.bounds()
    pinned = capped & (caps <= low[:G])  # every page at p_min: the multiplier is inf
    can_bind = capped & ~pinned & (top[:G] > caps)
    top_total = float(top[G] + np.sum(np.minimum(caps, top[:G])))
    lam_zero = at_lam is None and budget >= top_total  # the valued pages take all they can at λ = 0

    start = (prob.start(budget) if lam0 is None else lam0) if at_lam is None else at_lam[0]

    def host_breakpoints(sel, la, lb, mid):
        la_g, lb_g, mid_g = np.zeros(G + 1), np.zeros(G + 1), np.zeros(G + 1)
        la_g[sel], lb_g[sel], mid_g[sel] = la, lb, mid
        return prob.breakpoints(la_g, lb_g, mid_g, True)[sel]

    lam = _Roots(np.array([budget]), [0.0 if lam_zero else start], tol,
                 lambda sel, la, lb, mid: prob.breakpoints(la, lb, mid, False))
    hosts = _Roots(np.where(capped, caps, np.inf), np.full(G, start) if mu0 is None else mu0, tol,
                   host_breakpoints)
    started = np.zeros(G, dtype=bool)
    bind = can_bind.copy() if lam_zero else np.zeros(G, dtype=bool)
    if lam_zero:
        lam.done[0] = True
        started = can_bind.copy()
    fixed = at_lam is not None  # λ given: one pass at it finds the binding hosts
    if fixed:
        lam.done[0] = True
        lam.dx[0], lam.x2[0], lam.theta[0] = at_lam[1], at_lam[2], at_lam[3]
    nu = np.empty(G + 1)
    n_iter = 0
    while n_iter < max_iter:
        # a host surely binds at λ once λ is at or below the lower end of its bracket (S_h(la_h) > c_h):
        # it is evaluated at its own iterate, and adds c_h to the budget's sum
        live = fixed or not lam.done[0]
        L = float(lam.x[0])
        sure = started & (hosts.la >= L) if live else bind & started
        run = sure & ~hosts.done
        if not live and not run.any():
            break
        if not np.isfinite(L) or not np.all(np.isfinite(hosts.x[run])):
            raise _MultiplierOverflow
        nu[:] = L if live else -1.0
        nu[:G][run] = hosts.x[run]
        out = prob.sweep(nu)
        n_iter += 1
        s_h, ds_h = out[0, :G], out[1, :G]
        if run.any():
            hosts.observe(run, hosts.x[run], s_h[run], ds_h[run])
        if live:
            at_lam = ~run
            over = can_bind & at_lam & (s_h > caps)
            # a host over its cap at λ binds (μ_h > λ): a new one starts from λ, the others narrow
            new = over & ~started
            hosts.observe(new, L, s_h[new], ds_h[new])
            hosts.narrow(over & started, L, s_h)
            started |= new
            bind = sure | over
            if not fixed:
                held = np.where(run, caps, np.minimum(caps, s_h))
                slope = ds_h[at_lam & ~(s_h > caps)]
                total = float(out[0, G] + np.sum(held))
                lam.observe([0], L, np.array([total]), np.array([float(out[1, G] + np.sum(slope))]))
            fixed = False
    converged = bool(lam.done[0] and np.all(hosts.done[bind & started]))
    if not lam.done[0]:  # out of passes: the correction from the last pass
        lam.dx[0] = np.nan_to_num((budget - lam.last_s[0]) / lam.last_ds[0]) if lam.last_ds[0] < 0 else 0.0
    left = bind & ~hosts.done
    hosts.dx[left] = np.where(hosts.last_ds[left] < 0, (caps[left] - hosts.last_s[left]) / hosts.last_ds[left], 0.0)
    hosts.dx[left] = np.nan_to_num(hosts.dx[left])

    x = float(lam.x[0])
    nu = np.full(G + 1, x)
    dnu = np.full(G + 1, lam.dx[0])
    nu2 = np.full(G + 1, lam.x2[0])
    theta = np.full(G + 1, lam.theta[0])
    if lam.theta[0] != 0 or lam.gap[0] > 0:  # λ ended on a jump of T
        bind = _share_jump(prob, budget, caps, can_bind, lam, theta)
    nu[:G] = np.where(bind, hosts.x, nu[:G])
    nu[:G][pinned] = np.inf
    dnu[:G] = np.where(bind, hosts.dx, dnu[:G])
    nu2[:G] = np.where(bind, hosts.x2, nu2[:G])
    jumped = bind & (hosts.theta != 0)
    theta[:G] = np.where(bind, np.where(jumped, hosts.theta, 0.0), theta[:G])
    for h in np.flatnonzero(bind & (hosts.gap > 0)):  # a host's root on a jump to an infinite sum
        theta[h] = -hosts.gap[h] / max(_count_infinite(prob, hosts.x2[h], h), 1.0)
    dnu = np.where(theta != 0, 0.0, dnu)
    p, sums = prob.rates(nu, dnu, nu2, theta)
    if lam_zero and budget > top_total:
        sums = _spread_leftover(prob, p, budget, caps, bind | pinned, tol, max_iter)
    # the multipliers the corrected rates answer to
    x = x + float(np.nan_to_num(dnu[G])) if theta[G] == 0 else x
    nu = np.where(theta == 0, nu + np.nan_to_num(dnu), nu)
    sol = _Solution()
    sol.p, sol.lam, sol.n_iter, sol.converged, sol.sums = p, x, n_iter, converged, sums
    sol.host_lam = np.where(bind, np.maximum(nu[:G], x), x)
    sol.host_lam[pinned] = np.inf
    nu_final = np.append(sol.host_lam, x)
    sol.kkt, sol.value = prob.certificate(nu_final, p)
    return sol


class _MultiplierOverflow(Exception):
    """The multiplier of a solve exceeds the largest float64 (rates near 1e-308 under a log objective)."""


def _count_infinite(prob, lam2, g):
    """The pages of group g (a host, or G: those without one) whose rate is infinite at the multiplier λ2."""
    G = prob.G
    nu = np.full(G + 1, np.inf)
    nu[g] = lam2
    p, _ = prob.rates(nu, np.zeros(G + 1), nu, np.zeros(G + 1))
    return float(np.sum(p == np.inf))


def _share_jump(prob, budget, caps, can_bind, lam, theta):
    """θ per group where λ ended on a jump of T(λ) between λ2 = la and λ = lb; returns the hosts that bind.

    Every page whose rate jumps there has the marginal value λ, so any split of the budget among them
    that meets the caps is optimal; this one is defined. A host over its cap at λ binds (its own
    multiplier). The groups whose sum jumps by a finite amount take one interpolation θ (each stopping
    at its cap): T(θ) = Σ_g min(c_g, S_g(λ) + θ (S_g(λ2) - S_g(λ))) is piecewise linear in θ. What
    they cannot take at θ = 1 goes to the groups whose sum jumps to infinity, shared evenly by their
    pages of infinite rate (θ_g < 0: -θ_g more each), each up to its cap.
    """
    G = prob.G
    s_b = prob.sweep(np.full(G + 1, float(lam.x[0])))[0]
    s_a = prob.sweep(np.full(G + 1, float(lam.x2[0])))[0]
    cap = np.append(caps, np.inf)
    bind = np.append(np.isfinite(caps) & (s_b[:G] > caps), False)  # (pinned hosts too: at their cap)
    base = np.where(bind, cap, s_b)
    room = np.where(bind, 0.0, np.maximum(cap - base, 0.0))
    with np.errstate(invalid="ignore"):  # inf - inf on a binding host, replaced by 0
        gap = np.where(bind, 0.0, s_a - s_b)
    finite = np.isfinite(gap) & (gap > 0)
    need = budget - float(np.sum(base))
    # θ on the finite jumps: walk the kinks θ_g = room_g / gap_g in order
    kink = np.where(finite, room / np.where(finite, gap, 1.0), np.inf)
    order = np.argsort(kink)
    t0, acc, slope = 0.0, 0.0, float(np.sum(gap[finite]))
    t = 1.0
    for g in order[finite[order]]:
        t_end = min(kink[g], 1.0)
        if acc + slope * (t_end - t0) >= need:
            break
        acc += slope * (t_end - t0)
        t0, slope = t_end, slope - gap[g]
        if t_end >= 1.0:
            break
    t = min(max(t0 + (need - acc) / slope, 0.0), 1.0) if slope > 0 else t0
    theta[:] = np.where(finite, np.minimum(t, kink), 0.0)
    rest = need - float(np.sum(np.minimum(theta * np.where(finite, gap, 0.0), room)))
    infinite = ~bind & (gap == np.inf)
    if rest > 0 and infinite.any():
        for g in np.flatnonzero(infinite)[::-1]:  # the pages without a host first, then the hosts
            take = min(rest, room[g])
            if take > 0:
                theta[g] = -take / max(_count_infinite(prob, float(lam.x2[0]), g), 1.0)
                rest -= take
    return bind[:G] & can_bind


def _spread_leftover(prob, p, budget, caps, held, tol, max_iter):
    """λ = 0: spread what the valued pages cannot take evenly over the zero-value pages (max Σ log p).

    Pages of hosts whose cap binds on their valued pages (or that are pinned, ``held``) keep p_min.
    Returns the rates' sums per group.
    """
    G = prob.G
    g = np.where(prob.hosts >= 0, prob.hosts, G) if prob.hosts.shape[0] else np.full(prob.n, G)
    zero = ~prob.active()
    if G:
        zero &= ~np.append(held, False)[g]
    idx = np.flatnonzero(zero)
    lo = np.broadcast_to(prob.lo, (prob.n,))
    hi = np.broadcast_to(prob.hi, (prob.n,))
    p[zero] = lo[zero]
    sums = np.bincount(g, weights=p, minlength=G + 1)
    sub = _KernelProblem(idx.size, K.LOG, 1.0, 1.0, 1.0, lo[idx], hi[idx])
    caps_z = np.inf
    if G:
        sub.hosts, sub.G = np.ascontiguousarray(prob.hosts[idx]), G
        low_z = np.bincount(g[idx], weights=lo[idx], minlength=G + 1)[:G]
        caps_z = np.where(np.isfinite(caps), np.maximum(caps - sums[:G] + low_z, low_z), np.inf)
    used = budget - float(np.sum(p)) + float(np.sum(lo[idx]))
    sol = _solve(sub, used, np.asarray(caps_z, dtype=np.float64).reshape(-1)[:G], tol, max_iter)
    if not np.isfinite(sol.lam):
        raise _MultiplierOverflow
    p[idx] = sol.p
    return np.bincount(g, weights=p, minlength=G + 1)


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
    w = 1.0 if weights is None else check_array("weights", weights, shape=(n,), low=0.0)
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
        return _NumpyProblem(n, obj, delta, w, lo, hi), n
    a, b = obj._params(delta)
    kinds = obj._kind
    if complete is not None:
        mode = obj._complete()
        if mode is None:
            raise ValueError(
                "observed_completely is supported with the harmonic and freshness objectives; "
                f"got objective {obj.name!r}"
            )
        kinds = np.where(complete, K.LOG if mode == "log" else K.LINEAR, obj._kind)
        with np.errstate(divide="ignore"):
            a_c = delta if mode == "log" else 1.0 / delta
        a = np.where(complete, a_c, a)
        lo = np.where(complete, np.minimum(lo, delta), lo)
        hi = np.where(complete, np.minimum(hi, delta), hi)
    return _KernelProblem(n, kinds, w, a, b, lo, hi, obj._offset), n


def _bound(name: str, value: ArrayLike, n: int, *, allow_inf: bool) -> NDArray[np.float64]:
    arr = np.asarray(value, dtype=np.float64) if not isinstance(value, np.ndarray) else value
    if np.ndim(arr) == 0:
        return check_array(name, np.atleast_1d(arr), low=0.0, allow_inf=allow_inf, unit="visits/day")
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
        (when > 0) starts the root-find, and with host caps its ``host_lam`` (shape (n_hosts,), the same
        hosts) starts each host's own root-find. The rates are those of a solve without it, to the
        tolerance; a start far off costs passes, not exactness.
    tol : float, default=1e-12
        Relative tolerance on the budget (and on each binding cap) at which the root-finds stop, before
        the final first-order correction.
    max_iter : int, default=100
        Most passes over the pages.

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
        cap), or a host's cap is below the sum of its pages' ``p_min``. A budget within 1e-12 relative of
        either end may be refused: the sums, in another order, can put it an ulp outside.
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
        hosts_arr, caps = _EMPTY_HOSTS, np.zeros(0)
    prob.hosts, prob.G = hosts_arr, caps.shape[0]
    lam0, mu0 = _warm_start(warm_start, caps.shape[0])
    try:
        sol = _solve(prob, budget, caps, tol, max_iter, lam0, mu0)
    except _MultiplierOverflow:
        sol = None
    if sol is None or not np.isfinite(sol.lam):
        raise ValueError(
            f"budget {budget:g} visits/day is too small to solve in float64: the multiplier λ (marginal value "
            f"of a visit per day) would exceed the largest float, {np.finfo(float).max:.3g}; express the rates "
            f"in a larger time unit"
        )
    used = float(np.sum(sol.sums))
    kkt = max(sol.kkt, abs(used - budget) / budget)
    if caps.shape[0]:
        fin = np.isfinite(caps)
        over = (sol.sums[:-1][fin] - caps[fin]) / np.maximum(caps[fin], np.finfo(float).tiny)
        kkt = max(kkt, float(np.max(over, initial=0.0)))
    status = Status.CONVERGED if sol.converged else Status.MAX_ITER
    if sol.converged and not kkt <= _KKT_ALARM:
        status = Status.NOT_OPTIMAL
        message = (f"the root-finds converged but the rates miss the optimality conditions: {used:.12g} of "
                   f"{budget:.12g} visits/day used, KKT residual {kkt:.2e} (a solver defect; please report)")
        warnings.warn(message, ConvergenceWarning, stacklevel=2)
    elif sol.converged:
        message = f"converged: {used:.12g} of {budget:.12g} visits/day used, KKT residual {kkt:.2e}"
    else:
        message = (f"stopped at max_iter={max_iter} before reaching tol={tol:g}: {used:.12g} of "
                   f"{budget:.12g} visits/day used, KKT residual {kkt:.2e}")
        warnings.warn(message, ConvergenceWarning, stacklevel=2)
    if hosts is None:
        host_lam = None
    elif not caps.shape[0]:  # solved without hosts (no finite cap): every host's multiplier is λ
        host_lam = np.full(n_hosts, sol.lam)
    else:
        host_lam = sol.host_lam
    return AllocationResult(
        p=sol.p,
        lam=sol.lam,
        host_lam=host_lam,
        objective=float(sol.value),
        status=status,
        message=message,
        n_iter=int(sol.n_iter),
        kkt_residual=float(kkt),
    )


def _warm_start(start, n_hosts):
    """(λ0 or None, per-host starts or None) from ``allocate(warm_start=...)``, checked.

    With hosts, a ``host_lam`` of another shape or with NaN is refused (a result of another problem).
    A λ that is not finite and positive (a solve that ended at λ = 0) gives no λ0; host multipliers that
    are not finite and above λ0 (hosts that did not bind, or were pinned) start from λ0.
    """
    if start is None:
        return None, None
    if not isinstance(start, AllocationResult):
        raise TypeError(f"warm_start must be an AllocationResult (a previous solve's result); got {type(start).__name__}")
    host_lam = None
    if n_hosts and start.host_lam is not None:
        host_lam = np.array(start.host_lam, dtype=np.float64)
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
    lam0 = float(start.lam)
    if host_lam is not None:
        host_lam = np.where(np.isfinite(host_lam) & (host_lam > lam0), host_lam, lam0)
    return lam0, host_lam


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
    h = _per_page(h, np.intp)
    h_min, h_max = (int(h.min()), int(h.max())) if n else (0, -1)
    if host_caps is None:
        caps = np.full(max(h_max + 1, 0), np.inf)
    else:
        caps = check_array("host_caps", np.atleast_1d(np.asarray(host_caps, dtype=np.float64)), low=0.0,
                           allow_inf=True, unit="visits/day")
        if caps.ndim != 1:
            raise ValueError(f"host_caps must have shape (n_hosts,); got {caps.shape}")
        caps = _per_page(caps)
    n_hosts = caps.shape[0]
    if h_min < -1 or h_max >= n_hosts:
        bad = (h < -1) | (h >= n_hosts)
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"hosts must be in [-1, {n_hosts - 1}] (index into host_caps, -1 for none); "
            f"{int(bad.sum())} of {n} pages are not, first at index {i} ({int(h[i])})"
        )
    return h, caps
