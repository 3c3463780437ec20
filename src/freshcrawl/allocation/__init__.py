"""Optimal visit rates: spend a crawl budget where it keeps pages fresh.

Maximise ``Σ_i w_i f(p_i; Δ_i)`` subject to ``Σ_i p_i = B``, per-page bounds and per-host politeness
caps, exactly, for the objectives of :mod:`freshcrawl.allocation.objectives`. The building blocks of
:func:`allocate` are public for solvers over partitioned pages (:mod:`freshcrawl.bulk`):
:class:`PageProblem` and its pass :meth:`PageProblem.rates`, the root-finder :func:`find_roots`, and
:func:`rates_at_root`.

Examples
--------
>>> from freshcrawl.allocation import allocate
>>> res = allocate([0.5, 1.0, 2.0], budget=3.0, objective="harmonic")
>>> round(float(res.p.sum()), 9), res.success
(3.0, True)
"""

from freshcrawl.allocation.objectives import (
    OBJECTIVE_NAMES,
    Detection,
    DetectionDiscrete,
    FreshnessPeriodic,
    FreshnessPoisson,
    Harmonic,
    Objective,
    SyncCost,
    get_objective,
)
from freshcrawl.allocation.problem import PageProblem, group_sums
from freshcrawl.allocation.result import AllocationResult, Status
from freshcrawl.allocation.solve import (
    KKT_ALARM,
    Roots,
    allocate,
    budget_sums,
    find_roots,
    host_bounds,
    kkt_residual,
    make_problem,
    rates_at_root,
)

__all__ = [
    "KKT_ALARM",
    "OBJECTIVE_NAMES",
    "AllocationResult",
    "Detection",
    "DetectionDiscrete",
    "FreshnessPeriodic",
    "FreshnessPoisson",
    "Harmonic",
    "Objective",
    "PageProblem",
    "Roots",
    "Status",
    "SyncCost",
    "allocate",
    "budget_sums",
    "find_roots",
    "get_objective",
    "group_sums",
    "host_bounds",
    "kkt_residual",
    "make_problem",
    "rates_at_root",
]
