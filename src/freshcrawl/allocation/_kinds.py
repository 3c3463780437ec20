"""Per-page numpy functions of the built-in objectives: marginal value, inverse marginal, value.

Kinds (the objective of a page) and their parameters ``a``, ``b``:

==========  ====  ======================================  ===============================
kind        code  f(p)                                    parameters
==========  ====  ======================================  ===============================
POISSON     0     p / (p + a)                             a = Δ
PERIODIC    1     (p / a) (1 - exp(-a / p))               a = Δ
HARMONIC    2     log(p / (p + a))                        a = Δ
DETECTION   3     p (1 - exp(-a / p))                     a = Δ (inf: f = p)
POLY        4     -a p^(-b) / (b + 1)                     a, b of c(τ) = a τ^b
LOG         5     log(p / a)  (0 when a = 0)              a = Δ (complete observation)
LINEAR      6     a p  (1 when a = inf)                   a = 1 / Δ (complete observation)
==========  ====  ======================================  ===============================

:func:`response` gives each page's optimal rate for a multiplier λ, ``clip(g(λ), lo, hi)`` with ``g``
the inverse of ``w f'``, and its derivative in λ (0 where clipped). λ = 0 gives ``hi`` to pages with a
positive marginal value, λ = inf gives ``lo``. Every function takes arrays that broadcast to (n,).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

POISSON, PERIODIC, HARMONIC, DETECTION, POLY, LOG, LINEAR = 0, 1, 2, 3, 4, 5, 6
#: kinds whose Σp may jump where a page enters (a flat or constant marginal value)
FLAT_KINDS = (PERIODIC, DETECTION, LINEAR)

Array = NDArray[np.float64]

# φ(x) = 1 - (1 + x) e^{-x} = Σ_{k>=2} (-1)^k (k-1) x^k / k!, the series used below x = 0.5
_PHI_SERIES = [(-1.0) ** k * (k - 1) / math.factorial(k) for k in range(2, 18)]


def phi(x: Array) -> Array:
    """1 - (1 + x) exp(-x) for x >= 0, accurate to a few ulps (its series below x = 0.5)."""
    x = np.asarray(x, dtype=np.float64)
    out = -np.expm1(-x) - x * np.exp(-x)
    small = x < 0.5
    if small.any():
        xs = x[small]
        acc = np.full(xs.shape, _PHI_SERIES[-1])
        for c in _PHI_SERIES[-2::-1]:
            acc *= xs
            acc += c
        out[small] = acc * xs * xs
    return out


def _halley(x: Array, y: Array, one_minus_y: Array) -> tuple[Array, Array]:
    """One Halley step on φ(x) = y; returns the new x and φ'(x) = x e^{-x} at the old one."""
    e = np.exp(-x)
    f = one_minus_y - (1.0 + x) * e  # φ(x) - y, from 1 - y where the series is not used
    small = x < 0.5
    if small.any():
        f[small] = phi(x[small]) - np.broadcast_to(y, x.shape)[small]
    # φ' = x e, φ'' = (1 - x) e: x - 2 f φ' / (2 φ'^2 - f φ''), divided through by e
    xn = x - 2.0 * f * x / (2.0 * x * x * e - f * (1.0 - x))
    return np.where(xn > 0.0, xn, 0.5 * x), x * e


def _table(m: int, u_max: float) -> tuple[Array, float]:
    """x(u) with φ(x) = 1 - exp(-u²) on a uniform grid of u in [0, u_max] (built at import)."""
    u = np.linspace(0.0, u_max, m + 2)
    t = u * u
    y = -np.expm1(-t)
    s = np.sqrt(2.0 * t)
    x = np.where(
        t < 1.5,
        s * (1 + s * (1 / 3 + s * (1 / 36 + s * (-1 / 270 + s / 4320)))),
        t + np.log1p(t + np.log1p(t)),
    )
    with np.errstate(all="ignore"):
        for _ in range(40):
            x, _ = _halley(x, y, np.exp(-t))
    x[0] = 0.0
    return x, u_max / (m + 1)


#: t = -log(1 - y) <= 36.8 for every y < 1 in float64: the grid in u = sqrt(t) covers it
_XU, _HU = _table(8192, math.sqrt(38.0))


def lambert_x(y: Array) -> tuple[Array, Array]:
    """The x > 0 with 1 - (1 + x) e^{-x} = y for 0 < y < 1, and φ'(x) = x e^{-x}.

    x = -1 - W_{-1}(-(1 - y)/e): linear interpolation on a table in u = sqrt(-log(1 - y)) (the
    series x = s + s²/3 + s³/36 - s⁴/270 + s⁵/4320, s = sqrt(2t), for small t), then one Halley step
    on φ(x) = y (cubic convergence from about 1e-6 relative error).
    """
    one_minus_y = 1.0 - y
    t = -np.log1p(-y)
    u = np.sqrt(t)
    pos = u * (1.0 / _HU)
    j = np.minimum(pos.astype(np.intp), _XU.size - 2)
    x0 = _XU[j]
    x = x0 + (pos - j) * (_XU[j + 1] - x0)
    small = t < 5e-3
    if small.any():
        s = np.sqrt(2.0 * t[small])
        x[small] = s * (1 + s * (1 / 3 + s * (1 / 36 + s * (-1 / 270 + s / 4320))))
    return _halley(x, y, one_minus_y)


def _clip(g: Array, dg: Array, lo: Array, hi: Array) -> tuple[Array, Array]:
    above = g > lo  # also False for NaN (0/0 of a zero-value page at λ = 0)
    return np.where(above, np.minimum(g, hi), lo), np.where(above & (g < hi), dg, 0.0)


def _lambert_response(y: Array, lam: Array, a: Array, lo: Array, hi: Array, use: Array):
    """Rate a/x with φ(x) = y where ``use`` (periodic freshness and detection), else lo."""
    n = np.broadcast(y, a, lo, hi, use).shape
    g = np.zeros(n)
    dg = np.zeros(n)
    a = np.broadcast_to(a, n)
    y, use = np.broadcast_to(y, n), np.broadcast_to(use, n)
    zero = use & (y <= 0.0) | use & (a == np.inf) & (y < 1.0)
    g[zero] = np.inf
    on = use & (y > 0.0) & (y < 1.0) & (a < np.inf)
    if on.any():
        ys, a_s = y[on], a[on]
        x, dphi = lambert_x(ys)
        gs = a_s / x
        g[on] = gs
        dg[on] = -gs * ys / (x * np.broadcast_to(lam, n)[on] * dphi)
    return _clip(g, dg, lo, hi)


def response(kind: int, lam, w, a, b, lo, hi) -> tuple[Array, Array]:
    """(clip(g(λ), lo, hi), its derivative in λ) for pages of one kind; arrays broadcast to (n,)."""
    with np.errstate(all="ignore"):
        il = np.divide(1.0, lam)
        if kind == POISSON:
            x = np.sqrt(w * a * il)
            return _clip(x - a, -0.5 * x * il, lo, hi)
        if kind == HARMONIC:
            q = w * a * il
            s = np.sqrt(a * a + 4.0 * q)
            g = np.where(np.isinf(q), np.inf, 2.0 * q / (a + s))
            return _clip(g, -q * il / s, lo, hi)
        if kind in (PERIODIC, DETECTION):
            use = (w > 0.0) & (a > 0.0) & (hi > lo)
            y = lam * a / w if kind == PERIODIC else lam / w
            return _lambert_response(y, lam, a, lo, hi, use)
        if kind == POLY:
            g = (w * a * b / ((b + 1.0) * lam)) ** (1.0 / (b + 1.0))
            return _clip(g, -g / ((b + 1.0) * lam), lo, hi)
        if kind == LOG:
            g = w * il
            return _clip(g, -g * il, lo, hi)
        g = np.where(lam < w * a, np.inf, 0.0)  # LINEAR
        return _clip(g, np.zeros_like(g), lo, hi)


def marginal(kind: int, p, w, a, b) -> Array:
    """w f'(p) per page (0 for a page of no value); arrays broadcast to (n,)."""
    with np.errstate(all="ignore"):
        if kind == POISSON:
            m = w * a / ((p + a) * (p + a))
        elif kind == HARMONIC:
            m = np.where(p > 0.0, w * a / (p * (p + a)), np.inf)
        elif kind in (PERIODIC, DETECTION):
            x = a / p
            f0 = w / a if kind == PERIODIC else w
            m = np.where((p > 0.0) & (x < np.inf), f0 * phi(np.where(x < np.inf, x, 1.0)), f0)
        elif kind == POLY:
            m = np.where(p > 0.0, w * a * b / (b + 1.0) * p ** (-b - 1.0), np.inf)
            return np.where((w > 0.0) & (a > 0.0) & (b > 0.0), m, 0.0)
        elif kind == LOG:
            return np.where(w > 0.0, np.where(p > 0.0, w / p, np.inf), 0.0)
        else:
            return np.where(w > 0.0, w * a, 0.0)
        return np.where((w > 0.0) & (a > 0.0), m, 0.0)


def value(kind: int, p, a, b) -> Array:
    """f(p) per page, unweighted; arrays broadcast to (n,)."""
    with np.errstate(all="ignore"):
        if kind == POISSON:
            return np.where(a > 0.0, p / (p + a), 1.0)
        if kind == PERIODIC:
            x = a / p
            return np.where(a > 0.0, np.where(p > 0.0, -np.expm1(-x) / x, 0.0), 1.0)
        if kind == HARMONIC:
            return np.where(a > 0.0, np.where(p > 0.0, -np.log1p(a / p), -np.inf), 0.0)
        if kind == DETECTION:
            v = np.where(a == np.inf, p, -p * np.expm1(-a / p))
            return np.where((p > 0.0) & (a > 0.0), v, 0.0)
        if kind == POLY:
            v = np.where(
                p > 0.0, -a * p ** (-b) / (b + 1.0), np.where(b > 0.0, -np.inf, -a / (b + 1.0))
            )
            return np.where(a > 0.0, v, 0.0)
        if kind == LOG:
            return np.where(a > 0.0, np.where(p > 0.0, np.log(p / a), -np.inf), 0.0)
        return np.where(a == np.inf, 1.0, a * p)


def active(kind: int, w, a, b) -> NDArray[np.bool_]:
    """Pages with a positive marginal value at some rate."""
    if kind == POLY:
        return (w > 0.0) & (a > 0.0) & (b > 0.0)
    if kind in (LOG, LINEAR):
        return np.asarray(w > 0.0) & np.ones_like(a, dtype=bool)
    return (w > 0.0) & (a > 0.0)


# ---------------------------------------------------------------------------------------------------
# The pass over many pages: the same responses, written into preallocated arrays
# ---------------------------------------------------------------------------------------------------
_D_XU = np.diff(_XU)


def _clip_into(p: Array, dp: Array, lo, hi, m1, m2) -> None:
    """:func:`_clip` in place (NaN goes to lo); m1, m2 are bool scratch arrays of the pages' shape."""
    np.greater(p, lo, out=m1)
    np.logical_not(m1, out=m1)
    capped = np.any(hi < np.inf)
    if capped:
        np.greater_equal(p, hi, out=m2)
        np.logical_or(m1, m2, out=m1)
    np.copyto(dp, 0.0, where=m1)
    np.fmax(p, lo, out=p)
    if capped:
        np.fmin(p, hi, out=p)


def lambert_into(y: Array, x: Array, t: Array, u: Array, j: NDArray[np.intp]) -> None:
    """:func:`lambert_x`'s x for 0 < y < 1, written into x (t, u, j: scratch of y's shape).

    Linear interpolation in u = sqrt(t), t = -log(1 - y), on the table, then one Halley step on
    x - log(1 + x) = t (cubic convergence from about 1e-7 relative error: the table has 8,192 steps); below y = 2e-4 the branch-point series of W_{-1} in σ = sqrt(2y) to σ⁹ instead.
    """
    np.negative(y, out=t)
    np.log1p(t, out=t)
    np.negative(t, out=t)
    np.sqrt(t, out=u)
    u *= 1.0 / _HU
    np.copyto(j, u, casting="unsafe")
    np.minimum(j, _XU.size - 2, out=j)
    np.take(_XU, j, out=x)
    u -= j
    u *= np.take(_D_XU, j)
    x += u
    # one Halley step on H(x) = x - log1p(x) - t: x - 2 H x (1 + x) / (2 x² - H)
    np.log1p(x, out=u)
    u -= x
    u += t  # -H
    np.add(x, 1.0, out=t)
    t *= u
    t *= x  # -H x (1 + x)
    np.multiply(x, x, out=j.view(np.float64))
    j.view(np.float64)[:] *= 2.0
    j.view(np.float64)[:] += u  # 2 x² - H
    t /= j.view(np.float64)
    t *= 2.0
    x += t
    small = y < 2e-4
    if small.any():
        s = np.sqrt(2.0 * y[small])
        acc = np.zeros_like(s)
        for c in _W_SERIES[::-1]:
            acc += c
            acc *= s
        x[small] = acc


#: x = -1 - W_{-1}(-(1 - y)/e) = Σ c_k σ^k, σ = sqrt(2y): the branch-point series of W (Corless et al.
#: 1996, eq. (4.22)) with p = -σ
_W_SERIES = [
    1.0,
    1.0 / 3.0,
    11.0 / 72.0,
    43.0 / 540.0,
    769.0 / 17280.0,
    221.0 / 8505.0,
    680863.0 / 43545600.0,
    1963.0 / 204120.0,
    226287557.0 / 37623398400.0,
]


class Scratch:
    """Preallocated arrays of one pass over n pages (rates, derivatives, and scratch)."""

    def __init__(self, n: int) -> None:
        self.p, self.dp, self.x, self.y, self.z = (np.empty(n) for _ in range(5))
        self.j = np.empty(n, dtype=np.intp)
        self.m1, self.m2 = np.empty(n, dtype=bool), np.empty(n, dtype=bool)

    def head(self, m: int) -> Scratch:
        """The same arrays, their first m entries (views)."""
        out = Scratch(0)
        for name in ("p", "dp", "x", "y", "z", "j", "m1", "m2"):
            setattr(out, name, getattr(self, name)[:m])
        return out


def response_into(kind: int, lam, w, a, b, lo, hi, s: Scratch, static=None) -> bool:
    """:func:`response` written into ``s.p`` and ``s.dp``; False (nothing written) for the kinds and
    multipliers it does not cover (λ = 0, and the kinds other than Poisson freshness, periodic
    freshness, harmonic staleness and detection). ``static``: for periodic freshness and detection,
    the pages that may take a rate ((w > 0) & (a > 0) & (hi > lo)); for Poisson freshness sqrt(w a).
    """
    if not (lam > 0 if np.ndim(lam) == 0 else np.all(lam > 0)):
        return False
    p, dp = s.p, s.dp
    with np.errstate(all="ignore"):
        if kind == POISSON:
            il = 1.0 / lam
            np.multiply(static, np.sqrt(il), out=p)  # x = sqrt(w a / λ)
            np.multiply(p, il, out=dp)
            dp *= -0.5
            p -= a
        elif kind == HARMONIC:
            il = 1.0 / lam
            x, y = s.x, s.y
            np.multiply(w, a, out=x)
            x *= il  # q
            np.multiply(a, a, out=y)
            y += 4.0 * x
            np.sqrt(y, out=y)  # s
            np.multiply(x, il, out=dp)
            dp /= y
            np.negative(dp, out=dp)  # -q / (λ s)
            y += a
            np.divide(x, y, out=p)
            p *= 2.0  # 2q / (a + s)
        elif kind in (PERIODIC, DETECTION):
            y, x = s.y, s.x
            if kind == PERIODIC:
                np.multiply(a, lam, out=y)
                y /= w
            else:
                np.divide(lam, w, out=y)
            bad = s.m1
            np.greater_equal(y, 1.0, out=bad)
            np.logical_or(bad, ~static, out=bad)
            np.copyto(y, 0.5, where=bad)
            lambert_into(y, x, s.z, p, s.j)
            np.divide(a, x, out=p)  # g = a/x
            # dg/dλ = -g y / (x λ φ'(x)), φ'(x) = x e^{-x} = x (1 - y) / (1 + x)
            np.add(x, 1.0, out=s.z)
            s.z *= y
            s.z *= p
            np.subtract(1.0, y, out=dp)
            dp *= x
            dp *= x
            dp *= lam
            np.divide(s.z, dp, out=dp)
            np.negative(dp, out=dp)
            np.copyto(p, 0.0, where=bad)
            np.copyto(dp, 0.0, where=bad)
        else:
            return False
        _clip_into(p, dp, lo, hi, s.m1, s.m2)
    return True
