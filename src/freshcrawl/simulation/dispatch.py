"""Turning visit rates into visit times, within the global budget.

Budget rule (equal visits): over any prefix ``[start, t]`` of the window a policy makes at most
``B*(t - start)`` visits, and any closed window of W days holds at most ``B*W + max(B, 1)`` visits
(one day of budget). The rule is the same for every policy: every visit sequence, whatever made it,
goes through one token bucket (:class:`TokenBucket`) that starts empty, is refilled at ``B`` tokens
per day and holds at most one day of budget (``max(B, 1)`` tokens). A visit that finds less than one
token waits for the next one, first come first served (:meth:`TokenBucket.schedule`); the engine drops
a visit that cannot be made before the window's end or its page's death (it is not made, and the
policy does not observe it).

* Periodic dispatch (:func:`~freshcrawl.scheduling.periodic.periodic_visits`) keeps, for each page,
  the rate integral accumulated since its last visit, ``u_i in [0, 1)`` (its phase, drawn uniformly
  at the start: a random phase per page), and visits the page whenever ``u_i`` reaches 1. Between
  two consecutive visits of a page its rate integrates to exactly 1, and the engine scales down plans
  whose rates sum to more than ``B``, so periodic visits keep to the budget on average; the random
  phases make their count over a stretch of time run ahead of ``B`` times its length by a few visits
  at times, and those visits wait for their tokens. A rate change at a re-plan continues
  from the current phase (the next visit comes when the new rate has made up the missing part of the
  integral).
* Poisson dispatch and explicit visit plans (:class:`~freshcrawl.policies.base.VisitPlan`) go
  through the same bucket.

A policy that cannot spend its budget (host caps, no page due) makes fewer visits; the bound is an
upper one.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray

from freshcrawl._validation import check_nonnegative, check_positive
from freshcrawl.scheduling.periodic import periodic_visits

__all__ = ["TokenBucket", "periodic_visits", "poisson_visits"]

#: relative slack for floating-point rounding in the token bucket
_EPS = 1e-9


def poisson_visits(
    rates: NDArray[np.float64],
    lo: NDArray[np.float64],
    hi: NDArray[np.float64],
    rng: np.random.Generator,
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Poisson visits of rate ``rates[i]`` over ``[lo_i, hi_i)``.

    Parameters
    ----------
    rates : ndarray of float, shape (n_pages,)
        Visit rates p_i >= 0, visits per day.
    lo, hi : ndarray of float, shape (n_pages,)
        Stretch of time of each page, days.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    pages : ndarray of intp, shape (m,)
    times : ndarray of float, shape (m,)
        Visits grouped by page (increasing), in time order within each page; days.
    """
    length = np.maximum(hi - lo, 0.0)
    counts = rng.poisson(rates * length).astype(np.int64)
    on = np.flatnonzero(counts)
    c = counts[on]
    # sorted uniforms on [lo, hi) from normalised exponential spacings: page by page, c + 1 draws, summed
    # in draw order one draw of every page at a time (pages by decreasing count: a prefix is active)
    draws = rng.exponential(1.0, int(c.sum()) + on.size)
    first_draw = np.cumsum(c + 1) - (c + 1)
    first_visit = np.cumsum(c) - c
    by_count = np.argsort(-c, kind="stable")
    n_active = np.searchsorted(-c[by_count], -np.arange(c.max() + 1 if c.size else 0), "right")
    partial = np.empty(int(c.sum()))
    total = np.empty(on.size)
    acc = np.zeros(on.size)
    for j, n_j in enumerate(n_active):
        act = by_count[:n_j]
        acc[act] += draws[first_draw[act] + j]
        more = act[c[act] > j]
        partial[first_visit[more] + j] = acc[more]
        last = act[c[act] == j]
        total[last] = acc[last]
    pages = np.repeat(on, c)
    times = lo[pages] + length[pages] * (partial / np.repeat(total, c))
    return pages.astype(np.intp), times


@njit(cache=True)
def _bucket_schedule(times, deadline, tokens, last, capacity, rate, out):  # pragma: no cover - compiled
    """Visits in time order; ``out[k]`` the time visit k is made, NaN if it cannot be before its deadline.

    One visit after the other: each visit's time depends on the tokens the previous ones left.
    Compiled: a loop in Python floats takes about 20 times as long (25 s of a 10^6-page replay), and
    a vectorised form moves made times by rounding units (a visit made at a period's end then falls
    into the next period). Returns the state (tokens, last).
    """
    eps = _EPS * (1.0 + capacity)
    for k in range(times.shape[0]):
        t = max(times[k], last)  # waits behind a deferred visit
        level = min(tokens + rate * (t - last), capacity)
        if level < 1.0 - eps:  # wait for the next token
            t = t + (1.0 - level) / rate
            level = 1.0
        if t >= deadline[k]:
            out[k] = np.nan
            continue
        tokens = max(level - 1.0, 0.0)
        last = t
        out[k] = t
    return tokens, last


@njit(cache=True)
def _bucket_schedule_first(times, first, deadline, tokens, last, capacity, rate, until, out):  # pragma: no cover - compiled
    """As :func:`_bucket_schedule`, but a waiting visit of ``first`` goes before the others waiting
    (two first-come first-served queues, ``first``'s served first), and no visit is made at or after
    ``until`` (``out`` is inf for those; the bucket's state is then the one at ``until``)."""
    eps = _EPS * (1.0 + capacity)
    n = times.shape[0]
    q_first = np.empty(n, dtype=np.int64)
    q_other = np.empty(n, dtype=np.int64)
    fh = ft = oh = ot = 0
    t = last
    level = tokens
    i = 0
    while i < n or fh < ft or oh < ot:
        t_arrive = max(times[i], t) if i < n else np.inf
        t_serve = np.inf
        if fh < ft or oh < ot:
            t_serve = t if level >= 1.0 - eps else t + (1.0 - level) / rate
        if t_arrive >= until and t_serve >= until:
            break
        if t_arrive <= t_serve:
            level = min(level + rate * (t_arrive - t), capacity)
            t = t_arrive
            if first[i]:
                q_first[ft] = i
                ft += 1
            else:
                q_other[ot] = i
                ot += 1
            i += 1
            continue
        level = min(level + rate * (t_serve - t), capacity)
        t = t_serve
        if fh < ft:
            k = q_first[fh]
            fh += 1
        else:
            k = q_other[oh]
            oh += 1
        if t >= deadline[k]:
            out[k] = np.nan
            continue
        level = max(level - 1.0, 0.0)
        out[k] = t
    while fh < ft:
        out[q_first[fh]] = np.inf
        fh += 1
    while oh < ot:
        out[q_other[oh]] = np.inf
        oh += 1
    while i < n:
        out[i] = np.inf
        i += 1
    if until < np.inf:
        level = min(level + rate * (until - t), capacity)
        t = until
    return level, t


class TokenBucket:
    """Global rate limiter: the visits it lets through in any closed window of W days are at most
    ``capacity + rate*W``, and in the first W days at most ``tokens + rate*W``.

    Parameters
    ----------
    capacity : float
        Bucket size (burst), visits; the engine uses one day of budget, ``max(B, 1)``. Must be >= 1.
    rate : float
        Refill rate, visits per day (the budget B); must be > 0.
    start : float
        Time the bucket starts, days.
    tokens : float, default=0.0
        Tokens in the bucket at ``start``, visits, in ``[0, capacity]``; the engine starts empty.

    Raises
    ------
    ValueError
        If ``capacity < 1``, ``rate <= 0`` or ``tokens`` is outside ``[0, capacity]``.

    Examples
    --------
    A visit that finds no token waits for the next one (first-come, first-served); one that would
    wait past its deadline is not made:

    >>> bucket = TokenBucket(capacity=2, rate=1.0, start=0.0)
    >>> bucket.schedule(np.array([0.0, 0.5, 4.0, 4.0, 4.0, 4.5]), deadline=6.0).tolist()
    [1.0, 2.0, 4.0, 4.0, 5.0, nan]
    """

    def __init__(self, capacity: float, rate: float, start: float, tokens: float = 0.0) -> None:
        self.capacity = check_nonnegative("capacity", capacity, unit="visits")
        if self.capacity < 1:
            raise ValueError(f"capacity must be >= 1 visit; got {capacity!r}")
        self.rate = check_positive("rate", rate, unit="visits per day")
        tokens = check_nonnegative("tokens", tokens, unit="visits")
        if tokens > self.capacity:
            raise ValueError(f"tokens must be <= capacity ({self.capacity!r}); got {tokens!r}")
        self.tokens_ = tokens
        self.last_ = float(start)

    def schedule(
        self,
        times: NDArray[np.float64],
        deadline: NDArray[np.float64] | float = np.inf,
        *,
        first: NDArray[np.bool_] | None = None,
        until: float = np.inf,
    ) -> NDArray[np.float64]:
        """When each of the visits asked for at ``times`` is made.

        Parameters
        ----------
        times : ndarray of float, shape (m,)
            Visit times asked for, days, sorted; a visit asked before the previous call's last
            visit (or its ``until``) waits from then.
        deadline : ndarray of float, shape (m,), or float
            Time by which each visit must be made, days (exclusive).
        first : ndarray of bool, shape (m,), optional
            Visits that, when they must wait for a token, go before the others waiting (the visits
            made for an announced change, which lose their worth while they wait); first come,
            first served within each kind. Default: one queue.
        until : float, default=inf
            With ``first``: make no visit at or after this time, days. The visits still waiting
            then are ``inf``: the next call may ask for them again (at their own times, before its
            other visits), and a visit made later may go before them.

        Returns
        -------
        ndarray of float, shape (m,)
            Time each visit is made, days: its own time if a token is there, else when the next
            token comes; NaN for a visit that cannot be made before its deadline (it takes no
            token). Non-decreasing over the made ones without ``first``; with it, over the made
            ones of each kind.

        Raises
        ------
        ValueError
            If ``until`` is given without ``first``.

        Examples
        --------
        >>> bucket = TokenBucket(capacity=1, rate=1.0, start=0.0)
        >>> bucket.schedule(np.array([0.0, 0.0, 0.5]), first=np.array([False, False, True])).tolist()
        [2.0, 3.0, 1.0]
        """
        times = np.ascontiguousarray(times, dtype=np.float64)
        deadline = np.ascontiguousarray(np.broadcast_to(deadline, times.shape), dtype=np.float64)
        out = np.empty(times.shape[0], dtype=np.float64)
        if first is None:
            if until != np.inf:
                raise ValueError("until needs first")
            self.tokens_, self.last_ = _bucket_schedule(
                times, deadline, self.tokens_, self.last_, self.capacity, self.rate, out
            )
        else:
            first = np.ascontiguousarray(np.broadcast_to(first, times.shape), dtype=np.bool_)
            self.tokens_, self.last_ = _bucket_schedule_first(
                times,
                first,
                deadline,
                self.tokens_,
                self.last_,
                self.capacity,
                self.rate,
                float(until),
                out,
            )
        return out
