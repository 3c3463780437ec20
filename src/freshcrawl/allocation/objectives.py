"""Per-page objectives f(p; Δ) of the optimal visit-rate problem.

The solver maximises ``Σ_i w_i f(p_i; Δ_i)`` subject to ``Σ_i p_i = B`` and bounds. Each objective is
concave and nondecreasing in the visit rate p (visits per day). A new objective needs only
``value(p, delta)`` and ``derivative(p, delta)``; a closed-form ``inverse_marginal`` makes it faster.
The built-in objectives are solved by the vectorised closed forms of their inverse marginals.

| name | f(p; Δ) | source |
|---|---|---|
| ``"freshness-poisson"`` | p / (p + Δ) | Azar et al. 2018; seed 001, Sec. 5, F(p) |
| ``"freshness-periodic"`` | (p / Δ)(1 - exp(-Δ / p)) | Cho & Garcia-Molina 2003 |
| ``"harmonic"`` | log(p / (p + Δ)) | Kolobov et al. 2019; seed 001, Sec. 5, F̃(p) |
| ``"detection"`` | p (1 - exp(-Δ / p)) | seed 004, Sec. 4.1, x d(x) with q = exp(-Δ) |
| ``"detection-discrete"`` | x (1 - q^(1/x)), q = 1 - Δ | seed 004, Sec. 4.1 |
| :class:`SyncCost` | -r C̄(1/r) | seed 003, Lemma 1, eq. (7) |
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from freshcrawl._validation import check_array, check_int
from freshcrawl.allocation import _kinds as Q
from freshcrawl.errors import UnknownNameError

__all__ = [
    "Objective",
    "FreshnessPoisson",
    "FreshnessPeriodic",
    "Harmonic",
    "Detection",
    "DetectionDiscrete",
    "SyncCost",
    "OBJECTIVE_NAMES",
    "get_objective",
]

_ONE = 1.0


def _pair(p: ArrayLike, delta: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64], tuple]:
    p_arr, d_arr = np.broadcast_arrays(np.asarray(p, dtype=np.float64), np.asarray(delta, dtype=np.float64))
    return np.ascontiguousarray(p_arr.ravel()), np.ascontiguousarray(d_arr.ravel()), p_arr.shape


class Objective:
    """A concave per-page objective f(p; Δ), nondecreasing in the visit rate p.

    Subclass it and define :meth:`value` and :meth:`derivative`; define :meth:`inverse_marginal`
    too when a closed form exists. Objectives whose per-page parameters are more than Δ hold them as
    arrays of shape (n_pages,) and say so in their docstring.

    Attributes
    ----------
    name : str
        The objective's name (one of :data:`OBJECTIVE_NAMES` for the built-in ones).

    Examples
    --------
    >>> import numpy as np
    >>> class Sqrt(Objective):
    ...     name = "sqrt"
    ...     def value(self, p, delta):
    ...         return np.sqrt(p * delta)
    ...     def derivative(self, p, delta):
    ...         return 0.5 * np.sqrt(delta / p)
    >>> from freshcrawl.allocation import allocate
    >>> res = allocate([1.0, 4.0], 5.0, objective=Sqrt())
    >>> np.round(res.p, 6)
    array([1., 4.])
    """

    name: str = "custom"
    #: Kind code of a built-in objective (freshcrawl.allocation._kinds) (None: solved through value/derivative in numpy).
    _kind: int | None = None
    #: Constant added to the kind's f (e.g. -1 for the binary Poisson synchronization cost).
    _offset: float = 0.0

    def value(self, p: ArrayLike, delta: ArrayLike) -> NDArray[np.float64]:
        """f(p; Δ) per page; p in visits per day, Δ in changes per day; shape of the broadcast."""
        if self._kind is None:
            raise NotImplementedError(f"{type(self).__name__} must define value(p, delta)")
        p_arr, d_arr, shape = _pair(p, delta)
        a, b = self._params(d_arr)
        return (Q.value(self._kind, p_arr, a, b) + self._offset).reshape(shape)

    def derivative(self, p: ArrayLike, delta: ArrayLike) -> NDArray[np.float64]:
        """f'(p; Δ) = ∂f/∂p per page, in value per (visit per day); shape of the broadcast."""
        if self._kind is None:
            raise NotImplementedError(f"{type(self).__name__} must define derivative(p, delta)")
        p_arr, d_arr, shape = _pair(p, delta)
        a, b = self._params(d_arr)
        return np.broadcast_to(Q.marginal(self._kind, p_arr, 1.0, a, b), p_arr.shape).reshape(shape)

    def inverse_marginal(self, lam_over_w: ArrayLike, delta: ArrayLike) -> NDArray[np.float64]:
        """The rate p >= 0 with f'(p; Δ) = λ/w (0 when f'(0) <= λ/w), visits per day.

        Optional: objectives without it are inverted numerically.
        """
        if self._kind is None:
            raise NotImplementedError
        lam_arr, d_arr, shape = _pair(lam_over_w, delta)
        a, b = self._params(d_arr)
        p = Q.response(self._kind, lam_arr, 1.0, a, b, 0.0, np.inf)[0]
        return np.broadcast_to(p, lam_arr.shape).reshape(shape)

    # -- solver hooks ------------------------------------------------------------------------------
    def _params(self, delta: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64] | float]:
        """The kind's parameters: a of shape (n,), b of shape (n,) or a float."""
        return delta, _ONE

    def _n_params(self) -> int | None:
        """Number of pages the objective holds parameters for (None: uses only Δ)."""
        return None

    def _complete(self) -> str | None:
        """How a completely observed page counts: "log" (harmonic), "linear" (freshness) or None."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class FreshnessPoisson(Objective):
    """Freshness of a page visited as a Poisson process: f(p; Δ) = p / (p + Δ).

    The expected fraction of time the local copy is fresh when visits and changes are independent
    Poisson processes of rates p and Δ. Inverse marginal ``p = sqrt(wΔ/λ) - Δ`` (0 when λ >= w/Δ).
    A page with Δ = 0 is always fresh (f = 1) and has zero marginal value.

    References
    ----------
    .. [1] Azar, Horvitz, Lubetzky, Peres, Shahaf, "Tractable near-optimal policies for crawling",
       PNAS 115(32), 2018; used in seed 001 (Avrachenkov, Patil, Thoppe), Sec. 5, F(p).

    Examples
    --------
    >>> FreshnessPoisson().value([1.0, 3.0], 1.0)
    array([0.5 , 0.75])
    """

    name = "freshness-poisson"
    _kind = Q.POISSON

    def _complete(self) -> str | None:
        return "linear"


class FreshnessPeriodic(Objective):
    """Freshness of a page visited periodically: f(p; Δ) = (p/Δ)(1 - exp(-Δ/p)).

    The inverse marginal has a Lambert-W form: with x = Δ/p, ``1 - (1 + x) e^{-x} = λΔ/w``, so
    ``x = -1 - W_{-1}(-(1 - λΔ/w)/e)``. Pages with ``λΔ/w >= 1`` get p = 0 (hopelessly fast pages are
    not worth visiting).

    References
    ----------
    .. [1] Cho, Garcia-Molina, "Effective page refresh policies for web crawlers", ACM TODS 28(4), 2003.

    Examples
    --------
    >>> round(float(FreshnessPeriodic().value(1.0, 1.0)), 6)
    0.632121
    """

    name = "freshness-periodic"
    _kind = Q.PERIODIC

    def _complete(self) -> str | None:
        return "linear"


class Harmonic(Objective):
    """Harmonic staleness under Poisson visits: f(p; Δ) = log(p / (p + Δ)).

    Inverse marginal ``p = (-Δ + sqrt(Δ² + 4wΔ/λ)) / 2``; every changing page with w > 0 gets p > 0.
    A page with Δ = 0 has f = 0 and zero marginal value.

    References
    ----------
    .. [1] Kolobov, Peres, Lu, Horvitz, "Staying up to date with online content changes using
       reinforcement learning for scheduling", NeurIPS 2019; seed 001, Sec. 5, F̃(p).

    Examples
    --------
    >>> round(float(Harmonic().value(1.0, 1.0)), 6)
    -0.693147
    """

    name = "harmonic"
    _kind = Q.HARMONIC

    def _complete(self) -> str | None:
        return "log"


class Detection(Objective):
    """Changes detected per unit time: f(p; Δ) = p (1 - exp(-Δ/p)).

    A visit detects a change when at least one happened since the previous visit (probability
    ``1 - e^{-Δ/p}`` for periodic visits). Seed 004's ``x d(x) = x (1 - q^{1/x})`` with q = e^{-Δ}.
    Pages with ``λ >= w`` get p = 0.

    References
    ----------
    .. [1] Granmo, Oommen, "Learning automata-based solutions to the optimal web polling problem
       modelled as a nonlinear fractional knapsack problem", Sec. 4.1 (seed 004).

    Examples
    --------
    >>> round(float(Detection().value(1.0, 1.0)), 6)
    0.632121
    """

    name = "detection"
    _kind = Q.DETECTION


class DetectionDiscrete(Objective):
    """Changes detected per time step, discrete form of seed 004: f(x) = x (1 - q^{1/x}).

    A page changes in each time step with probability ``1 - q``; polling it every 1/x steps detects
    new content with probability ``d(x) = 1 - q^{1/x}`` (seed 004, Sec. 4.1). ``delta`` is the
    per-step change probability ``1 - q`` in [0, 1], unless the per-page q is given here.

    Parameters
    ----------
    q : array_like of float, shape (n_pages,), optional
        Probability that a page stays unchanged during one time step, in [0, 1]. When given, the
        ``delta`` passed to the solver is ignored.

    Raises
    ------
    ValueError
        If q (or delta, used as 1 - q) is outside [0, 1] or NaN.

    Notes
    -----
    Identical to :class:`Detection` with Δ = -log q changes per step; q = 0 (a change every step)
    gives f(x) = x.

    Examples
    --------
    >>> round(float(DetectionDiscrete().value(1.0 / 3.0, 0.5)) * 3, 12)  # seed 004: 1 - 0.5^3
    0.875
    """

    name = "detection-discrete"
    _kind = Q.DETECTION

    def __init__(self, q: ArrayLike | None = None) -> None:
        self.q = None if q is None else check_array("q", q, low=0.0, high=1.0, unit="(probability)")

    def _params(self, delta):
        if self.q is not None:
            q = self.q
        else:
            check_array("delta", delta, low=0.0, high=1.0, unit="(change probability per step)")
            q = 1.0 - delta
        with np.errstate(divide="ignore"):
            return -np.log(q), _ONE

    def _n_params(self) -> int | None:
        return None if self.q is None else self.q.shape[0]

    def __repr__(self) -> str:
        return "DetectionDiscrete()" if self.q is None else f"DetectionDiscrete(q=<{self.q.shape[0]} pages>)"


class SyncCost(Objective):
    """Negative synchronization cost of seed 003: f(r) = -r C̄(1/r) (Lemma 1, eq. (7)).

    An item synchronised every 1/r days incurs cost at rate c̄(τ) at time τ after its last
    synchronisation; ``C̄(τ) = ∫_0^τ c̄`` (eq. (3)). Maximising Σ w f(r) minimises the policy cost
    ``J(r) = (1/K) Σ r_k C̄_k(1/r_k)`` of Problem 1; the derivative is ``-C̄(1/r) + c̄(1/r)/r``.
    The per-page parameters live in the object; the solver's ``delta`` is ignored (pass ``None``).

    Parameters
    ----------
    cost_integral : callable
        ``cost_integral(tau) -> C̄(τ)``, tau an ndarray of shape (n_pages,) in days; returns shape
        (n_pages,), cost.
    cost_rate : callable
        ``cost_rate(tau) -> c̄(τ)``, the mean cost rate, shape (n_pages,), cost per day; nondecreasing.
    n_pages : int
        Number of items the callables describe.

    See Also
    --------
    SyncCost.polynomial, SyncCost.poisson : the two cost families of seed 003's experiments.

    References
    ----------
    .. [1] Kolobov, Bubeck, Zimmert, "Online learning for active cache synchronization", ICML 2020,
       Lemma 1 and Problem 1 (seed 003).

    Examples
    --------
    >>> import numpy as np
    >>> cost = SyncCost(lambda tau: tau ** 2 / 2, lambda tau: tau, n_pages=2)  # c(τ) = τ
    >>> cost.value(np.array([1.0, 2.0]), None)
    array([-0.5 , -0.25])
    """

    name = "sync-cost"

    def __init__(
        self,
        cost_integral: Callable[[NDArray[np.float64]], NDArray[np.float64]],
        cost_rate: Callable[[NDArray[np.float64]], NDArray[np.float64]],
        *,
        n_pages: int,
    ) -> None:
        if not callable(cost_integral) or not callable(cost_rate):
            raise TypeError("cost_integral and cost_rate must be callables of tau (days)")
        check_int("n_pages", n_pages, low=1)
        self.cost_integral = cost_integral
        self.cost_rate = cost_rate
        self.n_pages = int(n_pages)

    @classmethod
    def polynomial(cls, a: ArrayLike, p: ArrayLike) -> SyncCost:
        """Polynomial costs c_k(τ) = a_k τ^{p_k} (seed 003, Sec. 8 and App. B).

        Then ``C̄_k(τ) = a_k τ^{p_k+1} / (p_k + 1)``, ``J_k(r) = a_k r^{-p_k} / (p_k + 1)`` and the
        optimal rate has the closed form ``r = (w a p / ((p + 1) λ))^{1/(p+1)}``.

        Parameters
        ----------
        a : array_like of float, shape (n_pages,)
            Cost scale a_k >= 0 (cost per day^(p_k+1)).
        p : array_like of float, shape (n_pages,) or scalar
            Exponent p_k > 0.

        Raises
        ------
        ValueError
            If a is negative, p is not > 0, or either is NaN or inf.

        Examples
        --------
        >>> cost = SyncCost.polynomial([1.0, 1.0], 0.5)
        >>> cost.policy_cost([1.0, 4.0])  # (1/2)(1/1.5 + 0.5/1.5)
        0.5
        """
        a_arr = check_array("a", np.atleast_1d(np.asarray(a, dtype=np.float64)), low=0.0)
        p_arr = check_array("p", np.broadcast_to(np.asarray(p, dtype=np.float64), a_arr.shape), low=0.0,
                            low_inclusive=False)
        return _PolynomialSyncCost(a_arr, p_arr)

    @classmethod
    def poisson(cls, lam: ArrayLike) -> SyncCost:
        """Binary Poisson costs: c_k(τ) = 1 if a change happened in the τ since the last sync.

        Changes arrive at rate λ_k (seed 003, App. C): ``c̄(τ) = 1 - e^{-λτ}``,
        ``C̄(τ) = τ - (1 - e^{-λτ})/λ`` and ``J_k(r) = 1 - (r/λ)(1 - e^{-λ/r})``, one minus the
        periodic freshness; solved with the same Lambert-W inverse.

        Parameters
        ----------
        lam : array_like of float, shape (n_pages,)
            Change rate λ_k >= 0, changes per day.

        Raises
        ------
        ValueError
            If lam is negative, NaN or inf.

        Examples
        --------
        >>> round(SyncCost.poisson([1.0]).policy_cost([1.0]), 6)  # 1 - (1 - 1/e)
        0.367879
        """
        return _PoissonSyncCost(check_array("lam", np.atleast_1d(np.asarray(lam, dtype=np.float64)), low=0.0))

    def value(self, p, delta=None):
        if self._kind is not None:
            return super().value(p, np.zeros(self.n_pages))
        r = np.asarray(p, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            return -r * self.cost_integral(1.0 / r)

    def derivative(self, p, delta=None):
        if self._kind is not None:
            return super().derivative(p, np.zeros(self.n_pages))
        r = np.asarray(p, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            tau = 1.0 / r
            return -self.cost_integral(tau) + self.cost_rate(tau) * tau

    def inverse_marginal(self, lam_over_w, delta=None):
        if self._kind is None:
            raise NotImplementedError
        return super().inverse_marginal(lam_over_w, np.zeros(self.n_pages))

    def policy_cost(self, r: ArrayLike) -> float:
        """Policy cost ``J(r) = (1/K) Σ_k r_k C̄_k(1/r_k)`` of seed 003, eq. (7).

        Parameters
        ----------
        r : array_like of float, shape (n_pages,)
            Synchronisation rates, per day.

        Returns
        -------
        float
            Average cost per item per day. With unit weights and the solver's optimum,
            ``J* = -result.objective / n_pages``.
        """
        r_arr = check_array("r", r, shape=(self.n_pages,), low=0.0, low_inclusive=False)
        return float(-np.mean(self.value(r_arr)))

    def _n_params(self) -> int | None:
        return self.n_pages

    def __repr__(self) -> str:
        return f"{type(self).__name__}(<{self.n_pages} pages>)"


class _PolynomialSyncCost(SyncCost):
    """Synchronization cost with c_k(τ) = a_k τ^{p_k}; see :meth:`SyncCost.polynomial`."""

    name = "sync-cost-polynomial"
    _kind = Q.POLY

    def __init__(self, a: NDArray[np.float64], p: NDArray[np.float64]) -> None:
        self.a = a
        self.p = np.ascontiguousarray(p)
        self.n_pages = a.shape[0]
        self.cost_integral = lambda tau: self.a * tau ** (self.p + 1.0) / (self.p + 1.0)
        self.cost_rate = lambda tau: self.a * tau**self.p

    def _params(self, delta):
        return self.a, self.p


class _PoissonSyncCost(SyncCost):
    """Synchronization cost with binary Poisson costs; see :meth:`SyncCost.poisson`."""

    name = "sync-cost-poisson"
    _kind = Q.PERIODIC
    _offset = -1.0

    def __init__(self, lam: NDArray[np.float64]) -> None:
        self.lam = lam
        self.n_pages = lam.shape[0]
        self.cost_integral = lambda tau: tau + np.expm1(-self.lam * tau) / self.lam
        self.cost_rate = lambda tau: -np.expm1(-self.lam * tau)

    def _params(self, delta):
        return self.lam, _ONE


_BUILTIN: dict[str, type[Objective]] = {
    "freshness-poisson": FreshnessPoisson,
    "freshness-periodic": FreshnessPeriodic,
    "harmonic": Harmonic,
    "detection": Detection,
    "detection-discrete": DetectionDiscrete,
}

#: Names accepted by :func:`get_objective` and by ``allocate(objective=...)``.
OBJECTIVE_NAMES: tuple[str, ...] = tuple(_BUILTIN)


def get_objective(objective: str | Objective) -> Objective:
    """Return the objective of that name (or the given :class:`Objective` itself).

    Parameters
    ----------
    objective : str or Objective
        One of :data:`OBJECTIVE_NAMES`, or an objective instance.

    Raises
    ------
    UnknownNameError
        If the name is not one of :data:`OBJECTIVE_NAMES`.
    TypeError
        If it is neither a string nor an object with ``value`` and ``derivative`` methods.

    Examples
    --------
    >>> get_objective("harmonic").name
    'harmonic'
    """
    if isinstance(objective, str):
        try:
            return _BUILTIN[objective]()
        except KeyError:
            raise UnknownNameError(
                f"objective must be one of {', '.join(OBJECTIVE_NAMES)} or an Objective; got {objective!r}"
            ) from None
    if callable(getattr(objective, "value", None)) and callable(getattr(objective, "derivative", None)):
        return objective
    raise TypeError(f"objective must be a name or an Objective; got {type(objective).__name__}")
