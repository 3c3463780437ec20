"""The result object of :func:`freshcrawl.allocation.allocate`."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np
from numpy.typing import NDArray

__all__ = ["Status", "AllocationResult"]


class Status(IntEnum):
    """Outcome of an allocation solve.

    ``CONVERGED`` (0): the multipliers were found to the requested tolerance and the rates meet the
    budget, the bounds and the caps. ``MAX_ITER`` (1): a root-find stopped at its iteration limit;
    the rates still meet the bounds and caps but the budget and the KKT conditions only approximately
    (see ``kkt_residual``). ``NOT_OPTIMAL`` (2): the root-finds stopped within tolerance but the
    returned rates miss the KKT conditions by more than 1e-6 relative: a defect of the solver, reported
    rather than hidden (please report the instance).
    """

    CONVERGED = 0
    MAX_ITER = 1
    NOT_OPTIMAL = 2


@dataclass(frozen=True, slots=True)
class AllocationResult:
    """Optimal visit rates and the certificate of their optimality.

    Attributes
    ----------
    p : ndarray of float, shape (n_pages,)
        Visit rates, visits per day.
    lam : float
        Multiplier λ of the budget constraint: the marginal objective value of one more visit per day
        (objective units per visit/day). 0 when the budget exceeds what pages with a positive
        marginal value can absorb.
    host_lam : ndarray of float, shape (n_hosts,) or None
        Multiplier λ_h = λ + ν_h >= λ in force on each host (ν_h the cap's multiplier); ``inf`` for a
        host whose cap equals the sum of its pages' lower bounds. None when no hosts were given.
    objective : float
        Σ_i w_i f(p_i; Δ_i).
    status : Status
        ``Status.CONVERGED`` (0): optimal to the tolerance; ``Status.MAX_ITER`` (1): a root-find stopped at
        its iteration limit (bounds and caps hold, the budget and KKT conditions only approximately);
        ``Status.NOT_OPTIMAL`` (2): the rates miss the KKT conditions by more than 1e-6 relative (a
        solver defect, reported with a ``ConvergenceWarning``). See :class:`Status`.
    message : str
        Human-readable description of the outcome.
    n_iter : int
        Passes over the pages made by the root-finds (per-host and global).
    kkt_residual : float
        Largest relative violation of the optimality conditions: stationarity |w f'(p) - λ_i| / λ_i
        inside the bounds (sign conditions at the bounds), the budget |Σp - B| / B and host caps.
    """

    p: NDArray[np.float64]
    lam: float
    host_lam: NDArray[np.float64] | None
    objective: float
    status: Status
    message: str
    n_iter: int
    kkt_residual: float

    @property
    def success(self) -> bool:
        """True when ``status`` is ``Status.CONVERGED``."""
        return self.status == Status.CONVERGED
