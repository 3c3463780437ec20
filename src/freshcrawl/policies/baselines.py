"""Baseline recrawl policies: uniform, proportional, and the adaptive schedules of crawlers in use.

The crawler schedules (Apache Nutch, StormCrawler, Heritrix) each keep a revisit interval per page and
stretch or shrink it after every visit, depending on whether the page changed. They were written for a
crawler that visits each page once per interval; here each page's interval is turned into a relative
rate ``1/I_i`` and the rates of the alive pages are scaled to sum to the budget B, so that every
policy spends the same budget.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from freshcrawl._validation import check_positive
from freshcrawl.errors import UnknownNameError
from freshcrawl.policies.base import Observations, PolicyContext, PolicyOptions, RatePlan, check_same_pages

__all__ = [
    "HERITRIX",
    "NUTCH",
    "STORMCRAWLER",
    "AdaptiveIntervalPolicy",
    "UniformPolicy",
    "make_heritrix",
    "make_nutch",
    "make_proportional",
    "make_stormcrawler",
    "make_uniform",
]

_HOUR = 1.0 / 24.0
_MINUTE = _HOUR / 60.0

#: Apache Nutch AdaptiveFetchSchedule, shipped defaults (nutch-default.xml):
#: db.fetch.interval.default = 2592000 s (30 d), db.fetch.schedule.adaptive.dec_rate = 0.2,
#: inc_rate = 0.4, min_interval = 60 s, max_interval = 31536000 s (365 d).
NUTCH = dict(
    initial=30.0,
    changed_mul=1.0 - 0.2,
    changed_min=0.0,
    unchanged_mul=1.0 + 0.4,
    i_min=_MINUTE,
    i_max=365.0,
)
#: StormCrawler AdaptiveScheduler, shipped defaults: interval 1 d, changed -> (1 - 0.5) I + 0.5 I_min,
#: unchanged -> min(1.5 I, I_max), I in [1 h, 14 d].
STORMCRAWLER = dict(
    initial=1.0, changed_mul=0.5, changed_min=0.5, unchanged_mul=1.5, i_min=_HOUR, i_max=14.0
)
#: Heritrix WaitEvaluator, shipped defaults: initial wait 1 d, changed -> wait / 1.5,
#: unchanged -> wait * 1.5, wait in [1 h, 4 weeks].
HERITRIX = dict(
    initial=1.0, changed_mul=1.0 / 1.5, changed_min=0.0, unchanged_mul=1.5, i_min=_HOUR, i_max=28.0
)


def _scale_to_budget(
    weights: NDArray[np.float64], alive: NDArray[np.bool_], budget: float
) -> NDArray[np.float64]:
    """Rates proportional to ``weights`` on alive pages, summing to ``budget`` (uniform if all zero)."""
    rates = np.where(alive, weights, 0.0)
    total = rates.sum()
    if total > 0:
        return rates * (budget / total)
    n_alive = int(alive.sum())
    return np.where(alive, budget / n_alive, 0.0) if n_alive else rates


class UniformPolicy:
    """The budget split evenly over the alive pages: ``p_i = B / n_alive``.

    Parameters
    ----------
    replan_every : float, default=1.0
        Days between plans.

    Examples
    --------
    >>> import numpy as np
    >>> pol = UniformPolicy()
    >>> pol.reset(PolicyContext(n_pages=3, budget=6.0, start=0.0, weights=np.ones(3),
    ...                         rng=np.random.default_rng(0)))
    >>> pol.plan(0.0, np.array([True, True, False])).rates.tolist()
    [3.0, 3.0, 0.0]
    """

    name = "uniform"
    needs_truth = False

    def __init__(self, replan_every: float = 1.0) -> None:
        self.replan_every = check_positive("replan_every", replan_every, unit="days")

    def reset(self, context: PolicyContext) -> None:
        """Remember the budget."""
        self.context_ = context
        self.budget_ = context.budget

    def update_context(self, context: PolicyContext) -> None:
        """Take the new budget."""
        self.context_ = check_same_pages(self.context_, context)
        self.budget_ = context.budget

    def plan(self, now: float, alive: NDArray[np.bool_]) -> RatePlan:
        """Equal rates on alive pages, visits per day."""
        return RatePlan(_scale_to_budget(np.ones(alive.shape[0]), alive, self.budget_))

    def observe(self, obs: Observations) -> None:
        """Uniform learns nothing."""

    def estimated_delta(self) -> None:
        """Uniform does not estimate Δ."""
        return


def _update_intervals(
    interval, pages, changed, changed_mul, changed_min, unchanged_mul, i_min, i_max
):
    """Update ``interval`` (n_pages,) in place for visits of ``pages`` in time order (a page may repeat:
    its visits are applied in their order, one round of distinct pages at a time)."""
    from freshcrawl.policies.learned import split_rounds

    for sel in split_rounds(pages):
        i = pages[sel]
        v = interval[i]
        v = np.where(changed[sel], changed_mul * v + changed_min * i_min, unchanged_mul * v)
        interval[i] = np.minimum(np.maximum(v, i_min), i_max)


class AdaptiveIntervalPolicy:
    """A crawler's adaptive revisit interval, as relative rates scaled to the budget.

    After each observation of page i: changed -> ``I_i = changed_mul * I_i + changed_min * i_min``;
    unchanged -> ``I_i = unchanged_mul * I_i``; then ``I_i`` is clamped to ``[i_min, i_max]``. The plan
    gives alive pages rates proportional to ``1/I_i`` summing to the budget B.

    Parameters
    ----------
    name : str
        Report name.
    initial : float
        Interval of a page never visited, days (> 0).
    changed_mul, changed_min, unchanged_mul : float
        Update coefficients (see above), all >= 0.
    i_min, i_max : float
        Interval bounds, days, ``0 < i_min <= i_max``.
    replan_every : float, default=1.0
        Days between plans.

    Raises
    ------
    ValueError
        If a coefficient is negative or the bounds are not ``0 < i_min <= i_max``.

    Examples
    --------
    >>> import numpy as np
    >>> pol = make_heritrix(None, None)
    >>> pol.reset(PolicyContext(n_pages=2, budget=3.0, start=0.0, weights=np.ones(2),
    ...                         rng=np.random.default_rng(0)))
    >>> pol.observe(Observations(pages=np.array([0]), time=np.array([1.0]), changed=np.array([True]),
    ...                          tau=np.array([1.0]), p=np.array([1.5])))
    >>> pol.plan(1.0, np.array([True, True])).rates.round(3).tolist()
    [1.8, 1.2]
    """

    needs_truth = False

    def __init__(
        self,
        name: str,
        *,
        initial: float,
        changed_mul: float,
        changed_min: float,
        unchanged_mul: float,
        i_min: float,
        i_max: float,
        replan_every: float = 1.0,
    ) -> None:
        self.name = name
        self.initial = check_positive("initial", initial, unit="days")
        self.changed_mul = check_positive("changed_mul", changed_mul)
        self.changed_min = float(changed_min)
        if not (np.isfinite(self.changed_min) and self.changed_min >= 0):
            raise ValueError(f"changed_min must be finite and >= 0; got {changed_min!r}")
        self.unchanged_mul = check_positive("unchanged_mul", unchanged_mul)
        self.i_min = check_positive("i_min", i_min, unit="days")
        self.i_max = check_positive("i_max", i_max, unit="days")
        if self.i_max < self.i_min:
            raise ValueError(f"i_max must be >= i_min ({self.i_min} days); got {i_max!r}")
        self.replan_every = check_positive("replan_every", replan_every, unit="days")

    def reset(self, context: PolicyContext) -> None:
        """Start every page at the initial interval."""
        self.context_ = context
        self.budget_ = context.budget
        self.interval_ = np.full(context.n_pages, min(max(self.initial, self.i_min), self.i_max))

    def update_context(self, context: PolicyContext) -> None:
        """Take the new budget; the intervals learned stay."""
        self.context_ = check_same_pages(self.context_, context)
        self.budget_ = context.budget

    def plan(self, now: float, alive: NDArray[np.bool_]) -> RatePlan:
        """Rates proportional to ``1/I_i`` on alive pages, summing to the budget (visits per day)."""
        return RatePlan(_scale_to_budget(1.0 / self.interval_, alive, self.budget_))

    def observe(self, obs: Observations) -> None:
        """Stretch or shrink the interval of each visited page, visit by visit in time order."""
        if len(obs):
            _update_intervals(
                self.interval_,
                np.asarray(obs.pages, dtype=np.intp),
                np.asarray(obs.changed, dtype=np.bool_),
                self.changed_mul,
                self.changed_min,
                self.unchanged_mul,
                self.i_min,
                self.i_max,
            )

    def estimated_delta(self) -> None:
        """These schedules keep intervals, not change-rate estimates."""
        return


def _no_arg(name: str, arg: str | None) -> None:
    if arg:
        raise UnknownNameError(f"policy {name!r} takes no ':' argument; got {name}:{arg}")


def _period(options: PolicyOptions | None) -> float:
    return (options or PolicyOptions()).replan_every


def make_uniform(arg: str | None, options: PolicyOptions | None) -> UniformPolicy:
    """Factory of ``uniform``: the budget split evenly over alive pages."""
    _no_arg("uniform", arg)
    return UniformPolicy(replan_every=_period(options))


def make_proportional(arg: str | None, options: PolicyOptions | None):
    """Factory of ``proportional[:<estimator>]``: rates proportional to the estimated Δ.

    This is the Proportional policy of seed 004 (Granmo & Oommen, Sec. 4) run on estimated rates (their
    Estimator policy); see :class:`freshcrawl.policies.learned.LearnedPolicy`.
    """
    from freshcrawl.policies.learned import make_learned_proportional

    return make_learned_proportional(arg, options)


def make_nutch(arg: str | None, options: PolicyOptions | None) -> AdaptiveIntervalPolicy:
    """Factory of ``nutch``: Apache Nutch AdaptiveFetchSchedule with its shipped defaults.

    Nutch's optional ``sync_delta`` correction needs the page's last-modified time, which a visit that
    only says changed / not changed does not give; it is left out.
    """
    _no_arg("nutch", arg)
    return AdaptiveIntervalPolicy("nutch", replan_every=_period(options), **NUTCH)


def make_stormcrawler(arg: str | None, options: PolicyOptions | None) -> AdaptiveIntervalPolicy:
    """Factory of ``stormcrawler``: StormCrawler AdaptiveScheduler with its shipped defaults."""
    _no_arg("stormcrawler", arg)
    return AdaptiveIntervalPolicy("stormcrawler", replan_every=_period(options), **STORMCRAWLER)


def make_heritrix(arg: str | None, options: PolicyOptions | None) -> AdaptiveIntervalPolicy:
    """Factory of ``heritrix``: Heritrix WaitEvaluator with its shipped defaults."""
    _no_arg("heritrix", arg)
    return AdaptiveIntervalPolicy("heritrix", replan_every=_period(options), **HERITRIX)
