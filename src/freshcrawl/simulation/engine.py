"""The closed-loop recrawl simulation: a policy, an environment, a budget and a simulated clock.

Each planning period ``[t, t + P)`` (P = ``policy.replan_every``): the policy plans; the engine turns a
:class:`~freshcrawl.policies.base.RatePlan` into periodic or Poisson visits (or takes the explicit
visits of a :class:`~freshcrawl.policies.base.VisitPlan`), passes them through the budget's token
bucket, asks the environment which visited pages changed, hands the observations back to the policy,
and checkpoints the exact freshness integrals of the period. The work is proportional to the number of
visits, changes and pages x periods; there is no simulation time step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from freshcrawl._validation import check_positive, check_rng
from freshcrawl.environments.base import SimulatedEnvironment
from freshcrawl.environments.clock import SimulatedClock
from freshcrawl.environments.metrics import Integrals
from freshcrawl.policies.base import Observations, Policy, PolicyContext, RatePlan, VisitPlan
from freshcrawl.simulation.announce import AUDIT_SHARE, AnnouncedChanges, Announcements
from freshcrawl.simulation.dispatch import TokenBucket, periodic_visits, poisson_visits

__all__ = ["VISIT_PROCESSES", "SimulationResult", "simulate"]

VISIT_PROCESSES = ("periodic", "poisson")


@dataclass(frozen=True, slots=True)
class SimulationResult:
    """What one policy achieved on one environment.

    Attributes
    ----------
    policy : str
        Policy name, e.g. ``"learned:sa-interval"``.
    budget : float
        Budget B, visits per day.
    start, end : float
        The window simulated, days.
    freshness : float
        Time- and weight-averaged freshness over alive pages, fraction in [0, 1].
    age_days : float
        Time- and weight-averaged age, days.
    harmonic_staleness : float
        Time- and weight-averaged H(n(t)), n(t) the changes not yet picked up (lower is better).
    visits : int
        Visits made.
    changes_detected : float
        Fraction of visits that found the page changed since its previous visit.
    dropped : int
        Visits the budget rule left out: no token came for them before the window's end or their
        page's death (see :func:`simulate`).
    deferred : int
        Visits made later than planned, when the next token came.
    t_start, t_end : ndarray of float, shape (n_periods,)
        Planning periods, days.
    freshness_t, age_t, harmonic_t : ndarray of float, shape (n_periods,)
        The same averages per period (NaN for a period in which no page was alive).
    visits_t : ndarray of int, shape (n_periods,)
        Visits per period.
    estimated_delta : ndarray of float, shape (n_pages,) or None
        The policy's final Δ̂, changes per day (None if it does not estimate; NaN for pages it has
        not observed).
    true_delta : ndarray of float, shape (n_pages,)
        The environment's true rates over the window, changes per day.
    followed : int
        Visits made for an announced change (counted in ``visits``; 0 without announcements).
    """

    policy: str
    budget: float
    start: float
    end: float
    freshness: float
    age_days: float
    harmonic_staleness: float
    visits: int
    changes_detected: float
    dropped: int
    deferred: int
    t_start: NDArray[np.float64]
    t_end: NDArray[np.float64]
    freshness_t: NDArray[np.float64]
    age_t: NDArray[np.float64]
    harmonic_t: NDArray[np.float64]
    visits_t: NDArray[np.int64]
    estimated_delta: NDArray[np.float64] | None
    true_delta: NDArray[np.float64]
    followed: int = 0


def _rates_from_plan(
    plan: RatePlan, name: str, alive: NDArray[np.bool_], budget: float
) -> NDArray[np.float64]:
    rates = np.array(plan.rates, dtype=np.float64, copy=True)
    if rates.shape != alive.shape:
        raise ValueError(
            f"policy {name!r} returned rates of shape {rates.shape}; expected {alive.shape}"
        )
    bad = ~np.isfinite(rates) | (rates < 0)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"policy {name!r} returned rates that are not finite and >= 0 visits per day; "
            f"{int(bad.sum())} of {rates.size}, first at page {k} ({rates[k]!r})"
        )
    rates[~alive] = 0.0
    total = rates.sum()
    if total > budget:
        rates *= budget / total
    return rates


def _visits_from_plan(
    plan: VisitPlan, name: str, t0: float, t1: float, period_end: float, env: SimulatedEnvironment
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Check a visit plan for ``[t0, period_end)``; keep the visits before ``t1`` (the window end)."""
    pages = np.asarray(plan.pages, dtype=np.intp).ravel()
    times = np.asarray(plan.times, dtype=np.float64).ravel()
    if pages.shape != times.shape:
        raise ValueError(f"policy {name!r} returned {pages.size} pages but {times.size} times")
    if pages.size:
        if pages.min() < 0 or pages.max() >= env.n_pages:
            raise ValueError(f"policy {name!r} returned pages outside 0..{env.n_pages - 1}")
        if not np.all(np.isfinite(times)) or times.min() < t0 or times.max() >= period_end:
            raise ValueError(
                f"policy {name!r} returned visit times outside [{t0}, {period_end}) days"
            )
        if np.any(np.diff(times) < 0):
            raise ValueError(f"policy {name!r} returned visit times that are not sorted")
        alive = (times >= env.born[pages]) & (times < env.died[pages]) & (times < t1)
        pages, times = pages[alive], times[alive]
    return pages, times


def _inverse(perm: NDArray[np.intp]) -> NDArray[np.intp]:
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.shape[0], dtype=perm.dtype)
    return inv


def _filter(gp, gt, tpos, keep, *extra):
    """Keep the grouped visits where ``keep``; re-index the time order ``tpos`` accordingly."""
    new_index = np.cumsum(keep) - 1
    tpos = new_index[tpos[keep[tpos]]]
    return (gp[keep], gt[keep], tpos, *(e[keep] for e in extra))


def _insert_first(gp, gt, tpos, gr, wp, wt, wr):
    """Put visits ``wp, wt, wr`` (time order, each before every visit of its page in ``gp``) into the
    grouped visits, pages kept sorted; they come first in the time order ``tpos``."""
    k, m = wp.shape[0], gp.shape[0]
    at = np.searchsorted(gp, wp, side="left")
    order = np.lexsort((np.arange(k), wp, at))
    new_pos = np.empty(k, dtype=np.intp)
    new_pos[order] = at[order] + np.arange(k)
    old_pos = np.arange(m) + np.searchsorted(at[order], np.arange(m), side="right")
    out = []
    for old, new in ((gp, wp), (gt, wt), (gr, wr)):
        a = np.empty(m + k, dtype=old.dtype)
        a[old_pos] = old
        a[new_pos] = new
        out.append(a)
    return out[0], out[1], np.concatenate([new_pos, old_pos[tpos]]), out[2]


def _grouped(gp, gt, *extra):
    """Visits sorted by page, then time; and the time order of the result (ties: by page)."""
    order = np.lexsort((gt, gp))
    gp, gt = gp[order], gt[order]
    return (gp, gt, np.argsort(gt, kind="stable"), *(e[order] for e in extra))


def _schedule_first(bucket, gp, gt, gr, gf, carry, t1, env):
    """The budget rule with announcements (module announce): the visits made for an announced
    change (``gf``) take the next token before the others waiting; the visits still waiting at the
    end of the last period (``carry``: pages, times asked, rates, kinds) are asked again before this
    period's (a visit for an announcement may go before them), and those not made by ``t1`` wait
    again. Returns the visits made, grouped (gp, gt, tpos, gr, gf), the new carry, and the numbers
    of visits dropped and deferred."""
    gp, gt, tpos, gr, gf = _grouped(
        *(np.concatenate([c, g]) for c, g in zip(carry, (gp, gt, gr, gf)))
    )
    asked = gt[tpos]
    first = gf[tpos]
    deadline = np.minimum(env.died[gp[tpos]], env.end)
    made = bucket.schedule(asked, deadline, first=first, until=t1)
    waiting = np.isinf(made)
    carry = tuple(a[tpos[waiting]] for a in (gp, gt, gr, gf))
    n_dropped = int(np.isnan(made).sum())
    done = np.isfinite(made)
    n_deferred = int(np.count_nonzero(made[done] > asked[done]))
    gt = np.empty_like(made)
    gt[tpos] = made
    keep = np.isfinite(gt)
    gp, gt, tpos, gr, gf = _grouped(gp[keep], gt[keep], gr[keep], gf[keep])
    return gp, gt, tpos, gr, gf, carry, n_dropped, n_deferred


def simulate(
    policy: Policy,
    env: SimulatedEnvironment,
    budget: float,
    *,
    visits: Literal["periodic", "poisson"] = "periodic",
    rng: np.random.Generator | int | None = None,
    on_period: Callable[[float], None] | None = None,
    announce: Announcements | None = None,
) -> SimulationResult:
    """Run ``policy`` against ``env`` over the environment's window under the budget.

    Parameters
    ----------
    policy : Policy
        The policy (reset here with a fresh context).
    env : SimulatedEnvironment
        Pages to keep fresh; its window ``[env.start, env.end)`` is simulated (must be finite).
    budget : float
        B, visits per day; must be finite and > 0.
    visits : {"periodic", "poisson"}, default="periodic"
        How a rate plan becomes visits: periodic with a random phase per page, or Poisson.
    rng : numpy.random.Generator, int or None
        Seed or generator; the same seed gives the same result.
    on_period : callable, optional
        Called with the end of each period (days), for progress reporting.
    announce : Announcements, optional
        A share of the pages announce their changes (a replay's true change times, optionally
        noisy), and the policy plans them as completely observed
        (:mod:`freshcrawl.simulation.announce`). Needs a replay environment (its change times) and
        a policy with ``set_observed_completely`` (``learned``).

    Returns
    -------
    SimulationResult

    Raises
    ------
    ValueError
        If the budget is not finite and > 0, the window is not finite, ``visits`` is unknown, the
        policy returns a malformed plan (wrong shape, negative or non-finite rates, visit times outside
        the period or unsorted), or ``announce`` is given with an environment without change times
        or a policy that cannot plan with announcements.

    Notes
    -----
    Budget rule, the same for every policy: at most ``B*t`` visits in the first t days of the window,
    and at most ``B*W + max(B, 1)`` in any window of W days. A visit that finds the budget's token
    bucket empty waits for the next token (into the next planning period if need be); one that would
    wait past the window's end or its page's death is not made (see
    :mod:`freshcrawl.simulation.dispatch`). With ``announce``, a visit made for an announced change
    takes the next token before the visits waiting (:mod:`freshcrawl.simulation.announce`). A
    page's first visit after its birth is not an observation; pages alive at the window start count
    as synchronised at the start.

    Examples
    --------
    >>> from freshcrawl.environments import PoissonEnvironment
    >>> from freshcrawl.policies.baselines import make_uniform
    >>> env = PoissonEnvironment([0.5, 1.0], start=0.0, end=100.0)
    >>> res = simulate(make_uniform(None, None), env, budget=2.0, rng=0)
    >>> res.visits, res.visits <= 2.0 * 100  # at most B times the window
    (199, True)
    """
    budget = check_positive("budget", budget, unit="visits per day")
    if visits not in VISIT_PROCESSES:
        raise ValueError(f"visits must be one of {', '.join(VISIT_PROCESSES)}; got {visits!r}")
    if not (np.isfinite(env.start) and np.isfinite(env.end)):
        raise ValueError(
            f"the environment's window must be finite days; got [{env.start}, {env.end}]"
        )
    period = check_positive("policy.replan_every", policy.replan_every, unit="days")
    rng = check_rng(rng)
    env_rng, policy_rng, dispatch_rng = rng.spawn(3)
    env.reset(env_rng)
    n = env.n_pages
    true_delta = env.true_delta()
    clock = SimulatedClock(env.start)
    context = PolicyContext(
        n_pages=n,
        budget=budget,
        start=env.start,
        weights=env.weights.copy(),
        rng=policy_rng,
        true_delta=true_delta.copy() if policy.needs_truth else None,
        born=env.born.copy(),
    )
    policy.reset(context)
    announced = None
    if announce is not None:
        history = getattr(env, "history", None)
        if history is None:
            raise ValueError("announce needs a replay environment (the history's change times)")
        if not hasattr(policy, "set_observed_completely"):
            raise ValueError(f"policy {policy.name!r} cannot plan with announcements")
        # the announcements' draws come from their own stream: the other streams stay those of a
        # run without them
        announced = AnnouncedChanges(
            announce,
            history.offsets.astype(np.int64),
            history.times,
            np.maximum(env.born, env.start),
            np.minimum(env.died, env.end),
            rng.spawn(1)[0],
        )
    audit_rate = 0.0
    followed = 0
    phase = dispatch_rng.random(n)
    last_visit = np.full(n, env.start)
    has_copy = env.born <= env.start
    bucket = TokenBucket(capacity=max(budget, 1.0), rate=budget, start=env.start)

    rows: list[tuple[float, float, Integrals]] = []
    dropped = 0
    deferred = 0
    wait_p = np.empty(0, dtype=np.intp)  # visits waiting for a token past their period
    wait_t = np.empty(0)
    wait_r = np.empty(0)
    # with announcements: the visits waiting, asked again at the next period (_schedule_first)
    carry = (np.empty(0, dtype=np.intp), np.empty(0), np.empty(0), np.empty(0, dtype=bool))
    while clock.now() < env.end:
        t0 = clock.now()
        t1 = min(t0 + period, env.end)
        if t1 - t0 < 1e-9 * max(1.0, abs(t0)):  # rounding remainder at the end of the window
            t1 = env.end
        alive = env.alive_between(t0, t1)
        if announced is not None:  # as the live frontier: audits first, Δ of the announcements
            plan_delta = getattr(policy, "planning_delta", policy.estimated_delta)
            complete_delta = announced.delta(t0, plan_delta())
            policy.update_context(replace(context, budget=max(budget - audit_rate, 0.5 * budget)))
            policy.set_observed_completely(announced.pages & alive, complete_delta)
        plan = policy.plan(t0, alive.copy())
        # visits grouped by page (gp, gt; gr the planned rate, NaN for a visit plan), in time order
        # within a page; gt[tpos] is in time order (ties: by page)
        if isinstance(plan, RatePlan):
            rates = _rates_from_plan(plan, policy.name, alive, budget)
            periodic = rates
            fp = np.empty(0, dtype=np.intp)
            if announced is not None:
                complete = np.asarray(policy.completely_observed_, dtype=bool) & announced.pages
                rho = np.zeros(n)
                np.divide(rates, complete_delta, out=rho, where=complete & (complete_delta > 0))
                periodic = np.where(complete, AUDIT_SHARE * rates, rates)
                audit_rate = float(periodic[complete].sum())
                fp, ft = announced.follow(t0, t1, np.minimum(rho, 1.0), last_visit)
            lo = np.maximum(env.born, t0)
            hi = np.minimum(env.died, t1)
            if visits == "periodic":
                gp, gt = periodic_visits(periodic, phase, lo, hi)
            else:
                gp, gt = poisson_visits(periodic, lo, hi, dispatch_rng)
            gf = np.zeros(gp.shape[0], dtype=bool)
            if fp.size:  # visits for announced changes join the others, grouped by page
                gp, gt, _, gf = _grouped(
                    np.concatenate([gp, fp]),
                    np.concatenate([gt, ft]),
                    np.concatenate([gf, np.ones(fp.shape[0], dtype=bool)]),
                )
            gr = rates[gp]
            tpos = np.argsort(gt, kind="stable")
        elif isinstance(plan, VisitPlan):
            pages, times = _visits_from_plan(plan, policy.name, t0, t1, t0 + period, env)
            gorder = np.argsort(pages, kind="stable")
            gp, gt = pages[gorder], times[gorder]
            gr = np.full(gp.shape[0], np.nan)
            gf = np.zeros(gp.shape[0], dtype=bool)
            tpos = _inverse(gorder)
        else:
            raise TypeError(
                f"policy {policy.name!r} must return a RatePlan or a VisitPlan; got {type(plan).__name__}"
            )
        if announced is not None:
            gp, gt, tpos, gr, gf, carry, n_dropped, n_deferred = _schedule_first(
                bucket, gp, gt, gr, gf, carry, t1, env
            )
            dropped += n_dropped
            deferred += n_deferred
        else:
            # the budget rule: a visit finding no token waits for the next one (first come, first
            # served, after the visits still waiting from earlier periods); one that cannot be made
            # in the window and its page's life is dropped
            asked = gt[tpos]
            made = bucket.schedule(asked, np.minimum(env.died[gp[tpos]], env.end))
            ok = ~np.isnan(made)
            dropped += int(made.shape[0] - np.count_nonzero(ok))
            deferred += int(np.count_nonzero(made[ok] > asked[ok]))
            later = tpos[made >= t1]  # waiting past this period, in time order
            prev_now = wait_t < t1
            wait = (gp[later], made[made >= t1], gr[later])
            now_p, now_t, now_r = wait_p[prev_now], wait_t[prev_now], wait_r[prev_now]
            wait_p, wait_t, wait_r = (
                np.concatenate([w[~prev_now], x]) for w, x in zip((wait_p, wait_t, wait_r), wait)
            )
            gt = np.empty_like(made)
            gt[tpos] = made
            keep = gt < t1  # made in this period (NaN: dropped)
            if not keep.all():
                gp, gt, tpos, gr = _filter(gp, gt, tpos, keep, gr)
            if now_p.size:  # waiting visits made in this period come before its own
                gp, gt, tpos, gr = _insert_first(gp, gt, tpos, gr, now_p, now_t, now_r)
            gf = np.zeros(gp.shape[0], dtype=bool)

        # previous visit of the same page: earlier in this period, or before it
        first = np.ones(gp.shape[0], dtype=bool)
        first[1:] = gp[1:] != gp[:-1]
        prev = np.empty_like(gt)
        prev[1:] = gt[:-1]
        prev[first] = last_visit[gp[first]]
        is_obs = ~first | has_copy[gp]
        dup = is_obs & (gt <= prev)  # the same page twice at the same time: once is enough
        if dup.any():
            gp, gt, tpos, prev, is_obs, gr, gf = _filter(gp, gt, tpos, ~dup, prev, is_obs, gr, gf)
        last = np.ones(gp.shape[0], dtype=bool)
        last[:-1] = gp[1:] != gp[:-1]
        last_visit[gp[last]] = gt[last]
        has_copy[gp] = True

        changed = env.visit(gp, gt, grouped=True)
        followed += int(gf.sum())
        # observations, in time order; a visit made for an announced change is none (it finds the
        # change by construction)
        sel = tpos[is_obs[tpos] & ~gf[tpos]]
        tau = gt[sel] - prev[sel]
        p_obs = gr[sel]
        p_obs = np.where(np.isnan(p_obs), 1.0 / tau, p_obs)
        policy.observe(
            Observations(pages=gp[sel], time=gt[sel], changed=changed[sel], tau=tau, p=p_obs)
        )
        rows.append((t0, t1, env.checkpoint(t1)))
        clock.wait_until(t1)
        if on_period is not None:
            on_period(t1)

    dropped += int(carry[0].shape[0])  # waiting at the window's end: not made
    fresh = sum(r[2].fresh for r in rows)
    age = sum(r[2].age for r in rows)
    harm = sum(r[2].harmonic for r in rows)
    alive_w = sum(r[2].alive for r in rows)
    n_visits = sum(r[2].visits for r in rows)
    n_changed = sum(r[2].changed for r in rows)
    est = policy.estimated_delta()
    return SimulationResult(
        policy=policy.name,
        budget=budget,
        start=env.start,
        end=env.end,
        freshness=fresh / alive_w if alive_w > 0 else float("nan"),
        age_days=age / alive_w if alive_w > 0 else float("nan"),
        harmonic_staleness=harm / alive_w if alive_w > 0 else float("nan"),
        visits=int(n_visits),
        changes_detected=n_changed / n_visits if n_visits else float("nan"),
        dropped=dropped,
        deferred=deferred,
        t_start=np.array([r[0] for r in rows]),
        t_end=np.array([r[1] for r in rows]),
        freshness_t=np.array([r[2].freshness for r in rows]),
        age_t=np.array([r[2].mean_age for r in rows]),
        harmonic_t=np.array([r[2].harmonic_staleness for r in rows]),
        visits_t=np.array([r[2].visits for r in rows], dtype=np.int64),
        estimated_delta=None if est is None else np.array(est, dtype=np.float64),
        true_delta=true_delta,
        followed=followed,
    )
