"""Exact allocation of a crawl budget: maximise Σ w_i f(p_i; Δ_i) subject to Σ p_i = B.

Method
------
At the optimum every page sits at ``p_i(λ_i) = clip(g_i(λ_i), p_min_i, p_max_i)``, with ``g_i`` the
inverse of its marginal value ``w_i f_i'`` and ``λ_i = max(λ, λ_h)`` for a page on host h, where ``λ_h``
solves ``Σ_{i∈h} p_i(λ_h) = c_h``: the host's cap binds exactly when ``λ_h > λ`` (Kolobov, Lubetzky,
Peres, Horvitz, SIGIR 2019), and λ solves the budget equation ``F(λ) = Σ_h min(c_h, S_h(λ)) + S_free(λ)
= B``, nonincreasing in λ.

Both equations are solved by one vectorised root-finder, :func:`find_roots`: first λ (one group), each
step one pass over the pages (:meth:`PageProblem.rates`) and their sums per host (``np.bincount``); then
the λ_h of every host whose cap binds at λ at once (one group per host), each step a pass over those
hosts' pages. The finder takes safeguarded Newton steps on ``log S`` against ``log λ`` inside a
bracket, bisects where they leave it or stall, and where a page enters with a jump of its rate
(periodic freshness and detection enter from p = 0 with a flat marginal value, pages observed
completely have a constant one) steps to either side of that page's entry point. It stops when the
sum is within ``tol`` of its target, keeping the first-order correction ``dλ = (target - S) / S'``
that the last pass applies to the rates (``p_i += p_i'(λ) dλ``), or when the bracket has shrunk to a
few ulps around a jump; the rates are then mixed between the bracket's two ends so that the sum is
exact. The KKT residual of the result is computed and reported.

Pages whose marginal value is 0 at every rate (``w_i = 0``, ``Δ_i = 0``) sit at their lower bound as
long as the other pages can absorb the budget (λ > 0). When they cannot (finite ``p_max`` and caps),
λ = 0 and the remaining budget is spread over the zero-value pages as evenly as their bounds and host
caps allow (the maximiser of Σ log p over them): any split is optimal, this one is defined.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from freshcrawl._validation import check_array, check_int, check_positive
from freshcrawl.allocation import _kinds as Q
from freshcrawl.allocation.objectives import Objective, get_objective
from freshcrawl.allocation.problem import CHUNK, PageProblem, group_sums
from freshcrawl.allocation.result import AllocationResult, Status
from freshcrawl.errors import ConvergenceWarning, InfeasibleAllocation

__all__ = [
    "KKT_ALARM",
    "Roots",
    "Solution",
    "allocate",
    "find_roots",
    "make_problem",
    "rates_at_root",
    "solve_problem",
]

Array = NDArray[np.float64]
_EPS = np.finfo(np.float64).eps
_NO_HOSTS = np.zeros(0, dtype=np.intp)
#: a converged solve whose rates miss the KKT conditions by more is reported NOT_OPTIMAL
KKT_ALARM = 1e-6
#: a root-find also stops when its Newton step is below a few ulps of λ and the sum is this close
_ULPS_STOP = 1e-8
#: problems of more than 4 times this many pages start from the exact λ of a strided sample this large
_SAMPLE = 1 << 14


class _MultiplierOverflow(Exception):
    """The multiplier of a solve exceeds the largest float64 (rates near 1e-308 under a log objective)."""


# ---------------------------------------------------------------------------------------------------
# The root-finder
# ---------------------------------------------------------------------------------------------------
@dataclass
class Roots:
    """Outcome of :func:`find_roots`, per group g (arrays of shape (G,)).

    ``lam``: the root (the upper end λb of a jump); ``dlam``: the first-order correction of the rates;
    ``lam_a``, ``theta``: on a jump, its lower end λa and the weight of the rates at λa in the mix
    (``theta`` 0 where the root is not on a jump, NaN on a jump to an infinite sum); ``converged``;
    ``n_iter``: passes made; ``at``: the multiplier of the returned rates, λ + dλ, or on a jump the
    entry point of the page that makes it (λb where none is known).
    """

    lam: Array
    dlam: Array
    lam_a: Array
    theta: Array
    converged: NDArray[np.bool_]
    n_iter: int = 0
    at: Array | None = None


Evaluate = Callable[[Array, NDArray[np.bool_]], tuple[Array, Array]]


def find_roots(
    evaluate: Evaluate,
    target: Array,
    lam0: Array,
    *,
    tol: float,
    max_iter: int,
    la0: Array | None = None,
    jumps: Callable | None = None,
    ulps_stop: float = _ULPS_STOP,
    snap_width: float = 1e-6,
    sqrt_steps: bool = False,
) -> Roots:
    """Solve S_g(λ_g) = target_g for every group g at once, S_g nonincreasing in λ_g >= 0.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(lam, active) -> (S, dS/dλ)``, arrays of shape (G,); one pass over the pages of the
        active groups (other entries are ignored).
    target : ndarray of float, shape (G,)
        Targets, > 0 (the budget, or the host caps, visits/day).
    lam0 : ndarray of float, shape (G,)
        Starting multipliers, > 0.
    tol, max_iter : float, int
        Relative tolerance on S, and most passes.
    la0 : ndarray of float, shape (G,), optional
        Known lower ends of the brackets (S(la0) > target there).
    jumps : callable, optional
        ``jumps(la, lb, lam, active) -> (e, e_up)``: for each group a multiplier in (la, lb) where a page
        enters with a jump of its rate (the one nearest to lam), and the least such point above la;
        NaN where none.

    Returns
    -------
    Roots

    Notes
    -----
    Safeguarded Newton on log S against log λ (a power law S ∝ λ^-α is solved in one step), or with
    ``sqrt_steps`` on S against λ^(-1/2) (Poisson freshness: affine between breakpoints); outside a
    bracket, expansion by a factor that squares each time; inside, bisection (geometric while the
    bracket is wide) where a step leaves it or does not halve the error, else the secant of log S across
    the bracket; in a bracket narrower than ``snap_width`` relative, steps of 8 ulps to either side of
    the jump nearest to that point (groups of few pages: any width, each entry point a kink worth
    landing on), and where the next entry point lies just above the bracket, where S is singular,
    Newton steps in log(e - λ). A group stops when ``|S - target| <=
    tol target``, or the Newton step is below a few ulps with ``|S - target| <= ulps_stop target``,
    or its bracket is 20 ulps wide (a jump).
    """
    G = target.size
    lam = np.array(lam0, dtype=np.float64)
    la = np.zeros(G) if la0 is None else np.array(la0, dtype=np.float64)
    lb = np.full(G, np.inf)
    s_a, s_b = np.full(G, np.nan), np.full(G, np.nan)
    out = Roots(
        np.zeros(G), np.zeros(G), np.zeros(G), np.zeros(G), np.zeros(G, dtype=bool), at=np.zeros(G)
    )
    done = np.zeros(G, dtype=bool)
    prev, slow, grow = np.full(G, np.inf), np.zeros(G, dtype=np.intp), np.full(G, 8.0)
    last = (lam.copy(), np.full(G, np.nan), np.zeros(G))
    snap = np.full(G, np.nan)
    with np.errstate(all="ignore"):
        while out.n_iter < max_iter and not done.all():
            out.n_iter += 1
            act = ~done
            s, ds = evaluate(lam, act)
            last = tuple(np.where(act, new, old) for new, old in zip((lam, s, ds), last))
            err = s - target
            conv = act & (
                (np.abs(err) <= tol * target)
                | ((np.abs(err) <= -ds * 4.0 * _EPS * lam) & (np.abs(err) <= ulps_stop * target))
            )
            out.lam[conv] = out.lam_a[conv] = lam[conv]
            out.dlam[conv] = np.where(ds[conv] < 0, -err[conv] / ds[conv], 0.0)
            out.at[conv] = lam[conv] + out.dlam[conv]
            act &= ~conv
            pos, neg = act & (err > 0), act & (err < 0)
            la, s_a = np.where(pos, lam, la), np.where(pos, s, s_a)
            lb, s_b = np.where(neg, lam, lb), np.where(neg, s, s_b)
            jump = act & (la > 0) & np.isfinite(lb) & (lb - la <= 20.0 * _EPS * lb)
            out.lam[jump], out.lam_a[jump] = lb[jump], la[jump]
            gap = s_a[jump] - s_b[jump]
            out.theta[jump] = np.where(np.isfinite(gap), (target[jump] - s_b[jump]) / gap, np.nan)
            known = (snap[jump] >= la[jump]) & (snap[jump] <= lb[jump])
            out.at[jump] = np.where(known, snap[jump], lb[jump])
            done |= conv | jump
            act &= ~jump
            # Newton in log-log; bisection where it leaves the bracket or stalls
            if (
                sqrt_steps
            ):  # Newton on S against z = λ^(-1/2), in which Poisson freshness rates are affine
                z = 1.0 / np.sqrt(lam) + err / (2.0 * ds * lam * np.sqrt(lam))
                ln = np.where(z > 0, 1.0 / (z * z), np.nan)
            else:
                ln = lam * np.exp(-(np.log(s) - np.log(target)) * s / (lam * ds))
            ok = np.isfinite(ln) & (ln > 0)
            # slow: the error is not half the best so far (also when steps alternate across the root)
            slow = np.where(np.abs(err) > 0.5 * prev, slow + 1, 0)
            prev = np.minimum(prev, np.abs(err))
            both = (la > 0) & np.isfinite(lb)
            need = act & both & ~(ok & (ln > la) & (ln < lb) & (slow == 0))
            if need.any():
                width = lb - la
                mid = np.where(width <= 1e-3 * lb, la + 0.5 * width, np.sqrt(la) * np.sqrt(lb))
                # the secant of log S against log λ across the bracket, bisection after two slow steps
                ls_a, ls_b, lt = np.log(s_a), np.log(s_b), np.log(target)
                sec = np.exp(np.log(la) + (ls_a - lt) * (np.log(lb) - np.log(la)) / (ls_a - ls_b))
                sec = np.where((sec > la) & (sec < lb) & (slow < 2), sec, mid)
                ln = np.where(need, sec, ln)
                narrow = need & (width <= snap_width * lb)
                if jumps is not None and need.any():
                    e, e_up = jumps(la, lb, ln, need)
                    lo_e, hi_e = e * (1.0 - 8.0 * _EPS), e * (1.0 + 8.0 * _EPS)
                    cand = np.where(la < lo_e, lo_e, hi_e)
                    use = narrow & (cand > la) & (cand < lb)
                    ln, snap = np.where(use, cand, ln), np.where(use, e, snap)
                    # S singular at the next entry point e_up just above the bracket (a rate a/x with
                    # x ~ -log(e_up - λ)): Newton in log(e_up - λ), else bisection of that log-distance
                    dist_a, dist_b = e_up - la, np.maximum(e_up - lb, 4.0 * _EPS * e_up)
                    sing = need & ~use & np.isfinite(e_up) & (dist_b < 0.25 * dist_a)
                    dist = np.maximum(e_up - lam, 4.0 * _EPS * e_up)
                    l_s = e_up - dist * np.exp(err / (ds * dist))
                    l_s = np.where(
                        (l_s > la) & (l_s < lb) & (slow < 2), l_s, e_up - np.sqrt(dist_a * dist_b)
                    )
                    ln = np.where(sing & (l_s > la) & (l_s < lb), l_s, ln)
            only_a = act & (la > 0) & ~np.isfinite(lb)
            only_b = act & ~(la > 0) & np.isfinite(lb)
            expand = only_a & ~(ok & (ln > lam)) | only_b & ~(ok & (ln < lam))
            grow = np.where(expand, np.minimum(grow * grow, 1e30), 8.0)
            ln = np.where(expand & only_a, lam * grow, np.where(expand & only_b, lam / grow, ln))
            ln = np.where(
                only_a,
                np.minimum(ln, lam * 1e30),
                np.where(only_b, np.maximum(ln, lam * 1e-30), ln),
            )
            lam = np.where(act, ln, lam)
        left = ~done
        out.converged = done
        if left.any():
            out.lam[left] = out.lam_a[left] = last[0][left]
            dl = -(last[1][left] - target[left]) / last[2][left]
            out.dlam[left] = np.where(np.isfinite(dl) & (last[2][left] < 0), dl, 0.0)
            out.at[left] = out.lam[left] + out.dlam[left]
    return out


def _jump_finder(points: Array | None, groups: NDArray[np.intp] | None, n_groups: int):
    """``jumps`` of :func:`find_roots` from the pages' entry points (``PageProblem.jump_points``)."""
    if points is None:
        return None
    keep = np.flatnonzero(np.isfinite(points))
    e = points[keep]
    if groups is None:  # one group: no group index per page

        def one(la, lb, lam, act):
            nan = np.full(1, np.nan)
            above = e[e > la[0]] if act[0] else e[:0]
            if not above.size:
                return nan, nan
            inside = above[above < lb[0]]
            with np.errstate(all="ignore"):
                pick = inside[np.argmin(np.abs(np.log(inside / lam[0])))] if inside.size else np.nan
            return np.array([pick]), np.array([above.min()])

        return one
    g = groups[keep]

    def jumps(la, lb, lam, act):
        """Per group the entry point in (la, lb) nearest to lam, and the least one above la (NaN: none)."""
        inside = act[g] & (e > la[g])
        up = np.full(n_groups, np.inf)
        np.minimum.at(up, g[inside], e[inside])
        inside &= e < lb[g]
        with np.errstate(all="ignore"):
            d = np.where(inside, np.abs(np.log(e / lam[g])), np.inf)
        best = np.full(n_groups, np.inf)
        np.minimum.at(best, g, d)
        out = np.full(n_groups, np.nan)
        hit = np.isfinite(d) & (d == best[g])
        out[g[hit]] = e[hit]
        return out, np.where(np.isfinite(up), up, np.nan)

    return jumps


# ---------------------------------------------------------------------------------------------------
# The solve
# ---------------------------------------------------------------------------------------------------
@dataclass
class Solution:
    """Rates and multipliers of :func:`solve_problem` (arrays per page (n,) and per host (n_hosts,))."""

    p: Array
    lam: float
    lamhat: Array
    n_iter: int
    converged: bool


def _groups(hosts, n_hosts, n):
    """Group of every page: its host, or n_hosts for a page without one."""
    return (
        np.where(hosts >= 0, hosts, n_hosts) if hosts.size else np.full(n, n_hosts, dtype=np.intp)
    )


def _bounds(prob, g, n_hosts):
    """Per group (hosts, then the pages without a host) Σ p_min, Σ p at λ = 0 and Σ p_max."""
    n = prob.n
    act = prob.active()
    if g is None:  # no hosts: one group
        if prob.lo.size == 1 and prob.hi.size == 1:
            k = float(np.count_nonzero(act))
            lo, hi = float(prob.lo[0]), float(prob.hi[0])
            return (
                np.array([n * lo]),
                np.array([(k * hi if k else 0.0) + (n - k) * lo]),
                np.array([n * hi]),
            )
        lo, hi = (np.broadcast_to(x, (n,)) for x in (prob.lo, prob.hi))
        return np.array([lo.sum()]), np.array([np.where(act, hi, lo).sum()]), np.array([hi.sum()])
    lo, hi = (np.broadcast_to(x, (n,)) for x in (prob.lo, prob.hi))
    return tuple(
        np.bincount(g, weights=x, minlength=n_hosts + 1) for x in (lo, np.where(act, hi, lo), hi)
    )


def host_bounds(
    prob: PageProblem, hosts: NDArray[np.intp], caps: Array
) -> tuple[Array, Array, Array]:
    """Per host (then the pages without a host) Σ p_min, Σ p at λ = 0 and Σ p_max, visits/day, each of
    shape (n_hosts + 1,)."""
    return _bounds(prob, _groups(hosts, caps.size, prob.n) if hosts.size else None, caps.size)


def _check_feasible(budget, low, up, caps):
    n_hosts = caps.size
    total_low = float(low.sum())
    if budget < total_low:
        raise InfeasibleAllocation(
            f"budget {budget:g} visits/day is below the sum of the lower bounds p_min, {total_low:g} visits/day"
        )
    bad = np.isfinite(caps) & (low[:n_hosts] > caps)
    if bad.any():
        h = int(np.flatnonzero(bad)[0])
        raise InfeasibleAllocation(
            f"host_caps: {int(bad.sum())} hosts have a cap below the sum of their pages' p_min, first host {h} "
            f"(cap {caps[h]:g} visits/day < {low[h]:g} visits/day)"
        )
    max_total = float(up[n_hosts] + np.sum(np.minimum(caps, up[:n_hosts])))
    if budget > max_total:
        raise InfeasibleAllocation(
            f"budget {budget:g} visits/day exceeds the most the pages can take, {max_total:g} visits/day "
            f"(sum of p_max, each host limited to its cap)"
        )


def budget_sums(
    prob: PageProblem, lam: float, hosts: NDArray[np.intp], caps: Array
) -> tuple[float, float, Array]:
    """F(λ) = Σ_h min(c_h, S_h(λ)) + S_free(λ) (visits/day), dF/dλ, and S_h(λ) per host then the pages
    without a host (shape (n_hosts + 1,); empty without hosts): one pass over the pages.

    ``hosts``: shape (n,), -1 for none, or empty; ``caps``: shape (n_hosts,), inf where uncapped.
    """
    g = _groups(hosts, caps.size, prob.n) if hosts.size and caps.size else None
    return _budget_sums(prob, lam, g, caps)


def _budget_sums(prob, lam, g, caps):
    if g is None:
        s, ds = prob.sums(lam)
        return float(s[0]), float(ds[0]), np.zeros(0)
    s_h, ds_h = prob.sums(lam, g, caps.size + 1)
    over = s_h[:-1] > caps
    return (
        float(s_h[-1] + np.sum(np.where(over, caps, s_h[:-1]))),
        float(ds_h[-1] + np.sum(np.where(over, 0.0, ds_h[:-1]))),
        s_h,
    )


def solve_problem(
    prob: PageProblem,
    budget: float,
    hosts: NDArray[np.intp],
    caps: Array,
    tol: float,
    max_iter: int,
) -> Solution:
    """The optimal rates of one problem: λ, then the binding hosts' λ_h, then every page's rate.

    ``hosts`` (shape (n,), -1 for none) and ``caps`` (shape (n_hosts,), inf for uncapped) may both be
    empty. Raises :class:`InfeasibleAllocation` as :func:`allocate` does.
    """
    n, n_hosts = prob.n, caps.size
    use_hosts = hosts.size > 0 and n_hosts > 0
    g = _groups(hosts, n_hosts, n) if use_hosts else None
    low, s0, up = _bounds(prob, g, n_hosts)
    _check_feasible(budget, low, up, caps)
    s0_total = float(s0[n_hosts] + np.sum(np.minimum(caps, s0[:n_hosts])))
    n_iter = 0
    if budget >= s0_total:  # λ = 0: the valued pages take all they can
        root = Roots(
            np.zeros(1),
            np.zeros(1),
            np.zeros(1),
            np.zeros(1),
            np.ones(1, dtype=bool),
            at=np.zeros(1),
        )
        s_low = s0
    else:
        cache = {}

        def evaluate(lam_v, act):
            f, df, s_h = _budget_sums(prob, float(lam_v[0]), g, caps)
            cache[float(lam_v[0])] = s_h
            return np.array([f]), np.array([df])

        lam0 = _initial_lambda(prob, budget, tol)
        root = find_roots(
            evaluate,
            np.array([budget]),
            np.array([lam0]),
            tol=tol,
            max_iter=max_iter,
            jumps=_jump_finder(prob.jump_points(), None, 1),
            sqrt_steps=prob.kind == Q.POISSON,
        )
        n_iter += root.n_iter
        s_low = cache.get(float(root.lam_a[0])) if use_hosts else None
        if use_hosts and s_low is None:
            s_low = _budget_sums(prob, float(root.lam_a[0]), g, caps)[2]
    p, lamhat, more, ok = rates_at_root(
        prob, root, hosts, caps, s_low, budget, tol, max_iter, low=low
    )
    n_iter += more
    if budget > s0_total:
        _spread_leftover(prob, p, budget, hosts, caps, lamhat, tol, max_iter)
    lam = float(root.at[0])
    return Solution(p, lam, lamhat, n_iter, bool(root.converged[0]) and ok)


def rates_at_root(
    prob: PageProblem,
    root: Roots,
    hosts: NDArray[np.intp],
    caps: Array,
    s_low: Array | None,
    budget: float,
    tol: float,
    max_iter: int,
    low: Array | None = None,
):
    """Rates at the root of the budget equation: each binding host's λ_h, then every page.

    ``root``: λ (one group) from :func:`find_roots`; ``s_low``: Σp per group (hosts, then the pages
    without a host) at ``root.lam_a``, where the binding hosts are read; ``budget``: what these pages'
    rates sum to (used to mix the two ends of a jump). Returns ``(p, λ_h per host (0 where the cap does
    not bind, inf where pinned at p_min), passes, converged)``.
    """
    n, n_hosts = prob.n, caps.size
    use_hosts = hosts.size > 0 and n_hosts > 0
    lam, lam_a, dlam, theta = (float(x[0]) for x in (root.lam, root.lam_a, root.dlam, root.theta))
    lamhat = np.zeros(n_hosts)
    mu, mu_a, dmu = (
        np.full(n_hosts + 1, lam),
        np.full(n_hosts + 1, lam_a),
        np.full(n_hosts + 1, dlam),
    )
    th = np.full(n_hosts + 1, theta)
    n_iter, converged = 0, True
    g = None
    if use_hosts:
        g = _groups(hosts, n_hosts, n)
        if low is None:
            low = _bounds(prob, g, n_hosts)[0]
        capped = np.isfinite(caps)
        pinned = capped & (caps <= low[:n_hosts])
        bind = capped & ~pinned & (s_low[:n_hosts] > caps)
        if bind.any():
            r = _solve_hosts(prob, np.flatnonzero(bind), g, caps, lam_a, s_low, tol, max_iter)
            n_iter, converged = r.n_iter, bool(r.converged.all())
            idx = np.flatnonzero(bind)
            # on a jump of λ, a host whose own root lies on the same jump is mixed with λ's pages (under
            # its cap, below); the others take their own multiplier
            own = r.lam_a > lam if theta != 0 else np.ones(idx.size, dtype=bool)
            idx, r = (
                idx[own],
                Roots(
                    *(x[own] for x in (r.lam, r.dlam, r.lam_a, r.theta, r.converged)), at=r.at[own]
                ),
            )
            mu[idx], mu_a[idx], dmu[idx], th[idx] = r.lam, r.lam_a, r.dlam, r.theta
            lamhat[idx] = r.at
        mu[:n_hosts][pinned] = mu_a[:n_hosts][pinned] = np.inf
        dmu[:n_hosts][pinned] = th[:n_hosts][pinned] = 0.0
        lamhat[pinned] = np.inf
    page_mu = mu if g is None else mu[g]
    p, dp = prob.rates(page_mu[0] if g is None else page_mu)
    with np.errstate(all="ignore"):
        p += dp * (dmu[0] if g is None else dmu[g])
    jumps = th != 0
    if (
        jumps.any()
    ):  # groups whose root sits on a jump: their pages only (their dλ is 0: p is p(λb))
        idx = np.flatnonzero(jumps[g]) if g is not None else np.arange(n)
        gi = None if g is None else g[idx]
        p_b = p[idx]
        p_a, _ = prob.subset(idx).rates(mu_a[0] if g is None else mu_a[gi])
        glob = np.ones(idx.size, dtype=bool) if g is None else page_mu[idx] == lam
        q = p_b.copy()
        if not glob.all():  # a host's own root on a jump: θ_h from its sums at both ends (its cap)
            with np.errstate(all="ignore"):
                own = ~glob
                inf_a = own & np.isinf(p_a)
                fin = own & ~inf_a
                s_b = np.bincount(gi[own], weights=p_b[own], minlength=n_hosts + 1)
                d = np.bincount(gi[fin], weights=(p_a - p_b)[fin], minlength=n_hosts + 1)
                cnt = np.bincount(gi[inf_a], minlength=n_hosts + 1)
                left = np.append(caps, np.inf) - s_b
                t = np.where(cnt > 0, 0.0, np.nan_to_num(np.clip(left / d, 0.0, 1.0)))
                share = np.where(cnt > 0, left / np.maximum(cnt, 1), 0.0)
                q = np.where(fin, p_b + t[gi] * (p_a - p_b), np.where(inf_a, p_b + share[gi], q))
        if glob.any():
            rest = float(np.sum(p)) - float(np.sum(p_b)) + float(np.sum(q[~glob]))
            q = np.where(glob, _mix_on_jump(p_a, p_b, glob, gi, caps, budget - rest), q)
        p[idx] = q
    np.clip(p, prob.lo, prob.hi, out=p)
    return p, lamhat, n_iter, converged


def _mix_on_jump(p_a, p_b, on, g, caps, total):
    """Rates of the pages ``on`` when λ sits on a jump [λa, λb]: p_b + θ (p_a - p_b), θ such that they
    sum to ``total``, each host's θ held where its pages reach its cap; on a jump to an infinite sum, the
    pages whose rate is infinite at λa share what the others leave."""
    with np.errstate(all="ignore"):
        inf_a = on & np.isinf(p_a)
        if inf_a.any():
            return np.where(
                inf_a, p_b + (total - float(np.sum(p_b[on]))) / np.count_nonzero(inf_a), p_b
            )
        n_groups = caps.size + 1
        gg = g if g is not None else np.full(p_a.size, n_groups - 1, dtype=np.intp)
        s_b = np.bincount(gg[on], weights=p_b[on], minlength=n_groups)
        d = np.bincount(gg[on], weights=(p_a - p_b)[on], minlength=n_groups)
        cap_g = np.append(caps, np.inf)
        t_cap = np.where(d > 0, (cap_g - s_b) / d, np.inf)
        fixed = np.zeros(n_groups, dtype=bool)
        for _ in range(
            n_groups + 1
        ):  # hosts whose cap stops them below θ, fixed there one round at a time
            free_d = float(np.sum(d[~fixed]))
            t = (
                (total - float(np.sum(s_b)) - float(np.sum((t_cap * d)[fixed]))) / free_d
                if free_d > 0
                else 0.0
            )
            t = min(max(t, 0.0), 1.0)
            newly = ~fixed & (t_cap < t)
            if not newly.any():
                break
            fixed |= newly
        t_g = np.clip(np.minimum(t, t_cap), 0.0, 1.0)
        return p_b + t_g[gg] * (p_a - p_b)


def _solve_hosts(prob, idx, g, caps, lam_low, s_low, tol, max_iter) -> Roots:
    """λ_h with Σ_{i∈h} p_i(λ_h) = c_h for the hosts idx, over their pages only; Σp at ``lam_low`` is
    above each cap (``s_low``), so ``lam_low`` (when > 0) is the lower end of every bracket."""
    n_groups = caps.size + 1
    remap = np.full(n_groups, -1, dtype=np.intp)
    remap[idx] = np.arange(idx.size)
    pages = np.flatnonzero(remap[g] >= 0)
    sub, gi = prob.subset(pages), remap[g[pages]]
    G, target = idx.size, caps[idx]
    count = np.bincount(gi, minlength=G)
    if lam_low > 0:
        p, dp = sub.rates(lam_low)
        s, ds = group_sums(p, dp, gi, G)
        with np.errstate(all="ignore"):
            lam0 = lam_low * np.exp(np.log(s / target) * s / (-lam_low * ds))
        lam0 = np.where(np.isfinite(lam0) & (lam0 > lam_low), lam0, 2.0 * lam_low)
        la0 = np.full(G, lam_low)
    else:
        lo, hi = (np.broadcast_to(x, (sub.n,)) for x in (sub.lo, sub.hi))
        m = sub.marginal(np.clip((target / np.maximum(count, 1))[gi], lo, hi))
        lam0 = _mean_log(m, gi, G)
        la0 = None

    state = [sub, gi]

    def evaluate(lam_v, act):
        if (
            np.count_nonzero(act[state[1]]) < 0.5 * state[0].n
        ):  # only the pages of the hosts still open
            keep = np.flatnonzero(act[state[1]])
            state[:] = [state[0].subset(keep), state[1][keep]]
        return state[0].sums(lam_v[state[1]], state[1], G)

    return find_roots(
        evaluate,
        target,
        lam0,
        tol=tol,
        max_iter=max_iter,
        la0=la0,
        jumps=_jump_finder(sub.jump_points(), gi, G),
        ulps_stop=1e-10,
        snap_width=np.inf,
        sqrt_steps=prob.kind == Q.POISSON,
    )


def _mean_log(m, gi, G):
    """Per group the geometric mean of the positive finite m (1 where none)."""
    ok = (m > 0) & np.isfinite(m)
    cnt = np.bincount(gi[ok], minlength=G)
    with np.errstate(all="ignore"):
        acc = np.bincount(gi[ok], weights=np.log(m[ok]), minlength=G)
    return np.where(cnt > 0, np.exp(acc / np.maximum(cnt, 1)), 1.0)


def _initial_lambda(prob, budget, tol) -> float:
    """Starting λ: a warm start's, or the exact λ of a strided sample of the pages with a proportional
    budget (off by about 1/sqrt(sample size)), or the marginal value at B/n for small problems."""
    if prob.lam0 is not None:
        return prob.lam0
    n = prob.n
    if n > 4 * _SAMPLE and prob.kind >= 0:
        idx = np.arange(0, n, n // _SAMPLE)
        try:
            lam = solve_problem(
                prob.subset(idx), budget * idx.size / n, _NO_HOSTS, np.zeros(0), max(tol, 1e-9), 50
            ).lam
        except InfeasibleAllocation:
            lam = 0.0
        if lam > 0 and np.isfinite(lam):
            return float(lam)
    lo, hi = (np.broadcast_to(x, (n,)) for x in (prob.lo, prob.hi))
    return float(
        _mean_log(prob.marginal(np.clip(np.full(n, budget / n), lo, hi)), np.zeros(n, np.intp), 1)[
            0
        ]
    )


def _spread_leftover(prob, p, budget, hosts, caps, lamhat, tol, max_iter):
    """λ = 0: spread what the valued pages cannot take evenly over the zero-value pages (max Σ log p).

    Hosts whose cap binds on their valued pages keep their zero-value pages at p_min.
    """
    zero = ~prob.active()
    n_hosts = caps.size
    lo = np.broadcast_to(prob.lo, (prob.n,))
    if n_hosts and hosts.size:
        held = zero & (hosts >= 0) & (lamhat[np.maximum(hosts, 0)] > 0)
        p[held] = lo[held]
        zero &= ~held
    idx = np.flatnonzero(zero)
    placed = ~zero
    used = max(budget - float(np.sum(p[placed])), float(np.sum(lo[idx])))
    sub = prob.subset(idx)
    sub = PageProblem(idx.size, Q.LOG, np.ones(1), np.ones(1), np.ones(1), sub.lo, sub.hi)
    hosts_z, caps_z = _NO_HOSTS, np.zeros(0)
    if n_hosts and hosts.size:
        g = _groups(hosts, n_hosts, prob.n)
        taken = np.bincount(g[placed], weights=p[placed], minlength=n_hosts + 1)[:n_hosts]
        low_z = np.bincount(g[idx], weights=lo[idx], minlength=n_hosts + 1)[:n_hosts]
        caps_z = np.where(np.isfinite(caps), np.maximum(caps - taken, low_z), np.inf)
        hosts_z = hosts[idx]
    sol = solve_problem(sub, used, hosts_z, caps_z, tol, max_iter)
    if not np.isfinite(sol.lam):
        raise _MultiplierOverflow
    p[idx] = sol.p


def kkt_residual(
    prob: PageProblem, p: Array, lam: float, hosts: NDArray[np.intp], lamhat: Array
) -> float:
    """Largest relative violation of stationarity |w f'(p) - λ_i| / λ_i inside the bounds (the sign
    conditions at the bounds), λ_i = max(λ, λ_h) for a page on host h (λ alone where λ_h is empty)."""
    r_up = r_down = 0.0
    step = prob.n if prob.kind < 0 or prob.others else CHUNK  # by chunks: no n-sized temporaries
    for start in range(0, prob.n, step):
        sl = slice(start, min(prob.n, start + step))
        part = prob if step == prob.n else prob.chunk(sl)
        pc = p[sl]
        if hosts.size and lamhat.size:
            hc = hosts[sl]
            lp = np.where(hc >= 0, np.maximum(lam, lamhat[np.maximum(hc, 0)]), lam)
        else:
            lp = lam
        with np.errstate(all="ignore"):
            d = part.marginal(pc)
            d -= lp  # w f'(p) - λ_i: may not be > 0 below p_max, nor < 0 above p_min
            if np.ndim(lp) or lp > 0:
                d /= lp if np.ndim(lp) == 0 else np.where(lp > 0, lp, 1.0)
            fin = np.isfinite(lp)  # (a host pinned at its pages' p_min: nothing to check)
            r_up = max(r_up, float(np.max(d, where=(pc < part.hi) & fin, initial=0.0)))
            np.negative(d, out=d)
            r_down = max(r_down, float(np.max(d, where=(pc > part.lo) & fin, initial=0.0)))
    r = max(r_up, r_down)
    return np.inf if np.isnan(r) else r


# ---------------------------------------------------------------------------------------------------
# Public entry point
# ---------------------------------------------------------------------------------------------------
def make_problem(
    delta: ArrayLike | None,
    *,
    weights: ArrayLike | None = None,
    objective: str | Objective = "freshness-poisson",
    p_min: float | ArrayLike = 0.0,
    p_max: float | ArrayLike = np.inf,
    observed_completely: ArrayLike | None = None,
) -> tuple[PageProblem, int]:
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
        raise ValueError(
            f"delta must have shape (n_pages,) with n_pages >= 1; got shape {delta.shape}"
        )
    n = delta.shape[0]
    if n_obj is not None and n_obj != n:
        raise ValueError(
            f"delta has {n} pages but the objective {obj!r} holds parameters for {n_obj}"
        )
    w = np.ones(1) if weights is None else check_array("weights", weights, shape=(n,), low=0.0)
    lo = _bound("p_min", p_min, n, allow_inf=False)
    hi = _bound("p_max", p_max, n, allow_inf=True)
    if lo.shape[0] == 1 and hi.shape[0] == 1:
        if lo[0] > hi[0]:
            raise ValueError(
                f"p_min must be <= p_max; got p_min={lo[0]!r} > p_max={hi[0]!r} visits/day"
            )
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
        prob = PageProblem(n, -1, w, np.ones(1), np.ones(1), lo, hi, custom=obj, delta=delta)
    else:
        a, b = obj._params(delta)
        others = []
        if complete is not None:
            mode = obj._complete()
            if mode is None:
                raise ValueError(
                    "observed_completely is supported with the harmonic and freshness objectives; "
                    f"got objective {obj.name!r}"
                )
            others = [(Q.LOG if mode == "log" else Q.LINEAR, np.flatnonzero(complete))]
            with np.errstate(divide="ignore"):
                a_c = delta if mode == "log" else 1.0 / delta
            a = np.where(complete, a_c, a)
            lo = np.where(complete, np.minimum(lo, delta), lo)
            hi = np.where(complete, np.minimum(hi, delta), hi)
        a, b = (np.atleast_1d(np.asarray(x, dtype=np.float64)) for x in (a, b))
        prob = PageProblem(
            n,
            obj._kind,
            w,
            a,
            b,
            np.atleast_1d(lo),
            np.atleast_1d(hi),
            others=others,
            offset=obj._offset,
        )

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
    prob, n = make_problem(
        delta,
        weights=weights,
        objective=objective,
        p_min=p_min,
        p_max=p_max,
        observed_completely=observed_completely,
    )
    hosts_arr, caps = _check_hosts(hosts, host_caps, n)
    n_hosts = caps.shape[0]
    if not np.isfinite(caps).any():  # no host, or no finite cap: nothing to cap, every λ_h = λ
        hosts_arr, caps = _NO_HOSTS, np.zeros(0)
    start = _warm_start(warm_start, caps.shape[0] if hosts_arr.shape[0] else 0)
    if start[0] is not None and hosts_arr.shape[0] and not prob.has_jumps():
        # with host caps where Σp is smooth the cold start is used: the rates are those of a cold solve
        start = None, None
    prob.lam0, prob.host_lam0 = start
    try:
        sol = solve_problem(prob, budget, hosts_arr, caps, tol, max_iter)
        lam = sol.lam
    except _MultiplierOverflow:  # in the even spread over the pages of no value
        lam = np.inf
    if not np.isfinite(lam):
        raise ValueError(
            f"budget {budget:g} visits/day is too small to solve in float64: the multiplier λ (marginal value "
            f"of a visit per day) would exceed the largest float, {np.finfo(float).max:.3g}; express the rates "
            f"in a larger time unit"
        )
    p, lamhat = sol.p, sol.lamhat
    kkt = kkt_residual(prob, p, lam, hosts_arr, lamhat)
    used = float(np.sum(p))
    kkt = max(kkt, abs(used - budget) / budget)
    if caps.shape[0] and hosts_arr.shape[0]:
        on = hosts_arr >= 0
        sums = np.bincount(hosts_arr[on], weights=p[on], minlength=caps.shape[0])
        fin = np.isfinite(caps)
        over = (sums[fin] - caps[fin]) / np.maximum(caps[fin], np.finfo(float).tiny)
        kkt = max(kkt, float(np.max(over, initial=0.0)))
    value = prob.objective(p)
    status = Status.CONVERGED if sol.converged else Status.MAX_ITER
    if sol.converged and not kkt <= KKT_ALARM:
        status = Status.NOT_OPTIMAL
        message = (
            f"the root-finds converged but the rates miss the optimality conditions: {used:.12g} of "
            f"{budget:.12g} visits/day used, KKT residual {kkt:.2e} (a solver defect; please report)"
        )
        warnings.warn(message, ConvergenceWarning, stacklevel=2)
    elif sol.converged:
        message = f"converged: {used:.12g} of {budget:.12g} visits/day used, KKT residual {kkt:.2e}"
    else:
        message = (
            f"stopped at max_iter={max_iter} before reaching tol={tol:g}: {used:.12g} of "
            f"{budget:.12g} visits/day used, KKT residual {kkt:.2e}"
        )
        warnings.warn(message, ConvergenceWarning, stacklevel=2)
    if hosts is None:
        host_lam = None
    elif not caps.shape[0]:  # solved without hosts (no finite cap): every host's multiplier is λ
        host_lam = np.full(n_hosts, lam)
    else:
        host_lam = np.maximum(lam, lamhat)
    return AllocationResult(
        p=p,
        lam=lam,
        host_lam=host_lam,
        objective=float(value),
        status=status,
        message=message,
        n_iter=int(sol.n_iter),
        kkt_residual=float(kkt),
    )


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
        raise TypeError(
            f"warm_start must be an AllocationResult (a previous solve's result); got {type(start).__name__}"
        )
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
    return float(start.lam), host_lam


def _check_hosts(hosts, host_caps, n):
    if hosts is None and host_caps is None:
        return _NO_HOSTS, np.zeros(0)
    if hosts is None:
        raise ValueError("host_caps was given without hosts; pass hosts, shape (n_pages,), too")
    h = np.asarray(hosts)
    if h.shape != (n,):
        raise ValueError(f"hosts must have shape ({n},); got {h.shape}")
    if h.dtype.kind not in "iu":
        if h.dtype.kind == "f" and np.all(np.isfinite(h)) and np.all(h == np.round(h)):
            h = h.astype(np.intp)
        else:
            raise ValueError(
                f"hosts must be integer host indices (-1 for none); got dtype {h.dtype}"
            )
    h = np.ascontiguousarray(h, dtype=np.intp)
    h_min, h_max = (int(h.min()), int(h.max())) if n else (0, -1)  # numpy masks below only on error
    if host_caps is None:
        n_hosts = int(h_max) + 1
        caps = np.full(max(n_hosts, 0), np.inf)
    else:
        caps = check_array(
            "host_caps",
            np.atleast_1d(np.asarray(host_caps, dtype=np.float64)),
            low=0.0,
            allow_inf=True,
            unit="visits/day",
        )
        if caps.ndim != 1:
            raise ValueError(f"host_caps must have shape (n_hosts,); got {caps.shape}")
        caps = np.array(caps, dtype=np.float64)
    n_hosts = caps.shape[0]
    if h_min < -1 or h_max >= n_hosts:
        bad = (h < -1) | (h >= n_hosts)
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"hosts must be in [-1, {n_hosts - 1}] (index into host_caps, -1 for none); "
            f"{int(bad.sum())} of {n} pages are not, first at index {i} ({int(h[i])})"
        )
    return h, caps
