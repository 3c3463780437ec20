"""Argument checks shared by the whole package.

Each check names the argument, the expectation with its unit, and what was received. Array checks also
report how many entries fail and the first offender.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray



__all__ = [
    "check_int",
    "check_positive",
    "check_nonnegative",
    "check_interval",
    "check_array",
    "check_rng",
    "check_half_life",
]


def _as_float(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__} {value!r}")
    v = float(value)
    if math.isnan(v):
        raise ValueError(f"{name} must not be NaN")
    return v


def check_int(name: str, value: object, *, low: int = 0, high: int | None = None, what: str = "") -> int:
    """Return ``value`` as int if it is an integer (not a bool) in ``[low, high]``; raise naming it otherwise.

    ``what`` says what the number counts (e.g. ``" (polls)"``); it follows the expectation in the message.
    Raises ``TypeError`` for a value that is not an integer, ``ValueError`` for one out of range.
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int >= {low}{what}; got {type(value).__name__} {value!r}")
    if value < low or (high is not None and value > high):
        expect = f">= {low}" if high is None else f"in {low}..{high}"
        raise ValueError(f"{name} must be {expect}{what}; got {value!r}")
    return int(value)


def check_positive(name: str, value: object, *, unit: str = "", allow_inf: bool = False) -> float:
    """Return ``value`` as float if it is finite (or inf when allowed) and > 0; raise otherwise."""
    v = _as_float(name, value)
    if not v > 0 or (math.isinf(v) and not allow_inf):
        raise ValueError(f"{name} must be {'> 0' if allow_inf else 'finite and > 0'}{_u(unit)}; got {value!r}")
    return v


def check_nonnegative(name: str, value: object, *, unit: str = "", allow_inf: bool = False) -> float:
    """Return ``value`` as float if it is finite (or inf when allowed) and >= 0; raise otherwise."""
    v = _as_float(name, value)
    if not v >= 0 or (math.isinf(v) and not allow_inf):
        raise ValueError(f"{name} must be {'>= 0' if allow_inf else 'finite and >= 0'}{_u(unit)}; got {value!r}")
    return v


def check_interval(
    name: str,
    value: object,
    *,
    low: float,
    high: float,
    closed: Literal["both", "left", "right", "neither"] = "both",
    unit: str = "",
) -> float:
    """Return ``value`` as float if it lies in the interval; raise ``ValueError`` naming it otherwise."""
    v = _as_float(name, value)
    lo_ok = v >= low if closed in ("both", "left") else v > low
    hi_ok = v <= high if closed in ("both", "right") else v < high
    if not (lo_ok and hi_ok):
        lb = "[" if closed in ("both", "left") else "("
        rb = "]" if closed in ("both", "right") else ")"
        raise ValueError(f"{name} must be in {lb}{low}, {high}{rb}{_u(unit)}; got {value!r}")
    return v


def check_array(
    name: str,
    values: ArrayLike,
    *,
    dtype: type = np.float64,
    shape: tuple[int, ...] | None = None,
    low: float | None = None,
    low_inclusive: bool = True,
    high: float | None = None,
    allow_inf: bool = False,
    unit: str = "",
    error: type[Exception] = ValueError,
) -> NDArray:
    """Convert to a contiguous array of ``dtype`` and check shape, NaN/inf and bounds.

    The message gives the number of failing entries and the first offender, e.g.
    ``"tau must be > 0 days; 3 of 1000 entries are not, first at index 17 (0.0)"``.
    """
    try:
        arr = np.ascontiguousarray(values, dtype=dtype)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be convertible to an array of {np.dtype(dtype).name}; got {values!r:.80}") from err
    if shape is not None and arr.shape != shape:
        raise error(f"{name} must have shape {shape}; got {arr.shape}")
    if arr.dtype.kind == "f" and arr.size:
        bad = np.isnan(arr) if allow_inf else ~np.isfinite(arr)
        _report(name, arr, bad, "NaN" if allow_inf else "finite", unit, error, negate=True)
    if low is not None and arr.size:
        bad = ~(arr >= low) if low_inclusive else ~(arr > low)
        _report(name, arr, bad, f"{'>=' if low_inclusive else '>'} {low}", unit, error)
    if high is not None and arr.size:
        _report(name, arr, ~(arr <= high), f"<= {high}", unit, error)
    return arr


def _report(name, arr, bad, expect, unit, error, negate=False) -> None:
    n_bad = int(np.count_nonzero(bad))
    if n_bad:
        i = int(np.flatnonzero(bad.ravel())[0])
        what = f"must not be {expect}" if negate and expect == "NaN" else f"must be {expect}"
        raise error(
            f"{name} {what}{_u(unit)}; {n_bad} of {arr.size} entries are not, "
            f"first at index {i} ({arr.ravel()[i]!r})"
        )


def check_half_life(half_life: object) -> float | None:
    """Return ``half_life`` (days) as float if finite and > 0, or None; the memory of forgetting estimators.

    Raises ``TypeError`` for a value that is not a number (or None), ``ValueError`` for one not finite
    and > 0.
    """
    if half_life is None:
        return None
    if isinstance(half_life, bool) or not isinstance(half_life, (int, float, np.integer, np.floating)):
        raise TypeError(
            f"half_life must be a number of days > 0 or None; got {type(half_life).__name__} {half_life!r}"
        )
    v = float(half_life)
    if not (v > 0.0 and math.isfinite(v)):
        raise ValueError(f"half_life must be finite and > 0 days (or None for no forgetting); got {half_life!r}")
    return v


def check_rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    """Return a ``numpy.random.Generator`` from a generator, a seed or None."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(rng)
    raise TypeError(f"rng must be a numpy Generator, an int seed or None; got {type(rng).__name__}")


def _u(unit: str) -> str:
    return f" {unit}" if unit else ""


