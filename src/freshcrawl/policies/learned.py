"""The learned policy (estimate Δ online, allocate the budget) and the oracle (allocate on the truth).

``learned:<estimator>``
    Every re-plan (every P days, default 1), feeds the observations to a batch change-rate estimator
    from :mod:`freshcrawl.estimators` and allocates the budget with :func:`freshcrawl.allocation.allocate`
    on the current estimates Δ̂ (objective chosen by ``--objective``, default periodic freshness).
``oracle``
    The same allocation fed the true rates of the window (changes in the window per day alive in it).
``proportional``
    Rates proportional to Δ̂ (the Proportional policy of seed 004 on estimated rates, i.e. its Estimator
    policy).

Pages without an observation yet (a page's first visit after its birth compares with nothing, so a
page born in the window needs two visits) are visited at the default rate, ``PolicyOptions.default_rate`` or ``B / n_alive`` when
that is None, so that every page is looked at and the learned policy starts as uniform. Observed pages
share the rest of the budget. A learning policy must keep looking at pages it believes static (Δ̂ = 0
after a few unchanged visits, or hopeless pages the allocation leaves at 0): each observed page gets at
least ``explore * B_rest / n_observed`` visits per day (``explore`` = 0.05 by default, set with
``PolicyOptions.extra["explore"]``), so at most 5% of the budget goes to exploration. And an estimate
from a few visits is not trusted alone: the allocation gets each page's posterior mean of Δ under an
empirical-Bayes gamma prior pooled over all pages and over each host's
(:class:`freshcrawl.estimators.posterior.RatePosterior`; ``PolicyOptions.extra["prior"]``, default
``"gamma"``), so a page with few visits plans near its host's typical rate and one with many on its
own data. ``prior="mean"`` gives the allocation ``(k Δ̂ + k0 m) / (k + k0)`` instead, k the page's
observations, m the mean Δ̂ over observed pages, k0 = 2 pseudo-visits
(``PolicyOptions.extra["prior_visits"]``). Without these guards a page seen unchanged once has
Δ̂ = 0 and is never visited again.

Non-stationary pages: ``learned:<estimator>@<H>d`` (or ``PolicyOptions.extra["half_life"] = H``, or
``freshcrawl simulate --estimator-half-life H``) gives the estimator exponential forgetting with a
half-life of H days (estimators in :data:`freshcrawl.estimators.FORGETTING_NAMES`): a visit d days older
than the page's latest one weighs 2^{-d/H}, and k in the shrinkage is the effective (decayed) number of
visits. ``@inf`` turns forgetting off.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from freshcrawl._validation import check_half_life, check_interval, check_positive
from freshcrawl.errors import ConvergenceWarning, UnknownNameError
from freshcrawl.policies.base import (
    Observations,
    PolicyContext,
    PolicyOptions,
    RatePlan,
    check_same_pages,
)

if TYPE_CHECKING:
    from freshcrawl.allocation.result import AllocationResult

__all__ = [
    "DEFAULT_ESTIMATOR",
    "DEFAULT_EXPLORE",
    "DEFAULT_HALF_LIFE",
    "DEFAULT_PRIOR",
    "DEFAULT_PRIOR_VISITS",
    "PRIORS",
    "LearnedPolicy",
    "OraclePolicy",
    "clip_to_caps",
    "make_learned",
    "make_learned_proportional",
    "make_oracle",
    "split_rounds",
]

#: Estimator of ``learned`` when none is named: the MLE of eq. (15) of seed 001 kept on counts per
#: interval bin, consistent under the periodic, re-planned visits the engine makes (docs/design.md,
#: "The pitfall") at O(bins) per visit, and statistically the most efficient of the consistent ones.
DEFAULT_ESTIMATOR = "mle-binned"
#: Fraction of the budget (after unobserved pages) kept as a floor rate for observed pages.
DEFAULT_EXPLORE = 0.05
#: Pseudo-visits of the shrinkage of Δ̂ towards the mean over observed pages.
DEFAULT_PRIOR_VISITS = 2.0
#: How the plan's rates borrow from other pages: ``gamma`` (empirical-Bayes posterior mean under a
#: gamma prior pooled over the crawl and each host), ``mean`` (``prior_visits`` pseudo-visits of the
#: mean Δ̂), ``none`` (Δ̂ alone).
PRIORS = ("gamma", "mean", "none")
#: Prior of ``learned`` when none is named.
DEFAULT_PRIOR = "gamma"
#: Half-life (days) of the estimator's exponential forgetting when none is named; None: no forgetting.
DEFAULT_HALF_LIFE: float | None = None


def split_rounds(pages: NDArray[np.intp]) -> list[NDArray[np.intp]]:
    """Split visit positions into rounds holding each page at most once, keeping each page's order.

    Round r holds the (r+1)-th visit of every page visited more than r times.

    Examples
    --------
    >>> [r.tolist() for r in split_rounds(np.array([3, 1, 3, 3, 1]))]
    [[1, 0], [4, 2], [3]]
    """
    if pages.size == 0:
        return []
    counts = np.bincount(pages)
    if counts.max() == 1:  # every page once: a single round, no sort needed
        return [np.arange(pages.size)]
    order = np.argsort(pages, kind="stable")
    ps = pages[order]
    start = np.ones(ps.shape[0], dtype=bool)
    start[1:] = ps[1:] != ps[:-1]
    group_first = np.maximum.accumulate(np.where(start, np.arange(ps.shape[0]), 0))
    rank = np.arange(ps.shape[0]) - group_first
    by_rank = np.argsort(rank, kind="stable")
    counts = np.bincount(rank)
    return np.split(order[by_rank], np.cumsum(counts)[:-1])


def _unobserved_rates(
    alive: NDArray[np.bool_], observed: NDArray[np.bool_], budget: float, default_rate: float | None
) -> tuple[NDArray[np.float64], float]:
    """Default rate for alive pages without observation; return the rates and the budget left."""
    rates = np.zeros(alive.shape[0])
    n_alive = int(alive.sum())
    if n_alive == 0:
        return rates, 0.0
    waiting = alive & ~observed
    n_wait = int(waiting.sum())
    d = budget / n_alive if default_rate is None else default_rate
    if d * n_wait >= budget:
        rates[waiting] = budget / n_wait
        return rates, 0.0
    rates[waiting] = d
    return rates, budget - d * n_wait


def clip_to_caps(
    p: NDArray[np.float64], hosts: NDArray[np.intp], caps: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Scale the rates of each host down to its cap c_h, in proportion (a proportional rule).

    Parameters
    ----------
    p : ndarray of float, shape (n,)
        Rates, visits per day.
    hosts : ndarray of intp, shape (n,)
        Host index of each rate, in ``[0, n_hosts)``.
    caps : ndarray of float, shape (n_hosts,)
        Host caps c_h, visits per day (inf: no cap).

    Returns
    -------
    ndarray of float, shape (n,)
        ``p`` where its host's sum is within the cap, else ``p · c_h / Σ_{i∈h} p_i``.

    Examples
    --------
    >>> p, hosts = np.array([2.0, 2.0, 1.0]), np.array([0, 0, 1])
    >>> clip_to_caps(p, hosts, np.array([1.0, np.inf])).tolist()
    [0.5, 0.5, 1.0]
    """
    total = np.bincount(hosts, weights=p, minlength=caps.shape[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(total > caps, caps / total, 1.0)
    return p * scale[hosts]


def _explore_floor(
    n: int, share: float, hosts: NDArray[np.intp] | None, caps_left: NDArray[np.float64] | None
) -> NDArray[np.float64]:
    """Floor rates of ``n`` observed pages, visits per day, shape (n,): ``share / n`` each, lowered on
    a host (``hosts`` < 0: none; None without caps) to half its cap left over its pages."""
    floor = np.full(n, share / n)
    if hosts is not None and caps_left is not None:
        on = hosts >= 0
        per_host = np.bincount(hosts[on], minlength=caps_left.shape[0])
        h = hosts[on]
        floor[on] = np.minimum(floor[on], 0.5 * caps_left[h] / per_host[h])
    return floor


def _host_room(hosts: NDArray[np.intp], caps_left: NDArray[np.float64]) -> float:
    """Visits per day the hosts of some pages can still take: inf if a page has no host or an
    uncapped one."""
    if (hosts < 0).any() or not np.isfinite(caps_left[np.unique(hosts)]).all():
        return np.inf
    return float(caps_left[np.unique(hosts)].sum())


def _allocate_above_floor(
    delta: NDArray[np.float64],
    budget: float,
    *,
    floor: NDArray[np.float64],
    hosts: NDArray[np.intp] | None,
    caps_left: NDArray[np.float64] | None,
    **kwargs: Any,
) -> AllocationResult:
    """:func:`freshcrawl.allocation.allocate` of a plan with p_min ``floor`` and the hosts' caps left.

    A plan is redone every period: an allocation stopped at its iteration limit (still spending the
    whole budget) is good enough, so its ConvergenceWarning is silenced (callers count
    ``not result.success``).
    """
    from freshcrawl.allocation import allocate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return allocate(
            delta,
            budget,
            p_min=floor if hosts is not None else float(floor[0]),
            hosts=hosts,
            host_caps=caps_left,
            **kwargs,
        )


def _water_level(u: NDArray[np.float64], m: NDArray[np.float64], m_free: float, total: float) -> float:
    """Level L with ``Σ_h m_h min(L, u_h) + m_free L = total`` (inf when even L = inf falls short)."""
    order = np.argsort(u)
    u, m = u[order], m[order]
    below = np.concatenate(([0.0], np.cumsum(m * u)))  # what the hosts under the level take
    above = m_free + m.sum() - np.concatenate(([0.0], np.cumsum(m)))  # pages still at the level
    with np.errstate(divide="ignore", invalid="ignore"):
        level = (total - below) / above
    ok = np.flatnonzero(level <= np.append(u, np.inf))
    return float(level[ok[0]]) if ok.size else np.inf


def _host_limits(
    ctx: PolicyContext, rates: NDArray[np.float64], seen: NDArray[np.intp], rest: float
) -> tuple[NDArray[np.float64], float, NDArray[np.intp] | None, NDArray[np.float64] | None]:
    """Fit the default rates of unobserved pages under the host caps; what is left for observed pages.

    The unobserved pages (those with a default rate in ``rates``, changed in place) keep their total
    but are water-filled under the caps: each gets ``min(L, c_h / m_h)``, m_h the host's unobserved
    pages, with one level L for all, so a capped host's share moves to pages of hosts with room (this
    is the uniform policy under host caps). What even that cannot place joins ``rest``. Returns the
    budget left for the observed pages ``seen`` (never more than their hosts can take), their host
    indices (``None`` without caps), and each host's cap left after its unobserved pages, visits per
    day.
    """
    if ctx.hosts is None or ctx.host_caps is None:
        return rates, rest, None, None
    hosts = np.asarray(ctx.hosts, dtype=np.intp)
    caps = np.asarray(ctx.host_caps, dtype=np.float64)
    n_hosts = caps.shape[0]
    waiting = np.flatnonzero(rates > 0)
    if waiting.size:
        total = float(rates[waiting].sum())
        wh = hosts[waiting]
        capped = (wh >= 0) & np.isfinite(caps[np.maximum(wh, 0)])
        m = np.bincount(wh[capped], minlength=n_hosts).astype(np.float64)
        groups = np.flatnonzero(m)
        level = _water_level(caps[groups] / m[groups], m[groups], float((~capped).sum()), total)
        per_page = np.full(waiting.size, level)
        per_page[capped] = np.minimum(level, caps[wh[capped]] / m[wh[capped]])
        rates[waiting] = per_page
        rest += total - float(per_page.sum())
    has_host = hosts >= 0
    used = np.bincount(hosts[has_host], weights=rates[has_host], minlength=n_hosts)
    left = np.maximum(caps - used, 0.0)
    seen_hosts = hosts[seen]
    return rates, min(rest, _host_room(seen_hosts, left)), seen_hosts, left


class LearnedPolicy:
    """Estimate Δ online with a batch estimator and re-allocate the budget every ``replan_every`` days.

    Parameters
    ----------
    estimator : str, default=DEFAULT_ESTIMATOR
        Name in :data:`freshcrawl.estimators.ESTIMATOR_NAMES`.
    objective : str, default="freshness-periodic"
        Objective of :func:`freshcrawl.allocation.allocate` (``rule="allocate"`` only).
    replan_every : float, default=1.0
        P, days between plans.
    default_rate : float or None, default=None
        Visits per day of a page without observation; None means ``B / n_alive``.
    explore : float, default=DEFAULT_EXPLORE
        Fraction in [0, 1) of the budget left after unobserved pages spread as a floor rate over
        observed pages.
    prior_visits : float, default=DEFAULT_PRIOR_VISITS
        Pseudo-visits k0 >= 0 of the shrinkage of Δ̂ towards the mean over observed pages (see
        :meth:`planning_delta`); 0 turns it off.
    rule : {"allocate", "proportional"}, default="allocate"
        Optimal allocation of the objective, or rates proportional to Δ̂ (seed 004's Proportional).
    half_life : float or None, default=None
        Days of exponential forgetting of the estimator (``half_life`` of
        :func:`freshcrawl.estimators.make_batch_estimator`); None: every visit weighs the same forever.
    estimator_params : dict, optional
        Further keyword parameters of the estimator (e.g. ``{"n_bins": 4}`` for ``mle-binned``: fewer
        interval slots, less memory per page); checked by the estimator at :meth:`reset`.
    prior : {"gamma", "mean", "none"}, default=DEFAULT_PRIOR
        What the plan's rates borrow from other pages (:data:`PRIORS`; see :meth:`planning_delta`).
    plan_quantile : float or None, default=None
        With ``prior="gamma"``: plan on this posterior quantile of Δ, in (0, 1), instead of its mean.

    Attributes
    ----------
    estimator_ : BatchEstimator
        The estimator, built by :meth:`reset`.
    posterior_ : RatePosterior or None
        The posterior of every page's Δ (``prior="gamma"``), built by :meth:`reset`.
    rates_ : ndarray of float, shape (n_pages,)
        Rates of the last plan, visits per day.
    n_unconverged_ : int
        Plans whose allocation stopped at its iteration limit (their rates still spend the budget).
    completely_observed_ : ndarray of bool, shape (n_pages,)
        Pages the last plan allocated as completely observed (see :meth:`set_observed_completely`).

    Raises
    ------
    UnknownNameError
        If the estimator, the objective, the rule or the prior is unknown.
    ValueError
        If ``replan_every`` or ``default_rate`` is not > 0, ``explore`` is outside [0, 1),
        ``prior_visits`` is negative, ``plan_quantile`` is outside (0, 1) or given without
        ``prior="gamma"``, or ``half_life`` is not finite and > 0 days (or is given for an estimator
        that cannot forget).

    References
    ----------
    .. [1] Avrachenkov, Patil, Thoppe, "Online Algorithms for Estimating Change Rates of Web Pages",
       Sec. 5 (estimates fed to the optimal-rate problem of Azar et al.) (seed 001).
    """

    needs_truth = False

    def __init__(
        self,
        estimator: str = DEFAULT_ESTIMATOR,
        *,
        objective: str = "freshness-periodic",
        replan_every: float = 1.0,
        default_rate: float | None = None,
        explore: float = DEFAULT_EXPLORE,
        prior_visits: float = DEFAULT_PRIOR_VISITS,
        rule: str = "allocate",
        half_life: float | None = None,
        estimator_params: dict | None = None,
        prior: str = DEFAULT_PRIOR,
        plan_quantile: float | None = None,
    ) -> None:
        from freshcrawl.estimators import ESTIMATOR_NAMES, FORGETTING_NAMES

        if prior not in PRIORS:
            raise UnknownNameError(f"prior must be one of {', '.join(PRIORS)}; got {prior!r}")
        if plan_quantile is not None and not (0.0 < plan_quantile < 1.0 and prior == "gamma"):
            raise ValueError(
                f"plan_quantile must lie in (0, 1) and needs prior='gamma'; got {plan_quantile!r} "
                f"with prior={prior!r}"
            )
        self.prior = prior
        self.plan_quantile = None if plan_quantile is None else float(plan_quantile)

        if estimator not in ESTIMATOR_NAMES:
            raise UnknownNameError(
                f"unknown estimator {estimator!r}; known: {', '.join(ESTIMATOR_NAMES)}"
            )
        if rule not in ("allocate", "proportional"):
            raise UnknownNameError(f"rule must be 'allocate' or 'proportional'; got {rule!r}")
        self.estimator = estimator
        self.objective = objective
        self.replan_every = check_positive("replan_every", replan_every, unit="days")
        self.default_rate = (
            None
            if default_rate is None
            else check_positive("default_rate", default_rate, unit="visits per day")
        )
        self.explore = check_interval("explore", explore, low=0.0, high=1.0, closed="left")
        self.prior_visits = float(prior_visits)
        if not (np.isfinite(self.prior_visits) and self.prior_visits >= 0):
            raise ValueError(f"prior_visits must be finite and >= 0 visits; got {prior_visits!r}")
        self.rule = rule
        self.estimator_params = dict(estimator_params or {})
        self.half_life = check_half_life(half_life)
        if self.half_life is not None and estimator not in FORGETTING_NAMES:
            raise ValueError(
                f"half_life (days of exponential forgetting) needs an estimator in "
                f"{', '.join(FORGETTING_NAMES)}; got half_life={half_life!r} with {estimator!r}"
            )
        self.name = (
            f"learned:{estimator}"
            if rule == "allocate"
            else ("proportional" if estimator == DEFAULT_ESTIMATOR else f"proportional:{estimator}")
        )
        if self.half_life is not None:
            self.name += f"@{self.half_life:g}d"

    def reset(self, context: PolicyContext) -> None:
        """Build a fresh estimator for ``context.n_pages`` pages."""
        from freshcrawl.estimators import make_batch_estimator
        from freshcrawl.estimators.posterior import RatePosterior

        self.context_ = context
        self.estimator_ = make_batch_estimator(
            self.estimator, context.n_pages, half_life=self.half_life, **self.estimator_params
        )
        self.rates_ = np.zeros(context.n_pages)
        self.n_unconverged_ = 0
        self.completely_observed_ = np.zeros(context.n_pages, dtype=bool)
        self._complete: tuple[NDArray[np.bool_], NDArray[np.float64], NDArray[np.float64]] | None = None
        self.posterior_ = (
            RatePosterior(context.n_pages, half_life=self.half_life) if self.prior == "gamma" else None
        )
        self._stale = True

    def update_context(self, context: PolicyContext) -> None:
        """Take new weights, hosts, host caps or budget; the estimator's state stays."""
        old = self.context_.hosts
        self.context_ = check_same_pages(self.context_, context)
        if not (old is None and context.hosts is None) and (
            old is None or context.hosts is None or not np.array_equal(old, context.hosts)
        ):
            self._stale = True  # the host groups of the prior changed

    def set_observed_completely(
        self,
        complete: NDArray[np.bool_],
        delta: NDArray[np.float64],
        source_delta: NDArray[np.float64] | None = None,
    ) -> None:
        """Pages whose every change is announced, and their Δ from the announcements, for the next plans.

        The allocation then treats them as completely observed (Kolobov et al., NeurIPS 2019, the
        mixed problem; ``observed_completely`` of :func:`freshcrawl.allocation.allocate`): a page of
        ``complete`` with Δ > 0, visited before or not (its Δ is its announcements'), gets a rate
        p_i <= Δ_i, the expected visits per day of following a share p_i/Δ_i of its announced
        changes. When every page the plan allocates is complete, it spends at most Σ Δ_i. Only
        with ``rule="allocate"``.

        Parameters
        ----------
        complete : ndarray of bool, shape (n_pages,)
        delta : ndarray of float, shape (n_pages,)
            Changes per day of the complete pages (ignored elsewhere).
        source_delta : ndarray of float, shape (n_pages,), optional
            For the pages that announce others' changes (a sitemap, a feed), the Δ to plan them with
            (NaN elsewhere): a read at rate r leaves each page it lists stale from its change to the
            next read, the periodic freshness f(r; Δ_i) of that page, so a source weighing the pages
            it lists is planned with their mean Δ rather than its own (their sum), from its first
            plan on (it needs no observation of its own).

        Raises
        ------
        ValueError
            If the shapes are not (n_pages,).
        """
        n = self.context_.n_pages
        complete = np.asarray(complete, dtype=bool)
        delta = np.asarray(delta, dtype=np.float64)
        sd = np.full(n, np.nan) if source_delta is None else np.asarray(source_delta, dtype=np.float64)
        if complete.shape != (n,) or delta.shape != (n,) or sd.shape != (n,):
            raise ValueError(
                f"complete, delta and source_delta must have shape ({n},); got {complete.shape}, "
                f"{delta.shape} and {sd.shape}")
        self._complete = (complete, delta, sd)

    def plan(self, now: float, alive: NDArray[np.bool_]) -> RatePlan:
        """Allocate the budget on the current Δ̂; visits per day, shape (n_pages,).

        With ``context.hosts`` and ``context.host_caps`` the plan keeps every host within its cap: the
        default rates of unobserved pages are scaled down host by host, and the observed pages share
        what is left of the budget and of each cap in one allocation with host caps (Kolobov et al.,
        SIGIR 2019). Where the caps cannot take the whole budget, the plan spends what they allow.
        """
        ctx = self.context_
        observed = self.estimator_.n_visits_ > 0
        self.completely_observed_ = np.zeros(alive.shape[0], dtype=bool)
        if self._complete is not None:  # a source planned with the Δ of the pages it lists
            observed = observed | (np.isfinite(self._complete[2]) & (self._complete[2] > 0))
            if self.rule == "allocate":  # a completely observed page's Δ is its announcements'
                c_all, d_all = self._complete[0], self._complete[1]
                observed = observed | (c_all & np.isfinite(d_all) & (d_all > 0))
        rates, rest = _unobserved_rates(alive, observed, ctx.budget, self.default_rate)
        seen = np.flatnonzero(alive & observed)
        rates, rest, seen_hosts, caps_left = _host_limits(ctx, rates, seen, rest)
        if rest > 0 and seen.size:
            floor = _explore_floor(seen.size, self.explore * rest, seen_hosts, caps_left)
            delta = self.planning_delta()[seen]
            complete = None
            if self._complete is not None and self.rule == "allocate":
                c_all, d_all, sd_all = self._complete
                delta = np.where(np.isfinite(sd_all[seen]) & (sd_all[seen] >= 0), sd_all[seen], delta)
                complete = c_all[seen] & (d_all[seen] > 0) & np.isfinite(d_all[seen])
                if complete.any():
                    delta = np.where(complete, d_all[seen], delta)
                else:
                    complete = None
            if complete is not None:
                self.completely_observed_[seen[complete]] = True
                if complete.all():  # p_i <= Δ_i: the pages can take no more than Σ Δ_i
                    rest = min(rest, (1.0 - 1e-9) * float(delta.sum()))
                    floor = np.minimum(floor, self.explore * rest / seen.size)
            if self.rule == "allocate":
                res = _allocate_above_floor(
                    delta,
                    rest,
                    weights=ctx.weights[seen],
                    objective=self.objective,
                    floor=floor,
                    hosts=seen_hosts,
                    caps_left=caps_left,
                    observed_completely=complete,
                )
                self.n_unconverged_ += int(not res.success)
                rates[seen] = res.p
            else:
                total = delta.sum()
                share = delta / total if total > 0 else np.full(seen.size, 1.0 / seen.size)
                rates[seen] = floor + (rest - floor.sum()) * share
                if seen_hosts is not None:
                    rates[seen] = clip_to_caps(rates[seen], seen_hosts, caps_left)
        self.rates_ = rates
        return RatePlan(rates)

    def planning_delta(self) -> NDArray[np.float64]:
        """The rates the plan allocates on, changes per day, shape (n_pages,).

        ``prior="gamma"``: the posterior mean of Δ under the empirical-Bayes gamma prior fitted over
        the crawl and each host (:class:`freshcrawl.estimators.posterior.RatePosterior`), or its
        ``plan_quantile`` when set. ``prior="mean"``: Δ̂ shrunk towards the mean over observed pages,
        ``(k Δ̂ + k0 mean) / (k + k0)``, k the page's number of observations (the effective, decayed
        number with forgetting) and k0 = ``prior_visits``. ``prior="none"``: Δ̂. The first two do not
        trust an estimate from one or two visits (often exactly 0 after a single unchanged visit)
        alone; the last does.
        """
        if self.posterior_ is not None:
            post = self.posterior_
            if self._stale:  # refitted once per batch of news: the same state plans the same rates
                hosts = self.context_.hosts
                groups = None if hosts is None else np.asarray(hosts, dtype=np.intp)
                post.fit(groups, q=self.plan_quantile)
                self._stale = False
            if post.n_visits_.any():
                out = post.mean_ if self.plan_quantile is None else post.quantile_
                return np.asarray(out, dtype=np.float64).copy()
            return np.zeros(self.context_.n_pages)
        delta = np.asarray(self.estimator_.delta_, dtype=np.float64)
        k = np.asarray(
            getattr(self.estimator_, "n_eff_", self.estimator_.n_visits_), dtype=np.float64
        )
        if self.prior == "none" or self.prior_visits == 0:
            return delta.copy()
        observed = k > 0
        mean = float(delta[observed].mean()) if observed.any() else 0.0
        return (k * delta + self.prior_visits * mean) / (k + self.prior_visits)

    def rate_uncertainty(self) -> dict[str, NDArray[np.float64]] | None:
        """The last plan's view of each page's Δ: ``mean`` and ``sd`` of its posterior and the
        ``prior_mean`` and ``prior_var`` of its group (changes per day, shape (n_pages,)); None
        unless ``prior="gamma"`` (or before :meth:`reset`)."""
        post = getattr(self, "posterior_", None)
        if post is None:
            return None
        return {"mean": post.mean_.copy(), "sd": post.sd_.copy(),
                "prior_mean": post.prior_mean_.copy(), "prior_var": post.prior_var_.copy()}

    def observe(self, obs: Observations) -> None:
        """Feed the observations to the estimator, at most one per page per update call."""
        pages = np.asarray(obs.pages, dtype=np.intp)
        for sel in split_rounds(pages):
            self.estimator_.update(pages[sel], obs.changed[sel], obs.tau[sel], obs.p[sel])
        if self.posterior_ is not None:
            self.posterior_.update(pages, obs.changed, obs.tau)
            self._stale = True

    def estimated_delta(self) -> NDArray[np.float64]:
        """Current Δ̂, changes per day, shape (n_pages,); NaN for a page without observation yet."""
        delta = np.array(self.estimator_.delta_, dtype=np.float64)
        delta[np.asarray(self.estimator_.n_visits_) == 0] = np.nan
        return delta


class OraclePolicy:
    """The allocation fed the true change rates of the window (``context.true_delta``).

    Pages born inside the window get the default rate (as in :class:`LearnedPolicy`) until they have
    been observed once, so that the oracle also fetches pages whose first copy is missing.

    Parameters
    ----------
    objective : str, default="freshness-periodic"
        Objective of :func:`freshcrawl.allocation.allocate`.
    replan_every : float, default=1.0
        Days between plans (the allocation is recomputed only when the alive pages change).
    default_rate : float or None, default=None
        Visits per day of a newborn page before its first observation; None means ``B / n_alive``.

    Raises
    ------
    ValueError
        If the context carries no true rates.
    """

    name = "oracle"
    needs_truth = True

    def __init__(
        self,
        *,
        objective: str = "freshness-periodic",
        replan_every: float = 1.0,
        default_rate: float | None = None,
    ) -> None:
        self.objective = objective
        self.replan_every = check_positive("replan_every", replan_every, unit="days")
        self.default_rate = default_rate

    def reset(self, context: PolicyContext) -> None:
        """Take the true rates from the context."""
        if context.true_delta is None:
            raise ValueError("the oracle needs context.true_delta (changes per day); got None")
        self.context_ = context
        self._waiting: NDArray[np.bool_] | None = None
        self._key: tuple | None = None
        self.rates_ = np.zeros(context.n_pages)
        self.n_unconverged_ = 0

    def plan(self, now: float, alive: NDArray[np.bool_]) -> RatePlan:
        """Optimal rates for the true Δ over the alive pages, visits per day."""
        ctx = self.context_
        if self._waiting is None:  # pages born after the start have no copy yet
            self._waiting = ~alive if ctx.born is None else ctx.born > ctx.start
        synced = ~self._waiting
        key = (alive.tobytes(), (alive & self._waiting).tobytes())
        if key != self._key:
            rates, rest = _unobserved_rates(alive, synced, ctx.budget, self.default_rate)
            seen = np.flatnonzero(alive & synced)
            if rest > 0 and seen.size:
                from freshcrawl.allocation import allocate

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    res = allocate(
                        ctx.true_delta[seen],
                        rest,
                        weights=ctx.weights[seen],
                        objective=self.objective,
                    )
                self.n_unconverged_ += int(not res.success)
                rates[seen] = res.p
            self._key = key
            self.rates_ = rates
        return RatePlan(self.rates_.copy())

    def update_context(self, context: PolicyContext) -> None:
        """Take new weights or budget (and true rates); the next plan is recomputed."""
        self.context_ = check_same_pages(self.context_, context)
        self._key = None

    def observe(self, obs: Observations) -> None:
        """Only notes which newborn pages have been fetched."""
        if self._waiting is not None and len(obs):
            self._waiting[np.asarray(obs.pages, dtype=np.intp)] = False

    def estimated_delta(self) -> None:
        """The oracle does not estimate."""
        return


def _options(options: PolicyOptions | None) -> PolicyOptions:
    return options if options is not None else PolicyOptions()


def _split_half_life(arg: str | None, opts: PolicyOptions) -> tuple[str, float | None]:
    """``"<estimator>[@<H>d]"`` -> (estimator, half-life in days or None); ``@inf`` means None."""
    estimator = arg or DEFAULT_ESTIMATOR
    half_life = opts.extra.get("half_life", DEFAULT_HALF_LIFE)
    if "@" in estimator:
        estimator, _, text = estimator.partition("@")
        estimator = estimator or DEFAULT_ESTIMATOR
        number = text.removesuffix("d")
        try:
            half_life = float(number)
        except ValueError:
            raise UnknownNameError(
                f"expected <estimator>@<half-life>d, e.g. mle-binned@90d (days; @inf: no forgetting); "
                f"got {arg!r}"
            ) from None
        if half_life == float("inf"):
            half_life = None
    elif half_life is not None and estimator not in _forgetting_names():
        half_life = None  # a run-wide default only applies where it can
    return estimator, half_life


def _forgetting_names() -> tuple[str, ...]:
    from freshcrawl.estimators import FORGETTING_NAMES

    return FORGETTING_NAMES


def _learned_policy(arg: str | None, options: PolicyOptions | None, **kwargs: Any) -> LearnedPolicy:
    """A :class:`LearnedPolicy` of ``"<estimator>[@<H>d]"`` with the options every learned factory
    passes; ``kwargs`` add a factory's own."""
    opts = _options(options)
    estimator, half_life = _split_half_life(arg, opts)
    return LearnedPolicy(
        estimator,
        half_life=half_life,
        replan_every=opts.replan_every,
        default_rate=opts.default_rate,
        explore=opts.extra.get("explore", DEFAULT_EXPLORE),
        prior_visits=opts.extra.get("prior_visits", DEFAULT_PRIOR_VISITS),
        prior=opts.extra.get("prior", DEFAULT_PRIOR),
        **kwargs,
    )


def make_learned(arg: str | None, options: PolicyOptions | None) -> LearnedPolicy:
    """Factory of ``learned[:<estimator>]`` (default estimator :data:`DEFAULT_ESTIMATOR`).

    Examples
    --------
    >>> make_learned("mle-binned", None).name
    'learned:mle-binned'
    >>> make_learned("mle-binned@90d", None).half_life
    90.0
    """
    opts = _options(options)
    return _learned_policy(
        arg,
        opts,
        objective=opts.objective,
        estimator_params=opts.extra.get("estimator_params"),
        plan_quantile=opts.extra.get("plan_quantile"),
    )


def make_learned_proportional(arg: str | None, options: PolicyOptions | None) -> LearnedPolicy:
    """Factory of ``proportional[:<estimator>[@<H>d]]``: rates proportional to Δ̂."""
    return _learned_policy(arg, options, rule="proportional")


def make_oracle(arg: str | None, options: PolicyOptions | None) -> OraclePolicy:
    """Factory of ``oracle``: the allocation fed the true rates of the window."""
    if arg:
        raise UnknownNameError(f"policy 'oracle' takes no ':' argument; got oracle:{arg}")
    opts = _options(options)
    return OraclePolicy(
        objective=opts.objective, replan_every=opts.replan_every, default_rate=opts.default_rate
    )
