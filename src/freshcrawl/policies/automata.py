"""H-TRAA as a recrawl policy of the simulation engine (seed 004 on the policy interface).

The hierarchy learns the *shares* of the crawl budget directly from "changed / not changed" feedback;
the budget B sets the polls per unit time, so the paper's time step maps to ``1/B`` days on the runner's
clock (capacity 1 poll per step). Each plan asks the hierarchy's per-node EDF scheduler for the next
``B · replan_every`` polls and returns them as an explicit :class:`~freshcrawl.policies.base.VisitPlan`,
evenly spaced over the planning period. Polls that the scheduler routes to a padding leaf (n not a power
of two) or to a page that is not alive are fed back at once as zero-value materials (nothing there can
change) and replaced by the next poll, up to ``64 m + 4 n_leaves`` picks for m visits. ``observe``
feeds every visit's ``changed`` flag to the automata on that page's path, in time order.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numpy.typing import NDArray

from freshcrawl.learning.htraa import HTRAA, htraa_feedback, htraa_pick
from freshcrawl.learning.traa import parse_update_mode
from freshcrawl.policies.base import (
    Observations,
    PolicyContext,
    PolicyOptions,
    VisitPlan,
    check_same_pages,
)

__all__ = ["HTRAAPolicy", "make_htraa"]


@numba.njit(cache=True)
def _plan_picks(state, share, n_states, n_leaves, mode, deadline, alive, m, max_picks, seed):
    # pragma: no cover - compiled
    if seed >= 0:
        np.random.seed(seed)
    n_real = alive.shape[0]
    out = np.empty(m, dtype=np.int64)
    got = 0
    tries = 0
    while got < m and tries < max_picks:
        tries += 1
        leaf = htraa_pick(state, share, deadline, n_leaves)
        if leaf < n_real and alive[leaf]:
            out[got] = leaf
            got += 1
        else:  # padding or a page that does not exist (yet): a zero-value material
            htraa_feedback(state, share, n_states, n_leaves, leaf, False, mode)
    return out[:got]


class HTRAAPolicy:
    """Recrawl policy that learns the allocation with a hierarchy of TRAAs (seed 004, Sec. 3.2).

    Parameters
    ----------
    n_states : int, default=500
        Resolution N of every automaton, >= 2.
    mode : str, default="reward-penalty"
        Update mode of Sec. 4.3.2.
    lam : float, default=1.0
        Discretization exponent λ > 0.
    replan_every : float, default=1.0
        Days between plans, > 0.

    Attributes
    ----------
    htraa_ : HTRAA
        The hierarchy, built by :meth:`reset`.

    Raises
    ------
    ValueError
        If an argument is out of range; :class:`~freshcrawl.errors.UnknownNameError` for an unknown mode.

    References
    ----------
    .. [1] Granmo, Oommen, seed 004, Sec. 3.2 and 4.2 (as :class:`~freshcrawl.learning.HTRAA`).

    Examples
    --------
    >>> from freshcrawl.policies.base import PolicyContext
    >>> pol = HTRAAPolicy(n_states=50)
    >>> pol.reset(PolicyContext(n_pages=3, budget=4.0, start=0.0, weights=np.ones(3),
    ...                         rng=np.random.default_rng(0)))
    >>> plan = pol.plan(0.0, np.ones(3, dtype=bool))
    >>> len(plan.pages), plan.times.tolist()
    (4, [0.125, 0.375, 0.625, 0.875])
    """

    needs_truth = False

    def __init__(
        self, *, n_states: int = 500, mode: str = "reward-penalty", lam: float = 1.0, replan_every: float = 1.0
    ) -> None:
        from freshcrawl._validation import check_positive
        from freshcrawl.learning.traa import check_resolution

        self.n_states = check_resolution(n_states)
        parse_update_mode(mode)
        self.mode = mode
        self.lam = check_positive("lam", lam, unit="(discretization exponent)")
        self.replan_every = check_positive("replan_every", replan_every, unit="days")
        self.name = "htraa" if mode in ("reward-penalty", "rp") else f"htraa:{mode}"
        self.htraa_: HTRAA | None = None

    def reset(self, context: PolicyContext) -> None:
        """Build a fresh hierarchy over ``context.n_pages`` pages with capacity 1 poll per step."""
        self.budget = float(context.budget)
        if not (math.isfinite(self.budget) and self.budget > 0):
            raise ValueError(f"context.budget must be finite and > 0 visits per day; got {context.budget!r}")
        self.htraa_ = HTRAA(
            context.n_pages, n_states=self.n_states, mode=self.mode, lam=self.lam, rng=context.rng
        )
        self._carry = 0.0
        self.context_ = context

    def update_context(self, context: PolicyContext) -> None:
        """Take the new budget; the hierarchy learned stays."""
        self.context_ = check_same_pages(self.context_, context)
        self.budget = float(context.budget)

    def _need(self):
        if self.htraa_ is None:
            raise RuntimeError("HTRAAPolicy.reset(context) must be called before plan/observe")
        return self.htraa_

    def plan(self, now: float, alive: NDArray[np.bool_]) -> VisitPlan:
        """The next ``budget · replan_every`` polls of the hierarchy's EDF scheduler, evenly spaced."""
        h = self._need()
        alive = np.ascontiguousarray(alive, dtype=np.bool_)
        if alive.shape != (h.n_materials,):
            raise ValueError(f"alive must have shape ({h.n_materials},); got {alive.shape}")
        self._carry += self.budget * self.replan_every
        m = int(math.floor(self._carry + 1e-9))
        self._carry -= m
        if m == 0 or not alive.any():
            return VisitPlan(np.empty(0, dtype=np.intp), np.empty(0))
        pages = _plan_picks(
            h.state_, h.share, h.n_states, h.n_leaves, h.mode_code, h.deadline_,
            alive, m, 64 * m + 4 * h.n_leaves, h.take_seed(),
        )  # fmt: skip
        k = pages.size
        times = now + (np.arange(k) + 0.5) * (self.replan_every / max(k, 1))
        return VisitPlan(pages.astype(np.intp), times)

    def observe(self, obs: Observations) -> None:
        """Feed every visit's ``changed`` flag to the automata on the page's path, in time order."""
        h = self._need()
        if len(obs):
            h.update(np.asarray(obs.pages, dtype=np.int64), np.asarray(obs.changed, dtype=np.bool_))

    def estimated_delta(self) -> NDArray[np.float64] | None:
        """None: the automata learn the allocation, not the change rates."""
        return None

    def allocation(self) -> NDArray[np.float64]:
        """Current learned visit rates, visits per day (shape (n_pages,))."""
        return self._need().allocation() * self.budget


def make_htraa(arg: str | None, options: PolicyOptions) -> HTRAAPolicy:
    """Factory of the policy registry: ``htraa`` or ``htraa:<mode>`` (``ri``, ``ip``, ``rp`` or full names).

    ``options.extra`` may set ``n_states`` (resolution N, default 500) and ``lam`` (default 1.0).

    Raises
    ------
    UnknownNameError
        If the mode is unknown.

    Examples
    --------
    >>> make_htraa("ri", PolicyOptions()).name
    'htraa:ri'
    """
    extra = dict(options.extra or {})
    return HTRAAPolicy(
        n_states=extra.get("n_states", 500),
        mode=arg or "reward-penalty",
        lam=extra.get("lam", 1.0),
        replan_every=options.replan_every,
    )
