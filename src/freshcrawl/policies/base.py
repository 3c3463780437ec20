"""The interface between recrawl policies and whatever runs them.

A policy decides how often (or exactly when) to visit each page; a runner dispatches the visits, asks
the environment whether each visited page changed since its previous visit, and hands those observations
back. The simulation engine (simulated clock, replayed or synthetic pages) and a live crawler (real
clock, HTTP) drive policies through this one interface, so no policy is written twice.

Time is in days on the runner's clock; rates are in visits per day.

Life cycle::

    policy.reset(context)                    # once, before the first plan
    loop:
        policy.update_context(context)       # only when weights, hosts, caps or budget changed
        plan = policy.plan(now, alive)       # RatePlan or VisitPlan for [now, now + replan_every)
        ... runner dispatches visits ...
        policy.observe(observations)         # every visit made since the last call, in time order

The live world adds and removes pages while it runs and learns politeness limits as it goes (a
Crawl-delay in a robots.txt fetched later). A live runner reserves page indices ahead: ``n_pages`` is
the capacity of the index space, a page that does not exist yet (or any more) is simply not
``alive``, and a new page takes the next free index. Changed weights, hosts, host caps or budget
reach the policy through ``update_context``, which keeps what was learned. Observations may come from
several sources (the runner's own fetcher, other crawlers reporting to a frontier service): the runner
merges them into one time-ordered stream before ``observe``. A runner that outgrows the capacity
builds a larger context, calls ``reset`` and replays its observation log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "AUDIT_SHARE",
    "Observations",
    "Plan",
    "Policy",
    "PolicyContext",
    "PolicyOptions",
    "RatePlan",
    "VisitPlan",
    "check_same_pages",
]

#: Share of a completely observed page's rate spent on periodic audits of the source announcing its
#: changes (the rest follows announced changes); the live frontier and the replay use the same share.
AUDIT_SHARE = 0.1


@dataclass(frozen=True, slots=True)
class PolicyContext:
    """What a policy is told once, before its first plan.

    Attributes
    ----------
    n_pages : int
        Number of pages; pages are the integers ``0 .. n_pages-1``.
    budget : float
        Global crawl budget B, visits per day.
    start : float
        Time of the first plan, days on the runner's clock.
    weights : ndarray of float, shape (n_pages,)
        Importance weights w_i >= 0.
    rng : numpy.random.Generator
        The only source of randomness a policy may use.
    hosts : ndarray of int, shape (n_pages,), optional
        Host index of each page (``-1`` for none), for politeness caps.
    host_caps : ndarray of float, shape (n_hosts,), optional
        Politeness cap c_h of each host in visits per day (``inf`` for uncapped).
    true_delta : ndarray of float, shape (n_pages,), optional
        True change rates (changes per day) of the evaluation window. Given only to policies whose
        ``needs_truth`` attribute is True (the oracle); ``None`` otherwise.
    born : ndarray of float, shape (n_pages,), optional
        Birth time of each page, days (``<= start`` for pages alive, and synchronised, at the start;
        a page born later has no copy until its first visit). ``None`` when the runner does not know.
    """

    n_pages: int
    budget: float
    start: float
    weights: NDArray[np.float64]
    rng: np.random.Generator
    hosts: NDArray[np.intp] | None = None
    host_caps: NDArray[np.float64] | None = None
    true_delta: NDArray[np.float64] | None = None
    born: NDArray[np.float64] | None = None


@dataclass(frozen=True, slots=True)
class Observations:
    """Visits made since the previous ``observe`` call, sorted by time.

    A page's first visit (nothing to compare with) is not an observation. Pages alive when the run
    starts count as synchronised at ``context.start``.

    Attributes
    ----------
    pages : ndarray of intp, shape (m,)
        Page of each visit.
    time : ndarray of float, shape (m,)
        Visit time, days; non-decreasing.
    changed : ndarray of bool, shape (m,)
        I_k: whether the page changed since its previous visit.
    tau : ndarray of float, shape (m,)
        τ_k: days since the previous visit of the same page; > 0.
    p : ndarray of float, shape (m,)
        Visit rate of that page in force before this visit, visits per day (``1/tau`` for explicit
        visit plans).
    """

    pages: NDArray[np.intp]
    time: NDArray[np.float64]
    changed: NDArray[np.bool_]
    tau: NDArray[np.float64]
    p: NDArray[np.float64]

    def __len__(self) -> int:
        return int(self.pages.shape[0])


@dataclass(frozen=True, slots=True)
class RatePlan:
    """Visit rates for the next planning period: ``rates`` has shape (n_pages,), visits per day.

    The runner dispatches them as periodic visits (random phase per page, continuing the page's
    previous visit when its rate changes) or as Poisson visits. Their sum over alive pages must not
    exceed the budget; a runner scales down a plan that does.
    """

    rates: NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class VisitPlan:
    """Explicit visits for the next planning period, sorted by time.

    ``pages`` (intp) and ``times`` (float, days) have shape (m,), with every time in
    ``[now, now + replan_every)`` and m at most ``budget * replan_every`` rounded up.
    """

    pages: NDArray[np.intp]
    times: NDArray[np.float64]


Plan = RatePlan | VisitPlan


@runtime_checkable
class Policy(Protocol):
    """A recrawl policy.

    Attributes
    ----------
    name : str
        Name used in reports, e.g. ``"learned:sa-interval"``.
    replan_every : float
        Days between two ``plan`` calls.
    needs_truth : bool
        True only for the oracle, which is given the true rates in the context.
    """

    name: str
    replan_every: float
    needs_truth: bool

    def reset(self, context: PolicyContext) -> None:
        """Forget everything learned and prepare for a run described by ``context``."""

    def plan(self, now: float, alive: NDArray[np.bool_]) -> Plan:
        """Return the visits for ``[now, now + replan_every)``; ``alive`` (n_pages,) marks pages that exist."""

    def observe(self, obs: Observations) -> None:
        """Learn from the visits made since the last call."""

    def update_context(self, context: PolicyContext) -> None:
        """Take new weights, hosts, host caps or budget, keeping what was learned.

        ``context.n_pages`` must equal the one given to ``reset`` (ValueError otherwise).
        """

    def estimated_delta(self) -> NDArray[np.float64] | None:
        """Current Δ̂ per page (changes per day), or None for a policy that does not estimate it."""


def check_same_pages(old: PolicyContext, new: PolicyContext) -> PolicyContext:
    """Return ``new`` after checking that it describes as many pages as ``old`` (``update_context``).

    Raises
    ------
    ValueError
        If ``new.n_pages`` differs from ``old.n_pages``, or the budget is not finite and > 0.
    """
    if new.n_pages != old.n_pages:
        raise ValueError(
            f"update_context keeps the pages of reset: n_pages must stay {old.n_pages}; got {new.n_pages} "
            "(a runner that outgrows its capacity calls reset and replays its log)"
        )
    if not (np.isfinite(new.budget) and new.budget > 0):
        raise ValueError(f"context.budget must be finite and > 0 visits per day; got {new.budget!r}")
    return new


@dataclass(frozen=True, slots=True)
class PolicyOptions:
    """Options the command line passes to every policy factory.

    Attributes
    ----------
    objective : str
        Allocation objective name (see ``freshcrawl.allocation``).
    replan_every : float
        Days between re-plans (P).
    default_rate : float | None
        Visits per day for a page with no observation yet; None lets the policy use budget / n_alive.
    extra : dict
        Policy-specific settings.
    """

    objective: str = "freshness-periodic"
    replan_every: float = 1.0
    default_rate: float | None = None
    extra: dict = field(default_factory=dict)
