"""Optimal visit rates: spend a crawl budget where it keeps pages fresh.

Maximise ``Σ_i w_i f(p_i; Δ_i)`` subject to ``Σ_i p_i = B``, per-page bounds and per-host politeness
caps, exactly, for the objectives of :mod:`freshcrawl.allocation.objectives`.

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
from freshcrawl.allocation.result import AllocationResult, Status
from freshcrawl.allocation.solve import allocate

__all__ = [
    "allocate", "AllocationResult", "Status",
    "Objective", "FreshnessPoisson", "FreshnessPeriodic", "Harmonic", "Detection", "DetectionDiscrete", "SyncCost",
    "OBJECTIVE_NAMES", "get_objective",
]
