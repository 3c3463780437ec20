"""Environments: pages that change and answer visits, on a simulated or a real clock.

``ReplayEnvironment`` replays a real change history, ``PoissonEnvironment`` draws synthetic Poisson
changes; both measure exact freshness, age and harmonic-staleness integrals (``metrics``). ``Clock`` and
``Environment`` are the small interfaces a live crawler implements to drive the same policies.
"""

from __future__ import annotations

from freshcrawl.environments.base import Environment, SimulatedEnvironment
from freshcrawl.environments.clock import Clock, SimulatedClock, WallClock
from freshcrawl.environments.metrics import Integrals
from freshcrawl.environments.poisson import PoissonEnvironment
from freshcrawl.environments.replay import ReplayEnvironment

__all__ = [
    "Clock",
    "Environment",
    "Integrals",
    "PoissonEnvironment",
    "ReplayEnvironment",
    "SimulatedClock",
    "SimulatedEnvironment",
    "WallClock",
]
