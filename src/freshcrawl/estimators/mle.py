"""Maximum-likelihood estimators of eq. (15) of seed 001, exact (offline) and binned (online).

Eq. (15): Σ_j I_j τ_j / (e^{Δτ_j} − 1) = Σ_j (1 − I_j) τ_j. Its left side decreases from +∞ to 0 in Δ, so
it has one root whenever some visit changed and some did not. It only assumes Poisson changes and visits
independent of the future changes, so it is consistent under Poisson, periodic, and re-planned periodic
visits alike.

Degenerate histories (documented values, never NaN or an exception):

- no visit yet: the prior ``delta0``;
- no visit changed: 0 (the likelihood e^{−Δ Σ τ} is largest at Δ = 0);
- every visit changed: eq. (15) has no finite root, so its right side is replaced by one mean interval
  τ̄ (one pseudo-visit that saw no change, the analogue of α_k = 1 in eq. (1)); a single changed visit
  then gives ln 2/τ.

The exact form re-solves eq. (15) on the whole history, so its cost grows with k, as Sec. 3.4 notes. The
binned form keeps, per page, at most ``n_bins`` slots of intervals on a log scale with the counts, interval
sums and sums of squared intervals of changed and unchanged visits; an update costs O(n_bins), whatever k.
Each slot enters the equation as two intervals matching its first two moments, so it is exact when every
interval of a slot is equal (periodic visits) and second-order accurate otherwise.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from freshcrawl.estimators._likelihood import _Binned, _Exact, exact_path, solve_exact

__all__ = ["MLE", "MLEBinned", "mle_path", "solve_mle"]


def solve_mle(changed: ArrayLike, tau: ArrayLike, *, delta0: float = 1.0) -> float:
    """Exact root of eq. (15) for one page's whole history.

    Parameters
    ----------
    changed : array_like of bool or 0/1, shape (k,)
        I_j, whether the page changed before visit j.
    tau : array_like of float, shape (k,)
        τ_j, days since the previous visit; > 0.
    delta0 : float, default=1.0
        Returned when k = 0.

    Returns
    -------
    float
        Δ̂ in changes per day; degenerate histories as in the module docstring.

    Raises
    ------
    InvalidObservation
        Length mismatch, flags outside {0, 1}, tau not finite and > 0.

    References
    ----------
    .. [1] Avrachenkov, Patil, Thoppe, seed 001, eq. (15); Cho, Garcia-Molina 2003, Appendix C.

    Examples
    --------
    >>> round(solve_mle([1, 0], [1.0, 1.0]), 6)      # 1/(e^Δ - 1) = 1  ->  Δ = ln 2
    0.693147
    >>> solve_mle([0, 0], [1.0, 2.0]), round(solve_mle([1], [2.0]), 6)
    (0.0, 0.346574)
    """
    return solve_exact(changed, tau, delta0, use_mm=False)


def mle_path(changed: ArrayLike, tau: ArrayLike) -> NDArray[np.float64]:
    """Exact MLE after each visit 1..k (eq. (15) solved afresh each time, warm-started): shape (k,).

    Raises
    ------
    InvalidObservation
        As :func:`solve_mle`.

    Examples
    --------
    >>> mle_path([0, 1], [1.0, 1.0]).round(6).tolist()
    [0.0, 0.693147]
    """
    return exact_path(changed, tau, use_mm=False)


class MLE(_Exact):
    """Exact maximum-likelihood estimate of the change rates of ``n_pages`` pages, eq. (15) of seed 001.

    Keeps every visit and re-solves eq. (15) on a page's whole history when its estimate is read after
    an update (safeguarded Newton inside the bracket [Î/(T₀ + T₁/2), Î/T₀], which holds because
    u/(e^u − 1) ∈ [1 − u/2, 1]). ``tau`` is used; ``p`` is checked when given, not used.

    Parameters
    ----------
    n_pages : int, default=1
        Number of pages, >= 1.
    delta0 : float, default=1.0
        Estimate before the first visit, changes per day; finite and >= 0.

    Attributes
    ----------
    delta_ : ndarray of float64, shape (n_pages,)
        Estimates, changes per day (degenerate histories: module docstring).
    n_visits_ : ndarray of int64, shape (n_pages,)
        Visits used per page.

    Raises
    ------
    ValueError
        If ``delta0`` is out of range.
    InvalidObservation, TypeError
        In ``learn_one`` / ``learn_many``, for the bad observations listed there.

    Notes
    -----
    Memory and the cost of a solve grow linearly with k, as Sec. 3.4 notes; use :class:`MLEBinned`
    online.

    References
    ----------
    .. [1] Avrachenkov, Patil, Thoppe, seed 001, eq. (15) and Sec. 3.4.

    Examples
    --------
    >>> est = MLE()
    >>> est.learn_one(0, True, tau=1.0); est.learn_one(0, False, tau=1.0)
    >>> round(est.predict_one(0), 6)
    0.693147
    >>> est = MLE(2)
    >>> est.learn_many([0, 1], [1, 0], tau=[1.0, 1.0]); est.learn_many([0], [0], tau=[1.0])
    >>> est.delta_.round(6).tolist()
    [0.693147, 0.0]
    """


class MLEBinned(_Binned):
    """Online MLE of eq. (15) on per-page interval slots, for ``n_pages`` pages: O(n_bins) per visit.

    ``tau`` is used; ``p`` is checked when given, not used.

    Parameters
    ----------
    n_pages : int, default=1
        Number of pages, >= 1.
    n_bins : int, default=16
        Interval slots per page (state: 56·n_bins + 16 bytes per page).
    bin_ratio : float, default=1.1
        A visit joins a slot whose log-interval centre is within ln(bin_ratio)/2 of its own; when every
        slot is taken and none matches, the two closest slots are merged.
    delta0 : float, default=1.0
        Estimate before the first visit, changes per day.
    half_life : float or None, default=None
        Exponential forgetting, in days: before a visit is added, the page's statistics are multiplied by
        2^{-τ/half_life} (τ the days since its previous visit, i.e. its previous update), so a visit made
        d days before the page's latest one weighs 2^{-d/half_life}. None keeps every visit at weight 1
        (the plain MLE of eq. (15)).

    Attributes
    ----------
    delta_ : ndarray of float64, shape (n_pages,)
        Estimates, changes per day (degenerate histories as in the module docstring).
    n_visits_ : ndarray of int64, shape (n_pages,)
    n_eff_ : ndarray of float64, shape (n_pages,)
        Effective number of visits (sum of the weights); equals ``n_visits_`` without forgetting.

    Raises
    ------
    ValueError
        Invalid parameters (``half_life`` not finite and > 0, ``n_bins`` < 2, ``bin_ratio`` <= 1).
    InvalidObservation, TypeError
        In ``learn_one`` / ``learn_many``, for the bad observations listed there.

    Notes
    -----
    Exact (equal to :class:`MLE`) when each slot holds equal intervals, e.g. periodic visits with fewer
    than ``n_bins`` distinct periods; otherwise each slot's intervals are represented by a two-point
    summary matching its mean and variance.

    With forgetting, eq. (15) is solved on the weighted counts. Under periodic visits every τ days a page
    keeps about 1/(1 − 2^{-τ/half_life}) ≈ half_life/(τ ln 2) effective visits, so its estimate tracks
    a rate that changed a few half-lives ago, at the price of the variance of that smaller sample. When
    less than one (weighted) unchanged visit remains, the unchanged evidence is topped up to one visit of
    mean length, the pseudo-visit the degenerate all-changed case already uses; with integer weights this
    is exactly the rule of the module docstring.

    References
    ----------
    .. [1] Avrachenkov, Patil, Thoppe, seed 001, eq. (15).

    Examples
    --------
    >>> est = MLEBinned()
    >>> for c in (1, 0, 1, 0):
    ...     est.learn_one(0, c, tau=2.0)
    >>> round(est.predict_one(0), 6)       # ln 2 / 2
    0.346574
    >>> est = MLEBinned(1, half_life=1.0)   # the first visit weighs 1/2 by the second
    >>> est.learn_many([0], [1], tau=[1.0]); est.learn_many([0], [0], tau=[1.0])
    >>> est.n_eff_.tolist(), round(est.predict_one(0), 6)      # 1/2 / (e^Δ - 1) = 1
    ([1.5], 0.405465)
    """
