"""Poisson change times of the test web's pages, drawn lazily and deterministically from a seed.

Page i's changes are ``t0 + cumsum(Exp(1/rate_i))`` with the draws of its own generator
(``SeedSequence(seed, spawn_key=(i,))``), extended in blocks as time goes on; the offsets from ``t0``
depend only on the seed and the rate, not on when or how often the schedule is read.
"""

from __future__ import annotations

import math
import threading

import numpy as np
from numpy.typing import NDArray

__all__ = ["ChangeSchedule"]


class ChangeSchedule:
    """Change times of pages that change as Poisson processes.

    Parameters
    ----------
    rates : ndarray of float, shape (n_pages,)
        Change rates, changes per second, finite and >= 0.
    seed : int
        Seed of the draws.
    t0 : float
        Origin of the changes (the server's start), seconds since the epoch.

    Notes
    -----
    Thread-safe. Last-Modified values are whole seconds, strictly increasing with the version:
    ``lm_0 = floor(t0)``, ``lm_v = max(floor(c_v), lm_{v-1} + 1)``, so that If-Modified-Since with a
    Last-Modified the server sent names exactly one version even when two changes fall in one second.

    Examples
    --------
    >>> s = ChangeSchedule(np.array([1.0, 0.0]), seed=0, t0=100.0)
    >>> s.version_at(0, 100.0), s.version_at(1, 1e6)
    (0, 0)
    >>> int(s.version_at(0, 110.0)) == len(s.times(0, 110.0))
    True
    """

    def __init__(self, rates: NDArray[np.float64], seed: int, t0: float) -> None:
        self.rates = np.asarray(rates, dtype=np.float64)
        self.t0 = float(t0)
        self.seed = int(seed)
        n = self.rates.shape[0]
        self._gens = [
            np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(i,)))
            for i in range(n)
        ]
        self._times = [np.empty(0) for _ in range(n)]
        self._lm = [np.array([math.floor(self.t0)], dtype=np.float64) for _ in range(n)]
        self._lock = threading.Lock()

    def _extend(self, i: int, t: float) -> NDArray[np.float64]:
        """Page i's change times, drawn at least past ``t``; call with the lock held."""
        ts = self._times[i]
        rate = self.rates[i]
        if rate <= 0:
            return ts
        last = ts[-1] if ts.size else self.t0
        if last > t:
            return ts
        blocks = [ts]
        while last <= t:
            k = int(rate * (t - last) * 1.25) + 16
            new = last + np.cumsum(self._gens[i].exponential(1.0 / rate, size=k))
            blocks.append(new)
            last = new[-1]
        ts = np.concatenate(blocks)
        self._times[i] = ts
        c = np.concatenate(([self.t0], ts))
        idx = np.arange(c.size, dtype=np.float64)
        self._lm[i] = np.maximum.accumulate(np.floor(c) - idx) + idx
        return ts

    def times(self, i: int, until: float) -> NDArray[np.float64]:
        """Page i's change times ``<= until``, seconds since the epoch, sorted (a copy)."""
        with self._lock:
            ts = self._extend(i, until)
            return ts[: int(np.searchsorted(ts, until, side="right"))].copy()

    def version_at(self, i: int, t: float) -> int:
        """Number of changes of page i in ``(t0, t]`` (0 before ``t0``)."""
        with self._lock:
            ts = self._extend(i, t)
            return int(np.searchsorted(ts, t, side="right"))

    def state_at(self, i: int, t: float) -> tuple[int, float, float]:
        """``(version, last_modified, next_change)`` of page i at ``t``.

        ``last_modified`` is whole seconds since the epoch (see Notes); ``next_change`` is the time of
        the next change after ``t`` (inf for a page that never changes).
        """
        with self._lock:
            ts = self._extend(i, t)
            v = int(np.searchsorted(ts, t, side="right"))
            nxt = float(ts[v]) if v < ts.size else math.inf
            return v, float(self._lm[i][v]), nxt
