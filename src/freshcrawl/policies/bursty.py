"""``learned-bursty``: a learned policy for pages that are not Poisson.

What it adds to :class:`~freshcrawl.policies.learned.LearnedPolicy` (same estimator of the long-run
rate, same allocation, same exploration floor):

Bursts and dormancy
    Each page is a two-state MMPP around its long-run rate b_i
    (:meth:`~freshcrawl.estimators.bursty.MMPPParams.relative`: active rate κ b_i, a stationary
    active share φ, ``changes_per_burst`` changes per active spell on average). The exact forward
    filter (:func:`~freshcrawl.estimators.bursty.mmpp_step`) turns every visit into P(active); the
    allocation is fed each page's *expected rate over the next* ``horizon`` *days* from its current
    state (:func:`~freshcrawl.estimators.bursty.mmpp_mean_rate`), not its long-run average: a page
    just seen changed gets more visits, a page quiet for long fewer.
Cold start and life cycle
    b_i is the page's own estimate shrunk towards a prior from its group (empirical Bayes,
    :func:`~freshcrawl.estimators.bursty.gamma_prior`): ``w Δ̂ + (1 - w) m``, w = T/(T + β_g) for a
    page observed T days. Where the pages' birth times are known (``context.born``), m is the rate
    of the page's group *at the page's age* (:class:`~freshcrawl.estimators.bursty.AgeProfile`,
    learned from the visits: documents change most when new); otherwise the group's mean
    (:func:`~freshcrawl.estimators.bursty.group_prior`). A page never observed plans with m, not
    with a global default; a page seen often converges to its own rate.
    Groups: ``PolicyOptions.extra["groups"]`` (an int array, or a list of them: the first is the prior
    grouping, all are used for co-changes), else the context's hosts, else none (one global group).
Pages that change together
    After every batch of observations, each grouping is searched for groups with more changes than
    their pages' own models predict (:func:`~freshcrawl.estimators.bursty.detect_cochanges`); the
    share of the group the co-change hit becomes a *pending staleness probability* q of the group's
    pages not visited since.
Follow-up visits
    It plans every ``replan_every`` = P / ``subdivide`` days (P the run's planning period, 1 day by
    default; ``subdivide`` = 4), so a change seen in one quarter of the day changes the rates of the
    next. A page with a pending staleness probability q (a co-change of its group, or a page born
    without a copy yet: q = 1) gets a follow-up rate ``q / follow_days`` on top of its allocation,
    at most ``follow_share`` of the budget in all (scaled down beyond), until it is visited.

Dispatch that spends the budget
    The rates (follow-ups included) sum to at most B over the alive pages; with
    ``context.hosts``/``context.host_caps`` the follow-up rates take at most half of each host's cap
    and the allocation the rest (the allocation with host caps, as in ``learned``). Each plan is a
    :class:`~freshcrawl.policies.base.VisitPlan`: the periodic visits of those rates (a visit when a
    page's rate integral since its last visit reaches 1, as the engine dispatches a rate plan), and
    early visits for the budget they leave unspent beyond ``reserve_days`` days of budget (each to the
    page whose next periodic visit is nearest). Periodic visits alone spend the rates' total only on
    average: after a sweep visited most pages at once their integrals restart together, and at a low
    budget little falls due for weeks. With ``reserve_days = inf`` the plan is the
    :class:`~freshcrawl.policies.base.RatePlan` itself. The engine's budget rule applies as to any plan
    (:mod:`freshcrawl.simulation.dispatch`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
from numpy.typing import NDArray

from freshcrawl._validation import check_interval, check_positive
from freshcrawl.errors import UnknownNameError
from freshcrawl.estimators.bursty import (
    AgeProfile,
    CoChangeAccumulator,
    MMPPParams,
    gamma_prior,
    group_prior,
    mmpp_mean_rate,
    mmpp_propagate,
    mmpp_step,
    shrink,
)
from freshcrawl.policies.base import (
    Observations,
    PolicyContext,
    PolicyOptions,
    RatePlan,
    VisitPlan,
    check_same_pages,
)
from freshcrawl.policies.learned import (
    DEFAULT_ESTIMATOR,
    _allocate_above_floor,
    _explore_floor,
    _host_room,
    clip_to_caps,
    split_rounds,
)
from freshcrawl.scheduling.periodic import periodic_visits

__all__ = ["BurstyConfig", "BurstyPolicy", "make_bursty", "prefix_groups"]


@dataclass(frozen=True)
class BurstyConfig:
    """Settings of ``learned-bursty`` (how they were chosen: docs/simulate.md), checked at once.

    Attributes
    ----------
    burst : float, default=3.0
        κ >= 1: active rate over long-run rate.
    active_share : float, default=0.2
        φ in (0, 1): stationary share of time in the active state.
    changes_per_burst : float, default=3.0
        Mean changes per active spell (> 0).
    horizon : float, default=1.0
        Days over which the expected rate fed to the allocation is averaged (> 0).
    prior_visits : float, default=2.0
        k0 >= 0, pseudo-visits of the group prior.
    prior_pages : float, default=3.0
        n1 >= 0, pseudo-pages of the global mean in each group's mean.
    explore : float, default=0.05
        Fraction in [0, 1) of the budget spread as a floor rate over alive pages.
    follow_share : float, default=0.5
        Fraction in [0, 1) of the budget that follow-up visits may take.
    follow_days : float, default=0.25
        A page stale with probability q gets ``q / follow_days`` visits per day (> 0).
    cochange_z : float, default=4.0
        Threshold of the co-change test, standard deviations (> 0).
    newborn : float, default=1.0
        Staleness probability in [0, 1] given to a page born without a copy yet (its follow-up).
    gamma_prior : bool, default=True
        Weigh the group prior by the empirical-Bayes gamma prior's weight β_g (days of observation,
        :func:`~freshcrawl.estimators.bursty.gamma_prior`): b = w Δ̂ + (1 - w) m_g with
        w = T/(T + β_g), T the page's days of observation; else by ``prior_visits`` pseudo-visits.
    age_prior : bool, default=True
        Where birth times are known, take the prior of a page from its group's rate at its age
        (:class:`~freshcrawl.estimators.bursty.AgeProfile`) rather than the group's mean.
    reserve_days : float, default=2.0
        Days of budget (> 0) that periodic visits may leave unspent before the rest is spent on early
        visits; ``inf``: plain periodic dispatch of the rates (see the module docstring).
    subdivide : float, default=4.0
        Plans per planning period P (>= 1): the policy plans every P / ``subdivide`` days.

    Raises
    ------
    ValueError
        If a setting is out of range.

    Examples
    --------
    >>> BurstyConfig(burst=5.0).burst, BurstyConfig().reserve_days
    (5.0, 2.0)
    """

    burst: float = 3.0
    active_share: float = 0.2
    changes_per_burst: float = 3.0
    horizon: float = 1.0
    prior_visits: float = 2.0
    prior_pages: float = 3.0
    explore: float = 0.05
    follow_share: float = 0.5
    follow_days: float = 0.25
    cochange_z: float = 4.0
    newborn: float = 1.0
    gamma_prior: bool = True
    age_prior: bool = True
    reserve_days: float = 2.0
    subdivide: float = 4.0

    def __post_init__(self) -> None:
        if not self.burst >= 1.0:
            raise ValueError(
                f"burst must be >= 1 (active rate over long-run rate); got {self.burst!r}"
            )
        check_interval("active_share", self.active_share, low=0.0, high=1.0, closed="neither")
        check_positive("changes_per_burst", self.changes_per_burst, unit="changes")
        check_positive("horizon", self.horizon, unit="days")
        for label, v in (("prior_visits", self.prior_visits), ("prior_pages", self.prior_pages)):
            if not (np.isfinite(v) and v >= 0):
                raise ValueError(f"{label} must be finite and >= 0; got {v!r}")
        check_interval("explore", self.explore, low=0.0, high=1.0, closed="left")
        check_interval("follow_share", self.follow_share, low=0.0, high=1.0, closed="left")
        check_positive("follow_days", self.follow_days, unit="days")
        check_positive("cochange_z", self.cochange_z, unit="standard deviations")
        check_interval("newborn", self.newborn, low=0.0, high=1.0)
        if not self.reserve_days > 0:
            raise ValueError(
                "reserve_days must be > 0 (days of budget kept for bursts; inf: none); "
                f"got {self.reserve_days!r}"
            )
        if not self.subdivide >= 1:
            raise ValueError(
                f"subdivide must be >= 1 plans per planning period; got {self.subdivide!r}"
            )


class BurstyPolicy:
    """Burst-aware, group-pooled, co-change-aware learned policy (see the module docstring).

    Parameters
    ----------
    config : BurstyConfig, optional
        The settings (default ``BurstyConfig()``).
    replan_every : float, optional
        Days between plans (> 0); default 1 / ``config.subdivide``.
    refresh_every : float
        Days between two re-computations of the long-run rates b_i and their group priors (> 0);
        the burst state, follow-ups and the allocation are redone at every plan.
    objective : str
        Objective of :func:`freshcrawl.allocation.allocate`.
    groups : ndarray of int or list of them, optional
        Groupings of the pages (``-1``: none); see the module docstring.
    estimator_params : dict, optional
        Keyword parameters of the ``mle-binned`` estimator of the long-run rate.

    Attributes
    ----------
    config : BurstyConfig
        The settings.
    estimator_ : BatchEstimator
        The long-run rate estimator.
    pi_active_ : ndarray of float, shape (n_pages,)
        P(active) after each page's latest observation.
    pending_ : ndarray of float, shape (n_pages,)
        Pending staleness probability from co-changes (0 after a visit).
    rates_ : ndarray of float, shape (n_pages,)
        Rates of the last plan, visits per day.
    n_cochanges_ : int
        Co-changes detected so far (group × batch).
    age_profile_ : AgeProfile
        Change rate by age per group of the first grouping (filled only where birth times are known).

    Raises
    ------
    ValueError
        If a setting is out of range.
    """

    needs_truth = False

    def __init__(
        self,
        config: BurstyConfig | None = None,
        *,
        replan_every: float | None = None,
        refresh_every: float = 1.0,
        objective: str = "freshness-periodic",
        groups=None,
        estimator_params: dict | None = None,
        name: str = "learned-bursty",
    ) -> None:
        if config is None:
            config = BurstyConfig()
        if not isinstance(config, BurstyConfig):
            raise TypeError(f"config must be a BurstyConfig; got {type(config).__name__}")
        self.config = config
        if replan_every is None:
            replan_every = 1.0 / config.subdivide
        self.replan_every = check_positive("replan_every", replan_every, unit="days")
        self.refresh_every = check_positive("refresh_every", refresh_every, unit="days")
        self.objective = objective
        self.groups = groups
        self.estimator_params = dict(estimator_params or {})
        self.name = name

    # ----------------------------------------------------------------------------------------- state
    def reset(self, context: PolicyContext) -> None:
        """Forget everything; build the estimator and the per-page state for ``context.n_pages`` pages."""
        from freshcrawl.estimators import make_batch_estimator

        n = context.n_pages
        self.context_ = context
        self.estimator_ = make_batch_estimator(DEFAULT_ESTIMATOR, n, **self.estimator_params)
        self.pi_active_ = np.full(n, self.config.active_share)
        self.last_obs_ = np.full(n, float(context.start))
        if context.born is not None:
            self.last_obs_ = np.maximum(self.last_obs_, np.asarray(context.born, dtype=np.float64))
        self.pending_ = np.zeros(n)
        self.waiting_ = (
            np.zeros(n, dtype=bool)
            if context.born is None
            else np.asarray(context.born) > context.start
        )
        # a birth is a change: a page born in the window starts as P(active | a change) = φ κ
        self.pi_active_[self.waiting_] = min(self.config.active_share * self.config.burst, 1.0)
        self._born = (
            np.full(n, -np.inf)
            if context.born is None
            else np.asarray(context.born, dtype=np.float64)
        )
        self._follow_mass = np.zeros(n)
        rng = context.rng if context.rng is not None else np.random.default_rng(0)
        self._phase = rng.random(n)  # rate integral since each page's last dispatched visit
        self._level = 0.0  # visits of the budget left unspent, up to the reserve
        self._last_plan = None  # (time, rates, pages, times) of the last plan's visits
        self.changes_ = np.zeros(n)
        self.exposure_ = np.zeros(n)
        self.base_ = np.zeros(n)
        self._base_at: float | None = None
        self.rates_ = np.zeros(n)
        self.n_unconverged_ = 0
        self.n_cochanges_ = 0
        self._set_groupings(context)

    def _set_groupings(self, context: PolicyContext) -> None:
        n = context.n_pages
        given = self.groups
        if given is None and context.hosts is not None:
            given = [np.asarray(context.hosts, dtype=np.intp)]
        elif given is not None and not isinstance(given, (list, tuple)):
            given = [given]
        out = []
        for g in given or []:
            g = np.asarray(g, dtype=np.intp)
            if g.shape != (n,):
                raise ValueError(
                    f"groups must have shape ({n},) (one group per page, -1: none); got {g.shape}"
                )
            out.append(g)
        self.groupings_ = out
        self._accumulators = [
            CoChangeAccumulator(
                int(g.max()) + 1 if g.size and g.max() >= 0 else 0, z=self.config.cochange_z
            )
            for g in out
        ]
        self.age_profile_ = AgeProfile(self._accumulators[0].n_groups if out else 0)

    def update_context(self, context: PolicyContext) -> None:
        """Take new weights, hosts, host caps or budget; everything learned stays."""
        self.context_ = check_same_pages(self.context_, context)
        if self.groups is None:  # groups are the hosts: regroup only when they changed
            old = self.groupings_[0] if self.groupings_ else None
            new = None if context.hosts is None else np.asarray(context.hosts, dtype=np.intp)
            if (old is None) != (new is None) or (new is not None and not np.array_equal(old, new)):
                self._set_groupings(context)  # new groups: their age profiles are learned again

    # ----------------------------------------------------------------------------------------- model
    def base_rate(self, now: float | None = None) -> NDArray[np.float64]:
        """Long-run rate b_i: own estimate shrunk towards the group prior, shape (n_pages,), per day.

        ``now`` (days) places each page's age for the age prior, at ``now + horizon / 2``; without it
        (or without birth times, or with ``age_prior`` off) the prior is the group's mean.
        """
        est = self.estimator_
        delta = np.asarray(est.delta_, dtype=np.float64)
        k = np.asarray(getattr(est, "n_eff_", est.n_visits_), dtype=np.float64)
        observed = k > 0
        groups = (
            self.groupings_[0] if self.groupings_ else np.full(delta.shape[0], -1, dtype=np.intp)
        )
        prior = group_prior(delta, observed, groups, prior_pages=self.config.prior_pages)
        if self.config.age_prior and now is not None and self.age_profile_.exposure_.any():
            age = now + 0.5 * self.config.horizon - self._born
            known = np.isfinite(age)
            prior = np.where(known, self.age_profile_.rate(groups, age), prior)
        if not self.config.gamma_prior:
            return shrink(delta, k, prior, self.config.prior_visits)
        _, beta = gamma_prior(self.changes_, self.exposure_, groups)
        t = self.exposure_
        with np.errstate(invalid="ignore", divide="ignore"):
            w = np.where(np.isfinite(beta), t / (t + beta), 0.0)
        w = np.where(t > 0, w, 0.0)
        return w * np.where(observed, np.nan_to_num(delta), 0.0) + (1.0 - w) * prior

    def _params(self, base) -> MMPPParams:
        return MMPPParams.relative(
            base,
            burst=self.config.burst,
            active_share=self.config.active_share,
            changes_per_burst=self.config.changes_per_burst,
        )

    def planning_delta(self, now: float) -> NDArray[np.float64]:
        """Expected change rate of every page over the next ``horizon`` days, shape (n_pages,), per day."""
        if self._base_at is None or now >= self._base_at + self.refresh_every - 1e-9:
            self.base_ = self.base_rate(now)  # the long-run rates move slowly: once a period
            self._base_at = now
        params = self._params(self.base_)
        pi_now = mmpp_propagate(self.pi_active_, params, np.maximum(now - self.last_obs_, 0.0))
        return mmpp_mean_rate(pi_now, params, self.config.horizon)

    # ------------------------------------------------------------------------------------------ plan
    def plan(self, now: float, alive: NDArray[np.bool_]) -> VisitPlan | RatePlan:
        """Follow-up rates for pages likely stale, the rest allocated on the expected rates (visits/day),
        dispatched as visits (see :meth:`_dispatch`)."""
        ctx = self.context_
        n = alive.shape[0]
        rates = np.zeros(n)
        idx = np.flatnonzero(alive)
        if idx.size == 0:
            self.rates_ = rates
            return self._dispatch(now, rates)
        budget = float(ctx.budget)
        observed = np.asarray(self.estimator_.n_visits_) > 0
        hosts = caps = None
        if ctx.hosts is not None and ctx.host_caps is not None:
            hosts = np.asarray(ctx.hosts, dtype=np.intp)[idx]
            caps = np.asarray(ctx.host_caps, dtype=np.float64)
        if not observed.any() and hosts is None:  # nothing learned yet: uniform
            rates[idx] = budget / idx.size
            self.rates_ = rates
            return self._dispatch(now, rates)
        # follow-up visits for pages likely stale
        q = np.maximum(self.pending_[idx], self.config.newborn * self.waiting_[idx])
        follow = q / self.config.follow_days
        total = follow.sum()
        room = self.config.follow_share * budget
        if total > room:
            follow *= room / total
        caps_left = None
        if hosts is not None:
            on = hosts >= 0
            f_on = follow[on]
            follow[on] = clip_to_caps(f_on, hosts[on], 0.5 * caps)
            used = np.bincount(hosts[on], weights=follow[on], minlength=caps.shape[0])
            caps_left = np.maximum(caps - used, 0.0)
        # periodic dispatch visits a page by the time its rate integral since the plan reaches 1:
        # once the follow-up rate has integrated to 1, the copy is fetched; stop waiting for it
        span = np.clip(
            now + self.replan_every - np.maximum(self._born[idx], now), 0.0, self.replan_every
        )
        w = self.waiting_[idx]
        if w.any():
            self._follow_mass[idx[w]] += follow[w] * span[w]
            done = idx[w][self._follow_mass[idx[w]] >= 1.0]
            self.waiting_[done] = False
        rest = budget - float(follow.sum())
        if observed.any():
            delta = self.planning_delta(now)[idx]
        else:  # nothing learned yet: equal rates, within the host caps
            delta = np.ones(idx.size)
        if rest > 0:
            floor = _explore_floor(idx.size, self.config.explore * rest, hosts, caps_left)
            if hosts is not None:
                rest = min(rest, _host_room(hosts, caps_left))
            res = _allocate_above_floor(
                np.maximum(delta, 0.0),
                rest,
                weights=ctx.weights[idx],
                objective=self.objective,
                floor=floor,
                hosts=hosts,
                caps_left=caps_left,
            )
            self.n_unconverged_ += int(not res.success)
            rates[idx] = follow + res.p
        else:
            rates[idx] = follow
        self.rates_ = rates
        return self._dispatch(now, rates)

    def _dispatch(self, now: float, rates: NDArray[np.float64]) -> VisitPlan:
        """The visits of the next ``replan_every`` days: periodic ones, and early ones for a budget left unspent.

        Periodic dispatch (a visit when a page's rate integral since its last visit reaches 1, as the
        engine does with a rate plan) spends the rates' total only on average: after a sweep visited
        most pages at once, their integrals restart together and for about a period of the slowest
        pages little is visited. Here the budget that periodic visits leave unspent accumulates up to
        ``reserve_days`` days of budget (kept for bursts of follow-ups); beyond it, it is spent at once
        on early visits, each to the page whose next periodic visit is nearest (its integral then owes
        1, which delays that visit by one period). The unspent budget is carried in whole visits: at each
        plan it is capped at the reserve, so a plan that made early visits drops the fraction of a visit
        left above it. The visits planned up to a plan thus fall short of ``B t`` by at most
        ``reserve_days B`` plus those dropped fractions (while there are pages alive to visit).

        The state (integrals, unspent budget) is carried from the previous plan to ``now`` with the
        visits it planned before ``now``, so plans closer together than ``replan_every`` (a live
        frontier re-plans when pages join) count only the time that passed (at most one period).
        """
        if not np.isfinite(self.config.reserve_days):
            return RatePlan(rates)
        n = rates.shape[0]
        period = self.replan_every
        budget = float(self.context_.budget)
        last = self._last_plan
        if last is not None:  # carry the previous plan's state to now
            t_prev, r_prev, pages_prev, times_prev = last
            elapsed = min(max(now - t_prev, 0.0), period)
            done = pages_prev[times_prev < now]
            self._phase += r_prev * np.clip(
                t_prev + elapsed - np.maximum(self._born, t_prev), 0.0, None
            )
            np.subtract.at(self._phase, done, 1.0)
            self._level = min(
                self._level + budget * elapsed - done.shape[0], self.config.reserve_days * budget
            )
        phase = self._phase.copy()
        lo = np.clip(self._born, now, now + period)  # a page born within the period: from its birth
        gp, gt = periodic_visits(rates, phase, lo, np.full(n, now + period))
        # (an integral carried to 1 + an ulp would place a visit an ulp early)
        gt = np.maximum(gt, now)
        level = self._level + budget * period - gp.shape[0]
        on = (rates > 0) & (self._born <= now)
        extra = int(min(max(np.floor(level - self.config.reserve_days * budget), 0.0), on.sum()))
        if extra:
            due = np.where(on, (1.0 - phase) / np.where(on, rates, 1.0), np.inf)
            early = np.argpartition(due, extra - 1)[:extra] if extra < n else np.arange(n)
            early = early[np.argsort(due[early], kind="stable")]
            gp = np.concatenate([gp, early.astype(np.intp)])
            gt = np.concatenate([gt, now + (np.arange(extra) + 0.5) * (period / extra)])
        order = np.argsort(gt, kind="stable")
        pages, times = gp[order].astype(np.intp), gt[order]
        self._last_plan = (now, rates.copy(), pages, times)
        return VisitPlan(pages, times)

    # --------------------------------------------------------------------------------------- observe
    def observe(self, obs: Observations) -> None:
        """Filter each visit, update the long-run estimates, then look for co-changes in the batch."""
        if len(obs) == 0:
            return
        pages = np.asarray(obs.pages, dtype=np.intp)
        changed = np.asarray(obs.changed, dtype=bool)
        tau = np.asarray(obs.tau, dtype=np.float64)
        time = np.asarray(obs.time, dtype=np.float64)
        p_change = np.empty(pages.shape[0])
        if self._base_at is None:
            self.base_ = self.base_rate(float(time[0]))
            self._base_at = float(time[0])
        base = self.base_
        for sel in split_rounds(pages):
            pg = pages[sel]
            params = self._params(base[pg])
            pi, _, pc = mmpp_step(self.pi_active_[pg], params, changed[sel], tau[sel])
            self.pi_active_[pg] = pi
            p_change[sel] = pc
            self.estimator_.update(
                pg, changed[sel], tau[sel], np.asarray(obs.p, dtype=np.float64)[sel]
            )
            self.last_obs_[pg] = time[sel]
            self.changes_[pg] += changed[sel]
            self.exposure_[pg] += tau[sel]
        if self.config.age_prior:  # each interval at the page's age at its middle
            age = time - 0.5 * tau - self._born[pages]
            known = np.isfinite(age)
            g0 = self.groupings_[0][pages] if self.groupings_ else np.full(pages.shape[0], -1)
            self.age_profile_.add(g0[known], age[known], changed[known], tau[known])
        self.pending_[pages] = 0.0
        self.waiting_[pages] = False
        prev = time - tau
        for g, acc in zip(self.groupings_, self._accumulators):
            found = acc.add(g[pages], changed, p_change, prev)
            if found.groups.size == 0:
                continue
            self.n_cochanges_ += int(found.groups.size)
            share = np.zeros(acc.n_groups)
            since = np.full(acc.n_groups, -np.inf)
            share[found.groups] = found.share
            since[found.groups] = found.since
            gi = np.maximum(g, 0)
            hit = (g >= 0) & (self.last_obs_ < since[gi])
            s = share[gi[hit]]
            self.pending_[hit] = 1.0 - (1.0 - self.pending_[hit]) * (1.0 - s)

    def estimated_delta(self) -> NDArray[np.float64]:
        """Long-run rate b_i (own estimate shrunk to the group prior), NaN for pages never observed."""
        out = self.base_rate(self._base_at)
        out[np.asarray(self.estimator_.n_visits_) == 0] = np.nan
        return out


def make_bursty(arg: str | None, options: PolicyOptions | None) -> BurstyPolicy:
    """Factory of ``learned-bursty``: a :class:`BurstyConfig` from ``options.extra``'s settings.

    It plans every ``options.replan_every / subdivide`` days. Other keys of ``options.extra``
    (``groups``, ``estimator_params``) are passed on; unknown ones are ignored.

    Examples
    --------
    >>> make_bursty(None, None).replan_every
    0.25
    """
    if arg:
        raise UnknownNameError(
            f"policy 'learned-bursty' takes no ':' argument; got learned-bursty:{arg}"
        )
    opts = options if options is not None else PolicyOptions()
    names = {f.name for f in fields(BurstyConfig)}
    config = BurstyConfig(**{k: v for k, v in opts.extra.items() if k in names})
    return BurstyPolicy(
        config,
        replan_every=opts.replan_every / float(config.subdivide),
        refresh_every=opts.replan_every,
        objective=opts.objective,
        groups=opts.extra.get("groups"),
        estimator_params=opts.extra.get("estimator_params"),
    )


def prefix_groups(ids, depth: int | None = None) -> NDArray[np.intp]:
    """Group page ids (URLs or paths) by their directory, shape (n_pages,), ints from 0.

    A page's group is everything before its last ``/`` (with ``depth``: its first ``depth`` path
    components), and for an id with a ``#`` fragment everything before the ``#``; a URL keeps its
    scheme and host, so pages of one host and directory share a group.

    Examples
    --------
    >>> prefix_groups(["a/b/x.md", "a/b/y.md", "a/c/z.md", "top.md", "f.json#1", "f.json#2"]).tolist()
    [0, 0, 1, 2, 3, 3]
    >>> prefix_groups(["a/b/x.md", "a/c/z.md"], depth=1).tolist()
    [0, 0]
    """
    keys = []
    for s in ids:
        s = str(s)
        if "#" in s:
            keys.append(s.split("#", 1)[0])
            continue
        head, sep, rest = s.partition("://")
        path = rest if sep else head
        parts = path.split("/")[:-1]
        if depth is not None:
            parts = parts[: (depth + 1 if sep else depth)]
        keys.append((head + "://" if sep else "") + "/".join(parts))
    _, first, inv = np.unique(np.array(keys, dtype=object), return_index=True, return_inverse=True)
    # number groups in order of first appearance
    order = np.argsort(np.argsort(first))
    return order[inv].astype(np.intp)
