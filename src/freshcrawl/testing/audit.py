"""Grading a crawl from the test web's request log: exact freshness and politeness.

Freshness (:func:`freshness`) is integrated exactly with the kernel of
:mod:`freshcrawl.environments.metrics`: a page's copy is refreshed by a request that
:attr:`RequestRecord.refreshes` (a completed GET answered 200 or 304) at the request's arrival time, is
fresh from there until the page's first change after it (a change at the arrival time itself is seen),
and is stale before the first refresh.

Politeness (:func:`politeness_violations`) checks three rules: no request to a path the host's
robots.txt disallows (RFC 9309: longest match wins, Allow on a tie; a robots.txt answered 5xx or never
answered disallows the whole host; 404 or garbage allows everything), no two requests to one host
closer than its delay, and no request to a host before a Retry-After it sent has elapsed.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from freshcrawl.environments.metrics import MODE_REPLAY, N_ACC, Integrals, advance_kernel
from freshcrawl.testing.log import RequestRecord
from freshcrawl.testing.specs import HostSpec

__all__ = [
    "ROBOTS_PATHS",
    "FreshnessReport",
    "RobotsRules",
    "Violation",
    "freshness",
    "page_freshness",
    "politeness_violations",
]

#: paths that belong to fetching robots.txt (never checked against the rules)
ROBOTS_PATHS = frozenset({"/robots.txt", "/robots-redirected.txt"})

_RNG = None


@dataclass(frozen=True, slots=True)
class FreshnessReport:
    """Exact time-averaged freshness of every page over a window.

    Attributes
    ----------
    start, end : float
        The window, seconds since the epoch.
    urls : tuple of str, length n_pages
        The pages, in the order of the arrays.
    freshness : ndarray of float, shape (n_pages,)
        Fraction of the window each page's copy was fresh, in [0, 1].
    weights : ndarray of float, shape (n_pages,)
        Weights used for :attr:`mean`.
    n_refreshes : ndarray of int, shape (n_pages,)
        Refreshing requests inside the window.
    mean : float
        Weighted mean of :attr:`freshness` (NaN when every weight is 0).
    """

    start: float
    end: float
    urls: tuple[str, ...]
    freshness: NDArray[np.float64]
    weights: NDArray[np.float64]
    n_refreshes: NDArray[np.int64]
    mean: float

    def by_url(self) -> dict[str, float]:
        """``{url: freshness}``."""
        return dict(zip(self.urls, self.freshness.tolist(), strict=True))


@dataclass(frozen=True, slots=True)
class Violation:
    """One politeness violation; ``str()`` gives the readable message.

    Attributes
    ----------
    kind : str
        ``"disallowed"``, ``"too-close"`` or ``"retry-after"``.
    host : str
        Host name.
    url : str
        URL of the offending request (with its query).
    time : float
        Arrival time of the offending request, seconds since the epoch.
    message : str
        What happened, with times relative to the reference time.
    """

    kind: str
    host: str
    url: str
    time: float
    message: str

    def __str__(self) -> str:
        return self.message


def page_freshness(
    change_times: NDArray[np.float64], refresh_times: NDArray[np.float64], start: float, end: float
) -> float:
    """Fraction of ``[start, end]`` a copy refreshed at ``refresh_times`` was fresh.

    Parameters
    ----------
    change_times : ndarray of float, shape (k,)
        The page's change times, sorted, seconds (any origin, the same for all arguments).
    refresh_times : ndarray of float, shape (m,)
        Times the copy was refreshed, sorted, seconds; those before ``start`` set the state at
        ``start``.
    start, end : float
        The window, ``start < end``.

    Returns
    -------
    float
        Freshness in [0, 1].

    Raises
    ------
    ValueError
        If the window is empty or not finite.

    Examples
    --------
    Changes at 2 and 6, refreshes at 1 and 4, window [0, 10]: fresh on [1, 2) and [4, 6).

    >>> page_freshness(np.array([2.0, 6.0]), np.array([1.0, 4.0]), 0.0, 10.0)
    0.3
    """
    global _RNG
    if not (math.isfinite(start) and math.isfinite(end) and start < end):
        raise ValueError(
            f"the window must be finite with start < end seconds; got [{start!r}, {end!r}]"
        )
    ct = np.asarray(change_times, dtype=np.float64) - start
    rt = np.asarray(refresh_times, dtype=np.float64) - start
    span = end - start
    before = rt[rt < 0.0]
    inside = np.ascontiguousarray(rt[(rt >= 0.0) & (rt <= span)])
    ptr = int(np.searchsorted(ct, 0.0, side="right"))
    if before.size:
        last = before[-1]
        fresh0 = not np.any((ct > last) & (ct <= 0.0))
    else:
        fresh0 = False
    if _RNG is None:
        _RNG = np.random.default_rng(0)  # unused in replay mode, but the kernel takes one
    acc = np.zeros(N_ACC)
    advance_kernel(
        np.zeros(inside.size, dtype=np.intp),
        inside,
        float(span),
        np.full(1, np.inf),
        MODE_REPLAY,
        np.zeros(1),
        _RNG,
        np.array([0, ct.size], dtype=np.int64),
        np.ascontiguousarray(ct),
        np.array([ptr], dtype=np.int64),
        np.array([ct[ptr] if ptr < ct.size else np.inf]),
        np.array([0 if fresh0 else 1], dtype=np.int64),
        np.array([0.0 if fresh0 else 1.0]),
        np.array([np.inf if fresh0 else 0.0]),
        np.zeros(1),
        np.array([fresh0]),
        np.ones(1),
        acc,
        np.zeros(inside.size, dtype=np.bool_),
    )
    out = Integrals.from_array(acc)
    return min(max(out.fresh / out.alive, 0.0), 1.0)


def freshness(
    records: Sequence[RequestRecord],
    urls: Sequence[str],
    change_times: Callable[[int], NDArray[np.float64]],
    start: float,
    end: float,
    weights: NDArray[np.float64],
) -> FreshnessReport:
    """Exact freshness of every page over ``[start, end]`` from a request log.

    Parameters
    ----------
    records : sequence of RequestRecord
        The log; records with ``page`` set index into ``urls``.
    urls : sequence of str, length n_pages
        The pages.
    change_times : callable
        ``change_times(i)`` gives page i's change times up to at least ``end``, sorted, seconds since
        the epoch.
    start, end : float
        The window, seconds since the epoch, ``start < end``.
    weights : ndarray of float, shape (n_pages,)
        Weights >= 0 of the mean.

    Returns
    -------
    FreshnessReport

    Raises
    ------
    ValueError
        If the window is empty or a weight is negative or not finite.
    """
    n = len(urls)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"weights must have shape ({n},) (one per page); got {w.shape}")
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"weights must be finite and >= 0; {int(bad.sum())} of {n} are not, first at index {k} "
            f"({w[k]!r})"
        )
    if not (math.isfinite(start) and math.isfinite(end) and start < end):
        raise ValueError(
            f"the window must be finite with start < end seconds; got [{start!r}, {end!r}]"
        )
    refresh: dict[int, list[float]] = defaultdict(list)
    for r in records:
        if r.refreshes and r.page is not None and r.arrived <= end:
            refresh[r.page].append(r.arrived)
    fresh = np.empty(n)
    counts = np.zeros(n, dtype=np.int64)
    for i in range(n):
        rt = np.sort(np.asarray(refresh.get(i, ()), dtype=np.float64))
        counts[i] = int(np.count_nonzero(rt >= start))
        fresh[i] = page_freshness(change_times(i), rt, start, end)
    total = w.sum()
    mean = float(np.dot(w, fresh) / total) if total > 0 else float("nan")
    return FreshnessReport(float(start), float(end), tuple(urls), fresh, w, counts, mean)


class RobotsRules:
    """The ``User-agent: *`` rules of a robots.txt (RFC 9309 Sec. 2.2.2 matching).

    Parameters
    ----------
    allow, disallow : sequence of str
        Path patterns; ``*`` matches any sequence, a final ``$`` anchors the end.
    disallow_all : bool, default=False
        Everything is disallowed (robots.txt answered 5xx or never answered).

    Examples
    --------
    >>> rules = RobotsRules(allow=["/private/open"], disallow=["/private/"])
    >>> rules.allowed("/private/x"), rules.allowed("/private/open/y"), rules.allowed("/")
    (False, True, True)
    """

    def __init__(
        self, allow: Sequence[str] = (), disallow: Sequence[str] = (), *, disallow_all: bool = False
    ) -> None:
        self.disallow_all = disallow_all
        self._rules = [
            (len(p), allowed, self._compile(p))
            for allowed, ps in ((True, allow), (False, disallow))
            for p in ps
            if p
        ]

    @staticmethod
    def _compile(pattern: str) -> re.Pattern[str]:
        anchored = pattern.endswith("$")
        body = pattern[:-1] if anchored else pattern
        rx = ".*".join(re.escape(part) for part in body.split("*"))
        return re.compile(rx + ("$" if anchored else ""))

    def allowed(self, path: str) -> bool:
        """Whether ``path`` (with its query, if any) may be fetched."""
        if self.disallow_all:
            return False
        best_len, best = -1, True
        for length, allowed, rx in self._rules:
            if rx.match(path) and (length > best_len or (length == best_len and allowed)):
                best_len, best = length, allowed
        return best

    @classmethod
    def served_by(cls, host: HostSpec) -> RobotsRules:
        """The rules a host's robots.txt gives, its robots fault included (see the module doc)."""
        if host.robots_fault in ("5xx", "timeout"):
            return cls(disallow_all=True)
        if host.robots_fault in ("404", "malformed"):
            return cls()
        return cls(host.allow, host.disallow)


def _served_delay(host: HostSpec) -> float:
    if host.robots_fault in (None, "redirect") and host.crawl_delay is not None:
        return float(host.crawl_delay)
    return 0.0


def politeness_violations(
    records: Sequence[RequestRecord],
    hosts: Mapping[str, HostSpec],
    delays: Mapping[str, float] | float = 0.0,
    *,
    tolerance_s: float = 0.05,
    count_robots: bool = True,
    t0: float = 0.0,
) -> list[Violation]:
    """Politeness violations in a request log.

    Parameters
    ----------
    records : sequence of RequestRecord
        The log.
    hosts : mapping of str to HostSpec
        Every host by name.
    delays : float or mapping of str to float, default=0.0
        Minimum seconds between two requests to one host (one value for all, or per host name; a host
        missing from the mapping has 0). A host's served Crawl-delay raises its delay to that value.
    tolerance_s : float, default=0.05
        Slack in seconds: a gap counts as too short when below ``delay - tolerance_s``, a request as
        too early when before ``retry_after_until - tolerance_s``.
    count_robots : bool, default=True
        Whether robots.txt requests count in the delay rule.
    t0 : float, default=0.0
        Reference time of the messages (times are printed as ``t0 + x`` seconds).

    Returns
    -------
    list of Violation
        In order of arrival; empty for a polite crawl.

    Raises
    ------
    ValueError
        If a delay or the tolerance is negative or not finite, or a delay names an unknown host.
    """
    if not (math.isfinite(tolerance_s) and tolerance_s >= 0):
        raise ValueError(f"tolerance_s must be finite and >= 0 seconds; got {tolerance_s!r}")
    if isinstance(delays, Mapping):
        unknown = sorted(set(delays) - set(hosts))
        if unknown:
            raise ValueError(f"delays names unknown hosts {unknown}; hosts are {sorted(hosts)}")
        given = {h: float(delays.get(h, 0.0)) for h in hosts}
    else:
        given = {h: float(delays) for h in hosts}
    for h, d in given.items():
        if not (math.isfinite(d) and d >= 0):
            raise ValueError(f"delays[{h!r}] must be finite and >= 0 seconds; got {d!r}")
    rules = {h: RobotsRules.served_by(spec) for h, spec in hosts.items()}

    def at(t: float) -> str:
        return f"t0+{t - t0:.3f}s"

    def full(r: RequestRecord) -> str:
        return r.url + (f"?{r.query}" if r.query else "")

    out: list[Violation] = []
    by_host: dict[str, list[RequestRecord]] = defaultdict(list)
    for r in records:
        by_host[r.host].append(r)
    for host, rs in by_host.items():
        if host not in hosts:
            continue
        rs.sort(key=lambda r: r.arrived)
        rule = rules[host]
        for r in rs:
            if r.path in ROBOTS_PATHS:
                continue
            target = r.path + (f"?{r.query}" if r.query else "")
            if not rule.allowed(target):
                why = (
                    "the whole host is disallowed"
                    if rule.disallow_all
                    else "robots.txt disallows it"
                )
                out.append(
                    Violation(
                        "disallowed",
                        host,
                        full(r),
                        r.arrived,
                        f"{r.method} {full(r)} at {at(r.arrived)}: {why}",
                    )
                )
        delay = max(given[host], _served_delay(hosts[host]))
        timed = [r for r in rs if count_robots or r.path not in ROBOTS_PATHS]
        if delay > 0:
            for prev, r in itertools.pairwise(timed):
                gap = r.arrived - prev.arrived
                if gap < delay - tolerance_s:
                    out.append(
                        Violation(
                            "too-close",
                            host,
                            full(r),
                            r.arrived,
                            f"{r.method} {full(r)} at {at(r.arrived)} came {gap:.3f}s after "
                            f"{prev.method} {full(prev)} at {at(prev.arrived)}; host {host} needs "
                            f"{delay:g}s between requests",
                        )
                    )
        arrivals = np.array([r.arrived for r in rs])
        for ra in rs:
            if ra.retry_after_until is None:
                continue
            lo = int(np.searchsorted(arrivals, ra.ended, side="left"))
            hi = int(np.searchsorted(arrivals, ra.retry_after_until - tolerance_s, side="left"))
            for r in rs[lo:hi]:
                if r is ra:
                    continue
                out.append(
                    Violation(
                        "retry-after",
                        host,
                        full(r),
                        r.arrived,
                        f"{r.method} {full(r)} at {at(r.arrived)} came before {at(ra.retry_after_until)}: "
                        f"the {ra.status} to {full(ra)} at {at(ra.ended)} said Retry-After until then",
                    )
                )
    out.sort(key=lambda v: v.time)
    return out
