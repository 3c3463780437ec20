"""Cost-generating processes of synchronization bandits and the policy cost J(r) (seed 003).

A synchronization bandit has K arms (cached pages). Arm k incurs an instantaneous cost ``c_k(τ)`` that
depends on the time τ since its last sync-mode play; the agent sees a sample only when it plays the arm.
Every process here is a *renewal* process: after a sync play the arm draws a fresh latent state (a
polynomial coefficient, the time of the next change, ...) that holds until the next sync play, so two plays
inside one inter-sync interval (a probe at τ_probe, then the sync at τ_sync) see correlated costs drawn from
the same state, exactly as a probe of Alg. 1 would.

Units: τ in time units (days when the arms are pages), rates r in plays per time unit; costs are in the
process's own cost unit, bounded by ``cost_bound`` (U of Assumption 1).

References
----------
.. [1] Kolobov, Bubeck, Zimmert, "Online Learning for Active Cache Synchronization", ICML 2020 (seed 003):
   Assumptions 1-3, Lemma 1 (eq. 7), Problem 1 (eq. 8), App. B (polynomial costs), App. C (Poisson costs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from freshcrawl._validation import check_int, check_array, check_interval, check_positive, check_rng
from freshcrawl.allocation import Objective, SyncCost, allocate
from freshcrawl.errors import InfeasibleAllocation

__all__ = [
    "SyncCostProcess",
    "PolynomialCost",
    "PoissonBinaryCost",
    "CustomCost",
    "policy_cost",
    "policy_cost_gradient",
    "SyncCostObjective",
    "SyncOptimum",
    "optimal_policy_cost",
]


@runtime_checkable
class SyncCostProcess(Protocol):
    """What a synchronization-bandit algorithm needs from an instance.

    Attributes
    ----------
    n_arms : int
        K, the number of arms.
    cost_bound : float
        U: every cost sample lies in ``[0, U]`` (Assumption 1 of seed 003).
    """

    n_arms: int
    cost_bound: float

    def mean_cost(self, tau: ArrayLike) -> NDArray[np.float64]:
        """c̄_k(τ) = E[c_k(τ)] per arm; ``tau`` broadcasts against shape (K,)."""

    def cumulative_mean_cost(self, tau: ArrayLike) -> NDArray[np.float64]:
        """C̄_k(τ) = ∫_0^τ c̄_k(s) ds per arm (eq. 3); ``tau`` broadcasts against shape (K,)."""

    def sample_pair(
        self,
        arms: NDArray[np.intp],
        tau_probe: NDArray[np.float64],
        tau_sync: NDArray[np.float64],
        rng: np.random.Generator,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Costs seen at τ_probe and at τ_sync ≥ τ_probe inside one fresh inter-sync interval of each arm."""


def _per_arm_tau(tau: ArrayLike, n_arms: int) -> NDArray[np.float64]:
    return np.broadcast_to(np.asarray(tau, dtype=np.float64), (n_arms,))


@dataclass(frozen=True, slots=True, eq=False)
class PolynomialCost:
    """Polynomial costs ``c_k(τ) = a_k τ^{p_k}`` with a noisy coefficient (App. B of seed 003).

    At every sync play the arm draws ``a_k ~ Uniform[ā_k (1 - noise), ā_k (1 + noise)]``, which holds until
    its next sync play, so ``c̄_k(τ) = ā_k τ^{p_k}`` and ``C̄_k(τ) = ā_k τ^{p_k + 1} / (p_k + 1)``.

    Parameters
    ----------
    a_bar : ndarray of float, shape (K,)
        Mean coefficients ā_k ≥ 0, cost units per (time unit)^{p_k}.
    p : ndarray of float, shape (K,)
        Exponents p_k in (0, 1].
    noise : float, default=0.1
        Relative half-width of the coefficient's uniform noise, in [0, 1].
    cost_bound : float, optional
        U, the largest cost a sample may take. Polynomial costs are unbounded in τ; the default is the
        largest sample possible at ``tau_max`` (``(1 + noise) max_k ā_k tau_max^{p_k}``), i.e. over the
        feasible region when ``tau_max = 1 / r_min``.
    tau_max : float, default=40.0
        Longest interval between sync plays (1 / r_min) used for the default ``cost_bound``, time units.

    Raises
    ------
    ValueError
        If shapes differ, K = 0, an ā_k is negative or not finite, a p_k is outside (0, 1], or ``noise``,
        ``cost_bound`` or ``tau_max`` is out of range.

    References
    ----------
    .. [1] Kolobov, Bubeck, Zimmert, ICML 2020 (seed 003), Sec. 8 and App. B.

    Examples
    --------
    >>> cost = PolynomialCost([1.0, 0.5], [0.5, 1.0], noise=0.0)
    >>> cost.cumulative_mean_cost(4.0).tolist()   # ā τ^{p+1} / (p+1)
    [5.333333333333333, 4.0]
    """

    a_bar: NDArray[np.float64]
    p: NDArray[np.float64]
    noise: float = 0.1
    cost_bound: float = float("nan")
    tau_max: float = 40.0

    def __init__(self, a_bar: ArrayLike, p: ArrayLike, *, noise: float = 0.1,
                 cost_bound: float | None = None, tau_max: float = 40.0) -> None:
        a_bar = check_array("a_bar", a_bar, low=0.0, unit="cost units")
        if a_bar.ndim != 1 or a_bar.size == 0:
            raise ValueError(f"a_bar must be a non-empty 1-d array (one entry per arm, K >= 1); got shape {a_bar.shape}")
        p = check_array("p", p, shape=a_bar.shape, low=0.0, low_inclusive=False, high=1.0)
        noise = check_interval("noise", noise, low=0.0, high=1.0)
        tau_max = check_positive("tau_max", tau_max, unit="time units")
        if cost_bound is None:
            cost_bound = float(np.max((1.0 + noise) * a_bar * tau_max**p))
            cost_bound = cost_bound if cost_bound > 0 else 1.0
        cost_bound = check_positive("cost_bound", cost_bound, unit="cost units")
        object.__setattr__(self, "a_bar", a_bar)
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "noise", noise)
        object.__setattr__(self, "cost_bound", cost_bound)
        object.__setattr__(self, "tau_max", tau_max)

    @property
    def n_arms(self) -> int:
        """K, the number of arms."""
        return int(self.a_bar.shape[0])

    @classmethod
    def generate(cls, n_arms: int, rng: np.random.Generator | int | None = None, *, noise: float = 0.1,
                 scale: float = 5.0, tau_max: float = 40.0) -> PolynomialCost:
        """Random instance of App. B: ``ā_k ~ U[0, 1]``, ``p_k = σ(scale · U[0, 1])`` (σ the logistic).

        Parameters
        ----------
        n_arms : int
            K ≥ 1.
        rng : numpy.random.Generator or int or None
            Randomness (a seed is passed to ``np.random.default_rng``).
        noise, scale : float
            Table 1 of seed 003 uses 0.1 and 5.
        tau_max : float
            1 / r_min of the instance (Table 1: 1 / 0.025 = 40), for the default ``cost_bound``.

        Raises
        ------
        ValueError
            If ``n_arms`` < 1 or ``scale`` is not finite and > 0.
        """
        n_arms = _check_n_arms(n_arms)
        scale = check_positive("scale", scale)
        rng = check_rng(rng)
        a_bar = rng.uniform(0.0, 1.0, n_arms)
        p = 1.0 / (1.0 + np.exp(-scale * rng.uniform(0.0, 1.0, n_arms)))
        return cls(a_bar, p, noise=noise, tau_max=tau_max)

    def mean_cost(self, tau: ArrayLike) -> NDArray[np.float64]:
        """c̄_k(τ) = ā_k τ^{p_k}, shape (K,)."""
        return self.a_bar * _per_arm_tau(tau, self.n_arms) ** self.p

    def cumulative_mean_cost(self, tau: ArrayLike) -> NDArray[np.float64]:
        """C̄_k(τ) = ā_k τ^{p_k+1} / (p_k + 1), shape (K,)."""
        return self.a_bar * _per_arm_tau(tau, self.n_arms) ** (self.p + 1.0) / (self.p + 1.0)

    def _policy_cost_fast(self, r: NDArray[np.float64]) -> float:
        """J(r) = (1/K) Σ ā r^{-p} / (p + 1) for rates r > 0 of shape (K,), unchecked."""
        return float(np.mean(self.a_bar * r ** -self.p / (self.p + 1.0)))

    def sample_pair(self, arms, tau_probe, tau_sync, rng):
        """Costs ``a τ_probe^{p}`` and ``a τ_sync^{p}`` with one coefficient draw per interval."""
        a_bar = self.a_bar[arms]
        a = a_bar * (1.0 + self.noise * rng.uniform(-1.0, 1.0, a_bar.shape[0]))
        p = self.p[arms]
        return a * tau_probe**p, a * tau_sync**p


@dataclass(frozen=True, slots=True, eq=False)
class PoissonBinaryCost:
    """Binary staleness of Poisson-changing pages (App. C of seed 003).

    ``c_k(τ) = 1`` if arm k's Poisson process of rate λ_k has produced at least one event in the τ since its
    last sync play, else 0. So ``c̄_k(τ) = 1 - e^{-λ_k τ}``, ``C̄_k(τ) = τ - (1 - e^{-λ_k τ}) / λ_k`` and
    ``J_k(r) = 1 - (r / λ_k)(1 - e^{-λ_k / r})``: one minus the freshness of periodic visits. U = 1.

    Parameters
    ----------
    lam : ndarray of float, shape (K,)
        Change rates λ_k > 0, events (changes) per time unit.

    Raises
    ------
    ValueError
        If ``lam`` is empty, not 1-d, or has an entry that is not finite and > 0.

    References
    ----------
    .. [1] Kolobov, Bubeck, Zimmert, ICML 2020 (seed 003), App. C.

    Examples
    --------
    >>> cost = PoissonBinaryCost([1.0])
    >>> round(float(cost.mean_cost(1.0)[0]), 6)          # 1 - e^{-1}
    0.632121
    """

    lam: NDArray[np.float64]
    cost_bound: float = 1.0

    def __init__(self, lam: ArrayLike) -> None:
        lam = check_array("lam", lam, low=0.0, low_inclusive=False, unit="changes per time unit")
        if lam.ndim != 1 or lam.size == 0:
            raise ValueError(f"lam must be a non-empty 1-d array (one entry per arm, K >= 1); got shape {lam.shape}")
        object.__setattr__(self, "lam", lam)
        object.__setattr__(self, "cost_bound", 1.0)

    @property
    def n_arms(self) -> int:
        """K, the number of arms."""
        return int(self.lam.shape[0])

    @classmethod
    def generate(cls, n_arms: int, rng: np.random.Generator | int | None = None, *, low: float = 0.005,
                 high: float = 5.0) -> PoissonBinaryCost:
        """Random instance of App. C: ``λ_k ~ Uniform[low, high]`` (seed 003: [0.005, 5.0]).

        Raises
        ------
        ValueError
            If ``n_arms`` < 1 or not ``0 < low <= high``.
        """
        n_arms = _check_n_arms(n_arms)
        low = check_positive("low", low, unit="changes per time unit")
        high = check_positive("high", high, unit="changes per time unit")
        if high < low:
            raise ValueError(f"high must be >= low = {low} changes per time unit; got {high!r}")
        return cls(check_rng(rng).uniform(low, high, n_arms))

    def mean_cost(self, tau: ArrayLike) -> NDArray[np.float64]:
        """c̄_k(τ) = 1 - e^{-λ_k τ}, shape (K,)."""
        return -np.expm1(-self.lam * _per_arm_tau(tau, self.n_arms))

    def cumulative_mean_cost(self, tau: ArrayLike) -> NDArray[np.float64]:
        """C̄_k(τ) = τ - (1 - e^{-λ_k τ}) / λ_k, shape (K,)."""
        tau = _per_arm_tau(tau, self.n_arms)
        x = self.lam * tau
        # τ (1 - (1 - e^{-x}) / x); expm1 keeps (1 - e^{-x}) / x accurate for small x, and C̄(0) = 0.
        with np.errstate(divide="ignore", invalid="ignore"):
            out = tau * (1.0 + np.expm1(-x) / x)
        return out if out.size and np.all(x > 0) else np.where(x > 0, out, 0.0)

    def _policy_cost_fast(self, r: NDArray[np.float64]) -> float:
        """J(r) = 1 - (1/K) Σ (r/λ)(1 - e^{-λ/r}) for rates r > 0 of shape (K,), unchecked."""
        return 1.0 + float(np.mean(np.expm1(-self.lam / r) * r / self.lam))

    def sample_pair(self, arms, tau_probe, tau_sync, rng):
        """1 if the first change after the sync (``Exp(λ_k)``) came at or before τ_probe, resp. τ_sync."""
        first_change = rng.exponential(1.0, arms.shape[0]) / self.lam[arms]
        return (first_change <= tau_probe).astype(np.float64), (first_change <= tau_sync).astype(np.float64)


@dataclass(frozen=True, slots=True, eq=False)
class CustomCost:
    """A user-supplied cost-generating process.

    Parameters
    ----------
    n_arms : int
        K ≥ 1.
    sample_pair : callable
        ``sample_pair(arms, tau_probe, tau_sync, rng) -> (c_probe, c_sync)``: the costs seen at τ_probe and
        at τ_sync ≥ τ_probe inside one fresh inter-sync interval of each arm (arrays of shape (m,)).
    cumulative_mean_cost : callable
        ``C̄(tau) -> ndarray (K,)``, ∫_0^τ c̄_k; needed for J (Lemma 1) and the exact optimum.
    mean_cost : callable
        ``c̄(tau) -> ndarray (K,)``, non-decreasing in τ (Assumption 3); needed for ∂J.
    cost_bound : float
        U; samples outside ``[0, U]`` are rejected by the algorithms.

    Raises
    ------
    ValueError
        If ``n_arms`` < 1 or ``cost_bound`` is not finite and > 0.
    TypeError
        If a function argument is not callable.

    Examples
    --------
    >>> import numpy as np
    >>> lin = CustomCost(
    ...     2, lambda arms, tp, ts, rng: (tp.copy(), ts.copy()),
    ...     cumulative_mean_cost=lambda tau: np.full(2, 0.5) * np.asarray(tau) ** 2,
    ...     mean_cost=lambda tau: np.full(2, 1.0) * np.asarray(tau), cost_bound=100.0)
    >>> float(policy_cost(lin, [1.0, 2.0]))   # (1/K) Σ r C̄(1/r) = (0.5 + 0.25) / 2
    0.375
    """

    n_arms: int
    sample_pair: Callable
    cumulative_mean_cost: Callable
    mean_cost: Callable
    cost_bound: float

    def __init__(self, n_arms: int, sample_pair: Callable, *, cumulative_mean_cost: Callable,
                 mean_cost: Callable, cost_bound: float) -> None:
        for name, fn in (("sample_pair", sample_pair), ("cumulative_mean_cost", cumulative_mean_cost),
                         ("mean_cost", mean_cost)):
            if not callable(fn):
                raise TypeError(f"{name} must be callable; got {type(fn).__name__}")
        object.__setattr__(self, "n_arms", _check_n_arms(n_arms))
        object.__setattr__(self, "sample_pair", sample_pair)
        object.__setattr__(self, "cumulative_mean_cost", cumulative_mean_cost)
        object.__setattr__(self, "mean_cost", mean_cost)
        object.__setattr__(self, "cost_bound", check_positive("cost_bound", cost_bound, unit="cost units"))


def _check_n_arms(n_arms: object) -> int:
    return check_int("n_arms", n_arms, low=1, what=" (K, the number of arms)")


def _check_rates(process: SyncCostProcess, r: ArrayLike) -> NDArray[np.float64]:
    return check_array("r", r, shape=(process.n_arms,), low=0.0, low_inclusive=False, unit="plays per time unit")


def policy_cost(process: SyncCostProcess, r: ArrayLike) -> float:
    """Policy cost of periodic sync plays at rates r, Lemma 1 (eq. 7) of seed 003.

    ``J(r) = (1/K) Σ_k r_k C̄_k(1 / r_k)``: the long-run average cost per arm and time unit.

    Parameters
    ----------
    process : SyncCostProcess
        The instance (K arms).
    r : ndarray of float, shape (K,)
        Sync-mode play rates, plays per time unit, all > 0.

    Returns
    -------
    float
        J(r), cost units per arm and time unit.

    Raises
    ------
    ValueError
        If ``r`` has the wrong shape or an entry that is not finite and > 0.

    Examples
    --------
    >>> round(policy_cost(PoissonBinaryCost([1.0, 1.0]), [1.0, 1.0]), 6)   # 1 - (1 - e^{-1})
    0.367879
    """
    r = _check_rates(process, r)
    return float(np.mean(r * process.cumulative_mean_cost(1.0 / r)))


def policy_cost_gradient(process: SyncCostProcess, r: ArrayLike) -> NDArray[np.float64]:
    """∂J/∂r_k = (1/K) [C̄_k(1/r_k) - c̄_k(1/r_k) / r_k] (proof of Lemma 1, seed 003); all entries ≤ 0.

    Parameters are those of :func:`policy_cost`.

    Returns
    -------
    ndarray of float, shape (K,)
        Cost units per arm per (plays per time unit), times time unit.

    Raises
    ------
    ValueError
        If ``r`` has the wrong shape or an entry that is not finite and > 0.
    """
    r = _check_rates(process, r)
    tau = 1.0 / r
    return (process.cumulative_mean_cost(tau) - tau * process.mean_cost(tau)) / process.n_arms


class SyncCostObjective(Objective):
    """The allocation objective ``f_k(r) = -r C̄_k(1/r)`` of any :class:`SyncCostProcess` (seed 003, Lemma 1).

    Maximising ``Σ_k f_k(r_k)`` minimises ``K J(r)``. ``f_k'(r) = -C̄_k(1/r) + c̄_k(1/r) / r >= 0`` (the
    proof of Lemma 1 gives ``∂J_k/∂r = C̄(1/r) - c̄(1/r)/r``). The per-arm parameters live in the process;
    the solver's ``delta`` is ignored.

    Parameters
    ----------
    process : SyncCostProcess
        The instance.

    Examples
    --------
    >>> obj = SyncCostObjective(PoissonBinaryCost([1.0]))
    >>> round(float(obj.value(1.0, None)[0]), 6), round(float(obj.derivative(1.0, None)[0]), 6)
    (-0.367879, 0.264241)
    """

    name = "sync-cost"

    def __init__(self, process: SyncCostProcess) -> None:
        self.process = process

    def value(self, p, delta=None):
        """f_k(r) = -r C̄_k(1/r), shape (K,); r in plays per time unit."""
        r = np.asarray(p, dtype=np.float64)
        return -r * self.process.cumulative_mean_cost(1.0 / r)

    def derivative(self, p, delta=None):
        """f_k'(r) = -C̄_k(1/r) + c̄_k(1/r) / r, shape (K,)."""
        r = np.asarray(p, dtype=np.float64)
        tau = 1.0 / r
        return -self.process.cumulative_mean_cost(tau) + self.process.mean_cost(tau) * tau

    def _n_params(self) -> int | None:
        return self.process.n_arms

    def __repr__(self) -> str:
        return f"SyncCostObjective(<{self.process.n_arms} arms>)"


@dataclass(frozen=True, slots=True)
class SyncOptimum:
    """Exact optimum of Problem 1 of seed 003 for a known instance.

    Attributes
    ----------
    r : ndarray of float, shape (K,)
        Optimal sync rates, plays per time unit.
    j_star : float
        J(r*), cost units per arm and time unit.
    success : bool
        Whether the allocation solver converged.
    message : str
        The solver's message (budget used, KKT residual).
    """

    r: NDArray[np.float64]
    j_star: float
    success: bool
    message: str


def optimal_policy_cost(process: SyncCostProcess, budget: float, r_min: float, r_max: float) -> SyncOptimum:
    """J* of Problem 1 (eq. 8, seed 003): minimise J(r) over ``{r ∈ [r_min, r_max]^K : Σ r = B}``.

    Solved exactly by :func:`freshcrawl.allocation.allocate` (one multiplier, KKT) with the
    synchronization-cost objective: the closed-form kernels of ``SyncCost.polynomial`` and
    ``SyncCost.poisson`` for the two families of the paper, :class:`SyncCostObjective` (numerical
    inverse of the marginal) for any other process. For the exploration-constrained optimum over K_ε
    pass ``B / (1 + ε)`` and ``r_max / (1 + ε)``.

    Parameters
    ----------
    process : SyncCostProcess
        The instance (needs ``cumulative_mean_cost`` and ``mean_cost``).
    budget : float
        B, plays per time unit; ``K r_min <= B <= K r_max``.
    r_min, r_max : float
        Rate bounds, plays per time unit.

    Returns
    -------
    SyncOptimum

    Raises
    ------
    InfeasibleAllocation
        If B is outside ``[K r_min, K r_max]``.
    ValueError
        If a bound is not finite and > 0 or ``r_min >= r_max``.

    Examples
    --------
    >>> opt = optimal_policy_cost(PoissonBinaryCost([0.5, 2.0]), 2.0, 0.1, 5.0)
    >>> round(float(opt.r.sum()), 9), opt.success
    (2.0, True)
    """
    r_min = check_positive("r_min", r_min, unit="plays per time unit")
    r_max = check_positive("r_max", r_max, unit="plays per time unit")
    if r_min >= r_max:
        raise ValueError(f"r_min must be < r_max = {r_max!r} plays per time unit; got r_min={r_min!r}")
    if isinstance(process, PolynomialCost):
        objective: Objective = SyncCost.polynomial(process.a_bar, process.p)
    elif isinstance(process, PoissonBinaryCost):
        objective = SyncCost.poisson(process.lam)
    else:
        objective = SyncCostObjective(process)
    k = process.n_arms
    if not (k * r_min * (1 - 1e-12) <= budget <= k * r_max * (1 + 1e-12)):
        raise InfeasibleAllocation(
            f"budget B must be in [K r_min, K r_max] = [{k * r_min!r}, {k * r_max!r}] plays per time unit "
            f"for K={k}; got {budget!r}"
        )
    res = allocate(None, budget, objective=objective, p_min=r_min, p_max=r_max)
    return SyncOptimum(res.p, policy_cost(process, res.p), bool(res.success), res.message)
