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
from numba.extending import overload

POISSON, PERIODIC, HARMONIC, DETECTION, POLY, LOG, LINEAR = 0, 1, 2, 3, 4, 5, 6

_INL = dict(cache=True, error_model="numpy")  # small: LLVM inlines them into the passes
_FM = {"reassoc", "contract", "arcp", "nsz"}  # no 'nnan'/'ninf': inf bounds and multipliers are used
_LOOP = dict(cache=True, error_model="numpy", nogil=True, fastmath=_FM)


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
# Kind tokens: the kind is carried by the dtype of an empty array, so that numba compiles (and caches)
# one version of each pass per kind actually used, the per-page functions inlined without a branch
# ---------------------------------------------------------------------------------------------------
FUNCS = {
    POISSON: (active_delta, resp_poisson, marg_poisson, val_poisson),
    PERIODIC: (active_delta, resp_periodic, marg_periodic, val_periodic),
    HARMONIC: (active_delta, resp_harmonic, marg_harmonic, val_harmonic),
    DETECTION: (active_delta, resp_detection, marg_detection, val_detection),
    POLY: (active_poly, resp_poly, marg_poly, val_poly),
    LOG: (active_log, resp_log, marg_log, val_log),
    LINEAR: (active_log, resp_linear, marg_linear, val_linear),
}
_MIXED = 7
_TOKEN_DTYPES = {POISSON: np.float64, PERIODIC: np.float32, HARMONIC: np.int64, DETECTION: np.int32,
                 POLY: np.int16, LOG: np.int8, LINEAR: np.uint8, _MIXED: np.uint16}
#: kind -> token passed as ``tok`` to the passes; ``MIXED_TOKEN``: each page's kind is read from ``k``
TOKENS = {kind: np.empty(0, dtype=dt) for kind, dt in _TOKEN_DTYPES.items() if kind != _MIXED}
MIXED_TOKEN = np.empty(0, dtype=_TOKEN_DTYPES[_MIXED])
_KIND_OF = {np.dtype(dt).name: kind for kind, dt in _TOKEN_DTYPES.items()}


def _funcs(tok):
    kind = _KIND_OF[str(tok.dtype)]
    return (active_any, resp_any, marg_any, val_any) if kind == _MIXED else FUNCS[kind]


def _resp_t(tok, k, lam, w, a, b, lo, hi):  # pragma: no cover - compiled through the overloads below
    raise NotImplementedError


def _marg_t(tok, k, p, w, a, b):  # pragma: no cover
    raise NotImplementedError


def _val_t(tok, k, p, a, b):  # pragma: no cover
    raise NotImplementedError


def _active_t(tok, k, w, a, b):  # pragma: no cover
    raise NotImplementedError


def _lambert_kind(tok):  # pragma: no cover
    raise NotImplementedError


@overload(_resp_t)
def _resp_t_ol(tok, k, lam, w, a, b, lo, hi):
    fn = _funcs(tok)[1]
    return lambda tok, k, lam, w, a, b, lo, hi: fn(k, lam, w, a, b, lo, hi)


@overload(_marg_t)
def _marg_t_ol(tok, k, p, w, a, b):
    fn = _funcs(tok)[2]
    return lambda tok, k, p, w, a, b: fn(k, p, w, a, b)


@overload(_val_t)
def _val_t_ol(tok, k, p, a, b):
    fn = _funcs(tok)[3]
    return lambda tok, k, p, a, b: fn(k, p, a, b)


@overload(_active_t)
def _active_t_ol(tok, k, w, a, b):
    fn = _funcs(tok)[0]
    return lambda tok, k, w, a, b: fn(k, w, a, b)


@overload(_lambert_kind)
def _lambert_kind_ol(tok):
    """Whether the kind's rate is a Lambert-W response (periodic freshness, detection; a compile-time constant)."""
    flag = _KIND_OF[str(tok.dtype)] in (PERIODIC, DETECTION)
    return lambda tok: flag


# ---------------------------------------------------------------------------------------------------
# Per-page access
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


# ---------------------------------------------------------------------------------------------------
# The Lambert-W responses by chunks: the one speed mechanism of the passes
# ---------------------------------------------------------------------------------------------------
CHUNK = 256


def _resp_chunk(tok, start, m, k, lb, w, a, b, lo, hi, pb, db, ib, fb):  # pragma: no cover - overloaded
    raise NotImplementedError


@overload(_resp_chunk)
def _resp_chunk_ol(tok, start, m, k, lb, w, a, b, lo, hi, pb, db, ib, fb):
    """``pb[j], db[j]`` = the rate of page ``start + j`` at the multiplier ``lb[j]`` and its derivative, j < m.

    What it buys: a pass of periodic freshness or detection in about half the time of the page-by-page
    loop (the Lambert-W table runs without a branch over the packed pages, which then overlap in the
    pipeline; a branch per page on whether it sits at p_min mispredicts about as often as not). In three
    loops: the first writes p_min and packs the pages whose response comes from the table of
    :func:`lambert_x` (y, λ, Δ, p_min, p_max side by side in ``fb``; the page in ``ib``) and lists the
    few that need the general path from ``ib[CHUNK]``; the second runs the table over the packed pages
    and clips their rates; the third puts them in place and runs the general path. ``ib`` has shape
    (2 CHUNK,), ``fb`` shape (5, CHUNK). Other kinds: the page-by-page response.
    """
    kind = _KIND_OF[str(tok.dtype)]
    if kind not in (PERIODIC, DETECTION):
        def impl(tok, start, m, k, lb, w, a, b, lo, hi, pb, db, ib, fb):
            for j in range(m):
                i = start + j
                pb[j], db[j] = _resp_t(tok, _at(k, i), lb[j], _at(w, i), _at(a, i), _at(b, i), _at(lo, i),
                                       _at(hi, i))
        return impl
    periodic = kind == PERIODIC

    def impl(tok, start, m, k, lb, w, a, b, lo, hi, pb, db, ib, fb):
        n_tab = 0
        n_gen = 0
        yt, lt, at, lot, hit = fb[0], fb[1], fb[2], fb[3], fb[4]
        for j in range(m):
            i = start + j
            wi, ai, lam, loi, hii = _at(w, i), _at(a, i), lb[j], _at(lo, i), _at(hi, i)
            y = lam * ai / wi if periodic else lam / wi
            live = (wi > 0.0) & (ai > 0.0) & (hii > loi) & (y < 1.0)
            tab = live & (y > 0.0) & (y < _Y_TAB) & (ai < np.inf)
            pb[j] = loi
            db[j] = 0.0
            yt[n_tab], lt[n_tab], at[n_tab], lot[n_tab], hit[n_tab] = y, lam, ai, loi, hii
            ib[n_tab] = j
            n_tab += tab
            ib[CHUNK + n_gen] = j
            n_gen += live ^ tab  # (tab implies live)
        for t in range(n_tab):
            y = yt[t]
            x, dphi = _lambert_table(y)
            g, dg = _lambert_rate(x, dphi, y, lt[t], at[t])
            yt[t], lt[t] = _clip_select(g, dg, lot[t], hit[t])
        for t in range(n_tab):
            j = ib[t]
            pb[j] = yt[t]
            db[j] = lt[t]
        for t in range(n_gen):
            j = ib[CHUNK + t]
            i = start + j
            pb[j], db[j] = _resp_t(tok, _at(k, i), lb[j], _at(w, i), _at(a, i), _at(b, i), _at(lo, i), _at(hi, i))
    return impl


# ---------------------------------------------------------------------------------------------------
# Passes over the pages
# ---------------------------------------------------------------------------------------------------
@njit(**_LOOP)
def sweep(tok, n, k, w, a, b, lo, hi, hosts, nu, out):
    """The solver's one pass: per group g, Σ p_i(ν_g) and Σ dp_i/dν_g at the group's multiplier ``nu[g]``.

    Groups with ``nu[g] < 0`` are skipped. ``nu`` has shape (G + 1,), ``out`` shape (G + 1, 2)
    (overwritten; a group's two sums share a cache line).
    """
    G = nu.shape[0] - 1
    out[:] = 0.0
    lb, pb, db = np.empty(CHUNK), np.empty(CHUNK), np.empty(CHUNK)
    ib, fb = np.empty(2 * CHUNK, dtype=np.intp), np.empty((5, CHUNK))
    if hosts.shape[0] == 0:  # one group: sums in registers
        lam = nu[G]
        if lam < 0.0:
            return
        s, ds = 0.0, 0.0
        if _lambert_kind(tok):
            lb[:] = lam
            for start in range(0, n, CHUNK):
                m = min(CHUNK, n - start)
                _resp_chunk(tok, start, m, k, lb, w, a, b, lo, hi, pb, db, ib, fb)
                for j in range(m):
                    s += pb[j]
                    ds += db[j]
        else:  # a loop the compiler vectorises
            for i in range(n):
                p, dp = _resp_t(tok, _at(k, i), lam, _at(w, i), _at(a, i), _at(b, i), _at(lo, i), _at(hi, i))
                s += p
                ds += dp
        out[G, 0], out[G, 1] = s, ds
        return
    if not _lambert_kind(tok):  # page by page: gather the multiplier, compute, scatter the sums
        for i in range(n):
            g = _group(hosts, i, G)
            x = nu[g]
            if x >= 0.0:
                p, dp = _resp_t(tok, _at(k, i), x, _at(w, i), _at(a, i), _at(b, i), _at(lo, i), _at(hi, i))
                out[g, 0] += p
                out[g, 1] += dp
        return
    for start in range(0, n, CHUNK):
        m = min(CHUNK, n - start)
        for j in range(m):
            x = nu[_group(hosts, start + j, G)]
            lb[j] = x if x >= 0.0 else np.inf
        _resp_chunk(tok, start, m, k, lb, w, a, b, lo, hi, pb, db, ib, fb)
        for j in range(m):
            g = _group(hosts, start + j, G)
            if nu[g] >= 0.0:
                out[g, 0] += pb[j]
                out[g, 1] += db[j]


@njit(cache=True, error_model="numpy", inline="always")
def _rate(tok, ki, wi, ai, bi, loi, hii, L, dL, L2, t):
    """A page's rate at its multiplier L, made exact (see :func:`rates`)."""
    q, dq = _resp_t(tok, ki, L, wi, ai, bi, loi, hii)
    if t == 0.0:
        q += dq * dL
    else:
        q2, _ = _resp_t(tok, ki, L2, wi, ai, bi, loi, hii)
        if t > 0.0:
            q += t * (q2 - q)
        elif q2 == np.inf:
            q -= t
    return min(max(q, loi), hii)


@njit(**_LOOP)
def rates(tok, n, k, w, a, b, lo, hi, hosts, nu, dnu, nu2, theta, p, sums):
    """The rates at each group's multiplier ``nu[g]``, made exact, and their sums per group (``sums``).

    Either the first-order correction ``p + dp/dν · dnu[g]`` or, where the root-find ended on a jump
    of the group's Σp between ``nu2[g] < nu[g]``, the interpolation ``p(ν) + θ (p(ν2) - p(ν))``
    (``theta[g] > 0``); ``theta[g] < 0`` gives -θ more to each page whose rate is infinite at ν2.
    Clipped to the bounds. ``p`` has shape (n,), ``sums`` shape (G + 1,) (both overwritten).
    """
    G = nu.shape[0] - 1
    sums[:] = 0.0
    if _lambert_kind(tok):  # by chunks: the multipliers gathered, the responses of :func:`_resp_chunk`
        lb, pb, db = np.empty(CHUNK), np.empty(CHUNK), np.empty(CHUNK)
        ib, fb = np.empty(2 * CHUNK, dtype=np.intp), np.empty((5, CHUNK))
        for start in range(0, n, CHUNK):
            m = min(CHUNK, n - start)
            for j in range(m):
                lb[j] = nu[_group(hosts, start + j, G)]
            _resp_chunk(tok, start, m, k, lb, w, a, b, lo, hi, pb, db, ib, fb)
            for j in range(m):
                i = start + j
                g = _group(hosts, i, G)
                if theta[g] == 0.0:
                    q = min(max(pb[j] + db[j] * dnu[g], _at(lo, i)), _at(hi, i))
                else:
                    q = _rate(tok, _at(k, i), _at(w, i), _at(a, i), _at(b, i), _at(lo, i), _at(hi, i), nu[g], dnu[g],
                              nu2[g], theta[g])
                p[i] = q
                sums[g] += q
        return
    if hosts.shape[0] == 0:  # one group: its multiplier and sum in registers
        L, dL, L2, t = nu[G], dnu[G], nu2[G], theta[G]
        s = 0.0
        if t == 0.0:  # the correction alone: a loop the compiler vectorises
            for i in range(n):
                loi, hii = _at(lo, i), _at(hi, i)
                q, dq = _resp_t(tok, _at(k, i), L, _at(w, i), _at(a, i), _at(b, i), loi, hii)
                q = min(max(q + dq * dL, loi), hii)
                p[i] = q
                s += q
            sums[G] = s
            return
        for i in range(n):
            q = _rate(tok, _at(k, i), _at(w, i), _at(a, i), _at(b, i), _at(lo, i), _at(hi, i), L, dL, L2, t)
            p[i] = q
            s += q
        sums[G] = s
        return
    for i in range(n):
        g = _group(hosts, i, G)
        q = _rate(tok, _at(k, i), _at(w, i), _at(a, i), _at(b, i), _at(lo, i), _at(hi, i), nu[g], dnu[g], nu2[g],
                  theta[g])
        p[i] = q
        sums[g] += q


@njit(cache=True, error_model="numpy", inline="always")
def _residual(tok, ki, q, wi, ai, bi, loi, hii, L, scale):
    """Violation of ``w f'(q) = L`` (``<=`` at lo, ``>=`` at hi) divided by scale, without a branch."""
    d = min(_marg_t(tok, ki, q, wi, ai, bi), 1e300) - min(L, 1e300)
    at_lo = np.float64(q <= loi)
    at_hi = np.float64(q >= hii) * (1.0 - at_lo)
    r = at_lo * max(d, 0.0) + at_hi * max(-d, 0.0) + (1.0 - at_lo - at_hi) * abs(d)
    return r / scale if (hii > loi) & (L < np.inf) else 0.0


@njit(**_LOOP)
def certificate(tok, n, k, w, a, b, lo, hi, hosts, nu, p, offset):
    """(KKT residual, objective) of rates p for the multipliers ``nu`` (shape (G + 1,)).

    The residual is the largest relative violation of ``w f'(p_i) = ν_i`` inside the bounds (``<=`` at
    ``lo``, ``>=`` at ``hi``); the objective is Σ w_i (f_i(p_i) + offset), pages with w_i = 0 counting 0.
    """
    G = nu.shape[0] - 1
    worst = 0.0
    value = 0.0
    for i in range(n):
        ki, wi, ai, bi = _at(k, i), _at(w, i), _at(a, i), _at(b, i)
        v = wi * (_val_t(tok, ki, p[i], ai, bi) + offset)
        value += v if wi != 0.0 else 0.0
    if hosts.shape[0] == 0:  # one multiplier: the residual divided by it once
        L = nu[G]
        for i in range(n):
            r = _residual(tok, _at(k, i), p[i], _at(w, i), _at(a, i), _at(b, i), _at(lo, i), _at(hi, i), L, 1.0)
            worst = max(worst, r)
        return (worst / min(L, 1e300) if L > 0.0 else worst), value
    for i in range(n):
        L = nu[_group(hosts, i, G)]
        r = _residual(tok, _at(k, i), p[i], _at(w, i), _at(a, i), _at(b, i), _at(lo, i), _at(hi, i), L,
                      min(L, 1e300) if L > 0.0 else 1.0)
        worst = max(worst, r)
    return worst, value


@njit(**_LOOP)
def group_bounds(tok, n, k, w, a, b, lo, hi, hosts, out):
    """Per group: Σ lo, Σp at λ = 0+ (hi for pages of positive marginal value, else lo), Σ hi.

    ``out`` has shape (3, G + 1) (overwritten).
    """
    G = out.shape[1] - 1
    out[:] = 0.0
    if hosts.shape[0] == 0 and lo.shape[0] == 1 and hi.shape[0] == 1 and hi[0] == np.inf:
        # shared bounds, no p_max: Σp at 0+ is inf as soon as one page has a positive marginal value
        out[0, G], out[2, G], out[1, G] = n * lo[0], np.inf, n * lo[0]
        for i in range(n):
            if _active_t(tok, _at(k, i), _at(w, i), _at(a, i), _at(b, i)):
                out[1, G] = np.inf
                break
        return
    if hosts.shape[0] == 0:
        s_lo, s_top, s_hi = 0.0, 0.0, 0.0
        for i in range(n):
            loi, hii = _at(lo, i), _at(hi, i)
            s_lo += loi
            s_top += hii if _active_t(tok, _at(k, i), _at(w, i), _at(a, i), _at(b, i)) else loi
            s_hi += hii
        out[0, G], out[1, G], out[2, G] = s_lo, s_top, s_hi
        return
    for i in range(n):
        g = _group(hosts, i, G)
        loi, hii = _at(lo, i), _at(hi, i)
        out[0, g] += loi
        out[1, g] += hii if _active_t(tok, _at(k, i), _at(w, i), _at(a, i), _at(b, i)) else loi
        out[2, g] += hii


@njit(**_LOOP)
def breakpoints(tok, n, k, w, a, b, lo, hi, hosts, la, lb, mid, out):
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
            e = _marg_t(tok, ki, q, wi, ai, bi)
            if la[g] < e < lb[g]:
                d = abs(math.log(e / mid[g]))
                if d < best[g]:
                    best[g] = d
                    out[g] = e


@njit(**_LOOP)
def active(tok, n, k, w, a, b, out):
    """Whether each page's marginal value is positive at some rate (``out`` shape (n,), bool)."""
    for i in range(n):
        out[i] = _active_t(tok, _at(k, i), _at(w, i), _at(a, i), _at(b, i))


# ---------------------------------------------------------------------------------------------------
# Element-wise arrays for the Objective methods
# ---------------------------------------------------------------------------------------------------
@njit(**_LOOP)
def values(tok, p, a, b):
    """f(p_i) for every page (unweighted), shape (n,)."""
    out = np.empty(p.shape[0])
    for i in range(p.shape[0]):
        out[i] = _val_t(tok, 0, p[i], a[i], _at(b, i))
    return out


@njit(**_LOOP)
def marginals(tok, k, p, a, b):
    """f'(p_i) for every page (unweighted), shape (n,)."""
    out = np.empty(p.shape[0])
    for i in range(p.shape[0]):
        out[i] = _marg_t(tok, _at(k, i), p[i], 1.0, a[i], _at(b, i))
    return out


@njit(**_LOOP)
def responses(tok, lam, a, b):
    """The p >= 0 with f'(p) = λ_i (0 when f'(0) <= λ_i), shape (n,)."""
    out = np.empty(lam.shape[0])
    for i in range(lam.shape[0]):
        out[i], _ = _resp_t(tok, 0, lam[i], 1.0, a[i], _at(b, i), 0.0, np.inf)
    return out
