"""Change-rate estimators of seed 001 (Avrachenkov, Patil, Thoppe), in two shapes each.

Streaming objects (one page) have ``update(changed, tau, p)`` and a float ``delta_``; batch objects over
``n_pages`` pages have ``update(pages, changed, tau, p)`` and arrays ``delta_``/``n_visits_`` of shape
``(n_pages,)``. Both shapes run the same numba step. Units: τ in days since the page's previous visit, p in
visits per day, Δ̂ in changes per day.

The paper's forms (``naive``, ``lln``, ``sa``, ``sam``) assume visits form a Poisson process of known rate
p; under periodic visits LLN, SA and SAM converge to (e^{Δτ} − 1)/τ, not Δ. The interval-aware forms
(``lln-interval``, ``sa-interval``, ``sam-interval``) and the likelihood-based ``mle``, ``mm``,
``mle-binned``, ``mm-binned`` stay consistent under Poisson, periodic and re-planned periodic visits.

==================  ===============================  =================================  ===============
name                streaming / batch class          rule                               consistent under
==================  ===============================  =================================  ===============
``naive``           Naive / NaiveBatch               p·Î/k (Sec. 3.4)                   never (biased)
``naive-interval``  NaiveInterval / ...Batch         Î / Στ                             never (biased)
``lln``             LLN / LLNBatch                   eq. (1)                            Poisson visits
``lln-interval``    LLNInterval / ...Batch           ratio form of eq. (15)             any
``sa``              SA / SABatch                     eq. (2)                            Poisson visits
``sa-interval``     SAInterval / ...Batch            residual I − (1 − e^{−yτ})         any
``sam``             SAM / SAMBatch                   eq. (3), (10)                      Poisson visits
``sam-interval``    SAMInterval / ...Batch           SA-interval + momentum             any
``mle``             MLE / MLEBatch                   eq. (15), exact, O(k) per update   any
``mm``              MomentMatching / ...Batch        Sec. 3.4, exact, O(k) per update   any
``mle-binned``      MLEBinned / MLEBinnedBatch       eq. (15) on interval slots, O(1)   any
``mm-binned``       MomentMatchingBinned / ...Batch  MM on interval slots, O(1)         any
==================  ===============================  =================================  ===============

Forgetting: ``mle-binned`` and ``mm-binned`` take ``half_life`` (days; default None, no forgetting). Each
page's interval statistics then decay by 2^{-τ/half_life} before a visit τ days after the previous one is
added, so the estimate follows a change rate that drifts or switches, from an effective sample of about
half_life/(τ ln 2) visits (:data:`FORGETTING_NAMES`). ``sa-interval`` takes it too, as a floor 1 − 2^{-τ/half_life} on its
step size (constant-step tracking).
"""

from __future__ import annotations

from typing import Any

from freshcrawl.errors import UnknownNameError
from freshcrawl.estimators.base import BatchEstimator, StreamingEstimator
from freshcrawl.estimators.lln import LLN, LLNBatch, LLNInterval, LLNIntervalBatch
from freshcrawl.estimators.mle import MLE, MLEBatch, MLEBinned, MLEBinnedBatch, mle_path, solve_mle
from freshcrawl.estimators.moments import (
    MomentMatching,
    MomentMatchingBatch,
    MomentMatchingBinned,
    MomentMatchingBinnedBatch,
    mm_path,
    solve_mm,
)
from freshcrawl.estimators.naive import Naive, NaiveBatch, NaiveInterval, NaiveIntervalBatch
from freshcrawl.estimators.sa import SA, SABatch, SAInterval, SAIntervalBatch
from freshcrawl.estimators.sam import SAM, SAMBatch, SAMInterval, SAMIntervalBatch

__all__ = [
    "BatchEstimator",
    "StreamingEstimator",
    "Naive",
    "NaiveBatch",
    "NaiveInterval",
    "NaiveIntervalBatch",
    "LLN",
    "LLNBatch",
    "LLNInterval",
    "LLNIntervalBatch",
    "SA",
    "SABatch",
    "SAInterval",
    "SAIntervalBatch",
    "SAM",
    "SAMBatch",
    "SAMInterval",
    "SAMIntervalBatch",
    "MLE",
    "MLEBatch",
    "MLEBinned",
    "MLEBinnedBatch",
    "MomentMatching",
    "MomentMatchingBatch",
    "MomentMatchingBinned",
    "MomentMatchingBinnedBatch",
    "solve_mle",
    "solve_mm",
    "mle_path",
    "mm_path",
    "ESTIMATORS",
    "ESTIMATOR_NAMES",
    "CONSISTENT_NAMES",
    "FORGETTING_NAMES",
    "make_batch_estimator",
    "make_estimator",
]

#: name -> (streaming class, batch class).
ESTIMATORS: dict[str, tuple[type, type]] = {
    "naive": (Naive, NaiveBatch),
    "lln": (LLN, LLNBatch),
    "sa": (SA, SABatch),
    "sam": (SAM, SAMBatch),
    "mle": (MLE, MLEBatch),
    "mm": (MomentMatching, MomentMatchingBatch),
    "naive-interval": (NaiveInterval, NaiveIntervalBatch),
    "lln-interval": (LLNInterval, LLNIntervalBatch),
    "sa-interval": (SAInterval, SAIntervalBatch),
    "sam-interval": (SAMInterval, SAMIntervalBatch),
    "mle-binned": (MLEBinned, MLEBinnedBatch),
    "mm-binned": (MomentMatchingBinned, MomentMatchingBinnedBatch),
}

#: Every registered estimator name.
ESTIMATOR_NAMES: tuple[str, ...] = tuple(ESTIMATORS)

#: Names of the estimators that stay consistent when visits are periodic or re-planned.
CONSISTENT_NAMES: tuple[str, ...] = ("lln-interval", "sa-interval", "sam-interval", "mle", "mm", "mle-binned", "mm-binned")

#: Names of the estimators that accept ``half_life`` (exponential forgetting, days).
FORGETTING_NAMES: tuple[str, ...] = ("mle-binned", "mm-binned", "sa-interval")


def _forgetting(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """Drop ``half_life=None``; reject a ``half_life`` for an estimator that cannot forget."""
    if "half_life" in params:
        if params["half_life"] is None:
            params = {k: v for k, v in params.items() if k != "half_life"}
        elif name in ESTIMATORS and name not in FORGETTING_NAMES:
            raise ValueError(
                f"half_life (days of exponential forgetting) is supported by {', '.join(FORGETTING_NAMES)} "
                f"only; got half_life={params['half_life']!r} for estimator {name!r}"
            )
    return params


def _lookup(name: str) -> tuple[type, type]:
    try:
        return ESTIMATORS[name]
    except (KeyError, TypeError):
        raise UnknownNameError(f"unknown estimator {name!r}; known: {', '.join(ESTIMATOR_NAMES)}") from None


def make_batch_estimator(name: str, n_pages: int, **params: Any) -> BatchEstimator:
    """Build the batch estimator registered as ``name`` for ``n_pages`` pages.

    Parameters
    ----------
    name : str
        One of :data:`ESTIMATOR_NAMES`.
    n_pages : int
        Number of pages, >= 1.
    **params
        Keyword parameters of the class (``delta0``, ``alpha``, ``eta``, ``beta``, ``omega``, ``n_bins``,
        ``bin_ratio``, ``half_life``). ``half_life=None`` is accepted by every estimator (no forgetting);
        a number of days only by :data:`FORGETTING_NAMES`.

    Returns
    -------
    BatchEstimator
        ``update(pages, changed, tau, p)``; ``delta_`` and ``n_visits_`` of shape (n_pages,).

    Raises
    ------
    UnknownNameError
        If ``name`` is not registered (the message lists the known names).
    TypeError, ValueError
        If a parameter is not accepted by the class or out of range (a ``half_life`` for an estimator
        that cannot forget raises ValueError).

    Examples
    --------
    >>> est = make_batch_estimator("sa-interval", 3, eta=0.8)
    >>> est.update([0, 2], [True, False], tau=[1.0, 1.0], p=[1.0, 1.0])
    >>> est.delta_.shape, est.n_visits_.tolist()
    ((3,), [1, 0, 1])
    >>> make_batch_estimator("mle-binned", 3, half_life=90.0).half_life
    90.0
    """
    cls = _lookup(name)[1]
    return cls(n_pages, **_forgetting(name, params))


def make_estimator(name: str, **params: Any) -> StreamingEstimator:
    """Build the one-page streaming estimator registered as ``name``.

    Raises
    ------
    UnknownNameError
        If ``name`` is not registered.

    Examples
    --------
    >>> est = make_estimator("lln")
    >>> est.update(True, tau=1.0, p=1.0)
    >>> est.delta_
    1.0
    """
    cls = _lookup(name)[0]
    return cls(**_forgetting(name, params))
