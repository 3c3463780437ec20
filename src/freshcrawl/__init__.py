"""freshcrawl: learn page change rates online and allocate a crawl budget to keep a copy fresh.

The top level holds what a caller of the allocation needs: :func:`allocate` (optimal visit rates under a
budget, bounds and host caps), its :class:`AllocationResult` and :class:`Status`, :func:`parse_rate`
(``"1000/day"`` to visits per day) and the exceptions and warnings of :mod:`freshcrawl.errors`. The rest
is in the subpackages: ``estimators`` (change-rate estimators, seed 001), ``allocation`` (objectives and
the solver), ``learning`` (synchronization bandits, seed 003; learning automata, seed 004),
``scheduling`` (EDF dispatch), ``environments`` (replayed and synthetic pages, exact freshness metrics),
``policies``, ``simulation``, ``traces`` (files), ``experiments`` (the seeds' figures) and ``cli``.

``allocate``, ``AllocationResult`` and ``Status`` are imported on first use, so that ``import freshcrawl``
(and ``freshcrawl --help``) does not load numba.
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

_LAZY = {"allocate": "freshcrawl.allocation", "AllocationResult": "freshcrawl.allocation",
         "Status": "freshcrawl.allocation"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'freshcrawl' has no attribute {name!r}")


__all__ = [
    "__version__",
    "allocate",
    "AllocationResult",
    "Status",
    "ConvergenceWarning",
    "FreshcrawlError",
    "FreshcrawlWarning",
    "InfeasibleAllocation",
    "InvalidObservation",
    "TraceFormatError",
    "UnknownNameError",
    "parse_rate",
]
