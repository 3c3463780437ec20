"""Twofold Resource Allocation Automaton (TRAA), seed 004 Sec. 3.1.

A TRAA splits a capacity between two materials. Its state ``s ∈ {1, ..., N}`` gives material 1 the share
``q_s = s/(N+1)`` and material 2 the share ``r_s = 1 − q_s``. When the environment reports the unit volume
value ``v ∈ {0, 1}`` of material i (for web polling: whether the polled page had changed), rules (1)-(3):

    (1) s ← s + 1  if rand() ≤ r_s, v = 1, s < N and i = 1
    (2) s ← s − 1  if rand() ≤ q_s, v = 1, s > 1 and i = 2
    (3) s ← s      otherwise.

The multipliers r_s and q_s offset the bias of sampling material 1 with frequency q_s. Sec. 4.3.2 adds
two more update modes: *Inaction-Penalty* updates only on v = 0 and inverts the transitions (a 0 from
material 1 moves towards material 2 with probability r_s, a 0 from material 2 moves towards material 1
with probability q_s); *Reward-Penalty* applies both. The chain is ergodic (no absorbing states), and its
stationary distribution concentrates on the Lagrange solution ``p_1(x_1) = p_2(x_2)`` as N grows (Thm. 1).

The discretization exponent λ (Sec. 2.4, footnote 7) maps the state to ``q_s = (s/(N+1))^λ``; the paper
(and the default here) uses λ = 1.
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray

from freshcrawl._validation import check_int, check_positive, check_rng
from freshcrawl.errors import UnknownNameError

__all__ = [
    "UPDATE_MODES",
    "parse_update_mode",
    "check_resolution",
    "share_table",
    "TRAA",
    "traa_transition_matrix",
    "traa_stationary",
]

#: Update modes of seed 004 Sec. 4.3.2, name -> kernel code.
UPDATE_MODES: dict[str, int] = {"reward-inaction": 0, "inaction-penalty": 1, "reward-penalty": 2}
_ALIASES = {"ri": "reward-inaction", "ip": "inaction-penalty", "rp": "reward-penalty"}


def parse_update_mode(mode: str) -> int:
    """Kernel code of an update mode name (``"reward-inaction"``, ``"inaction-penalty"``,
    ``"reward-penalty"`` or the short forms ``"ri"``, ``"ip"``, ``"rp"``).

    Raises
    ------
    UnknownNameError
        If `mode` is not one of them (the message lists the known names).

    Examples
    --------
    >>> parse_update_mode("rp")
    2
    """
    if not isinstance(mode, str):
        raise TypeError(f"mode must be a str update-mode name; got {type(mode).__name__} {mode!r}")
    key = _ALIASES.get(mode.lower(), mode.lower())
    if key not in UPDATE_MODES:
        raise UnknownNameError(
            f"unknown update mode {mode!r}; known: {', '.join(UPDATE_MODES)} (or ri, ip, rp)"
        )
    return UPDATE_MODES[key]


def check_resolution(n_states: object) -> int:
    """Return the resolution N as int if it is an integer >= 2; raise naming it otherwise."""
    return check_int("n_states", n_states, low=2, what=" (resolution N, number of automaton states)")


def share_table(n_states: int, lam: float = 1.0) -> NDArray[np.float64]:
    """Share of material 1 in every state, ``q_s = (s/(N+1))^λ`` for s = 0..N+1.

    Parameters
    ----------
    n_states : int
        Resolution N >= 2.
    lam : float, default=1.0
        Discretization exponent λ > 0; 1 is the linear space of the paper.

    Returns
    -------
    ndarray of float, shape (N + 2,)
        Entry s is q_s; entries 0 and N+1 (0 and 1) are never used as states.

    Examples
    --------
    >>> share_table(4).tolist()
    [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    """
    n = check_resolution(n_states)
    lam = check_positive("lam", lam, unit="(discretization exponent)")
    return (np.arange(n + 2, dtype=np.float64) / (n + 1)) ** lam


@numba.njit(cache=True, inline="always")
def traa_step(state, n_states, material, value, mode, share):  # pragma: no cover - compiled
    """One transition of rules (1)-(3) (and their inverted and combined forms, Sec. 4.3.2).

    ``material`` is 1 or 2, ``value`` is True for a unit value of 1; ``mode`` is the code of
    :data:`UPDATE_MODES`; ``share`` is :func:`share_table`. Returns the new state.
    """
    q = share[state]
    if value:
        if mode == 1:  # inaction-penalty ignores rewards
            return state
        if material == 1:
            if state < n_states and np.random.random() <= 1.0 - q:
                return state + 1
        elif state > 1 and np.random.random() <= q:
            return state - 1
        return state
    if mode == 0:  # reward-inaction ignores penalties
        return state
    if material == 1:
        if state > 1 and np.random.random() <= 1.0 - q:
            return state - 1
    elif state < n_states and np.random.random() <= q:
        return state + 1
    return state


@numba.njit(cache=True)
def _traa_run(state, n_states, materials, values, mode, share, seed):  # pragma: no cover - compiled
    if seed >= 0:
        np.random.seed(seed)
    for k in range(materials.shape[0]):
        state = traa_step(state, n_states, materials[k], values[k], mode, share)
    return state


class TRAA:
    """Twofold Resource Allocation Automaton: learns the split of a capacity between two materials.

    Parameters
    ----------
    n_states : int, default=500
        Resolution N (states 1..N); must be >= 2. The seed uses N = 500.
    mode : str, default="reward-penalty"
        Update mode of Sec. 4.3.2: ``"reward-inaction"``, ``"inaction-penalty"`` or ``"reward-penalty"``.
    lam : float, default=1.0
        Discretization exponent λ > 0 of the share ``q_s = (s/(N+1))^λ``.
    state0 : int or None, default=None
        Initial state; None starts in the middle, ``(N+1)//2``.
    rng : numpy.random.Generator, int or None
        Seeds the compiled random stream the transitions draw from.

    Attributes
    ----------
    state_ : int
        Current state s in 1..N.

    Raises
    ------
    ValueError
        If `n_states` < 2, `lam` <= 0 or `state0` outside 1..N.
    UnknownNameError
        If `mode` is not a known update mode.

    References
    ----------
    .. [1] Granmo, Oommen, "Learning Automata-based Solutions to the Optimal Web Polling Problem
       Modelled as a Nonlinear Fractional Knapsack Problem", Sec. 3.1, rules (1)-(3), Sec. 4.3.2
       (seed 004).

    Examples
    --------
    >>> a = TRAA(n_states=4, state0=2, rng=0)
    >>> a.allocation().tolist()
    [0.4, 0.6]
    >>> a.update(material=1, value=True)   # moves up with probability r_2 = 0.6
    >>> a.state_ in (2, 3)
    True
    """

    def __init__(
        self,
        n_states: int = 500,
        *,
        mode: str = "reward-penalty",
        lam: float = 1.0,
        state0: int | None = None,
        rng: np.random.Generator | int | None = None,
    ) -> None:
        self.n_states = check_resolution(n_states)
        self.mode = mode
        self._mode = parse_update_mode(mode)
        self.lam = check_positive("lam", lam, unit="(discretization exponent)")
        self._share = share_table(self.n_states, self.lam)
        if state0 is None:
            state0 = (self.n_states + 1) // 2
        self.state0 = check_int("state0", state0, low=1, high=self.n_states)
        self.state_ = int(state0)
        self._seed = int(check_rng(rng).integers(0, 2**31 - 1))
        self._seeded = False

    def allocation(self, capacity: float = 1.0) -> NDArray[np.float64]:
        """Current split ``[q_s, r_s] · capacity`` (shape (2,), in the capacity's unit)."""
        c = check_positive("capacity", capacity)
        q = float(self._share[self.state_])
        return np.array([q * c, (1.0 - q) * c])

    def update(self, material: int, value: bool) -> None:
        """Apply one feedback: the unit volume value (`value`, 0/1) of material 1 or 2."""
        self.update_many(np.array([material]), np.array([value]))

    def update_many(self, materials: NDArray[np.intp], values: NDArray[np.bool_]) -> None:
        """Apply a sequence of feedbacks in order; `materials` in {1, 2}, `values` booleans, shape (m,).

        Raises
        ------
        ValueError
            If the shapes differ or a material is not 1 or 2.
        """
        m = np.ascontiguousarray(materials, dtype=np.int64).ravel()
        v = np.ascontiguousarray(values).ravel()
        if m.shape != v.shape:
            raise ValueError(f"materials and values must have the same shape; got {m.shape} and {v.shape}")
        if m.size and not np.all((m == 1) | (m == 2)):
            i = int(np.flatnonzero((m != 1) & (m != 2))[0])
            raise ValueError(f"materials must be 1 or 2; first offender at index {i} ({m[i].item()!r})")
        if v.dtype != np.bool_:
            if not np.all((v == 0) | (v == 1)):
                i = int(np.flatnonzero((v != 0) & (v != 1))[0])
                raise ValueError(
                    f"values must be 0/1 unit volume values; first offender at index {i} ({v[i].item()!r})"
                )
            v = v.astype(np.bool_)
        seed = -1 if self._seeded else self._seed
        self._seeded = True
        self.state_ = int(_traa_run(self.state_, self.n_states, m, v, self._mode, self._share, seed))


def traa_transition_matrix(n_states: int, p1, p2, *, lam: float = 1.0, mode: str = "reward-inaction"):
    """Transition matrix H of the TRAA under random access, eqs. (4)-(8) of seed 004.

    Material 1 is accessed with probability q_j and material 2 with r_j (the access frequencies the
    scheduler realises); ``p1(x)``, ``p2(x)`` give the probability of a unit value 1 at share x.

    Parameters
    ----------
    n_states : int
        Resolution N >= 2.
    p1, p2 : callable float -> float
        Unit value probabilities of the two materials, in [0, 1].
    lam : float, default=1.0
        Discretization exponent.
    mode : str, default="reward-inaction"
        Update mode; eqs. (4)-(5) are the reward-inaction case, the others follow Sec. 4.3.2.

    Returns
    -------
    ndarray of float, shape (N, N)
        Row j-1 holds the probabilities of moving from state j.

    Examples
    --------
    >>> H = traa_transition_matrix(5, lambda x: 0.5, lambda x: 0.5)
    >>> bool(np.allclose(H.sum(axis=1), 1.0))
    True
    """
    n = check_resolution(n_states)
    code = parse_update_mode(mode)
    share = share_table(n, lam)
    H = np.zeros((n, n))
    for j in range(1, n + 1):
        q, r = share[j], 1.0 - share[j]
        a1, a2 = float(p1(q)), float(p2(r))
        up = down = 0.0
        if code in (0, 2):
            up += q * a1 * r  # eq. (5): material 1 accessed, value 1, rand <= r_j
            down += r * a2 * q  # eq. (4)
        if code in (1, 2):
            down += q * (1.0 - a1) * r
            up += r * (1.0 - a2) * q
        if j < n:
            H[j - 1, j] = up
        if j > 1:
            H[j - 1, j - 2] = down
        H[j - 1, j - 1] = 1.0 - H[j - 1].sum()
    return H


def traa_stationary(n_states: int, p1, p2, *, lam: float = 1.0, mode: str = "reward-inaction"):
    """Stationary distribution Π of the TRAA chain, from the product form eq. (13) of seed 004.

    Returns
    -------
    ndarray of float, shape (N,)
        π_j for states j = 1..N (sums to 1).

    Raises
    ------
    ValueError
        If the chain is not irreducible (a zero transition probability between neighbours).

    Examples
    --------
    Equal materials: the distribution is symmetric around the middle.

    >>> pi = traa_stationary(5, lambda x: 1 - 0.5 ** (1 / x), lambda x: 1 - 0.5 ** (1 / x))
    >>> bool(np.allclose(pi, pi[::-1]))
    True
    """
    H = traa_transition_matrix(n_states, p1, p2, lam=lam, mode=mode)
    n = H.shape[0]
    up = np.array([H[j, j + 1] for j in range(n - 1)])
    down = np.array([H[j + 1, j] for j in range(n - 1)])
    if np.any(up <= 0) or np.any(down <= 0):
        raise ValueError("the TRAA chain is not irreducible for these p1, p2: a neighbour transition has probability 0")
    logpi = np.concatenate([[0.0], np.cumsum(np.log(up) - np.log(down))])  # eq. (13)
    logpi -= logpi.max()
    pi = np.exp(logpi)
    return pi / pi.sum()

