"""Closed-loop recrawl simulation: policies against replayed or synthetic pages on a simulated clock.

``simulate(policy, env, budget)`` runs one policy; ``results_table`` and ``write_report`` summarise
several. See :mod:`freshcrawl.simulation.dispatch` for how the budget is guaranteed.
"""

from __future__ import annotations

from freshcrawl.simulation.dispatch import TokenBucket, periodic_visits, poisson_visits
from freshcrawl.simulation.engine import VISIT_PROCESSES, SimulationResult, simulate
from freshcrawl.simulation.report import results_table, timeseries_table, write_report

__all__ = [
    "VISIT_PROCESSES",
    "SimulationResult",
    "TokenBucket",
    "periodic_visits",
    "poisson_visits",
    "results_table",
    "simulate",
    "timeseries_table",
    "write_report",
]
