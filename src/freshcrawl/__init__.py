"""freshcrawl: learn page change rates online and allocate a crawl budget to keep a copy fresh.

Subpackages: ``estimators`` (change-rate estimators, seed 001), ``allocation`` (optimal crawl rates),
``learning`` (synchronization bandits, seed 003; learning automata, seed 004), ``environments``
(replayed and synthetic pages, exact freshness metrics), ``policies`` and ``simulation``.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from freshcrawl.errors import (
    ConvergenceWarning,
    FreshcrawlError,
    FreshcrawlWarning,
    InfeasibleAllocation,
    InvalidObservation,
    TraceFormatError,
    UnknownNameError,
)
from freshcrawl.units import parse_rate

try:
    __version__ = version("freshcrawl")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

__all__ = [
    "__version__",
    "ConvergenceWarning",
    "FreshcrawlError",
    "FreshcrawlWarning",
    "InfeasibleAllocation",
    "InvalidObservation",
    "TraceFormatError",
    "UnknownNameError",
    "parse_rate",
]
