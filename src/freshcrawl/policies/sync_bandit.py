"""AsyncMirrorSync as a recrawl policy: learn visit rates from "changed since the last visit" alone.

Each page is an arm of a synchronization bandit (seed 003) with the binary cost of App. C: a visit sees
cost 1 if the page changed since the copy was last refreshed, else 0. The policy never estimates change
rates; it estimates ∂J/∂r_k from probe visits (Lemma 2) and moves the visit rates by log-barrier mirror
descent (Alg. 2), spending B/(1+ε) on periodic sync visits and, in expectation, ε B/(1+ε) on probes.

How probe plays become real visits
----------------------------------
A probe play of the paper looks at the page without refreshing the copy. A crawler cannot visit without
refreshing, but for the binary cost it does not need to: a probe at time t inside the interval
``[s, s + 1/r]`` sees ``ĉ^(ε) = 1[change in (s, t]]``, and the sync visit at ``s + 1/r`` sees
``1[change in (t, s + 1/r]]``; the cost a sync play at ``s + 1/r`` would have seen without the probe is the
OR of the two, ``ĉ = max(ĉ^(ε), changed)``. The change process does not depend on visits, so the pair has
exactly Lemma 2's distribution and ``(ĉ^(ε) - ĉ) / (ε r)`` stays unbiased. A probe visit is a full visit:
it costs one unit of budget (the ε share of Alg. 1/2) and also refreshes the copy, which only helps.

Schedules: every interval of length ``1/r_k`` gets a probe with probability ε at a uniform time, and
intervals run across update times, so a page synced less often than once per update still learns. When a
page's rate is updated, its running interval is replaced as in Alg. 2 lines 36-38 (a sync now with
probability ε, else at ``max(last sync + 1/r_new, now)``, closing no sample): letting it run at the old
rate instead keeps more samples, but then the visit count follows the harmonic mean of the noisy rates
and 2-4% of the budget went unused on the shipped histories. Pages alive at the start count as synced
then; their first interval gets a random phase and is not a sample, like the first visit of a page born
later.

References
----------
.. [1] Kolobov, Bubeck, Zimmert, "Online Learning for Active Cache Synchronization", ICML 2020 (seed 003),
   Lemma 2, Alg. 2, App. C.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numpy.typing import NDArray

from freshcrawl._validation import check_interval, check_positive
from freshcrawl.errors import InfeasibleAllocation
from freshcrawl.learning.mirror_sync import log_barrier_projection
from freshcrawl.policies.base import (
    Observations,
    PolicyContext,
    PolicyOptions,
    VisitPlan,
    check_same_pages,
)

__all__ = ["AsyncMirrorSyncPolicy", "make_asyncmirrorsync"]

_KIND_PROBE = 0
_KIND_SYNC = 1


@njit(cache=True)
def _learn(
    obs_pages,
    obs_time,
    obs_tau,
    obs_changed,
    rec_idx,
    rec_kind,
    rec_sample,
    rec_has_probe,
    rec_prev,
    rec_rate,
    epsilon,
    probe_ok,
    probe_cost,
    g_sum,
    n_samples,
):  # pragma: no cover
    """Turn observations (time order) into Lemma 2 samples, per page; returns the number of samples."""
    made = 0
    for j in range(obs_pages.shape[0]):
        k = obs_pages[j]
        i = rec_idx[j]
        prev = obs_time[j] - obs_tau[j]
        if i < 0:  # a visit this policy did not plan: it breaks the running interval
            probe_ok[k] = False
            continue
        tol = 1e-9 * max(1.0, abs(obs_time[j]))
        on_time = abs(prev - rec_prev[i]) <= tol
        c = 1.0 if obs_changed[j] else 0.0
        if rec_kind[i] == _KIND_PROBE:
            probe_ok[k] = on_time
            probe_cost[k] = c
            continue
        if rec_sample[i]:
            if rec_has_probe[i]:
                if probe_ok[k] and on_time:
                    c_probe = probe_cost[k]
                    c_sync = max(c_probe, c)  # cost a sync play would have seen without the probe
                    g_sum[k] += (c_probe - c_sync) / (epsilon * rec_rate[i])
                    n_samples[k] += 1
                    made += 1
            elif on_time:
                n_samples[k] += 1  # Lemma 2: an interval without a probe is a 0 sample
                made += 1
        probe_ok[k] = False
    return made


def _keys(
    pages: NDArray[np.intp], times: NDArray[np.float64], t0: float, span: float
) -> NDArray[np.float64]:
    """One sortable float per (page, time) of a planning period."""
    return pages.astype(np.float64) + (times - t0) / (span * (1.0 + 1e-9))


class AsyncMirrorSyncPolicy:
    """AsyncMirrorSync (Alg. 2 of seed 003) with the binary staleness cost, as a recrawl policy.

    Parameters
    ----------
    eta : float, optional
        Learning rate η > 0 of the mirror step. Default: App. C's η = 1.3 (tuned with about
        40 · 8 / 1.05 ≈ 305 interval samples per update) scaled by the samples per update here,
        ``B P / (1 + ε)``: Alg. 2 divides the gradient by |A_i| and averages each page's samples, so
        this keeps the step one sample causes as in App. C.
    epsilon : float, default=0.05
        Probe probability ε per interval, in (0, 1).
    r_min, r_max : float, optional
        Bounds on each page's sync rate, visits per day. Defaults: 1/16 and 16 times the uniform sync
        rate ``B / ((1 + ε) n_alive)`` (seed 003's Tables 1-2 span 1/16 to 7.5-15 times it), recomputed
        when the number of alive pages changes. Explicit bounds need
        ``(1 + ε) n_alive r_min <= B <= n_alive r_max``.
    replan_every : float, default=1.0
        Days between plans; each plan is an update time of Alg. 2.

    Attributes
    ----------
    rates_ : ndarray of float, shape (n_pages,)
        Current sync rates, visits per day (0 for pages not alive).
    n_samples_total_ : int
        Lemma 2 samples used so far.
    n_updates_ : int
        Mirror-descent updates made.

    Raises
    ------
    ValueError
        If ``eta``, ``replan_every``, ``r_min`` or ``r_max`` is not finite and > 0, ε is outside (0, 1),
        or ``r_min >= r_max``.
    InfeasibleAllocation
        From ``plan``, if explicit bounds cannot hold B / (1 + ε) over the alive pages.

    Notes
    -----
    Host politeness caps are not enforced by this policy (the engine's budget still is). Plans are
    :class:`~freshcrawl.policies.base.VisitPlan` objects. Randomly phased periodic visits and random probes
    make the count per period fluctuate around ``B P``; a hard cap of ``ceil(B P)`` per period would
    waste about a tenth of the budget at 20 visits per period. The plan therefore keeps the cumulative
    count within the budget, ``visits planned up to t <= B (t - start)``, and lets one period use at most
    one period's worth of budget left unused before (so at most ``2 ceil(B P)``). Over that, the latest
    probes (then syncs) are dropped; a dropped visit only costs the sample of its interval. Visits the
    runner drops or makes later than planned (the engine's budget rule defers a visit that finds no
    token) also lose their interval's sample; an interval with a probe has two visits to lose, so heavy
    losses bias the gradient towards 0.

    Examples
    --------
    >>> import numpy as np
    >>> pol = AsyncMirrorSyncPolicy(eta=1.0)
    >>> pol.reset(PolicyContext(n_pages=3, budget=6.0, start=0.0, weights=np.ones(3),
    ...                         rng=np.random.default_rng(0)))
    >>> plan = pol.plan(0.0, np.ones(3, dtype=bool))
    >>> round(float(pol.rates_.sum()), 9)        # B / (1 + ε) on sync visits
    5.714285714
    >>> bool(np.all(np.diff(plan.times) >= 0)), len(plan.pages) <= 6
    (True, True)
    """

    name = "asyncmirrorsync"
    needs_truth = False

    def __init__(
        self,
        *,
        eta: float | None = None,
        epsilon: float = 0.05,
        r_min: float | None = None,
        r_max: float | None = None,
        replan_every: float = 1.0,
    ) -> None:
        self.eta = None if eta is None else check_positive("eta", eta)
        self.epsilon = check_interval("epsilon", epsilon, low=0.0, high=1.0, closed="neither")
        self.r_min = (
            None if r_min is None else check_positive("r_min", r_min, unit="visits per day")
        )
        self.r_max = (
            None if r_max is None else check_positive("r_max", r_max, unit="visits per day")
        )
        if self.r_min is not None and self.r_max is not None and self.r_min >= self.r_max:
            raise ValueError(
                f"r_min must be < r_max = {self.r_max!r} visits per day; got r_min={self.r_min!r}"
            )
        self.replan_every = check_positive("replan_every", replan_every, unit="days")

    # -- life cycle ---------------------------------------------------------------------------------
    def update_context(self, context: PolicyContext) -> None:
        """Take the new budget and weights; the rates and gradients learned stay."""
        check_same_pages(self.context_, context)
        self.context_ = context
        self.budget_ = float(context.budget)
        w = np.asarray(context.weights, dtype=np.float64)
        self.weights_ = w.copy() if w.shape == (self.n_pages_,) else np.ones(self.n_pages_)

    def reset(self, context: PolicyContext) -> None:
        """Forget everything; pages alive at ``context.start`` count as synced then."""
        n = context.n_pages
        self.context_ = context
        self.n_pages_ = n
        self.budget_ = float(context.budget)
        self.start_ = float(context.start)
        w = np.asarray(context.weights, dtype=np.float64)
        self.weights_ = w.copy() if w.shape == (n,) else np.ones(n)
        self.rng_ = context.rng
        # App. C: eta = 1.3 with about 40 * 8 / 1.05 = 305 Lemma 2 samples per update; keep the step a
        # single sample causes (eta / |A_i| / samples per page) the same at this budget and period.
        samples_per_update = self.budget_ * self.replan_every / (1.0 + self.epsilon)
        self.eta_ = (
            self.eta if self.eta is not None else 1.3 * samples_per_update / (40.0 * 8.0 / 1.05)
        )
        self.rates_ = np.zeros(n)
        self.alive_ = np.zeros(n, dtype=bool)
        # running interval of each page
        self.next_sync_ = np.full(n, np.inf)
        self.int_start_ = np.full(n, np.nan)
        self.int_rate_ = np.zeros(n)
        self.int_sample_ = np.zeros(n, dtype=bool)
        self.int_probe_ = np.full(n, np.nan)  # probe time (NaN: none)
        self.probe_pending_ = np.zeros(n, dtype=bool)
        # learning state
        self.g_sum_ = np.zeros(n)
        self.n_samples_ = np.zeros(n, dtype=np.int64)
        self.probe_ok_ = np.zeros(n, dtype=bool)
        self.probe_cost_ = np.zeros(n)
        self.n_samples_total_ = 0
        self.n_updates_ = 0
        self.n_planned_ = 0
        self._records = None
        self._bounds = (0.0, 0.0)

    def estimated_delta(self) -> None:
        """AsyncMirrorSync learns rates directly; it has no Δ̂."""

    # -- helpers ------------------------------------------------------------------------------------
    def _bounds_for(self, n_alive: int) -> tuple[float, float]:
        sync_budget = self.budget_ / (1.0 + self.epsilon)
        uniform = sync_budget / n_alive
        lo = self.r_min if self.r_min is not None else uniform / 16.0
        hi = (self.r_max if self.r_max is not None else uniform * 16.0) / (1.0 + self.epsilon)
        hi = min(hi, sync_budget) if n_alive > 1 else max(hi, sync_budget)
        if not (n_alive * lo * (1 - 1e-12) <= sync_budget <= n_alive * hi * (1 + 1e-12)):
            raise InfeasibleAllocation(
                f"the sync budget B/(1+epsilon) = {sync_budget!r} visits per day must lie in "
                f"[n_alive r_min, n_alive r_max/(1+epsilon)] = [{n_alive * lo!r}, {n_alive * hi!r}] for "
                f"{n_alive} alive pages; got r_min={lo!r}, r_max={self.r_max!r}"
            )
        return lo, hi

    def _project(
        self, idx: NDArray[np.intp], g: NDArray[np.float64], total: float
    ) -> NDArray[np.float64]:
        lo, hi = self._bounds
        r = np.clip(self.rates_[idx], lo, hi)
        d = 1.0 / r + self.eta_ * g
        return log_barrier_projection(d, float(total), lo, hi)

    def _sync_alive(self, now: float, alive: NDArray[np.bool_]) -> None:
        born = alive & ~self.alive_
        died = self.alive_ & ~alive
        if not born.any() and not died.any():
            return
        n_alive = int(alive.sum())
        self.alive_ = alive.copy()
        self.rates_[~alive] = 0.0
        self.next_sync_[~alive] = np.inf
        self.probe_pending_[~alive] = False
        if n_alive == 0:
            return
        self._bounds = self._bounds_for(n_alive)
        known = alive & ~born
        self.rates_[born] = (
            self.rates_[known].mean()
            if known.any()
            else self.budget_ / (1 + self.epsilon) / n_alive
        )
        idx = np.flatnonzero(alive)
        # Bregman projection (a step with g = 0) of the rates onto the new constraint set
        self.rates_[idx] = self._project(
            idx, np.zeros(idx.size), self.budget_ / (1.0 + self.epsilon)
        )
        # new pages: a first visit at a random phase, not a sample
        b = np.flatnonzero(born)
        self.next_sync_[b] = now + self.rng_.random(b.size) / self.rates_[b]
        self.int_start_[b] = now
        self.int_rate_[b] = self.rates_[b]
        self.int_sample_[b] = False
        self.int_probe_[b] = np.nan
        self.probe_pending_[b] = False

    def _update(self) -> None:
        upd = self.alive_ & (self.n_samples_ > 0)
        idx = np.flatnonzero(upd)
        if idx.size:
            w = self.weights_[self.alive_]
            w_mean = w.mean() if w.size and w.mean() > 0 else 1.0
            g_bar = self.weights_[idx] / w_mean * self.g_sum_[idx] / self.n_samples_[idx] / idx.size
            total = float(self.rates_[idx].sum())
            self.rates_[idx] = self._project(idx, g_bar, total)
            self.n_updates_ += 1
            # Alg. 2 lines 36-38: the running interval of an updated page is replaced by a sync now
            # (probability ε) or at max(last sync + 1/r_new, now); that sync closes no Lemma 2 sample.
            now_sync = self.rng_.random(idx.size) < self.epsilon
            self.next_sync_[idx] = np.where(
                now_sync,
                self._now,
                np.maximum(self.int_start_[idx] + 1.0 / self.rates_[idx], self._now),
            )
            self.int_sample_[idx] = False
            self.int_probe_[idx] = np.nan
            self.probe_pending_[idx] = False
        self.g_sum_[:] = 0.0
        self.n_samples_[:] = 0

    # -- Policy protocol ----------------------------------------------------------------------------
    def plan(self, now: float, alive: NDArray[np.bool_]) -> VisitPlan:
        """Update the rates of pages with new samples, then lay out sync and probe visits for the period."""
        alive = np.asarray(alive, dtype=bool)
        self._now = float(now)
        self._update()
        self._sync_alive(now, alive)
        t1 = now + self.replan_every
        eps = self.epsilon
        rng = self.rng_
        pages_l, times_l, kind_l, sample_l, hasprobe_l, prev_l, rate_l = [], [], [], [], [], [], []

        def emit(p, t, kind, sample, has_probe, prev, rate):
            pages_l.append(p)
            times_l.append(t)
            kind_l.append(np.full(p.size, kind, dtype=np.int8))
            sample_l.append(sample)
            hasprobe_l.append(has_probe)
            prev_l.append(prev)
            rate_l.append(rate)

        # 1. pending probes of running intervals that fall in this period
        pend = np.flatnonzero(self.probe_pending_ & (self.int_probe_ < t1))
        if pend.size:
            z = np.zeros(pend.size, dtype=bool)
            emit(
                pend,
                self.int_probe_[pend],
                _KIND_PROBE,
                z,
                z,
                self.int_start_[pend],
                self.int_rate_[pend],
            )
            self.probe_pending_[pend] = False
        # 2. running intervals that close in this period
        close = np.flatnonzero(self.alive_ & (self.next_sync_ < t1))
        if close.size:
            s0 = self.next_sync_[close]
            has_p = ~np.isnan(self.int_probe_[close])
            expect_prev = np.where(has_p, self.int_probe_[close], self.int_start_[close])
            emit(
                close,
                s0,
                _KIND_SYNC,
                self.int_sample_[close].copy(),
                has_p,
                expect_prev,
                self.int_rate_[close],
            )
            # 3. new intervals from s0 at the current rate: m complete ones, then a new running one
            r = self.rates_[close]
            m = np.maximum(np.ceil((t1 - s0) * r).astype(np.int64) - 1, 0)
            n_new = m + 1
            page = np.repeat(close, n_new)
            first = np.cumsum(n_new) - n_new
            j = np.arange(page.size) - np.repeat(first, n_new)
            rate = np.repeat(r, n_new)
            start = np.repeat(s0, n_new) + j / rate
            end = start + 1.0 / rate
            probe = rng.random(page.size) < eps
            probe_t = np.where(probe, start + rng.random(page.size) / rate, np.nan)
            is_last = j == np.repeat(m, n_new)
            complete = ~is_last
            # probes inside the period
            pin = probe & (probe_t < t1)
            z = np.zeros(int(pin.sum()), dtype=bool)
            emit(page[pin], probe_t[pin], _KIND_PROBE, z, z, start[pin], rate[pin])
            # syncs closing the complete intervals
            c = complete
            emit(
                page[c],
                end[c],
                _KIND_SYNC,
                np.ones(int(c.sum()), dtype=bool),
                probe[c],
                np.where(probe[c], probe_t[c], start[c]),
                rate[c],
            )
            # running intervals
            lp = page[is_last]
            self.next_sync_[lp] = end[is_last]
            self.int_start_[lp] = start[is_last]
            self.int_rate_[lp] = rate[is_last]
            self.int_sample_[lp] = True
            self.int_probe_[lp] = probe_t[is_last]
            self.probe_pending_[lp] = probe[is_last] & ~pin[is_last]
        if pages_l:
            pages = np.concatenate(pages_l).astype(np.intp)
            times = np.concatenate(times_l)
            kind = np.concatenate(kind_l)
            sample = np.concatenate(sample_l)
            has_probe = np.concatenate(hasprobe_l)
            prev = np.concatenate(prev_l)
            rate = np.concatenate(rate_l)
        else:
            pages = np.empty(0, dtype=np.intp)
            times = np.empty(0)
            kind = np.empty(0, dtype=np.int8)
            sample = has_probe = np.empty(0, dtype=bool)
            prev = rate = np.empty(0)
        ok = (times >= now) & (times < t1) & self.alive_[pages]
        # Budget: the visits planned up to t1 never exceed B (t1 - start); a period may use at most one
        # period's worth of budget left unused before (ceil(B P) + carry, carry <= ceil(B P)). Over that,
        # drop the latest probes first, then the latest syncs.
        per_period = math.ceil(self.budget_ * self.replan_every * (1 - 1e-12))
        cumulative = math.floor(self.budget_ * (t1 - self.start_) * (1 + 1e-12)) - self.n_planned_
        cap = max(0, min(2 * per_period, cumulative))
        if ok.sum() > cap:
            order = np.lexsort((-times, kind))  # probes (kind 0) first, latest first
            excess = int(ok.sum()) - cap
            drop = order[ok[order]][:excess]
            ok[drop] = False
        pages, times, kind, sample, has_probe, prev, rate = (
            a[ok] for a in (pages, times, kind, sample, has_probe, prev, rate)
        )
        self.n_planned_ += int(pages.size)
        order = np.lexsort((pages, times))
        pages, times = pages[order], times[order]
        kind, sample, has_probe, prev, rate = (
            a[order] for a in (kind, sample, has_probe, prev, rate)
        )
        keys = _keys(pages, times, now, self.replan_every)
        korder = np.argsort(keys, kind="stable")
        self._records = (now, keys[korder], korder, kind, sample, has_probe, prev, rate)
        return VisitPlan(pages, times)

    def observe(self, obs: Observations) -> None:
        """Turn the period's probe/sync pairs into Lemma 2 samples (used at the next plan)."""
        m = len(obs)
        if m == 0 or self._records is None:
            return
        now, keys_sorted, korder, kind, sample, has_probe, prev, rate = self._records
        pages = np.asarray(obs.pages, dtype=np.intp)
        time = np.asarray(obs.time, dtype=np.float64)
        okeys = _keys(pages, time, now, self.replan_every)
        pos = np.searchsorted(keys_sorted, okeys)
        pos_c = np.minimum(pos, max(keys_sorted.size - 1, 0))
        found = (
            (pos < keys_sorted.size) & (keys_sorted[pos_c] == okeys)
            if keys_sorted.size
            else np.zeros(m, bool)
        )
        rec_idx = np.where(found, korder[pos_c] if keys_sorted.size else 0, -1).astype(np.int64)
        self.n_samples_total_ += _learn(
            pages,
            time,
            np.asarray(obs.tau, dtype=np.float64),
            np.asarray(obs.changed, dtype=np.bool_),
            rec_idx,
            kind,
            sample,
            has_probe,
            prev,
            rate,
            self.epsilon,
            self.probe_ok_,
            self.probe_cost_,
            self.g_sum_,
            self.n_samples_,
        )


def make_asyncmirrorsync(arg: str | None, options: PolicyOptions) -> AsyncMirrorSyncPolicy:
    """Registry factory for ``"asyncmirrorsync"``.

    ``arg`` is ignored (there are no variants); settings come from ``options.extra`` (other keys, meant
    for other policies, are ignored): ``eta``, ``epsilon``, ``r_min``, ``r_max`` (visits per day), and
    ``options.replan_every``.

    Raises
    ------
    ValueError
        If a setting is out of range.

    Examples
    --------
    >>> make_asyncmirrorsync(None, PolicyOptions(replan_every=2.0)).replan_every
    2.0
    """
    extra = dict(options.extra or {})
    settings = {k: extra[k] for k in ("eta", "epsilon", "r_min", "r_max") if k in extra}
    return AsyncMirrorSyncPolicy(replan_every=options.replan_every, **settings)
