"""Compiled per-page functions and passes of the allocation solver.

Each page has a kind (its objective) and parameters ``w``, ``a``, ``b``, ``lo``, ``hi``; every per-page
input is a one-dimensional array, of shape (n,) or of shape (1,) for a value shared by every page, so
that each pass compiles exactly once whatever the caller passed (numba compiles one variant per
combination of argument types).

==============  ====  =======================================  ==============================
kind            code  f(p)                                     parameters
==============  ====  =======================================  ==============================
POISSON         0     p / (p + a)                              a = Δ
PERIODIC        1     (p / a) (1 - exp(-a / p))                a = Δ
HARMONIC        2     log(p / (p + a))                         a = Δ
DETECTION       3     p (1 - exp(-a / p))                      a = Δ (inf: f = p)
POLY            4     -a p^(-b) / (b + 1)                      a, b of c(τ) = a τ^b
LOG             5     log(p / a)  (0 when a = 0)               a = Δ (complete observation)
LINEAR          6     a p  (1 when a = inf)                    a = 1 / Δ (complete observation)
==============  ====  =======================================  ==============================

``resp_any`` returns a page's optimal rate for a multiplier λ, ``clip(g(λ), lo, hi)`` with ``g`` the
inverse of ``w f'`` (closed forms, and the Lambert-W form ``lambert_x`` for periodic freshness and
detection), and its derivative with respect to λ (0 where clipped). λ = 0 gives ``hi`` to pages with a
positive marginal value, λ = inf gives ``lo``.

The passes group the pages by host: group h < G is host h, group G holds the pages without a host (or
every page, when ``hosts`` has shape (0,)).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

POISSON, PERIODIC, HARMONIC, DETECTION, POLY, LOG, LINEAR = 0, 1, 2, 3, 4, 5, 6

_INL = dict(cache=True, error_model="numpy")  # small: LLVM inlines them into the passes
_LOOP = dict(cache=True, error_model="numpy", nogil=True)


# Scalar helpers
# ---------------------------------------------------------------------------------------------------
# _h and hinv are plain Python until the Lambert-W tables below are built with them (then compiled):
# compiling the table builders at import cost every first call about 1 s, for 1,284 values.
def _h(x):
    """x - log(1 + x), accurate for small x."""
    if x < 0.05:
        s = 0.0
        xp = x * x
        sign = 1.0
        for k in range(2, 15):
            s += sign * xp / k
            xp *= x
            sign = -sign
        return s
    return x - math.log1p(x)


def hinv(t):
    """The x > 0 with x - log(1 + x) = t (t >= 0), that is x = -1 - W_{-1}(-exp(-1 - t)).

    Series start for small t (x ≈ s + s²/3 + s³/36 - s⁴/270 + s⁵/4320, s = sqrt(2t)), fixed-point
    start for large t, then Halley steps to machine precision.
    """
    if t <= 0.0:
        return 0.0
    if t < 1.5:
        s = math.sqrt(2.0 * t)
        x = s * (1.0 + s * (1.0 / 3.0 + s * (1.0 / 36.0 + s * (-1.0 / 270.0 + s / 4320.0))))
    else:
        x = t + math.log1p(t + math.log1p(t))
    for _ in range(30):
        f = _h(x) - t
        # Halley: x - 2 F F' / (2 F'^2 - F F''), F' = x/(1+x), F'' = 1/(1+x)^2, times (1+x)^2
        step = 2.0 * f * x * (1.0 + x) / (2.0 * x * x - f)
        xn = x - step
        if not xn > 0.0:
            xn = 0.5 * x
        if abs(step) <= 1e-6 * xn:  # cubic convergence: the next step would be below 1e-18
            return xn
        x = xn
    return x


_PHI_C = [(-1.0) ** k * (k - 1) / math.factorial(k) for k in range(2, 17)]
_P0, _P1, _P2, _P3, _P4, _P5, _P6, _P7, _P8, _P9, _P10, _P11, _P12, _P13, _P14 = _PHI_C  # compile-time constants


@njit(cache=True, error_model="numpy", inline="always")
def _phi_series(x):
    """Σ_{k>=2} (-1)^k (k-1) x^k / k! to k = 16 (the first omitted term is below 1e-17 relative for x < 0.5).

    Estrin's scheme: a dependency chain of 5 multiply-adds instead of Horner's 15, so that the pages of a
    pass overlap in the pipeline.
    """
    x2 = x * x
    x4 = x2 * x2
    x8 = x4 * x4
    q0 = (_P0 + _P1 * x) + (_P2 + _P3 * x) * x2
    q1 = (_P4 + _P5 * x) + (_P6 + _P7 * x) * x2
    q2 = (_P8 + _P9 * x) + (_P10 + _P11 * x) * x2
    q3 = (_P12 + _P13 * x) + _P14 * x2
    return ((q0 + q1 * x4) + (q2 + q3 * x4) * x8) * x2


@njit(cache=True, error_model="numpy", inline="always")
def _phi_e(x, e):
    """φ(x) = 1 - (1 + x) e^{-x} given e = e^{-x}: the series below x = 0.5, where the difference cancels.

    Both are computed and one is selected, so that no branch depends on the page.
    """
    series = _phi_series(x)
    return series if x < 0.5 else 1.0 - (1.0 + x) * e


@njit(cache=True, error_model="numpy")
def phi(x):
    """1 - (1 + x) exp(-x), accurate for small x (x >= 0)."""
    return _phi_e(x, math.exp(-x))


@njit(**_INL)
def _clip(g, dg, lo, hi):
    if not g > lo:  # also NaN (0/0 for a zero-value page at λ = 0)
        return lo, 0.0
    if g >= hi:
        return hi, 0.0
    return g, dg


@njit(**_INL)
def _clip_select(g, dg, lo, hi):
    """:func:`_clip` by selects, for the branch-free table loop of :func:`_resp_chunk`."""
    low = not g > lo
    high = g >= hi
    return (lo if low else (hi if high else g)), (0.0 if low | high else dg)


# ---------------------------------------------------------------------------------------------------
# Per-kind functions: active, resp, marg, val (k is unused; it keeps one signature for all kinds)
# ---------------------------------------------------------------------------------------------------
@njit(**_INL)
def active_delta(k, w, a, b):
    return w > 0.0 and a > 0.0


@njit(**_INL)
def active_poly(k, w, a, b):
    return w > 0.0 and a > 0.0 and b > 0.0


@njit(**_INL)
def active_log(k, w, a, b):
    return w > 0.0


@njit(**_INL)
def resp_poisson(k, lam, w, a, b, lo, hi):
    return resp_il_poisson(k, 1.0 / lam, w, a, b, lo, hi)  # 1/λ hoisted out of a pass at one λ


@njit(**_INL)
def resp_il_poisson(k, il, w, a, b, lo, hi):
    """resp_poisson from il = 1/λ (a pass that gathers per-host multipliers gathers 1/λ: no division)."""
    x = math.sqrt(w * a * il)
    return _clip(x - a, -0.5 * x * il, lo, hi)


@njit(**_INL)
def resp_harmonic(k, lam, w, a, b, lo, hi):
    return resp_il_harmonic(k, 1.0 / lam, w, a, b, lo, hi)  # 1/λ hoisted out of a pass at one λ


@njit(**_INL)
def resp_il_harmonic(k, il, w, a, b, lo, hi):
    # g = 2q / (a + s) with q = w Δ / λ, s = sqrt(a² + 4q) = 2g + a; dg/dλ = -g (g + a) / (λ s) = -q / (λ s).
    # Both quotients share one division; il = 1/λ (inf at λ = 0).
    q = w * a * il
    s = math.sqrt(a * a + 4.0 * q)
    inv = 1.0 / (s * (a + s))
    g = 2.0 * q * s * inv
    if not il < np.inf and q > 0.0:
        g = np.inf
    return _clip(g, -q * il * (a + s) * inv, lo, hi)


_EXP_STEP = 1.0 / 64.0
# e^{-j/64} by the math library's exp (within half an ulp); covers x < 8, beyond the largest x of the
# Lambert-W table (about 6.6)
_EXP_TAB = np.array([math.exp(-j * _EXP_STEP) for j in range(8 * 64 + 2)])
_E1, _E2, _E3, _E4, _E5, _E6, _E7, _E8 = [(-1.0) ** k / math.factorial(k) for k in range(1, 9)]


@njit(cache=True, error_model="numpy", inline="always")
def _exp_neg_small(x):
    """e^{-x} for 0 <= x < 8, within 1 ulp: e^{-j/64} from a table times e^{-r}, r = x - j/64 (exact) in
    [0, 1/64), by its series to r^8 (the rest is below 1e-19). No call and no branch: :func:`_lambert_table`
    alone in a loop took 13-15 ns a page with the math library's exp, 10-11 with this."""
    j = min(int(x * (1.0 / _EXP_STEP)), _EXP_TAB.shape[0] - 1)
    r = x - j * _EXP_STEP
    q = _E7 + r * _E8
    q = _E6 + r * q
    q = _E5 + r * q
    q = _E4 + r * q
    q = _E3 + r * q
    q = _E2 + r * q
    e = _EXP_TAB[j]
    return e + e * (r * (_E1 + r * q))  # e (1 + (e^{-r} - 1)): one rounding after the table's


_Y_TAB = 0.99  # below: table in sqrt(y) + one Halley step on φ(x) = y; above: the same in t = -log(1 - y)
_M_TAB = 1024


def _build_table(m):
    """x(s) and dx/ds on a uniform grid of s = sqrt(y) in [0, sqrt(_Y_TAB)], where φ(x) = y (at import)."""
    s_max = math.sqrt(_Y_TAB)
    xs = np.empty(m + 2)
    dxs = np.empty(m + 2)
    for j in range(m + 2):
        s = s_max * j / m
        y = s * s
        if y <= 0.0:
            xs[j] = 0.0
            dxs[j] = math.sqrt(2.0)
            continue
        x = hinv(-math.log1p(-y))
        xs[j] = x
        dxs[j] = 2.0 * s / (x * math.exp(-x))  # dx/ds = 2s / φ'(x)
    return xs, dxs, s_max / m


_XS, _DXS, _H_TAB = _build_table(_M_TAB)


@njit(cache=True, error_model="numpy", inline="always")
def _hermite(u, xs, dxs, h):
    """Cubic Hermite interpolation at u >= 0 (in grid steps) of a table of values ``xs`` and slopes ``dxs``
    (shape (m + 2,), step h), clamped to its last interval."""
    j = min(int(u), xs.shape[0] - 3)
    r = u - j
    d0, d1 = dxs[j] * h, dxs[j + 1] * h
    r2 = r * r
    r3 = r2 * r
    return (2 * r3 - 3 * r2 + 1) * xs[j] + (r3 - 2 * r2 + r) * d0 + (-2 * r3 + 3 * r2) * xs[j + 1] + (r3 - r2) * d1


@njit(cache=True, error_model="numpy", inline="always")
def _lambert_table(y):
    """:func:`lambert_x` for 0 < y < _Y_TAB: cubic Hermite interpolation in sqrt(y), then one Halley step.

    Branch-free, so that the pages of a pass overlap in the pipeline (see :func:`_resp_chunk`).
    """
    x = _hermite(math.sqrt(y) * (1.0 / _H_TAB), _XS, _DXS, _H_TAB)
    e = _exp_neg_small(x)
    f = _phi_e(x, e) - y
    # Halley: x - 2 F F' / (2 F'^2 - F F''), F' = x e, F'' = (1 - x) e
    xn = x - 2.0 * f * x / (2.0 * x * x * e - f * (1.0 - x))
    return xn, x * e  # φ'(x) at the table point: only used for derivatives


#: above y = _Y_TAB: a table of x in t = -log(1 - y) over [_T_LO, _T_HI], which holds every y < 1 in
#: double precision (t <= 36.8)
_T_LO = -math.log1p(-_Y_TAB)
_T_HI = 37.5
_M_TAIL = 256


def _build_tail_table(m):
    """x(t) and dx/dt = (1 + x)/x on a uniform grid of t in [_T_LO, _T_HI], where x - log(1 + x) = t
    (at import)."""
    h = (_T_HI - _T_LO) / m
    xs = np.empty(m + 2)
    dxs = np.empty(m + 2)
    for j in range(m + 2):
        x = hinv(_T_LO + j * h)
        xs[j] = x
        dxs[j] = (1.0 + x) / x
    return xs, dxs, h


_XT, _DXT, _H_TAIL = _build_tail_table(_M_TAIL)
_h = njit(cache=True, error_model="numpy")(_h)
hinv = njit(cache=True, error_model="numpy")(hinv)


@njit(cache=True, error_model="numpy")
def lambert_x(y):
    """The x >= 0 with 1 - (1 + x) e^{-x} = y, for 0 < y < 1; returns (x, x e^{-x}).

    x = -1 - W_{-1}(-(1 - y)/e). For y < 0.99: cubic Hermite interpolation in sqrt(y) on a table,
    then one Halley step (cubic convergence from ~1e-9 relative error); above, the same in
    t = -log(1 - y) on a second table, the Halley step on x - log(1 + x) = t (a third of the time of
    Halley iterations from an asymptotic start, which are kept for t beyond the table).
    """
    if y < _Y_TAB:
        return _lambert_table(y)
    t = -math.log1p(-y)
    if t <= _T_HI:
        x = _hermite((t - _T_LO) * (1.0 / _H_TAIL), _XT, _DXT, _H_TAIL)
        f = x - math.log1p(x) - t
        # Halley: F' = x/(1+x), F'' = 1/(1+x)^2, times (1+x)^2
        x = x - 2.0 * f * x * (1.0 + x) / (2.0 * x * x - f)
    else:
        x = hinv(t)
    return x, x * math.exp(-x)


@njit(**_INL)
def _lambert_rate(x, dphi, y, lam, a):
    """The rate a/x and its derivative in λ, before clipping, from :func:`lambert_x`'s (x, dphi)."""
    g = a / x
    return g, -g * y / (x * lam * dphi)


@njit(cache=True, error_model="numpy")
def _resp_lambert(y, lam, a, lo, hi):
    """Rate a/x with 1 - (1 + x) e^{-x} = y (periodic freshness and detection)."""
    if not y < 1.0:
        return lo, 0.0
    if a == np.inf or y <= 0.0:
        return _clip(np.inf, 0.0, lo, hi)
    x, dphi = lambert_x(y)
    g, dg = _lambert_rate(x, dphi, y, lam, a)
    return _clip(g, dg, lo, hi)


@njit(**_INL)
def resp_periodic(k, lam, w, a, b, lo, hi):
    if not (w > 0.0 and a > 0.0) or hi <= lo:
        return lo, 0.0
    return _resp_lambert(lam * a / w, lam, a, lo, hi)


@njit(**_INL)
def resp_detection(k, lam, w, a, b, lo, hi):
    if not (w > 0.0 and a > 0.0) or hi <= lo:
        return lo, 0.0
    return _resp_lambert(lam / w, lam, a, lo, hi)


@njit(**_INL)
def resp_poly(k, lam, w, a, b, lo, hi):
    g = (w * a * b / ((b + 1.0) * lam)) ** (1.0 / (b + 1.0))
    return _clip(g, -g / ((b + 1.0) * lam), lo, hi)


@njit(**_INL)
def resp_log(k, lam, w, a, b, lo, hi):
    g = w / lam
    return _clip(g, -g / lam, lo, hi)


@njit(**_INL)
def resp_linear(k, lam, w, a, b, lo, hi):
    g = np.inf if lam < w * a else 0.0
    return _clip(g, 0.0, lo, hi)


@njit(**_INL)
def marg_poisson(k, p, w, a, b):
    if not (w > 0.0 and a > 0.0):
        return 0.0
    return w * a / ((p + a) * (p + a))


@njit(**_INL)
def marg_harmonic(k, p, w, a, b):
    if not (w > 0.0 and a > 0.0):
        return 0.0
    if p <= 0.0:
        return np.inf
    return w * a / (p * (p + a))


@njit(**_INL)
def marg_periodic(k, p, w, a, b):
    if not (w > 0.0 and a > 0.0):
        return 0.0
    if p <= 0.0:
        return w / a
    return w / a * phi(a / p)


@njit(**_INL)
def marg_detection(k, p, w, a, b):
    if not (w > 0.0 and a > 0.0):
        return 0.0
    if p <= 0.0 or a == np.inf:
        return w
    return w * phi(a / p)


@njit(**_INL)
def marg_poly(k, p, w, a, b):
    if not (w > 0.0 and a > 0.0 and b > 0.0):
        return 0.0
    if p <= 0.0:
        return np.inf
    return w * a * b / (b + 1.0) * p ** (-b - 1.0)


@njit(**_INL)
def marg_log(k, p, w, a, b):
    if not w > 0.0:
        return 0.0
    if p <= 0.0:
        return np.inf
    return w / p


@njit(**_INL)
def marg_linear(k, p, w, a, b):
    if not w > 0.0:
        return 0.0
    return w * a


@njit(**_INL)
def val_poisson(k, p, a, b):
    if a <= 0.0:
        return 1.0
    return p / (p + a)


@njit(**_INL)
def val_periodic(k, p, a, b):
    if a <= 0.0:
        return 1.0
    if p <= 0.0:
        return 0.0
    x = a / p
    return -math.expm1(-x) / x


@njit(**_INL)
def val_harmonic(k, p, a, b):
    if a <= 0.0:
        return 0.0
    if p <= 0.0:
        return -np.inf
    return -math.log1p(a / p)


@njit(**_INL)
def val_detection(k, p, a, b):
    if p <= 0.0 or a <= 0.0:
        return 0.0
    if a == np.inf:
        return p
    return -p * math.expm1(-a / p)


@njit(**_INL)
def val_poly(k, p, a, b):
    if a <= 0.0:
        return 0.0
    if p <= 0.0:
        return -np.inf if b > 0.0 else -a / (b + 1.0)
    return -a * p ** (-b) / (b + 1.0)


@njit(**_INL)
def val_log(k, p, a, b):
    if a <= 0.0:
        return 0.0
    if p <= 0.0:
        return -np.inf
    return math.log(p / a)


@njit(**_INL)
def val_linear(k, p, a, b):
    if a == np.inf:
        return 1.0
    return a * p


# mixed kinds: dispatch on the page's kind k
@njit(cache=True, error_model="numpy")
def active_any(k, w, a, b):
    if k == POLY:
        return active_poly(k, w, a, b)
    if k == LOG or k == LINEAR:
        return active_log(k, w, a, b)
    return active_delta(k, w, a, b)


@njit(cache=True, error_model="numpy")
def resp_any(k, lam, w, a, b, lo, hi):
    if k == POISSON:
        return resp_poisson(k, lam, w, a, b, lo, hi)
    if k == PERIODIC:
        return resp_periodic(k, lam, w, a, b, lo, hi)
    if k == HARMONIC:
        return resp_harmonic(k, lam, w, a, b, lo, hi)
    if k == DETECTION:
        return resp_detection(k, lam, w, a, b, lo, hi)
    if k == POLY:
        return resp_poly(k, lam, w, a, b, lo, hi)
    if k == LOG:
        return resp_log(k, lam, w, a, b, lo, hi)
    return resp_linear(k, lam, w, a, b, lo, hi)


@njit(cache=True, error_model="numpy")
def marg_any(k, p, w, a, b):
    if k == POISSON:
        return marg_poisson(k, p, w, a, b)
    if k == PERIODIC:
        return marg_periodic(k, p, w, a, b)
    if k == HARMONIC:
        return marg_harmonic(k, p, w, a, b)
    if k == DETECTION:
        return marg_detection(k, p, w, a, b)
    if k == POLY:
        return marg_poly(k, p, w, a, b)
    if k == LOG:
        return marg_log(k, p, w, a, b)
    return marg_linear(k, p, w, a, b)


@njit(cache=True, error_model="numpy")
def val_any(k, p, a, b):
    if k == POISSON:
        return val_poisson(k, p, a, b)
    if k == PERIODIC:
        return val_periodic(k, p, a, b)
    if k == HARMONIC:
        return val_harmonic(k, p, a, b)
    if k == DETECTION:
        return val_detection(k, p, a, b)
    if k == POLY:
        return val_poly(k, p, a, b)
    if k == LOG:
        return val_log(k, p, a, b)
    return val_linear(k, p, a, b)



# ---------------------------------------------------------------------------------------------------
# Passes over the pages
# ---------------------------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy", inline="always")
def _at(x, i):
    """Entry i of a per-page array, or its one entry when it is shared by every page (shape (1,))."""
    return x[0] if x.shape[0] == 1 else x[i]


@njit(cache=True, error_model="numpy", inline="always")
def _group(hosts, i, G):
    if hosts.shape[0] == 0:
        return G
    h = hosts[i]
    return h if h >= 0 else G


@njit(**_LOOP)
def sweep(n, k, w, a, b, lo, hi, hosts, lam, mu, out):
    """The solver's one pass: per group g, Σ p_i(λ), Σ dp_i/dλ, Σ p_i(μ_g) and Σ dp_i/dμ_g.

    ``lam < 0`` skips the sums at λ; ``mu[g] < 0`` skips group g's sums at μ_g. ``mu`` has shape
    (G + 1,), ``out`` shape (4, G + 1) (overwritten).
    """
    G = mu.shape[0] - 1
    out[:] = 0.0
    at_lam = lam >= 0.0
    for i in range(n):
        g = _group(hosts, i, G)
        m = mu[g]
        if not (at_lam or m >= 0.0):
            continue
        ki, wi, ai, bi, loi, hii = _at(k, i), _at(w, i), _at(a, i), _at(b, i), _at(lo, i), _at(hi, i)
        if at_lam:
            p, dp = resp_any(ki, lam, wi, ai, bi, loi, hii)
            out[0, g] += p
            out[1, g] += dp
        if m >= 0.0:
            p, dp = resp_any(ki, m, wi, ai, bi, loi, hii)
            out[2, g] += p
            out[3, g] += dp


@njit(**_LOOP)
def rates(n, k, w, a, b, lo, hi, hosts, nu, dnu, nu2, theta, p, sums):
    """The rates at each group's multiplier ``nu[g]``, made exact, and their sums per group (``sums``).

    Either the first-order correction ``p + dp/dν · dnu[g]`` or, where the root-find ended on a jump
    of the group's Σp between ``nu2[g] < nu[g]``, the interpolation ``p(ν) + θ (p(ν2) - p(ν))``
    (``theta[g] > 0``); ``theta[g] < 0`` gives -θ more to each page whose rate is infinite at ν2.
    Clipped to the bounds. ``p`` has shape (n,), ``sums`` shape (G + 1,) (both overwritten).
    """
    G = nu.shape[0] - 1
    sums[:] = 0.0
    for i in range(n):
        g = _group(hosts, i, G)
        ki, wi, ai, bi, loi, hii = _at(k, i), _at(w, i), _at(a, i), _at(b, i), _at(lo, i), _at(hi, i)
        q, dq = resp_any(ki, nu[g], wi, ai, bi, loi, hii)
        t = theta[g]
        if t == 0.0:
            if dq != 0.0:
                q += dq * dnu[g]
        else:
            q2, _ = resp_any(ki, nu2[g], wi, ai, bi, loi, hii)
            if t > 0.0:
                q += t * (q2 - q)
            elif q2 == np.inf:
                q -= t
        q = min(max(q, loi), hii)
        p[i] = q
        sums[g] += q


@njit(**_LOOP)
def certificate(n, k, w, a, b, lo, hi, hosts, nu, p, offset):
    """(KKT residual, objective) of rates p for the multipliers ``nu`` (shape (G + 1,)).

    The residual is the largest relative violation of ``w f'(p_i) = ν_i`` inside the bounds (``<=`` at
    ``lo``, ``>=`` at ``hi``); the objective is Σ w_i (f_i(p_i) + offset), pages with w_i = 0 counting 0.
    """
    G = nu.shape[0] - 1
    worst = 0.0
    value = 0.0
    for i in range(n):
        g = _group(hosts, i, G)
        ki, wi, ai, bi, loi, hii = _at(k, i), _at(w, i), _at(a, i), _at(b, i), _at(lo, i), _at(hi, i)
        q = p[i]
        if wi != 0.0:
            value += wi * (val_any(ki, q, ai, bi) + offset)
        L = nu[g]
        if not (hii > loi and L < np.inf):
            continue
        d = min(marg_any(ki, q, wi, ai, bi), 1e300) - min(L, 1e300)
        if q <= loi:
            r = max(d, 0.0)
        elif q >= hii:
            r = max(-d, 0.0)
        else:
            r = abs(d)
        if L > 0.0:
            r /= min(L, 1e300)
        worst = max(worst, r)
    return worst, value


@njit(**_LOOP)
def group_bounds(n, k, w, a, b, lo, hi, hosts, out):
    """Per group: Σ lo, Σp at λ = 0+ (hi for pages of positive marginal value, else lo), Σ hi.

    ``out`` has shape (3, G + 1) (overwritten).
    """
    G = out.shape[1] - 1
    out[:] = 0.0
    for i in range(n):
        g = _group(hosts, i, G)
        loi, hii = _at(lo, i), _at(hi, i)
        out[0, g] += loi
        out[1, g] += hii if active_any(_at(k, i), _at(w, i), _at(a, i), _at(b, i)) else loi
        out[2, g] += hii


@njit(**_LOOP)
def active(n, k, w, a, b, out):
    """Whether each page's marginal value is positive at some rate (``out`` shape (n,), bool)."""
    for i in range(n):
        out[i] = active_any(_at(k, i), _at(w, i), _at(a, i), _at(b, i))


@njit(**_LOOP)
def values(k, p, a, b):
    """f(p_i) for every page (unweighted), shape (n,)."""
    out = np.empty(p.shape[0])
    for i in range(p.shape[0]):
        out[i] = val_any(_at(k, i), p[i], a[i], _at(b, i))
    return out


@njit(**_LOOP)
def marginals(k, p, a, b):
    """f'(p_i) for every page (unweighted), shape (n,)."""
    out = np.empty(p.shape[0])
    for i in range(p.shape[0]):
        out[i] = marg_any(_at(k, i), p[i], 1.0, a[i], _at(b, i))
    return out


@njit(**_LOOP)
def responses(k, lam, a, b):
    """The p >= 0 with f'(p) = λ_i (0 when f'(0) <= λ_i), shape (n,)."""
    out = np.empty(lam.shape[0])
    for i in range(lam.shape[0]):
        out[i], _ = resp_any(_at(k, i), lam[i], 1.0, a[i], _at(b, i), 0.0, np.inf)
    return out


@njit(**_LOOP)
def breakpoints(n, k, w, a, b, lo, hi, hosts, la, lb, mid, out):
    """Per group g with ``mid[g] > 0``: the breakpoint of its Σp inside (la[g], lb[g]) nearest to mid[g].

    A page's breakpoints are the multipliers where it leaves a bound, ``w f'(lo)`` and ``w f'(hi)``
    (a jump of Σp where the marginal value is constant). Nearest in log scale; NaN where there is none.
    ``la``, ``lb``, ``mid`` and ``out`` have shape (G + 1,).
    """
    G = out.shape[0] - 1
    best = np.full(G + 1, np.inf)
    out[:] = np.nan
    for i in range(n):
        g = _group(hosts, i, G)
        if not mid[g] > 0.0:
            continue
        ki, wi, ai, bi = _at(k, i), _at(w, i), _at(a, i), _at(b, i)
        for q in (_at(lo, i), _at(hi, i)):
            e = marg_any(ki, q, wi, ai, bi)
            if la[g] < e < lb[g]:
                d = abs(math.log(e / mid[g]))
                if d < best[g]:
                    best[g] = d
                    out[g] = e
