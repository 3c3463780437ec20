"""Hierarchy of Twofold Resource Allocation Automata (H-TRAA), seed 004 Sec. 3.2.

n materials (pages) are the leaves of a balanced binary tree of depth ``D = log2(n)``; when n is not a
power of two the tree is padded with zero-value materials (footnote 11). Every internal node owns a TRAA
(:mod:`freshcrawl.learning.traa`) that splits the node's capacity between its two subtrees, so the share of
a page is the capacity times the product of the splits on its path. A poll of page i returns the unit
value ``v`` (1 if the page had changed since its previous poll) to every automaton on the path from the
root to i (Example I), and each updates by rules (1)-(3) with material 1 meaning "the left subtree".

The whole hierarchy lives in flat arrays indexed like a binary heap: node 1 is the root, node j has the
children 2j and 2j+1, and leaf (material) i is node ``n_leaves + i``. Memory is O(n).

Scheduling. The paper feeds the allocation to an Earliest Deadline First scheduler so that every page is
polled with a constant period proportional to its share (Sec. 3.1.1). Here EDF runs *at every node*
between its two subtrees (:func:`freshcrawl.scheduling.edf.edf2_choose`): the subtree whose next deadline
(counted in polls routed through the node) comes first receives the poll, and its deadline advances by
its current period 1/share. With fixed shares every page is polled deterministically, with frequency
equal to its share up to an error of at most 2 polls per level; a change of a split acts on the whole
subtree from its next poll; the cost is O(log n) per poll, where a flat EDF would have to re-key every
page below a node whose split moved.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numpy.typing import NDArray

from freshcrawl._validation import check_int, check_positive, check_rng
from freshcrawl.learning.traa import check_resolution, parse_update_mode, share_table, traa_step
from freshcrawl.scheduling.edf import edf2_choose

__all__ = ["HTRAA", "n_leaves_for", "htraa_pick", "htraa_feedback", "htraa_leaf_shares"]


def n_leaves_for(n_materials: int) -> int:
    """Number of leaves of the padded hierarchy: the smallest power of two >= max(n, 2).

    Examples
    --------
    >>> [n_leaves_for(n) for n in (1, 2, 3, 512, 513)]
    [2, 2, 4, 512, 1024]
    """
    n_materials = check_int("n_materials", n_materials, low=1, what=" (pages)")
    return max(2, 1 << int(math.ceil(math.log2(n_materials))))


@numba.njit(cache=True, inline="always")
def htraa_pick(state, share, deadline, n_leaves):  # pragma: no cover - compiled
    """Route one poll from the root to a leaf by per-node EDF; returns the material index 0..n_leaves-1.

    ``deadline`` has shape (n_leaves, 2): the next-poll deadlines of node j's two subtrees.
    """
    j = 1
    while j < n_leaves:
        j = 2 * j + edf2_choose(deadline[j], share[state[j]])
    return j - n_leaves


@numba.njit(cache=True, inline="always")
def htraa_feedback(state, share, n_states, n_leaves, leaf, value, mode):  # pragma: no cover - compiled
    """Give the unit value of material `leaf` to every automaton on its path (seed 004, Sec. 3.2.1)."""
    j = leaf + n_leaves
    while j > 1:
        parent = j >> 1
        material = 1 if (j & 1) == 0 else 2
        state[parent] = traa_step(state[parent], n_states, material, value, mode, share)
        j = parent


@numba.njit(cache=True)
def htraa_leaf_shares(state, share, n_leaves, capacity, out):  # pragma: no cover - compiled
    """Write the allocation of every node into `out` (shape (2 n_leaves,)); leaves are out[n_leaves:]."""
    out[1] = capacity
    for j in range(1, n_leaves):
        f = share[state[j]]
        out[2 * j] = out[j] * f
        out[2 * j + 1] = out[j] * (1.0 - f)


@numba.njit(cache=True)
def _feedback_many(state, share, n_states, n_leaves, leaves, values, mode, seed):  # pragma: no cover
    if seed >= 0:
        np.random.seed(seed)
    for k in range(leaves.shape[0]):
        htraa_feedback(state, share, n_states, n_leaves, leaves[k], values[k], mode)


@numba.njit(cache=True)
def _pick_many(state, share, deadline, n_leaves, m):  # pragma: no cover - compiled
    out = np.empty(m, dtype=np.int64)
    for k in range(m):
        out[k] = htraa_pick(state, share, deadline, n_leaves)
    return out


class HTRAA:
    """Hierarchy of TRAAs: learns the allocation of a polling capacity over n pages online.

    Parameters
    ----------
    n_materials : int
        Number of materials (pages) n >= 1; the tree is padded to a power of two >= 2 with zero-value
        materials.
    n_states : int, default=500
        Resolution N of every automaton (the seed uses 500); must be >= 2.
    mode : str, default="reward-penalty"
        Update mode (Sec. 4.3.2): ``"reward-inaction"``, ``"inaction-penalty"`` or ``"reward-penalty"``;
        the seed uses reward-penalty after Fig. 5.
    lam : float, default=1.0
        Discretization exponent λ > 0 of every automaton.
    capacity : float, default=1.0
        Polls per time step c (the knapsack capacity); must be finite and > 0.
    rng : numpy.random.Generator, int or None
        Seeds the compiled random stream of the automata.

    Attributes
    ----------
    n_leaves : int
        Leaves of the padded tree (power of two).
    depth : int
        D = log2(n_leaves), automata on every root-to-leaf path.
    state_ : ndarray of int64, shape (n_leaves,)
        State of the automaton of node j at index j (index 0 unused); starts in the middle, (N+1)//2.
    deadline_ : ndarray of float, shape (n_leaves, 2)
        Per-node EDF scheduler state: deadline of the next poll of node j's left and right subtree, in
        polls routed through node j.

    Raises
    ------
    ValueError
        If `n_materials` < 1, `n_states` < 2, `lam` <= 0 or `capacity` <= 0.
    UnknownNameError
        If `mode` is unknown.

    References
    ----------
    .. [1] Granmo, Oommen, "Learning Automata-based Solutions to the Optimal Web Polling Problem
       Modelled as a Nonlinear Fractional Knapsack Problem", Sec. 3.2 and 4.2 (seed 004).

    Examples
    --------
    >>> h = HTRAA(4, n_states=9, rng=0)
    >>> h.allocation().tolist()          # every split starts at q_5 = 0.5
    [0.25, 0.25, 0.25, 0.25]
    >>> h.next_polls(8).tolist()         # deterministic EDF over the leaves
    [0, 2, 1, 3, 0, 2, 1, 3]
    >>> h.update([0, 0, 0], [True, True, True])
    >>> bool(h.allocation()[0] >= 0.25)
    True
    """

    def __init__(
        self,
        n_materials: int,
        *,
        n_states: int = 500,
        mode: str = "reward-penalty",
        lam: float = 1.0,
        capacity: float = 1.0,
        rng: np.random.Generator | int | None = None,
    ) -> None:
        self.n_leaves = n_leaves_for(n_materials)
        self.n_materials = int(n_materials)
        self.depth = int(round(math.log2(self.n_leaves)))
        self.n_states = check_resolution(n_states)
        self.mode = mode
        self.mode_code = parse_update_mode(mode)
        self.lam = check_positive("lam", lam, unit="(discretization exponent)")
        self.capacity = check_positive("capacity", capacity, unit="polls per time step")
        self.share = share_table(self.n_states, self.lam)
        self._seed = int(check_rng(rng).integers(0, 2**31 - 1))
        self._seeded = False
        self.reset()

    def reset(self) -> None:
        """Put every automaton in its middle state and restart the scheduler."""
        self.state_ = np.full(self.n_leaves, (self.n_states + 1) // 2, dtype=np.int64)
        self.deadline_ = np.zeros((self.n_leaves, 2), dtype=np.float64)

    def take_seed(self) -> int:
        """Seed for the next compiled run: the constructor's seed once, then -1 (continue the stream)."""
        seed = -1 if self._seeded else self._seed
        self._seeded = True
        return seed

    def allocation(self, *, padded: bool = False) -> NDArray[np.float64]:
        """Current allocation x, polls per time step.

        Parameters
        ----------
        padded : bool, default=False
            Include the zero-value padding materials (shape (n_leaves,)) instead of only the n real
            ones (shape (n_materials,)).

        Returns
        -------
        ndarray of float
            x_i >= 0; the padded vector sums to `capacity`.
        """
        out = np.empty(2 * self.n_leaves)
        htraa_leaf_shares(self.state_, self.share, self.n_leaves, self.capacity, out)
        x = out[self.n_leaves :].copy()
        return x if padded else x[: self.n_materials]

    def next_polls(self, m: int) -> NDArray[np.int64]:
        """Advance the EDF scheduler by `m` polls and return the polled materials (padding included).

        Returns
        -------
        ndarray of int64, shape (m,)
            Material indices in 0..n_leaves-1; indices >= n_materials are padding.
        """
        m = check_int("m", m, what=" (polls)")
        return _pick_many(self.state_, self.share, self.deadline_, self.n_leaves, m)

    def update(self, materials, values) -> None:
        """Feed back the unit values of polled materials, in poll order.

        Parameters
        ----------
        materials : array_like of int, shape (m,)
            Polled material indices, 0..n_leaves-1 (padding materials allowed; they are worth 0).
        values : array_like of bool, shape (m,)
            Unit volume value of each poll: True when the page had changed since its previous poll.

        Raises
        ------
        ValueError
            If the shapes differ, an index is out of range or a value is not 0/1.
        """
        mats = np.ascontiguousarray(materials, dtype=np.int64).ravel()
        vals = np.ascontiguousarray(values).ravel()
        if mats.shape != vals.shape:
            raise ValueError(f"materials and values must have the same shape; got {mats.shape} and {vals.shape}")
        bad = (mats < 0) | (mats >= self.n_leaves)
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"materials must be in 0..{self.n_leaves - 1}; first offender at index {i} ({mats[i].item()!r})"
            )
        if vals.dtype != np.bool_:
            if vals.size and not np.all((vals == 0) | (vals == 1)):
                i = int(np.flatnonzero((vals != 0) & (vals != 1))[0])
                raise ValueError(f"values must be 0/1; first offender at index {i} ({vals[i].item()!r})")
            vals = vals.astype(np.bool_)
        _feedback_many(
            self.state_, self.share, self.n_states, self.n_leaves, mats, vals, self.mode_code, self.take_seed()
        )

    def nbytes(self) -> int:
        """Bytes held by the hierarchy's arrays (linear in the number of pages)."""
        return int(self.state_.nbytes + self.deadline_.nbytes + self.share.nbytes)
