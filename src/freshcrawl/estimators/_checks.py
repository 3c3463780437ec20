"""Input checks shared by the estimators (of one observation and of a batch)."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from freshcrawl._validation import check_half_life, check_int, check_interval, check_positive
from freshcrawl.errors import InvalidObservation
from freshcrawl.estimators import _kernels as K

__all__ = [
    "check_batch",
    "check_changed",
    "check_half_life",
    "check_n_pages",
    "check_p",
    "check_tau",
    "parse_alpha",
]


def check_changed(changed: object) -> bool:
    """Return a changed flag as bool; accept bool, 0/1 ints and 0.0/1.0 floats only."""
    if isinstance(changed, (bool, np.bool_)):
        return bool(changed)
    if isinstance(changed, (int, float, np.integer, np.floating)):
        v = float(changed)
        if v == 0.0 or v == 1.0:
            return v == 1.0
    raise InvalidObservation(
        f"changed must be 0/1 (or a bool), whether the page changed since the previous visit; got {changed!r}"
    )


def _scalar(name: str, value: object, unit: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(
            f"{name} must be a real number in {unit}; got {type(value).__name__} {value!r}"
        )
    v = float(value)
    if not (v > 0.0 and math.isfinite(v)):
        raise InvalidObservation(f"{name} must be finite and > 0 {unit}; got {value!r}")
    return v


def check_tau(tau: object) -> float:
    """Return tau (days since the previous visit) as float if finite and > 0."""
    return _scalar("tau", tau, "days since the previous visit")


def check_p(p: object) -> float:
    """Return p (visit rate in force before the visit) as float if finite and > 0."""
    return _scalar("p", p, "visits per day")


def check_n_pages(n_pages: object) -> int:
    """Return n_pages as int if it is an integer >= 1."""
    return check_int("n_pages", n_pages, low=1)


def check_delta0(delta0: object) -> float:
    """Return the prior delta0 (changes per day) if finite and >= 0."""
    if isinstance(delta0, bool) or not isinstance(delta0, (int, float, np.integer, np.floating)):
        raise TypeError(
            f"delta0 must be a real number of changes per day; got {type(delta0).__name__} {delta0!r}"
        )
    v = float(delta0)
    if not (v >= 0.0 and math.isfinite(v)):
        raise ValueError(f"delta0 must be finite and >= 0 changes per day; got {delta0!r}")
    return v


def check_exponent(name: str, value: object) -> float:
    """Stepsize exponent in (0, 1]."""
    return check_interval(name, value, low=0.0, high=1.0, closed="right")


def check_omega(value: object) -> float:
    """Momentum constant omega > 0 of eq. (10)."""
    return check_positive("omega", value)


def parse_alpha(alpha: object) -> tuple[int, float]:
    """Map the LLN regulariser to a kernel code: "1", "log", "sqrt", or a float power in [0, 1)."""
    if isinstance(alpha, str):
        codes = {"1": K.ALPHA_ONE, "one": K.ALPHA_ONE, "log": K.ALPHA_LOG, "sqrt": K.ALPHA_SQRT}
        if alpha not in codes:
            raise ValueError(
                f"alpha must be '1', 'log', 'sqrt' or a power in [0, 1); got {alpha!r}"
            )
        return codes[alpha], 0.0
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)):
        raise TypeError(
            f"alpha must be '1', 'log', 'sqrt' or a power in [0, 1); got {type(alpha).__name__} {alpha!r}"
        )
    power = check_interval("alpha", alpha, low=0.0, high=1.0, closed="left")
    return K.ALPHA_POWER, power


def _as_flags(changed: ArrayLike, m: int) -> NDArray[np.bool_]:
    arr = np.asarray(changed)
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2 or arr.shape[1] != m:
        raise InvalidObservation(
            f"changed must have shape ({m},) or (k, {m}) like pages; got {np.shape(changed)}"
        )
    if arr.dtype == np.bool_:
        return np.ascontiguousarray(arr)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"changed must be an array of bool or 0/1 numbers; got dtype {arr.dtype}")
    bad = ~((arr == 0) | (arr == 1))
    n_bad = int(np.count_nonzero(bad))
    if n_bad:
        i = int(np.flatnonzero(bad)[0])
        raise InvalidObservation(
            f"changed must be 0 or 1; {n_bad} of {arr.size} entries are not, first at index {i} ({arr.ravel()[i].item()!r})"
        )
    return arr.astype(np.bool_)


def _as_float_array(
    name: str, values: ArrayLike | None, shape: tuple[int, int]
) -> NDArray[np.float64]:
    if values is None:
        return np.ones(shape)
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be an array of float; got {values!r:.80}") from err
    if arr.ndim == 0:
        return np.full(shape, float(arr))
    if arr.ndim == 1 and shape[0] == 1:
        arr = arr.reshape(1, -1)
    if arr.shape != shape:
        want = f"({shape[1]},)" if shape[0] == 1 else str(shape)
        raise InvalidObservation(
            f"{name} must have shape {want} like changed; got {np.shape(values)}"
        )
    return np.ascontiguousarray(arr)


_UNITS = {"tau": "days since the previous visit", "p": "visits per day"}


def check_batch(
    pages: ArrayLike,
    changed: ArrayLike,
    tau: ArrayLike | None,
    p: ArrayLike | None,
    n_pages: int,
) -> tuple[NDArray[np.intp], NDArray[np.bool_], NDArray[np.float64], NDArray[np.float64]]:
    """Convert and check one batch of observations; raise before anything is mutated.

    ``pages`` has shape (m,); ``changed``, ``tau`` and ``p`` have shape (m,) (one visit of each page) or
    (k, m) (k successive visits of each page, row by row). Returned observation arrays are 2-d (k, m).

    Raises
    ------
    InvalidObservation
        Length mismatch, a page outside ``[0, n_pages)``, tau or p not finite and > 0, changed not 0/1.
    ValueError
        A page listed twice (order would matter).

    Unsorted pages cost a sort to rule out duplicates.
    """
    pg = np.asarray(pages)
    if pg.ndim != 1:
        raise InvalidObservation(f"pages must be a 1-d array of page indices; got shape {pg.shape}")
    if pg.size and pg.dtype.kind not in "iu":
        raise TypeError(f"pages must be an array of integers; got dtype {pg.dtype}")
    pg = np.ascontiguousarray(pg, dtype=np.intp)
    m = pg.shape[0]
    ch = _as_flags(changed, m)
    ta = _as_float_array("tau", tau, ch.shape)
    pr = _as_float_array("p", p, ch.shape)
    code, row, idx = K.check_batch(pg, ta, pr, n_pages)
    if code == K.ERR_PAGE:
        raise InvalidObservation(f"pages must be in [0, {n_pages}); entry {idx} is {pg[idx]}")
    if code in (K.ERR_TAU, K.ERR_P):
        name = "tau" if code == K.ERR_TAU else "p"
        arr = ta if code == K.ERR_TAU else pr
        bad = ~((arr > 0) & np.isfinite(arr))
        where = f"index {idx}" if arr.shape[0] == 1 else f"row {row}, index {idx}"
        raise InvalidObservation(
            f"{name} must be finite and > 0 {_UNITS[name]}; {int(bad.sum())} of {arr.size} entries are not, "
            f"first at {where} ({arr[row, idx].item()!r})"
        )
    if code == K.ERR_UNSORTED:
        i = K.find_duplicate(pg, n_pages)
        if i >= 0:
            raise ValueError(
                f"pages must be distinct within one update (order would matter); page {pg[i]} "
                f"appears more than once (second time at index {i})"
            )
    return pg, ch, ta, pr
