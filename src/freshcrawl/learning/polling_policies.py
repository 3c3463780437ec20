"""The classical web-polling policies seed 004 compares the automata with (Sec. 1 and 4.3.1).

All four return an allocation x of the polling capacity c over n pages, in polls per time step
(``Σ x_i = c``), for pages with update probability u_i per time step:

- **Uniform**: ``x_i = c/n``; the only one usable without knowing anything.
- **Proportional**: ``x_i ∝ u_i``; needs the true update frequencies.
- **Estimator**: polls uniformly during an estimation phase, estimates u_i from the fraction of polls
  that found a change (:func:`estimate_update_prob`), then applies the proportional policy to the
  estimates.
- **Optimal**: maximises the expected detected changes per time step ``Σ x_i (1 − (1 − u_i)^{1/x_i})``
  under ``Σ x_i = c`` by Lagrange multipliers, through :func:`freshcrawl.allocation.allocate` and its
  ``"detection-discrete"`` objective.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numpy.typing import NDArray

from freshcrawl._validation import check_array, check_int, check_positive

__all__ = [
    "uniform_polling",
    "proportional_polling",
    "estimator_polling",
    "optimal_polling",
    "estimate_update_prob",
    "proportional_kernel",
    "update_prob_kernel",
]

#: Largest update probability passed to the solver (u = 1 would make −ln(1 − u) infinite).
_U_CAP = 1.0 - 1e-12


def _u(update_prob) -> NDArray[np.float64]:
    u = check_array("update_prob", update_prob, low=0.0, high=1.0, unit="(probability per time step)")
    if u.ndim != 1 or u.size == 0:
        raise ValueError(f"update_prob must be a non-empty 1-d array (one probability per page); got shape {u.shape}")
    return u


def uniform_polling(n_pages: int, capacity: float = 1.0) -> NDArray[np.float64]:
    """Uniform policy: ``x_i = c/n`` polls per time step.

    Raises
    ------
    ValueError
        If `n_pages` < 1 or `capacity` <= 0.

    Examples
    --------
    >>> uniform_polling(4, 2.0).tolist()
    [0.5, 0.5, 0.5, 0.5]
    """
    n_pages = check_int("n_pages", n_pages, low=1)
    c = check_positive("capacity", capacity, unit="polls per time step")
    return np.full(int(n_pages), c / int(n_pages))


def proportional_polling(update_prob, capacity: float = 1.0) -> NDArray[np.float64]:
    """Proportional policy: ``x_i = c u_i / Σ u`` (uniform when every u_i is 0).

    Parameters
    ----------
    update_prob : ndarray of float, shape (n,)
        Update probability of each page per time step, in [0, 1].
    capacity : float, default=1.0
        Polls per time step c > 0.

    Returns
    -------
    ndarray of float, shape (n,)
        Polls per time step, summing to c.

    Examples
    --------
    >>> proportional_polling(np.array([0.3, 0.1])).tolist()
    [0.75, 0.25]
    """
    u = _u(update_prob)
    c = check_positive("capacity", capacity, unit="polls per time step")
    return proportional_kernel(u, c)


@numba.njit(cache=True)
def proportional_kernel(  # pragma: no cover - compiled
    u: NDArray[np.float64], c: float
) -> NDArray[np.float64]:
    """Compiled, unchecked core of :func:`proportional_polling`, callable from other compiled loops.

    ``u`` : ndarray of float, shape (n,), update probabilities per time step; ``c`` : float, polls
    per time step. Returns ``c u / Σ u``, or ``c / n`` everywhere when ``Σ u = 0`` (shape (n,)).
    Nothing is checked: callers pass what :func:`proportional_polling` would accept.

    Examples
    --------
    >>> proportional_kernel(np.array([0.3, 0.1]), 2.0).tolist()
    [1.5, 0.5]
    """
    s = u.sum()
    if s > 0.0:
        return u * (c / s)
    return np.full(u.shape[0], c / u.shape[0])


@numba.njit(cache=True)
def update_prob_kernel(  # pragma: no cover - compiled
    changes: NDArray[np.float64], polls: NDArray[np.float64], period: float
) -> NDArray[np.float64]:
    """Compiled, unchecked core of :func:`estimate_update_prob`, callable from other compiled loops.

    ``changes``, ``polls`` : ndarray of float, shape (n,); ``period`` : float, time steps T between
    two polls of a page. Returns ``û = 1 − (1 − f)^{1/T}`` with ``f = (k + ½)/(m + 1)``, shape
    (n,).
    Nothing is checked: callers pass what :func:`estimate_update_prob` would accept.

    Examples
    --------
    >>> update_prob_kernel(np.array([3.0, 0.0]), np.array([4.0, 4.0]), 2.0).round(4).tolist()
    [0.4523, 0.0513]
    """
    out = np.empty(changes.shape[0])
    for i in range(changes.shape[0]):
        frac = (changes[i] + 0.5) / (polls[i] + 1.0)
        out[i] = -math.expm1(math.log1p(-frac) / period)
    return out


def estimate_update_prob(changes, polls, period: float) -> NDArray[np.float64]:
    """Estimate the per-step update probability from periodic polls, ``û = 1 − (1 − f)^{1/T}``.

    A page polled every T steps shows a change with probability ``1 − (1 − u)^T``; inverting the
    fraction f of changed polls estimates u. With the raw fraction k/m (the maximum-likelihood
    estimate) a page that changed at every poll gets û = 1, which happens at random for the
    moderately fast pages when T is long (T = 512 steps in the seed's setting) and hands them most of
    the budget; the estimate then jumps between 1 and about ln(m)/T from one run to the next. We use
    the add-one-half fraction ``f = (k + ½)/(m + 1)``, which stays below 1 and grows with the evidence
    (the seed does not specify its estimator).

    Parameters
    ----------
    changes : ndarray of int, shape (n,)
        Polls that found a change, k_i >= 0.
    polls : ndarray of int, shape (n,)
        Polls made, m_i >= k_i; a page never polled gets the prior f = ½.
    period : float
        Steps between two polls of a page, T > 0 (n/c under the uniform policy).

    Returns
    -------
    ndarray of float, shape (n,)
        û_i in [0, 1].

    Raises
    ------
    ValueError
        If `period` <= 0, the shapes differ, or a count is negative or exceeds its number of polls.

    Examples
    --------
    >>> estimate_update_prob(np.array([3, 0]), np.array([4, 4]), 2.0).round(4).tolist()
    [0.4523, 0.0513]
    """
    k = check_array("changes", changes, low=0.0)
    m = check_array("polls", polls, low=0.0, shape=k.shape)
    if np.any(k > m):
        i = int(np.flatnonzero(k > m)[0])
        raise ValueError(
            f"changes must not exceed polls; first offender at index {i} ({k[i].item()!r} > {m[i].item()!r})"
        )
    T = check_positive("period", period, unit="time steps between polls of a page")
    return update_prob_kernel(k, m, T)


def estimator_polling(changes, polls, period: float, capacity: float = 1.0) -> NDArray[np.float64]:
    """Estimator policy after its estimation phase: proportional on :func:`estimate_update_prob`.

    Pages with equal evidence get equal shares; before any poll the allocation is uniform.

    Examples
    --------
    >>> estimator_polling(np.array([2, 1, 0]), np.array([2, 2, 2]), 3.0).round(3).tolist()
    [0.629, 0.289, 0.082]
    >>> estimator_polling(np.array([0, 0]), np.array([1, 1]), 2.0).tolist()
    [0.5, 0.5]
    """
    c = check_positive("capacity", capacity, unit="polls per time step")
    return proportional_kernel(estimate_update_prob(changes, polls, period), c)


def optimal_polling(update_prob, capacity: float = 1.0) -> NDArray[np.float64]:
    """Optimal policy: the allocation maximising ``Σ x_i (1 − (1 − u_i)^{1/x_i})`` with ``Σ x_i = c``.

    Solved by :func:`freshcrawl.allocation.allocate` with the ``"detection-discrete"`` objective
    ``x (1 − q^{1/x})``, ``q_i = 1 − u_i``. The optimum equalises the detection probabilities d_i(x_i)
    of all pages (seed 004, Sec. 4.2), which gives ``x_i ∝ −ln(1 − u_i)``.

    Parameters
    ----------
    update_prob : ndarray of float, shape (n,)
        Update probability of each page per time step, in [0, 1]. A page updated in every step
        (u = 1) is treated as u = 1 − 1e-12, for which the solver's −ln q stays finite.
    capacity : float, default=1.0
        Polls per time step c > 0.

    Returns
    -------
    ndarray of float, shape (n,)
        Polls per time step, summing to c (uniform when every u_i is 0).

    Raises
    ------
    ValueError
        If an argument is out of range.

    References
    ----------
    .. [1] Seed 004, Sec. 4.2 and 4.3.1 (the Optimal policy, after Pandey et al. and Wolf et al.).

    Examples
    --------
    >>> u = np.array([0.9, 0.5, 0.1])
    >>> x = optimal_polling(u)
    >>> bool(np.allclose(x, np.log1p(-u) / np.log1p(-u).sum()))
    True
    """
    u = _u(update_prob)
    c = check_positive("capacity", capacity, unit="polls per time step")
    if not u.sum() > 0:
        return np.full(u.size, c / u.size)
    from freshcrawl.allocation import allocate

    res = allocate(np.minimum(u, _U_CAP), c, objective="detection-discrete")
    return np.asarray(res.p, dtype=np.float64)
