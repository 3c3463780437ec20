"""Change-rate estimators of seed 001 (Avrachenkov, Patil, Thoppe), one class per estimator.

Each class holds the estimates of ``n_pages`` pages (default 1) and learns as river's models do:
``learn_one(page, changed, tau, p)`` adds one visit of one page, ``learn_many(pages, changed, tau, p)``
adds one visit of each listed page (or k visits of each, as a (k, m) array) all pages at once, and
``predict_one(page)``, ``predict_many(pages)`` and the array ``delta_`` (shape ``(n_pages,)``) read the
estimates; ``n_visits_`` counts the visits used per page. Both learning methods run the same update,
so a loop of ``learn_one`` equals one ``learn_many``. ``update`` is ``learn_many`` under the name the
batch callers use. Units: τ in days since the page's previous visit, p in visits per day, Δ̂ in changes
per day.

The paper's forms (``naive``, ``lln``, ``sa``, ``sam``) assume visits form a Poisson process of known rate
p; under periodic visits LLN, SA and SAM converge to (e^{Δτ} − 1)/τ, not Δ. The interval-aware forms
(``lln-interval``, ``sa-interval``, ``sam-interval``) and the likelihood-based ``mle``, ``mm``,
``mle-binned``, ``mm-binned`` stay consistent under Poisson, periodic and re-planned periodic visits.

==================  ======================  =================================  ===============
name                class                   rule                               consistent under
==================  ======================  =================================  ===============
``naive``           Naive                   p·Î/k (Sec. 3.4)                   never (biased)
``naive-interval``  NaiveInterval           Î / Στ                             never (biased)
``lln``             LLN                     eq. (1)                            Poisson visits
``lln-interval``    LLNInterval             ratio form of eq. (15)             any
``sa``              SA                      eq. (2)                            Poisson visits
``sa-interval``     SAInterval              residual I − (1 − e^{−yτ})         any
``sam``             SAM                     eq. (3), (10)                      Poisson visits
``sam-interval``    SAMInterval             SA-interval + momentum             any
``mle``             MLE                     eq. (15), exact, O(k) per solve    any
``mm``              MomentMatching          Sec. 3.4, exact, O(k) per solve    any
``mle-binned``      MLEBinned               eq. (15) on interval slots, O(1)   any
``mm-binned``       MomentMatchingBinned    MM on interval slots, O(1)         any
==================  ======================  =================================  ===============

Forgetting: ``mle-binned`` and ``mm-binned`` take ``half_life`` (days; default None, no forgetting). Each
page's interval statistics then decay by 2^{-τ/half_life} before a visit τ days after the previous one is
added, so the estimate follows a change rate that drifts or switches, from an effective sample of about
half_life/(τ ln 2) visits (:data:`FORGETTING_NAMES`). ``sa-interval`` takes it too, as a floor
1 − 2^{-τ/half_life} on its step size (constant-step tracking).
"""

from __future__ import annotations

from typing import Any

from freshcrawl.errors import UnknownNameError
from freshcrawl.estimators.base import BatchEstimator, Estimator
from freshcrawl.estimators.lln import LLN, LLNInterval
from freshcrawl.estimators.mle import MLE, MLEBinned, mle_path, solve_mle
from freshcrawl.estimators.moments import MomentMatching, MomentMatchingBinned, mm_path, solve_mm
from freshcrawl.estimators.naive import Naive, NaiveInterval
from freshcrawl.estimators.sa import SA, SAInterval
from freshcrawl.estimators.sam import SAM, SAMInterval

__all__ = [
    "CONSISTENT_NAMES",
    "ESTIMATORS",
    "ESTIMATOR_NAMES",
    "FORGETTING_NAMES",
    "LLN",
    "MLE",
    "SA",
    "SAM",
    "BatchEstimator",
    "Estimator",
    "LLNInterval",
    "MLEBinned",
    "MomentMatching",
    "MomentMatchingBinned",
    "Naive",
    "NaiveInterval",
    "SAInterval",
    "SAMInterval",
    "make_batch_estimator",
    "make_estimator",
    "mle_path",
    "mm_path",
    "solve_mle",
    "solve_mm",
]

#: name -> estimator class.
ESTIMATORS: dict[str, type[Estimator]] = {
    "naive": Naive,
    "lln": LLN,
    "sa": SA,
    "sam": SAM,
    "mle": MLE,
    "mm": MomentMatching,
    "naive-interval": NaiveInterval,
    "lln-interval": LLNInterval,
    "sa-interval": SAInterval,
    "sam-interval": SAMInterval,
    "mle-binned": MLEBinned,
    "mm-binned": MomentMatchingBinned,
}

#: Every registered estimator name.
ESTIMATOR_NAMES: tuple[str, ...] = tuple(ESTIMATORS)

#: Names of the estimators that stay consistent when visits are periodic or re-planned.
CONSISTENT_NAMES: tuple[str, ...] = (
    "lln-interval",
    "sa-interval",
    "sam-interval",
    "mle",
    "mm",
    "mle-binned",
    "mm-binned",
)

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


def make_estimator(name: str, n_pages: int = 1, **params: Any) -> Estimator:
    """Build the estimator registered as ``name`` for ``n_pages`` pages.

    Parameters
    ----------
    name : str
        One of :data:`ESTIMATOR_NAMES`.
    n_pages : int, default=1
        Number of pages, >= 1.
    **params
        Keyword parameters of the class (``delta0``, ``alpha``, ``eta``, ``beta``, ``omega``, ``n_bins``,
        ``bin_ratio``, ``half_life``). ``half_life=None`` is accepted by every estimator (no forgetting);
        a number of days only by :data:`FORGETTING_NAMES`.

    Returns
    -------
    Estimator
        ``learn_one``, ``learn_many``, ``predict_one``; ``delta_`` and ``n_visits_`` of shape (n_pages,).

    Raises
    ------
    UnknownNameError
        If ``name`` is not registered (the message lists the known names).
    TypeError, ValueError
        If a parameter is not accepted by the class or out of range (a ``half_life`` for an estimator
        that cannot forget raises ValueError).

    Examples
    --------
    >>> est = make_estimator("sa-interval", 3, eta=0.8)
    >>> est.learn_many([0, 2], [True, False], tau=[1.0, 1.0], p=[1.0, 1.0])
    >>> est.delta_.shape, est.n_visits_.tolist()
    ((3,), [1, 0, 1])
    >>> est = make_estimator("lln")
    >>> est.learn_one(0, True, tau=1.0, p=1.0)
    >>> est.predict_one(0)
    1.0
    >>> make_estimator("mle-binned", 3, half_life=90.0).half_life
    90.0
    """
    try:
        cls = ESTIMATORS[name]
    except (KeyError, TypeError):
        raise UnknownNameError(
            f"unknown estimator {name!r}; known: {', '.join(ESTIMATOR_NAMES)}"
        ) from None
    return cls(n_pages, **_forgetting(name, params))


#: :func:`make_estimator` under the name the batch callers use.
make_batch_estimator = make_estimator
