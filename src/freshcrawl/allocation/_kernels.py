"""Compiled per-page kernels of the allocation solver.

Every kernel is one fused pass over the pages. Per-page inputs (``w``, ``a``, ``b``, ``lo``, ``hi``
and the kind ``k``) are contiguous one-dimensional arrays, of shape (n,) or of shape (1,) for a value
shared by every page (read through :func:`_get`), so numba compiles one variant of each kernel per
objective kind, and shared bounds and unit weights cost neither memory nor loads. The kind is carried by
a token (``tok``), so that a single-objective problem runs a branch-free loop that the compiler
vectorises.

Kinds (the objective of a page) and their parameters ``a``, ``b``:

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

``resp`` returns the page's optimal rate for a multiplier λ, ``clip(g(λ), lo, hi)`` with ``g`` the
inverse of ``w f'``, and its derivative with respect to λ (0 where clipped). λ = 0 gives ``hi`` to
pages with a positive marginal value, λ = inf gives ``lo``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.extending import overload

POISSON, PERIODIC, HARMONIC, DETECTION, POLY, LOG, LINEAR = 0, 1, 2, 3, 4, 5, 6

_INL = dict(cache=True, error_model="numpy")  # small: LLVM inlines them into the passes
_FM = {"reassoc", "contract", "arcp", "nsz"}  # no 'nnan'/'ninf': inf bounds and multipliers are used
_LOOP = dict(cache=True, error_model="numpy", nogil=True, fastmath=_FM)
_PLAIN = dict(cache=True, error_model="numpy", nogil=True)


def writable(x, dtype=np.float64):
    """x as a contiguous, writable array of dtype, copied only when it is not one already.

    numba compiles one variant of a kernel per argument type, and a read-only array (a caller's frozen
    array, a broadcast view) is a type of its own: every kernel taking both kinds compiled twice.
    """
    x = np.ascontiguousarray(x, dtype=dtype)
    return x if x.flags.writeable else x.copy()


def per_page(x, dtype=np.float64):
    """A per-page input as the kernels take it: a contiguous, writable one-dimensional array of shape
    (1,) when one value is shared by every page, else (n,).

    Every per-page input has this one type, so numba compiles one variant of each kernel per objective
    kind, whichever inputs are shared; the kernels read a shared one as ``x[0]`` (:func:`_get`).
    """
    return writable(np.asarray(x, dtype=dtype).reshape(-1), dtype)


@njit(**_INL)
def _mask(x):
    """An index mask for a per-page input: ``x[j & _mask(x)]`` is :func:`_get` without a select.

    In the packing loop of :func:`_resp_chunk` the select of :func:`_get` kept a Lambert-W pass from
    running as fast as with the inputs passed as floats; through the masks it does.
    """
    return 0 if x.shape[0] == 1 else -1


@njit(**_INL)
def _get(x, i):
    """Page i's entry of a per-page input: ``x[i]``, or ``x[0]`` when x (shape (1,)) is shared by every page.

    The test is the same for every page of a pass, and in a pass that only sums it costs nothing
    measurable (a Poisson pass over 10^6 pages as fast as with the value passed as a float). A pass that
    stores page by page is not vectorised through it: see :func:`_final_loop`; the packing loop of the
    Lambert-W passes reads through :func:`_mask` instead.
    """
    return x[0] if x.shape[0] == 1 else x[i]


@njit(**_INL)
def _view(x, start, stop):
    """Pages start..stop of a per-page input, as a view indexed from 0 (x itself when shared, shape (1,)).

    Chunked passes index slices from 0 (not x[start + j]): only then does LLVM vectorise the loop.
    """
    return x if x.shape[0] == 1 else x[start:stop]


def _at(x, i):  # pragma: no cover - compiled through the overload
    raise NotImplementedError


@overload(_at)
def _at_ol(x, i):
    """:func:`_get` that also takes a float (a shared input passed as one: :func:`_final_loop`)."""
    if isinstance(x, types.Float):
        return lambda x, i: x
    return lambda x, i: _get(x, i)


@njit(**_INL)
def _views(start, stop, k, w, a, b, lo, hi):
    """:func:`_view` of each per-page input."""
    return (_view(k, start, stop), _view(w, start, stop), _view(a, start, stop), _view(b, start, stop),
            _view(lo, start, stop), _view(hi, start, stop))


@njit(cache=True, error_model="numpy")
def _gather(out, table, hv):
    """out[j] = table[hv[j]] for a chunk of host indices, -1 (no host) reading the table's last entry."""
    G = table.shape[0]
    for j in range(hv.shape[0]):
        h = hv[j]
        out[j] = table[np.uint64(h + (h < 0) * G)]  # unsigned: no second wraparound test


# ---------------------------------------------------------------------------------------------------
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
    [0, 1/64), by its series to r^8 (the rest is below 1e-19). No call and no branch, so a loop of
    :func:`_lambert_table` runs faster than with the math library's exp."""
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


#: kind -> (active, resp, marg, val)
FUNCS = {
    POISSON: (active_delta, resp_poisson, marg_poisson, val_poisson),
    PERIODIC: (active_delta, resp_periodic, marg_periodic, val_periodic),
    HARMONIC: (active_delta, resp_harmonic, marg_harmonic, val_harmonic),
    DETECTION: (active_delta, resp_detection, marg_detection, val_detection),
    POLY: (active_poly, resp_poly, marg_poly, val_poly),
    LOG: (active_log, resp_log, marg_log, val_log),
    LINEAR: (active_log, resp_linear, marg_linear, val_linear),
}
FUNCS_ANY = (active_any, resp_any, marg_any, val_any)


# ---------------------------------------------------------------------------------------------------
# Kind tokens: the kind is carried by the dtype of an empty array, so that numba compiles (and caches)
# one branch-free version of a pass per kind actually used, without function-typed arguments
# ---------------------------------------------------------------------------------------------------
_ANY = 7
_TOKEN_DTYPES = {
    POISSON: np.float64,
    PERIODIC: np.float32,
    HARMONIC: np.int64,
    DETECTION: np.int32,
    POLY: np.int16,
    LOG: np.int8,
    LINEAR: np.uint8,
    _ANY: np.uint16,
}
#: kind -> token array passed as ``tok`` to the passes (``ANY_TOKEN``: per-page kinds in ``k``)
TOKENS = {kind: np.empty(0, dtype=dt) for kind, dt in _TOKEN_DTYPES.items() if kind != _ANY}
ANY_TOKEN = np.empty(0, dtype=_TOKEN_DTYPES[_ANY])
_BY_DTYPE = {
    np.dtype(dt).name: (kind if kind != _ANY else None) for kind, dt in _TOKEN_DTYPES.items()
}


def _funcs_for(tok):
    kind = _BY_DTYPE[str(tok.dtype)]
    return FUNCS_ANY if kind is None else FUNCS[kind]


def _resp_t(tok, k, lam, w, a, b, lo, hi):  # pragma: no cover - compiled through the overload
    raise NotImplementedError


def _marg_t(tok, k, p, w, a, b):  # pragma: no cover
    raise NotImplementedError


def _val_t(tok, k, p, a, b):  # pragma: no cover
    raise NotImplementedError


def _active_t(tok, k, w, a, b):  # pragma: no cover
    raise NotImplementedError


@overload(_resp_t)
def _resp_t_ol(tok, k, lam, w, a, b, lo, hi):
    fn = _funcs_for(tok)[1]
    return lambda tok, k, lam, w, a, b, lo, hi: fn(k, lam, w, a, b, lo, hi)


_RESP_IL = {POISSON: resp_il_poisson, HARMONIC: resp_il_harmonic}


def _uses_il(tok):  # pragma: no cover - compiled through the overload
    raise NotImplementedError


def _resp_il_t(tok, k, il, w, a, b, lo, hi):  # pragma: no cover - compiled through the overload
    raise NotImplementedError


@overload(_uses_il)
def _uses_il_ol(tok):
    """Whether the kind's rate is computed from il = 1/λ alone (a compile-time constant)."""
    flag = _BY_DTYPE[str(tok.dtype)] in _RESP_IL
    return lambda tok: flag


@overload(_resp_il_t)
def _resp_il_t_ol(tok, k, il, w, a, b, lo, hi):
    kind = _BY_DTYPE[str(tok.dtype)]
    if kind in _RESP_IL:
        fn = _RESP_IL[kind]
        return lambda tok, k, il, w, a, b, lo, hi: fn(k, il, w, a, b, lo, hi)
    # never called (_uses_il is False), but numba compiles a branch it cannot take all the same: a stub
    # (the kind's own response there cost a first capped call under detection 2.7 s of compiling)
    def stub(tok, k, il, w, a, b, lo, hi):
        _unreachable()
        return np.nan, np.nan
    return stub


def _flat_tail(tok):  # pragma: no cover - compiled through the overload
    raise NotImplementedError


@overload(_flat_tail)
def _flat_tail_ol(tok):
    """Whether pages of the kind may leave p_min with a flat marginal value, their rate falling like
    1/log(e - λ) below their breakpoint e (periodic freshness, detection; a compile-time constant)."""
    flag = _BY_DTYPE[str(tok.dtype)] in (PERIODIC, DETECTION, None)
    return lambda tok: flag


def _resp_chunk(tok, m, kv, lb, wv, av, bv, lov, hiv, pb, db, ib, fb):  # pragma: no cover - overloaded
    raise NotImplementedError


#: the kinds whose response is the Lambert-W one (and is computed by chunks, :func:`_resp_chunk`)
_LAMBERT_KINDS = (PERIODIC, DETECTION)


def _lambert_kind(tok):  # pragma: no cover - compiled through the overload
    raise NotImplementedError


@overload(_lambert_kind)
def _lambert_kind_ol(tok):
    """Whether the kind's rate is a Lambert-W response (periodic freshness, detection; a compile-time constant)."""
    flag = _BY_DTYPE[str(tok.dtype)] in _LAMBERT_KINDS
    return lambda tok: flag


@njit(cache=True, error_model="numpy")
def chunk_scratch():
    """Scratch for :func:`_resp_chunk`: (int array of shape (2 CHUNK,), float array of shape (5, CHUNK))."""
    return np.empty(2 * _CHUNK, dtype=np.intp), np.empty((5, _CHUNK))


@njit(cache=True, error_model="numpy")
def _scratch_at(lam):
    """Buffers of a pass by chunks at one λ: (λ repeated, rates, derivatives) of shape (CHUNK,), then
    :func:`chunk_scratch`'s two."""
    ib, fb = chunk_scratch()
    return np.full(_CHUNK, lam), np.empty(_CHUNK), np.empty(_CHUNK), ib, fb


@overload(_resp_chunk)
def _resp_chunk_ol(tok, m, kv, lb, wv, av, bv, lov, hiv, pb, db, ib, fb):
    """``pb[j], db[j]`` = the rate of page j at the multiplier ``lb[j]`` and its derivative, for j < m.

    The pages of one chunk of a pass (views from 0); ``ib``, ``fb``: scratch from :func:`chunk_scratch`.
    Page by page the values of :func:`_resp_t`, by the same arithmetic (to a few ulps where the compiler
    fuses a multiply-add in one copy and not in the other). For the Lambert-W kinds, in four loops: the first
    writes p_min for the pages there and packs those whose response comes from the table of
    :func:`lambert_x` (y, λ, Δ, p_min, p_max side by side in ``fb``; the page in ``ib``), listing the
    few that need the general path from ``ib[CHUNK]``, without a branch; the second runs the table over
    the packed pages and clips their rates, without a branch, a scattered
    store or a read through ``ib`` (reading per-page bounds through it keeps the loop's loads from
    overlapping); the third puts them in place;
    the fourth runs the scalar response over the general ones. In one loop, a page at a time, a
    branch on whether the page is at p_min mispredicts about as often as not where the two kinds are
    mixed, as in any real crawl, and the branches to the general path keep the pages from overlapping in
    the pipeline. At 10^5 pages of the benchmark a detection pass costs 25-58% less where a fifth or more
    of the pages are off p_min, and 15% more where nearly none are.
    """
    kind = _BY_DTYPE[str(tok.dtype)]
    if kind not in (PERIODIC, DETECTION):
        def impl(tok, m, kv, lb, wv, av, bv, lov, hiv, pb, db, ib, fb):
            for j in range(m):
                p, dp = _resp_t(tok, _get(kv, j), lb[j], _get(wv, j), _get(av, j), _get(bv, j), _get(lov, j),
                                _get(hiv, j))
                pb[j] = p
                db[j] = dp
        return impl
    periodic = kind == PERIODIC

    def impl(tok, m, kv, lb, wv, av, bv, lov, hiv, pb, db, ib, fb):
        n_tab = 0
        n_gen = 0
        half = _CHUNK
        yt, lt, at, lot, hit = fb[0], fb[1], fb[2], fb[3], fb[4]
        # index masks (0: shared, shape (1,)): branch-free reads, where _get's select kept this loop slow
        mw, ma, ml, mh = _mask(wv), _mask(av), _mask(lov), _mask(hiv)
        for j in range(m):
            w = wv[j & mw]
            a = av[j & ma]
            lam = lb[j]
            lo = lov[j & ml]
            hi = hiv[j & mh]
            # resp_periodic or resp_detection, then _resp_lambert, as selects
            y = lam * a / w if periodic else lam / w
            live = (w > 0.0) & (a > 0.0) & (hi > lo) & (y < 1.0)
            tab = live & (y > 0.0) & (y < _Y_TAB) & (a < np.inf)
            pb[j] = lo
            db[j] = 0.0
            yt[n_tab] = y
            lt[n_tab] = lam
            at[n_tab] = a
            lot[n_tab] = lo
            hit[n_tab] = hi
            ib[n_tab] = j
            n_tab += tab
            ib[half + n_gen] = j
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
            j = ib[half + t]
            pb[j], db[j] = _resp_t(tok, _get(kv, j), lb[j], _get(wv, j), _get(av, j), _get(bv, j), _get(lov, j),
                                   _get(hiv, j))
    return impl


@overload(_marg_t)
def _marg_t_ol(tok, k, p, w, a, b):
    fn = _funcs_for(tok)[2]
    return lambda tok, k, p, w, a, b: fn(k, p, w, a, b)


@overload(_val_t)
def _val_t_ol(tok, k, p, a, b):
    fn = _funcs_for(tok)[3]
    return lambda tok, k, p, a, b: fn(k, p, a, b)


@overload(_active_t)
def _active_t_ol(tok, k, w, a, b):
    fn = _funcs_for(tok)[0]
    return lambda tok, k, w, a, b: fn(k, w, a, b)


# ---------------------------------------------------------------------------------------------------
# Passes over the pages
# ---------------------------------------------------------------------------------------------------
def global_sum(tok, n, lam, k, w, a, b, lo, hi):
    """Σ p_i(λ) and Σ dp_i/dλ over all pages (no host caps).

    Chosen in Python: the chunked pass for the Lambert-W kinds, the page-by-page one for the others, so
    that numba compiles only the pass an objective uses (a compiled choice compiles both, so a first
    uncapped call of a closed form would compile the chunked Lambert-W pass too).
    """
    return (_global_sum_chunked if is_lambert(tok) else _global_sum_loop)(tok, n, lam, k, w, a, b, lo, hi)


def is_lambert(tok):
    """Whether the token's kind has a Lambert-W response (periodic freshness, detection); in Python."""
    return _BY_DTYPE[tok.dtype.name] in _LAMBERT_KINDS


@njit(**_LOOP)
def _global_sum_chunked(tok, n, lam, k, w, a, b, lo, hi):
    """:func:`global_sum` for the Lambert-W kinds, by chunks (:func:`_resp_chunk`)."""
    s = 0.0
    ds = 0.0
    lb, pb, db, ib, fb = _scratch_at(lam)
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        kv, wv, av, bv, lov, hiv = _views(start, stop, k, w, a, b, lo, hi)
        _resp_chunk(tok, stop - start, kv, lb, wv, av, bv, lov, hiv, pb, db, ib, fb)
        for j in range(stop - start):
            s += pb[j]
            ds += db[j]
    return s, ds


@njit(**_LOOP)
def _global_sum_loop(tok, n, lam, k, w, a, b, lo, hi):
    """:func:`global_sum` for the other kinds, page by page."""
    s = 0.0
    ds = 0.0
    for i in range(n):
        p, dp = _resp_t(tok, _get(k, i), lam, _get(w, i), _get(a, i), _get(b, i), _get(lo, i), _get(hi, i))
        s += p
        ds += dp
    return s, ds


@njit(**_LOOP)
def group_sums(tok, lam_g, active_g, k, w, a, b, lo, hi, hosts):
    """Per host h with active_g[h]: Σ_{i∈h} p_i(lam_g[h]) and its derivative (branch-free)."""
    n_groups = lam_g.shape[0]
    s = np.zeros(n_groups)
    ds = np.zeros(n_groups)
    for i in range(hosts.shape[0]):
        h = hosts[i]
        hh = max(h, 0)
        keep = np.float64((h >= 0) & active_g[hh])
        p, dp = _resp_t(tok, _get(k, i), lam_g[hh], _get(w, i), _get(a, i), _get(b, i), _get(lo, i), _get(hi, i))
        s[hh] += min(p, _RATE_CLAMP) * keep
        ds[hh] += dp * keep
    return s, ds


_CHUNK = 256
#: The per-group sums of :func:`group_sums` (where inf times a 0 mask would be NaN) and of the per-host
#: loop add an infinite rate as this; a sum at or above it holds one.
_RATE_CLAMP = 1e308

#: The budget root-find may also stop when its Newton step is below a few ulps of λ (the first-order
#: correction of the rates then takes the rest), but only with the error below this fraction of the
#: budget: next to a page in the singular tail of a flat marginal the derivative is huge, the step tiny,
#: and the correction would pile the whole error onto that one page, past its host's cap.
ULPS_STOP = 1e-8
#: The same limit for a host's own multiplier, relative to its cap. Its correction meets the cap only
#: while no page of the host reaches a bound within it, and the derivative there says nothing of S a few
#: ulps away: next to a page in the singular tail, S stays on one side of the cap where that page reaches
#: p_max an ulp away (the root 6% lower), or jumps across it at the page's breakpoint (the root on the
#: jump, for the rates to interpolate). Below this, a shortfall from a clipped correction stays within the
#: budget's tolerance.
HOST_ULPS_STOP = 1e-10
#: Passes :func:`capped_newton` goes on making for the binding hosts once λ has settled, where its passes
#: run over the pages listed near a bound (cheap); the hosts still open then go to the per-host loop.
#: What it buys (Poisson freshness with caps, the only case with a listing): on the first-call benchmark's
#: instance (2,000 pages, 50 hosts) it finishes every host, so the per-host loop is not even compiled and
#: a first call is shorter; large solves take a few percent less.
WAIT_PASSES = 8
#: Outcomes of :func:`capped_newton` (its docstring says what each leaves in its arguments).
JOINT_FAILED, JOINT_CONVERGED, JOINT_HOSTS_OPEN, JOINT_ON_JUMP = -1, 0, 1, 2
#: The joint iteration takes the pages whose breakpoint lies inside λ's bracket out of F only once the
#: bracket is this narrow (relative, in u = λ^(-1/2)): F without them is then taken as linear across it.
TAKEOUT_WIDTH = 1e-2
#: Largest window (relative, in u = λ^(-1/2)) of :func:`window_pass`: the pages are listed only once λ's
#: window fits in it, and a host whose own window would not gets all its pages listed.
WINDOW_MAX = 0.1


@njit(**_LOOP)
def capped_sum(tok, n, lam, k, w, a, b, lo, hi, hosts, cap, s_h, ds_h):
    """Σ_h min(c_h, S_h(λ)) + S_free(λ) and its derivative, in one pass over the pages.

    The per-host sums S_h(λ) and derivatives are left in ``s_h``, ``ds_h`` (shape (n_hosts + 1,),
    overwritten; entry n_hosts: pages without a host). ``cap``: c_h, visits/day (inf: uncapped).
    """
    n_hosts = cap.shape[0]
    acc = np.zeros((n_hosts + 1, 2))  # sum and derivative side by side: one cache line per host
    pb = np.empty(_CHUNK)
    db = np.empty(_CHUNK)
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        kv, wv, av, bv, lov, hiv = _views(start, stop, k, w, a, b, lo, hi)
        for j in range(stop - start):
            p, dp = _resp_t(tok, _get(kv, j), lam, _get(wv, j), _get(av, j), _get(bv, j), _get(lov, j), _get(hiv, j))
            pb[j] = p
            db[j] = dp
        hv = hosts[start:stop]
        for j in range(stop - start):
            h = hv[j]
            h = h + (h < 0) * (n_hosts + 1)
            acc[h, 0] += pb[j]
            acc[h, 1] += db[j]
    for h in range(n_hosts + 1):
        s_h[h] = acc[h, 0]
        ds_h[h] = acc[h, 1]
    s = s_h[n_hosts]
    ds = ds_h[n_hosts]
    for h in range(n_hosts):
        over = s_h[h] > cap[h]
        s += cap[h] if over else s_h[h]
        ds += 0.0 if over else ds_h[h]
    return s, ds


@njit(**_LOOP)
def group_sums_idx(tok, idx, lam_g, k, w, a, b, lo, hi, hosts):
    """As :func:`group_sums` over the pages listed in idx only (all on active hosts).

    Per chunk: gather each page's host multiplier, compute the rates in a vectorised loop, add them up.
    """
    n_groups = lam_g.shape[0]
    acc = np.zeros((n_groups, 2))
    lb = np.empty(_CHUNK)
    pb = np.empty(_CHUNK)
    db = np.empty(_CHUNK)
    n = idx.shape[0]
    for start in range(0, n, _CHUNK):
        m = min(_CHUNK, n - start)
        for j in range(m):
            lb[j] = lam_g[hosts[idx[start + j]]]
        for j in range(m):
            i = idx[start + j]
            p, dp = _resp_t(tok, _get(k, i), lb[j], _get(w, i), _get(a, i), _get(b, i), _get(lo, i), _get(hi, i))
            pb[j] = p
            db[j] = dp
        for j in range(m):
            h = hosts[idx[start + j]]
            acc[h, 0] += pb[j]
            acc[h, 1] += db[j]
    return acc[:, 0].copy(), acc[:, 1].copy()


@njit(**_PLAIN)
def host_bounds(tok, n, n_hosts, k, w, a, b, lo, hi, hosts):
    """Per host: Σ lo, Σ at λ -> 0+ (pages with a positive marginal value at hi), Σ hi.

    Entry n_hosts collects the pages without a host.
    """
    acc = np.zeros((n_hosts + 1, 3))
    for i in range(n):
        h = hosts[i]
        h = h + (h < 0) * (n_hosts + 1)
        lo_i = _get(lo, i)
        hi_i = _get(hi, i)
        act = _active_t(tok, _get(k, i), _get(w, i), _get(a, i), _get(b, i))
        acc[h, 0] += lo_i
        acc[h, 1] += hi_i if act else lo_i
        acc[h, 2] += hi_i
    return acc[:, 0].copy(), acc[:, 1].copy(), acc[:, 2].copy()


@njit(**_INL)
def _scalar_bounds(lo, hi):
    """Whether p_min and p_max are each shared by every page (shape (1,))."""
    return lo.shape[0] == 1 and hi.shape[0] == 1


@njit(**_LOOP)
def host_bounds_at(tok, n, n_hosts, lam, k, w, a, b, lo, hi, hosts):
    """:func:`host_bounds` and, in the same pass, each host's Σ p_i(λ) and its derivative at one λ.

    Returns five arrays of shape (n_hosts + 1,): Σ lo, Σ at λ -> 0+, Σ hi, Σ p(λ), Σ dp/dλ (entry
    n_hosts: the pages without a host). The first pass of :func:`capped_newton` (every host at its
    starting λ) folded into the feasibility sums: one read of the pages instead of two. With scalar
    bounds the first three follow from each host's count of pages and of valued pages (four sums a
    page instead of five).

    The rates page by page: the solver calls it only where Σp is smooth, never with a Lambert-W kind
    (their chunked pass, in a branch for them, was compiled on every first capped call of the others).
    """
    G = n_hosts + 1
    scalar = _scalar_bounds(lo, hi)
    R = 4 if scalar else 5  # sums a host, side by side, indexed with a literal stride
    acc = np.zeros(R * G)
    pb = np.empty(_CHUNK)
    db = np.empty(_CHUNK)
    zb = np.empty(_CHUNK)
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        hv = hosts[start:stop]
        kv, wv, av, bv, lov, hiv = _views(start, stop, k, w, a, b, lo, hi)
        for j in range(stop - start):
            ki, wi, ai, bi, lo_i, hi_i = _get(kv, j), _get(wv, j), _get(av, j), _get(bv, j), _get(lov, j), _get(hiv, j)
            pb[j], db[j] = _resp_t(tok, ki, lam, wi, ai, bi, lo_i, hi_i)
            act = _active_t(tok, ki, wi, ai, bi)
            zb[j] = (1.0 if act else 0.0) if scalar else (hi_i if act else lo_i)
        if scalar:
            for j in range(stop - start):
                h = hv[j]
                r = 4 * np.uint64(h + (h < 0) * G)  # unsigned: no second wraparound test
                acc[r] += 1.0
                acc[r + 1] += zb[j]
                acc[r + 2] += pb[j]
                acc[r + 3] += db[j]
        else:
            for j in range(stop - start):
                h = hv[j]
                r = 5 * np.uint64(h + (h < 0) * G)
                acc[r] += _get(lov, j)
                acc[r + 1] += zb[j]
                acc[r + 2] += _get(hiv, j)
                acc[r + 3] += pb[j]
                acc[r + 4] += db[j]
    if scalar:
        lo_s, hi_s = _get(lo, 0), _get(hi, 0)
        count, valued = acc[0::4], acc[1::4]
        s_lo, s_z, s_hi = np.empty(G), np.empty(G), np.empty(G)
        for g in range(G):  # (inf * 0 would be NaN: a host without pages, or without valued pages)
            s_lo[g] = lo_s * count[g]
            s_hi[g] = hi_s * count[g] if count[g] > 0.0 else 0.0
            s_z[g] = (hi_s * valued[g] if valued[g] > 0.0 else 0.0) + lo_s * (count[g] - valued[g])
        return s_lo, s_z, s_hi, acc[2::4].copy(), acc[3::4].copy()
    return acc[0::5].copy(), acc[1::5].copy(), acc[2::5].copy(), acc[3::5].copy(), acc[4::5].copy()


@njit(**_LOOP)
def bounds_total(tok, n, k, w, a, b, lo, hi):
    """Σ lo, Σ at λ -> 0+ and Σ hi over all pages (no hosts), as arrays of length 1."""
    low = 0.0
    s0 = 0.0
    up = 0.0
    for i in range(n):
        lo_i = _get(lo, i)
        hi_i = _get(hi, i)
        act = _active_t(tok, _get(k, i), _get(w, i), _get(a, i), _get(b, i))
        low += lo_i
        up += hi_i
        s0 += hi_i if act else lo_i
    return np.array([low]), np.array([s0]), np.array([up])


@njit(**_PLAIN)
def active_mask(tok, out, k, w, a, b):
    """out[i] = whether page i has a positive marginal value at some rate."""
    for i in range(out.shape[0]):
        out[i] = _active_t(tok, _get(k, i), _get(w, i), _get(a, i), _get(b, i))


@njit(**_PLAIN)
def mean_marginal(tok, n, p_g, k, w, a, b, lo, hi, hosts, n_groups):
    """Per group, the geometric mean of the positive finite marginals at clip(p_g[group], lo, hi).

    Group = host, or n_groups - 1 for pages without a host (all pages when ``hosts`` is empty).
    """
    acc = np.zeros(n_groups)
    cnt = np.zeros(n_groups)
    use_hosts = hosts.shape[0] > 0
    for i in range(n):
        g = n_groups - 1
        if use_hosts and hosts[i] >= 0:
            g = hosts[i]
        p = min(max(p_g[g], _get(lo, i)), _get(hi, i))
        m = _marg_t(tok, _get(k, i), p, _get(w, i), _get(a, i), _get(b, i))
        if m > 0.0 and m < np.inf:
            acc[g] += math.log(m)
            cnt[g] += 1.0
    out = np.ones(n_groups)
    for g in range(n_groups):
        if cnt[g] > 0:
            out[g] = math.exp(acc[g] / cnt[g])
    return out


@njit(**_PLAIN)
def _closer(e, la, lb, lt, best):
    """Whether breakpoint e lies in (la, lb) and is closer to lt (in log) than best."""
    if not (e > la and e < lb):
        return False
    if best != best:  # NaN: nothing yet
        return True
    return max(e / lt, lt / e) < max(best / lt, lt / best)


@njit(**_INL)
def _fold_breakpoint(e, la, lb, lt, best, up, dn):
    """Fold one breakpoint e into (best, up, dn) of a bracket (la, lb): the one inside nearest to lt (in log),
    the smallest at or above lb, the largest at or below la."""
    if _closer(e, la, lb, lt, best):
        best = e
    if e >= lb and e < up:
        up = e
    if e <= la and e > dn:
        dn = e
    return best, up, dn


@njit(**_INL)
def _page_breakpoints(tok, i, k, w, a, b, lo, hi, la, lb, lt, best, up, dn):
    """Fold page i's breakpoints (its marginals at lo and hi) into (best, up, dn) of a bracket (la, lb)."""
    ki, wi, ai, bi, lo_i, hi_i = _get(k, i), _get(w, i), _get(a, i), _get(b, i), _get(lo, i), _get(hi, i)
    if hi_i <= lo_i or not _active_t(tok, ki, wi, ai, bi):
        return best, up, dn
    for m in range(2):
        if m == 1 and not hi_i < np.inf:
            break
        best, up, dn = _fold_breakpoint(_marg_t(tok, ki, lo_i if m == 0 else hi_i, wi, ai, bi), la, lb, lt, best,
                                        up, dn)
    return best, up, dn


@njit(**_PLAIN)
def global_breakpoint(tok, n, la, lb, lt, k, w, a, b, lo, hi, hosts, lamhat):
    """Breakpoints of Σ p(λ) (the marginals w f'(lo), w f'(hi) where a page leaves a bound).

    Returns the breakpoint in (la, lb) nearest to lt (NaN if none), the smallest breakpoint >= lb
    (inf if none) and the largest <= la (0 if none). Pages on hosts whose cap binds at lb are ignored.
    """
    best = np.nan
    up = np.inf
    dn = 0.0
    use_hosts = hosts.shape[0] > 0
    for i in range(n):
        if use_hosts:
            h = hosts[i]
            if h >= 0 and lamhat[h] > lb:
                continue
        best, up, dn = _page_breakpoints(tok, i, k, w, a, b, lo, hi, la, lb, lt, best, up, dn)
    return best, up, dn


@njit(**_PLAIN)
def group_breakpoints(tok, idx, la_g, lb_g, lt_g, active_g, k, w, a, b, lo, hi, hosts):
    """Per host: as :func:`global_breakpoint`, over the listed pages idx of the active hosts."""
    best = np.full(la_g.shape[0], np.nan)
    up = np.full(la_g.shape[0], np.inf)
    dn = np.zeros(la_g.shape[0])
    for j in range(idx.shape[0]):
        i = idx[j]
        h = hosts[i]
        if h < 0 or not active_g[h]:
            continue
        best[h], up[h], dn[h] = _page_breakpoints(
            tok, i, k, w, a, b, lo, hi, la_g[h], lb_g[h], lt_g[h], best[h], up[h], dn[h]
        )
    return best, up, dn


@njit(**_INL)
def _jump(p, p2, theta):
    """Rate across a jump of Σp between p = p(λb) and p2 = p(λa).

    theta > 0: the fraction of the jump taken. theta < 0: the jump is infinite (pages with a constant
    marginal value and no upper bound); each such page takes -theta, the others stay at p.
    """
    if theta > 0.0:
        return p + theta * (p2 - p)
    return p - theta if p2 == np.inf else p


@njit(**_PLAIN)
def count_infinite(tok, n, lam, k, w, a, b, lo, hi, hosts, lam_g, active_g):
    """Pages whose rate is infinite at their multiplier; per host (active_g) or, last entry, the rest."""
    n_groups = lam_g.shape[0]
    out = np.zeros(n_groups + 1)
    use_hosts = hosts.shape[0] > 0
    for i in range(n):
        g = n_groups
        L = lam
        if use_hosts:
            h = hosts[i]
            if h >= 0 and active_g[h]:
                g = h
                L = lam_g[h]
        p, dp = _resp_t(tok, _get(k, i), L, _get(w, i), _get(a, i), _get(b, i), _get(lo, i), _get(hi, i))
        if p == np.inf:
            out[g] += 1.0
    return out


def final_rates(tok, out, lam, lam2, theta, dlam, k, w, a, b, lo, hi):
    """Rates p(λ) + p'(λ) dλ, or p(λ) + θ (p(λ2) - p(λ)) at a jump (θ != 0), clipped to the bounds, into
    ``out`` (shape (n,)).

    Chosen in Python, as :func:`global_sum`: the jump's pass, the chunked Lambert-W pass or the closed
    forms' loop, so that numba compiles only the pass a solve uses (and, for the closed forms, the one
    version of it that the shared inputs call for: :func:`_shared_as_floats`).
    """
    w, lo, hi = _shared_as_floats(tok, w, lo, hi)
    if theta != 0.0:
        _final_jump(tok, out, lam, lam2, theta, k, w, a, b, lo, hi)
    elif is_lambert(tok):
        _final_chunked(tok, out, lam, dlam, k, w, a, b, lo, hi)
    else:
        _final_loop(tok, out, lam, dlam, k, w, a, b, lo, hi)


def _shared_as_floats(tok, w, lo, hi):
    """``w``, ``lo``, ``hi`` for a closed form's pass that stores page by page: shared bounds as floats,
    and shared weights too when the bounds are shared; the Lambert-W and mixed kinds keep the arrays.

    A pass that stores page by page is not unswitched by the compiler on whether an input is shared, and
    reading one through :func:`_get`'s select keeps the loop from vectorising. Chosen in Python, so
    that numba compiles only the version a problem uses (three chosen in compiled code would all
    compile on a first uncapped call of the closed forms); the Lambert-W kinds get the one
    general version, so as not to compile their large response more than once.
    """
    if _BY_DTYPE[tok.dtype.name] is None or is_lambert(tok) or lo.shape[0] != 1 or hi.shape[0] != 1:
        return w, lo, hi
    return (float(w[0]) if w.shape[0] == 1 else w), float(lo[0]), float(hi[0])


@njit(**_LOOP)
def _final_jump(tok, out, lam, lam2, theta, k, w, a, b, lo, hi):
    """:func:`final_rates` at a jump: p(λ) + θ (p(λ2) - p(λ)), clipped to the bounds; ``w``, ``lo``, ``hi``
    arrays or shared floats."""
    for i in range(out.shape[0]):
        ki, wi, ai, bi, lo_i, hi_i = _get(k, i), _at(w, i), a[i], _get(b, i), _at(lo, i), _at(hi, i)
        p, dp = _resp_t(tok, ki, lam, wi, ai, bi, lo_i, hi_i)
        p2, dp2 = _resp_t(tok, ki, lam2, wi, ai, bi, lo_i, hi_i)
        out[i] = min(max(_jump(p, p2, theta), lo_i), hi_i)


@njit(**_LOOP)
def _final_chunked(tok, out, lam, dlam, k, w, a, b, lo, hi):
    """:func:`final_rates` for the Lambert-W kinds, by chunks (:func:`_resp_chunk`)."""
    n = out.shape[0]
    lb, pb, db, ib, fb = _scratch_at(lam)
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        kv, wv, av, bv, lov, hiv = _views(start, stop, k, w, a, b, lo, hi)
        _resp_chunk(tok, stop - start, kv, lb, wv, av, bv, lov, hiv, pb, db, ib, fb)
        ov = out[start:stop]
        for j in range(stop - start):
            ov[j] = min(max(pb[j] + db[j] * dlam, _get(lov, j)), _get(hiv, j))


@njit(**_LOOP)
def _final_loop(tok, out, lam, dlam, k, w, a, b, lo, hi):
    """:func:`final_rates` for the closed forms: rates p(λ) + p'(λ) dλ clipped to the bounds, into
    ``out``; ``w``, ``lo``, ``hi`` arrays or shared floats.

    Shared weights and bounds come as floats (:func:`_shared_as_floats`).
    """
    for i in range(out.shape[0]):
        lo_i, hi_i = _at(lo, i), _at(hi, i)
        p, dp = _resp_t(tok, _get(k, i), lam, _at(w, i), a[i], _get(b, i), lo_i, hi_i)
        out[i] = min(max(p + dp * dlam, lo_i), hi_i)


@njit(**_LOOP)
def final_rates_hosts(tok, out, lam, lam2, theta, dlam, k, w, a, b, lo, hi, hosts, lamhat, h_lam2, h_theta,
                      h_dlam):
    """As :func:`final_rates`; pages on hosts whose cap binds use the host's multiplier and finish.

    For the solves with a jump (θ != 0 for λ or a host); without one, :func:`finish_groups` does the
    same in a vectorised pass, with the KKT residual and the per-host sums.
    """
    n = out.shape[0]
    nh = lamhat.shape[0]
    # per group (the hosts, then the pages without one): λ, λ2, θ and dλ, gathered by page without a branch
    tab = np.empty((nh + 1, 4))
    for h in range(nh + 1):
        on = h < nh and lamhat[h] > lam
        tab[h, 0] = lamhat[h] if on else lam
        tab[h, 1] = h_lam2[h] if on else lam2
        tab[h, 2] = h_theta[h] if on else theta
        tab[h, 3] = h_dlam[h] if on else dlam
    lb, lb2, tb, cb = np.empty(_CHUNK), np.empty(_CHUNK), np.empty(_CHUNK), np.empty(_CHUNK)
    pb, db, pb2, db2 = np.empty(_CHUNK), np.empty(_CHUNK), np.empty(_CHUNK), np.empty(_CHUNK)
    ib, fb = chunk_scratch()
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        kv, wv, av, bv, lov, hiv = _views(start, stop, k, w, a, b, lo, hi)
        two = False  # some page of the chunk on a jump
        for j in range(stop - start):
            h = hosts[start + j]
            r = np.uint64(h + (h < 0) * (nh + 1))
            th = tab[r, 2]
            lb[j] = tab[r, 0]
            lb2[j] = tab[r, 1] if th != 0.0 else np.nan  # (a page at λ = NaN costs a select in _resp_chunk)
            tb[j] = th
            cb[j] = tab[r, 3]
            two |= th != 0.0
        _resp_chunk(tok, stop - start, kv, lb, wv, av, bv, lov, hiv, pb, db, ib, fb)
        if two:
            _resp_chunk(tok, stop - start, kv, lb2, wv, av, bv, lov, hiv, pb2, db2, ib, fb)
        ov = out[start:stop]
        for j in range(stop - start):
            v = _jump(pb[j], pb2[j], tb[j]) if tb[j] != 0.0 else pb[j] + db[j] * cb[j]
            ov[j] = min(max(v, _get(lov, j)), _get(hiv, j))


@njit(**_PLAIN)
def finish_jump_hosts(tok, out, perm, start, sel, lam_b, lam_a, theta, k, w, a, b, lo, hi, sums):
    """Final rates of the hosts whose root sits on a jump of their Σp, over their own pages.

    Group ``sel[j]`` holds the pages perm[start[sel[j]]:start[sel[j] + 1]] (:func:`group_pages`); its
    pages take (1 - θ) p(λb) + θ p(λa) (``lam_b``, ``lam_a``, ``theta``: shape (sel.shape[0],)), clipped
    to their bounds, written to ``out``; ``sums`` (shape (sel.shape[0],)) receives each host's Σp.
    Returns the largest KKT residual of those pages against λb, relative, as in :func:`finish_groups`.
    """
    worst = 0.0
    for j in range(sel.shape[0]):
        g = sel[j]
        L, L2, th = lam_b[j], lam_a[j], theta[j]
        acc = 0.0
        for q in range(start[g], start[g + 1]):
            i = perm[q]
            ki, wi, ai, bi, lo_i, hi_i = _get(k, i), _get(w, i), _get(a, i), _get(b, i), _get(lo, i), _get(hi, i)
            p_b, _ = _resp_t(tok, ki, L, wi, ai, bi, lo_i, hi_i)
            p_a, _ = _resp_t(tok, ki, L2, wi, ai, bi, lo_i, hi_i)
            p = min(max(_jump(p_b, p_a, th), lo_i), hi_i)
            out[i] = p
            acc += p
            d = min(_marg_t(tok, ki, p, wi, ai, bi), 1e300) - L
            if hi_i > lo_i:
                r = max(d, 0.0) if p <= lo_i else (max(-d, 0.0) if p >= hi_i else abs(d))
                worst = max(worst, r / L)
        sums[j] = acc
    return worst


@njit(**_PLAIN)
def pages_of_hosts(hosts, selected):
    """Indices of the pages whose host is selected (selected: bool per host)."""
    count = 0
    for i in range(hosts.shape[0]):
        h = hosts[i]
        if h >= 0 and selected[h]:
            count += 1
    out = np.empty(count, dtype=np.int64)
    j = 0
    for i in range(hosts.shape[0]):
        h = hosts[i]
        if h >= 0 and selected[h]:
            out[j] = i
            j += 1
    return out


@njit(**_PLAIN)
def host_sample(hosts, chosen, m):
    """A sample of a capped problem: every page of the chosen hosts and every m-th page without a host.

    ``chosen``: bool per host. Returns the sampled pages' indices (in order) and their hosts renumbered
    in order among the chosen ones (-1 for a page without a host), both of shape (n_sampled,).
    """
    new_id = np.empty(chosen.shape[0], dtype=np.int64)
    k = 0
    for h in range(chosen.shape[0]):
        new_id[h] = k if chosen[h] else -1
        k += chosen[h]
    count = 0
    for i in range(hosts.shape[0]):
        h = hosts[i]
        count += (chosen[h] if h >= 0 else i % m == 0)
    idx = np.empty(count, dtype=np.int64)
    hosts_s = np.empty(count, dtype=np.int64)
    j = 0
    for i in range(hosts.shape[0]):
        h = hosts[i]
        if h >= 0 and chosen[h]:
            idx[j] = i
            hosts_s[j] = new_id[h]
            j += 1
        elif h < 0 and i % m == 0:
            idx[j] = i
            hosts_s[j] = -1
            j += 1
    return idx, hosts_s


@njit(**_LOOP)
def sum_by_host(p, hosts, n_hosts):
    """Σ p over the pages of each host; entry n_hosts: pages without a host."""
    out = np.zeros(n_hosts + 1)
    for i in range(p.shape[0]):
        h = hosts[i]
        out[h if h >= 0 else n_hosts] += p[i]
    return out


def kkt_residual(tok, p, lam, k, w, a, b, lo, hi):
    """Largest relative violation of w f'(p_i) = λ inside the bounds (<= λ at lo, >= λ at hi).

    Branch-free (vectorised); the version with host multipliers is :func:`kkt_residual_hosts`. Shared
    weights and bounds of the closed forms go to the loop as floats (:func:`_shared_as_floats`).
    """
    w, lo, hi = _shared_as_floats(tok, w, lo, hi)
    return _kkt_loop(tok, p, lam, k, w, a, b, lo, hi)


@njit(**_LOOP)
def _kkt_loop(tok, p, lam, k, w, a, b, lo, hi):
    """:func:`kkt_residual`'s loop; ``w``, ``lo``, ``hi`` arrays or shared floats
    (:func:`_shared_as_floats`)."""
    worst = 0.0
    for i in range(p.shape[0]):
        lo_i, hi_i, p_i = _at(lo, i), _at(hi, i), p[i]
        m = min(_marg_t(tok, _get(k, i), p_i, _at(w, i), a[i], _get(b, i)), 1e300)
        d = m - lam
        r_in = abs(d)
        r_lo = max(d, 0.0)
        r_hi = max(-d, 0.0)
        at_lo = np.float64(p_i <= lo_i)
        at_hi = np.float64(p_i >= hi_i) * (1.0 - at_lo)
        free = np.float64(hi_i > lo_i)
        r = free * (at_lo * r_lo + at_hi * r_hi + (1.0 - at_lo - at_hi) * r_in)
        worst = max(worst, r)
    return worst / lam if lam > 0.0 else worst


@njit(**_LOOP)
def kkt_residual_hosts(tok, p, lam, k, w, a, b, lo, hi, hosts, lamhat):
    """As :func:`kkt_residual`, each page against its own multiplier max(λ, lamhat[host]).

    The multipliers are gathered per chunk, the residuals computed in a branch-free (vectorised) loop.
    """
    worst = 0.0
    n = p.shape[0]
    n_hosts = lamhat.shape[0]
    tab = np.empty(n_hosts + 1)  # each host's multiplier; entry n_hosts: pages without a host
    for h in range(n_hosts):
        tab[h] = max(lamhat[h], lam)
    tab[n_hosts] = lam
    lb = np.empty(_CHUNK)
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        hv = hosts[start:stop]
        _gather(lb, tab, hv)
        kv, wv, av, bv, lov, hiv = _views(start, stop, k, w, a, b, lo, hi)
        pv = p[start:stop]
        for j in range(stop - start):
            L = lb[j]
            lo_i, hi_i, p_i = _get(lov, j), _get(hiv, j), pv[j]
            mg = min(_marg_t(tok, _get(kv, j), p_i, _get(wv, j), _get(av, j), _get(bv, j)), 1e300)
            Lf = min(L, 1e300)
            d = mg - Lf
            r_in = abs(d)
            r_lo = max(d, 0.0)
            r_hi = max(-d, 0.0)
            at_lo = np.float64(p_i <= lo_i)
            at_hi = np.float64(p_i >= hi_i) * (1.0 - at_lo)
            free = np.float64((hi_i > lo_i) & (L < np.inf))
            r = free * (at_lo * r_lo + at_hi * r_hi + (1.0 - at_lo - at_hi) * r_in)
            r = r / Lf if Lf > 0.0 else r
            worst = max(worst, r)
    return worst


@njit(**_LOOP)
def objective_sum(tok, p, k, w, a, b, offset):
    """Σ w_i (f_i(p_i) + offset); pages with w_i = 0 contribute 0."""
    s = 0.0
    for i in range(p.shape[0]):
        wi = _get(w, i)
        v = wi * (_val_t(tok, _get(k, i), p[i], _get(a, i), _get(b, i)) + offset)
        s += v if wi != 0.0 else 0.0
    return s


# ---------------------------------------------------------------------------------------------------
# Element-wise arrays for the Objective methods
# ---------------------------------------------------------------------------------------------------
@njit(**_PLAIN)
def values_array(tok, p, a, b):
    """f(p_i) for every page (unweighted), shape (n,)."""
    out = np.empty(p.shape[0])
    for i in range(p.shape[0]):
        out[i] = _val_t(tok, 0, p[i], a[i], _get(b, i))
    return out


@njit(**_PLAIN)
def marginals_array(tok, p, a, b):
    """f'(p_i) for every page (unweighted), shape (n,)."""
    out = np.empty(p.shape[0])
    for i in range(p.shape[0]):
        out[i] = _marg_t(tok, 0, p[i], 1.0, a[i], _get(b, i))
    return out


@njit(**_PLAIN)
def responses_array(tok, lam, a, b):
    """The p >= 0 with f'(p) = λ_i (0 when f'(0) <= λ_i), shape (n,)."""
    out = np.empty(lam.shape[0])
    for i in range(lam.shape[0]):
        out[i], _ = _resp_t(tok, 0, lam[i], 1.0, a[i], _get(b, i), 0.0, np.inf)
    return out


# ---------------------------------------------------------------------------------------------------
# Host multipliers: all binding hosts in one compiled loop over a host-grouped page layout
# ---------------------------------------------------------------------------------------------------
@njit(**_PLAIN)
def capped_multi_page_hosts(hosts, caps):
    """The number of capped hosts (finite cap) with more than one page.

    Counted in a byte a host (0, 1, 2 for more), which keeps the table in the first-level cache: a
    cheap pass to decide whether :func:`host_census` is worth making.
    """
    count = np.zeros(caps.shape[0], dtype=np.uint8)
    for i in range(hosts.shape[0]):
        h = hosts[i]
        if h >= 0:
            count[h] = min(count[h] + 1, 2)
    multi = 0
    for h in range(caps.shape[0]):
        multi += 1 if count[h] == 2 and caps[h] < np.inf else 0
    return multi


@njit(**_PLAIN)
def host_census(hosts, n_hosts, lo):
    """Per host: its number of pages, Σ p_min over them (in page order) and its last page (-1 if none).

    Three arrays of shape (n_hosts,); pages without a host (``hosts[i] < 0``) are skipped.
    """
    count = np.zeros(n_hosts, dtype=np.int64)
    low = np.zeros(n_hosts)
    page = np.full(n_hosts, -1, dtype=np.int64)
    for i in range(hosts.shape[0]):
        h = hosts[i]
        if h >= 0:
            count[h] += 1
            low[h] += _get(lo, i)
            page[h] = i
    return count, low, page


@njit(**_PLAIN)
def reduction_plan(count, low, caps, dtype_like):
    """Which hosts a reduced problem keeps, from :func:`host_census` (``count``, ``low``: Σ p_min).

    A capped host with more than one page that is not pinned (cap > Σ p_min) is kept; one with one page
    has its cap folded into that page's p_max; a pinned one has its pages' p_max set to p_min; hosts
    without pages or without a cap are taken out as they are. Returns ``(new_id, fold, kept, singles,
    pinned, infeasible, folds)``: the kept hosts' new indices (-1 for the others; the dtype of
    ``dtype_like``), the cap to fold per host (inf: none, -inf: pin), the kept and one-page hosts in
    order, whether each host is pinned, whether some cap is below its host's Σ p_min, and whether
    anything is folded.
    """
    H = caps.shape[0]
    new_id = np.full(H, -1, dtype=dtype_like.dtype)
    fold = np.full(H, np.inf)
    pinned = np.zeros(H, dtype=np.bool_)
    kept = np.empty(H, dtype=np.int64)
    singles = np.empty(H, dtype=np.int64)
    n_kept = 0
    n_single = 0
    infeasible = False
    folds = False
    for h in range(H):
        c = caps[h]
        if not c < np.inf:
            continue
        if low[h] > c:
            infeasible = True
        if c <= low[h]:
            pinned[h] = True
            fold[h] = -np.inf
            folds |= count[h] > 0
        elif count[h] == 1:
            fold[h] = c
            singles[n_single] = h
            n_single += 1
            folds = True
        elif count[h] > 1:
            new_id[h] = n_kept
            kept[n_kept] = h
            n_kept += 1
    return new_id, fold, kept[:n_kept], singles[:n_single], pinned, infeasible, folds


@njit(**_PLAIN)
def reduced_multipliers(tok, p, lam, lamhat_r, kept, pinned, singles, pages, caps, k, w, a, b, hi):
    """Per-host multipliers of the full problem from those of the reduced one (shape (n_hosts,)).

    Kept hosts take theirs, pinned hosts inf, a one-page host the marginal value w f'(c_h) of its page
    where that page sits at the cap (below its own p_max) and the value exceeds λ, else 0.
    """
    lamhat = np.zeros(caps.shape[0])
    for j in range(kept.shape[0]):
        lamhat[kept[j]] = lamhat_r[j]
    for h in range(caps.shape[0]):
        if pinned[h]:
            lamhat[h] = np.inf
    for j in range(singles.shape[0]):
        h = singles[j]
        i = pages[j]
        c = caps[h]
        if p[i] >= c and c < _get(hi, i):
            m = _marg_t(tok, _get(k, i), c, _get(w, i), _get(a, i), _get(b, i))
            lamhat[h] = m if m > lam else 0.0
    return lamhat


@njit(**_PLAIN)
def reduced_sums(sums_r, p, kept, singles, pages, pinned, low):
    """Per-host Σp of the full problem (shape (n_hosts + 1,); last: the pages without a host) from the
    reduced one's (shape (n_kept + 1,)): one-page hosts take their page's rate, pinned hosts Σ p_min."""
    H = pinned.shape[0]
    sums = np.zeros(H + 1)
    for j in range(kept.shape[0]):
        sums[kept[j]] = sums_r[j]
    taken = 0.0  # compensated (Neumaier) sum of what the pages without a host lose
    comp = 0.0
    for j in range(singles.shape[0] + H):
        if j < singles.shape[0]:
            v = p[pages[j]]
            sums[singles[j]] = v
        elif pinned[j - singles.shape[0]]:
            v = low[j - singles.shape[0]]
            sums[j - singles.shape[0]] = v
        else:
            continue
        t = taken + v
        comp += (taken - t) + v if abs(taken) >= abs(v) else (v - t) + taken
        taken = t
    sums[H] = sums_r[sums_r.shape[0] - 1] - (taken + comp)
    return sums


@njit(**_PLAIN)
def remap_hosts(hosts, new_id, fold, lo, hi):
    """Host indices of a reduced problem, shape (n,), and each page's cap folded into its p_max.

    ``new_id[h]``: the host's index in the reduced problem (-1: among the pages without a host);
    ``fold[h]``: a cap to fold into p_max of its pages (inf: none; -inf: pin them at p_min). ``hi``
    (shape (n,) or empty when nothing is folded) is updated in place.
    """
    n = hosts.shape[0]
    out = np.empty(n, dtype=hosts.dtype)
    folds = hi.shape[0] > 0
    for i in range(n):
        h = hosts[i]
        if h < 0:
            out[i] = -1
            continue
        out[i] = new_id[h]
        if folds:
            f = fold[h]
            if f < hi[i]:
                hi[i] = max(f, _get(lo, i))
    return out


@njit(**_PLAIN)
def page_marginals(tok, idx, x, k, w, a, b):
    """w_i f_i'(x_j) for the pages i = idx[j], shape (idx.shape[0],)."""
    out = np.empty(idx.shape[0])
    for j in range(idx.shape[0]):
        i = idx[j]
        out[j] = _marg_t(tok, _get(k, i), x[j], _get(w, i), _get(a, i), _get(b, i))
    return out


@njit(**_PLAIN)
def _collect(hosts, i, mask, slot, n_hosts, found, found_slot, m):
    """Append the pages from i on whose host is in ``mask`` (and their slots) until the buffers are full.

    Returns the count m and the page to go on from (``hosts.shape[0]`` when done).
    """
    size = found.shape[0]
    n = hosts.shape[0]
    for j in range(i, n):
        if m == size:  # rarely taken, so predicted
            return m, j
        h = hosts[j]
        h = h + (h < 0) * (n_hosts + 1)
        # written whether or not the host is in the mask, kept only if it is: a branch on the mask
        # mispredicts on about as many pages as it selects (at 10^5 pages, 22% of them: 376 to 172 µs)
        found[m] = j
        found_slot[m] = slot[h]
        m += mask[h]
    return m, n


@njit(**_PLAIN)
def _copy_into(dst, src):
    """dst[:src.size] = src, as a loop: a slice assignment also compiles numba's shape-mismatch error
    message (string formatting of the shapes), seconds of a first call."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


@njit(**_PLAIN)
def group_pages(hosts, sel, n_hosts):
    """Pages of the hosts sel, grouped by host (a counting sort, stable within a host).

    Returns ``perm`` (page indices, the pages of ``sel[j]`` at ``perm[start[j]:start[j + 1]]``) and
    ``start``, shape (sel.size + 1,). One scan of ``hosts``: it tests a byte mask of the hosts (in L1)
    and collects the matching pages and their slots in order into two buffers that double when full,
    which the counting sort then reads instead of ``hosts``.
    """
    g = sel.shape[0]
    slot = np.full(n_hosts + 1, -1, dtype=np.int64)
    mask = np.zeros(n_hosts + 1, dtype=np.uint8)  # entry n_hosts: the pages without a host
    for j in range(g):
        slot[sel[j]] = j
        mask[sel[j]] = 1
    size = min(hosts.shape[0], 1 << 14)
    found = np.empty(size, dtype=np.int64)
    found_slot = np.empty(size, dtype=np.int64)
    m, i = _collect(hosts, np.int64(0), mask, slot, n_hosts, found, found_slot, np.int64(0))
    while i < hosts.shape[0]:  # full: double (the pages found are usually a small part of all)
        size *= 2
        more, more_slot = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
        _copy_into(more, found[:m])
        _copy_into(more_slot, found_slot[:m])
        found, found_slot = more, more_slot
        m, i = _collect(hosts, i, mask, slot, n_hosts, found, found_slot, m)
    start = np.zeros(g + 1, dtype=np.int64)
    for q in range(m):
        start[found_slot[q] + 1] += 1
    for j in range(g):
        start[j + 1] += start[j]
    fill = start[:-1].copy()
    perm = np.empty(m, dtype=np.int64)
    for q in range(m):
        j = found_slot[q]
        perm[fill[j]] = found[q]
        fill[j] += 1
    return perm, start


@njit(**_PLAIN)
def _host_breakpoints(tok, q0, q1, k, w, a, b, lo, hi, e_lo, e_hi):
    """The breakpoints of pages q0 to q1 into e_lo[:q1 - q0] (where a page leaves p_min, w f'(p_min)) and
    e_hi (where it reaches a finite p_max); NaN where a page has none (p_max <= p_min, no value).

    The breakpoints of :func:`_page_breakpoints`, written out: a function returning both for each page
    slows the per-host loop down.
    """
    for q in range(q0, q1):
        ki, wi, ai, bi, lo_i, hi_i = _get(k, q), _get(w, q), _get(a, q), _get(b, q), _get(lo, q), _get(hi, q)
        on = hi_i > lo_i and _active_t(tok, ki, wi, ai, bi)
        e_lo[q - q0] = _marg_t(tok, ki, lo_i, wi, ai, bi) if on else np.nan
        e_hi[q - q0] = _marg_t(tok, ki, hi_i, wi, ai, bi) if on and hi_i < np.inf else np.nan


@njit(**_PLAIN)
def _listed_breakpoints(e_lo, e_hi, m, la, lb, lt):
    """As :func:`global_breakpoint`, over the breakpoints of m pages listed by :func:`_host_breakpoints`
    (NaN: none), a page at a time."""
    best = np.nan
    up = np.inf
    dn = 0.0
    for j in range(m):
        best, up, dn = _fold_breakpoint(e_lo[j], la, lb, lt, best, up, dn)
        best, up, dn = _fold_breakpoint(e_hi[j], la, lb, lt, best, up, dn)
    return best, up, dn


@njit(**_INL)
def _singular_step(e, lam, err, ds):
    """Next λ below a breakpoint e where S falls like 1/log(e - λ) (a page leaving p_min with a flat marginal).

    The periodic-freshness and detection rates are Δ / x with 1 - (1 + x) e^{-x} = λ / e near such a
    breakpoint: linear in z = 1 / x, in which the other pages' part of S is flat close to e. So while
    λ >= e / 2 the step is Newton in z (dλ/dz = -e x³ e^{-x}), and farther below e Newton in
    log(e - λ). ``err``: S(λ) - target, ``ds``: dS/dλ (< 0). Where the step in z goes past 0, or closer to e than
    floats resolve (the root sits on the jump of S at e), a few ulps below e.
    """
    y = lam / e
    if y >= 0.5 and y < 1.0:
        x = lambert_x(y)[0]
        z = 1.0 / x - err / (ds * -e * x * x * x * math.exp(-x))
        # past z = 0, or closer to e than floats resolve: the root sits on the jump at e, probe next to it
        return min(e * phi(1.0 / z) if z > 0.0 else e, e * (1.0 - 8.881784197001252e-16))
    dist = max(e - lam, 8.881784197001252e-16 * e)
    return e - dist * math.exp(err / (ds * dist))


@njit(**_PLAIN)
def host_newton(tok, perm, start, target, lam_g, s_lam, ds_lam, k, w, a, b, lo, hi, tol, max_iter, sqrt_step,
                out_lam, out_dlam, out_lam2, out_theta, out_iter, pt_lam, pt_s, pt_ds):
    """λ_h > λ with Σ_{i∈h} p_i(λ_h) = target[j] for every group j, in rounds of one step per open group.

    Group j holds the pages perm[start[j]:start[j + 1]]; ``s_lam[j] > target[j]`` and ``ds_lam[j]`` are
    its sum and derivative at ``lam_g[j] > 0``, the lower end of its bracket. Each group runs the same
    safeguarded Newton iteration as :func:`freshcrawl.allocation.solve._newton` for one group, with its
    breakpoint steps (the group's few pages make every breakpoint worth landing on). The Newton step is
    taken in log S against log λ, or with ``sqrt_step`` in S against λ^(-1/2) (exact for
    p = sqrt(w Δ / λ) - Δ; the Lambert-W objectives behave alike at high rates). A group is finished
    within ``tol`` relative, or when the Newton step is below a few ulps of λ_h with the error below
    :data:`HOST_ULPS_STOP` (``out_dlam`` keeps the first-order correction); with a larger error, the next
    point is 4 ulps toward the root. ``out_iter[j]`` is the number of passes over the group's pages, or -1
    when it did not finish within ``max_iter`` passes or its bracket collapsed onto a jump to an infinite S
    (the general solver then takes the group); at a finite jump ``out_lam``, ``out_lam2`` are its ends and
    ``out_theta`` the fraction of it taken.

    A round takes one step in every open group, then evaluates the pages of all of them together by full
    chunks of :data:`_CHUNK` pages (:func:`_resp_chunk`), each group's pages in order, so that its sum
    adds them in the order it would alone. Solved one at a time, a small group would have its rates on
    the scalar path and pay a chunk's fixed cost for a few pages; by rounds the chunks stay full. The
    rounds run over batches of groups of up to :data:`_BATCH` pages (a larger group alone), each batch's
    pages packed once, so that its rounds read them from cache rather than through ``perm`` at every
    round. A group's breakpoints are listed once, from the batch's packed pages, at its first step that
    looks for them, not again at each such step through ``perm`` (a cache miss a page).
    """
    G = target.shape[0]
    size = 0
    for j in range(G):
        size = max(size, start[j + 1] - start[j])
    # each group's state: its point, sum and derivative there, its bracket and the sums at its ends
    L = lam_g.copy()
    s_g = s_lam.copy()
    ds_g = ds_lam.copy()
    la_g = lam_g.copy()
    lb_g = np.full(G, np.inf)
    sa_g = s_lam.copy()
    dsa_g = ds_lam.copy()
    sb_g = np.full(G, np.nan)
    for j in range(pt_lam.shape[0]):
        # a group last seen under its target above lam_g: its first step from there (the sums are concave
        # in λ^(-1/2), and a Newton step from above lands nearer the root than one from below)
        if pt_lam[j] > la_g[j] and pt_lam[j] < np.inf and pt_s[j] < target[j] and pt_ds[j] < 0.0:
            L[j], s_g[j], ds_g[j] = pt_lam[j], pt_s[j], pt_ds[j]
    prev_g = np.full(G, np.inf)
    slow_g = np.zeros(G, dtype=np.int64)
    open_g = np.empty(G, dtype=np.int64)  # the open groups of a batch, in order
    # a chunk of the open groups' pages: their data, multipliers, groups, rates and derivatives
    k_c, w_c, a_c, b_c = _buffer(k, _CHUNK), _buffer(w, _CHUNK), _buffer(a, _CHUNK), _buffer(b, _CHUNK)
    lo_c, hi_c = _buffer(lo, _CHUNK), _buffer(hi, _CHUNK)
    lb_c, pb_c, db_c = np.empty(_CHUNK), np.empty(_CHUNK), np.empty(_CHUNK)
    g_c = np.empty(_CHUNK, dtype=np.int64)
    ib, fb = chunk_scratch()
    for j in range(G):
        out_iter[j] = -1
    # the groups by batches of at most _BATCH pages (a larger group alone), each batch's pages packed once:
    # a round gathers them from there, not through ``perm`` (at 10^7 pages, a cache miss each)
    m_pack = max(size, min(_BATCH, perm.shape[0]))
    k_p, w_p, a_p, b_p = _buffer(k, m_pack), _buffer(w, m_pack), _buffer(a, m_pack), _buffer(b, m_pack)
    lo_p, hi_p = _buffer(lo, m_pack), _buffer(hi, m_pack)
    # each group's breakpoints, listed from there at its first step that looks for them
    e_lo, e_hi = np.empty(m_pack), np.empty(m_pack)
    listed_g = np.zeros(G, dtype=np.bool_)
    g0 = 0
    while g0 < G:
        g1 = g0 + 1
        while g1 < G and start[g1 + 1] - start[g0] <= _BATCH:
            g1 += 1
        base = start[g0]
        for q in range(base, start[g1]):
            _copy_page(q - base, perm[q], k, w, a, b, lo, hi, k_p, w_p, a_p, b_p, lo_p, hi_p)
        for j in range(g0, g1):
            open_g[j - g0] = j
        n_open = g1 - g0
        _host_rounds(tok, start, target, tol, max_iter, sqrt_step, out_lam, out_dlam,
                     out_lam2, out_theta, out_iter, open_g, n_open, base, k_p, w_p, a_p, b_p, lo_p, hi_p, e_lo, e_hi,
                     L, s_g, ds_g, la_g, lb_g, sa_g, dsa_g, sb_g, prev_g, slow_g, k_c, w_c, a_c, b_c, lo_c, hi_c,
                     lb_c, pb_c, db_c, g_c, ib, fb, listed_g)
        g0 = g1


#: Pages of a batch of hosts in the per-host loop: under periodic freshness 256 KiB of their data, and as
#: much again for their breakpoints.
_BATCH = 1 << 14


@njit(**_PLAIN)
def _host_rounds(tok, start, target, tol, max_iter, sqrt_step, out_lam, out_dlam,
                 out_lam2, out_theta, out_iter, open_g, n_open, base, k_p, w_p, a_p, b_p, lo_p, hi_p, e_lo, e_hi,
                 L, s_g, ds_g, la_g, lb_g, sa_g, dsa_g, sb_g, prev_g, slow_g, k_c, w_c, a_c, b_c, lo_c, hi_c,
                 lb_c, pb_c, db_c, g_c, ib, fb, listed_g):
    """The rounds of :func:`host_newton` over one batch of groups, ``open_g[:n_open]``, their pages packed
    in ``*_p`` from ``start[j] - base``, their breakpoints (once listed, ``listed_g``) at the same place in
    ``e_lo``, ``e_hi`` (their state and scratch as there)."""
    eps = 2.220446049250313e-16
    it = 0
    while n_open > 0:
        n_next = 0
        for t_open in range(n_open):
            j = open_g[t_open]
            c = target[j]
            p0, p1 = start[j], start[j + 1]
            la, lb, L_j = la_g[j], lb_g[j], L[j]
            s, ds = s_g[j], ds_g[j]
            s_a, ds_a, s_b = sa_g[j], dsa_g[j], sb_g[j]
            prev, slow = prev_g[j], slow_g[j]
            listed = listed_g[j]
            q0, q1 = p0 - base, p1 - base  # its pages in the batch's packed arrays
            err = s - c
            ulp_step = abs(err) <= -ds * 4.0 * eps * L_j  # the Newton step is below a few ulps
            if it > 0 and (abs(err) <= tol * c or (ulp_step and abs(err) <= HOST_ULPS_STOP * c)):
                out_lam[j] = L_j
                out_dlam[j] = -err / ds if ds < 0.0 else 0.0
                out_iter[j] = it
                continue
            if err > 0.0:
                la, s_a, ds_a = L_j, s, ds
            elif err < 0.0:
                lb, s_b = L_j, s
            if lb < np.inf and lb - la <= 8.0 * eps * lb:
                # the bracket has collapsed onto a jump of S: interpolate across a finite one (θ), leave
                # a jump to an infinite S to the general solver
                gap = s_a - s_b
                if s_a < _RATE_CLAMP:  # (an infinite rate is summed as _RATE_CLAMP)
                    out_lam[j] = lb
                    out_lam2[j] = la
                    out_theta[j] = (c - s_b) / gap if gap > 0.0 else 0.0
                    out_dlam[j] = 0.0
                    out_iter[j] = it
                continue
            if it >= max_iter:
                continue
            if sqrt_step:
                u = 1.0 / math.sqrt(L_j) + err / (2.0 * L_j * math.sqrt(L_j) * ds)
                ln = 1.0 / (u * u) if u > 0.0 else np.inf
            else:
                ln = L_j * math.exp(-(math.log(s) - math.log(c)) * s / (L_j * ds))
            aerr = abs(err)
            slow = slow + 1 if aerr > 0.5 * prev else 0
            prev = aerr
            if it == 0 and p1 - p0 == 1:
                # one page: its rate is the cap, at the multiplier w f'(c) (exact to the inverse's rounding)
                if _get(lo_p, q0) < c and c < _get(hi_p, q0):
                    l1 = _marg_t(tok, _get(k_p, q0), c, _get(w_p, q0), _get(a_p, q0), _get(b_p, q0))
                    if l1 > la and l1 < lb:
                        ln = l1
            inside = ln > la and ln < lb
            tail = False
            if _flat_tail(tok) and lb < np.inf and inside and slow == 0:
                # just below a breakpoint where a page leaves p_min with a flat marginal, its rate falls
                # like 1/log(e - λ), which Newton in log λ crawls along: the step made for that tail
                if not listed:
                    _host_breakpoints(tok, q0, q1, k_p, w_p, a_p, b_p, lo_p, hi_p, e_lo[q0:q1], e_hi[q0:q1])
                    listed = True
                e_in, e_up, e_dn = _listed_breakpoints(e_lo[q0:q1], e_hi[q0:q1], p1 - p0, la, lb, ln)
                if e_up < np.inf and max(e_up - lb, 4.0 * eps * e_up) < 0.25 * (e_up - la) and not e_in < lb:
                    l_sing = _singular_step(e_up, L_j, err, ds)
                    if l_sing > la and l_sing < lb:
                        ln = l_sing
                        tail = True
            if lb == np.inf:
                if not ln > L_j:
                    ln = 8.0 * la
                ln = min(ln, 1e30 * L_j)
            elif not tail and (not inside or slow > 0):
                width = lb - la
                half = 0.5 * (la + lb)
                ln_bis = half if width <= 1e-3 * lb else math.sqrt(la * lb)
                if not listed:
                    _host_breakpoints(tok, q0, q1, k_p, w_p, a_p, b_p, lo_p, hi_p, e_lo[q0:q1], e_hi[q0:q1])
                    listed = True
                lt = ln if inside else half
                e_in, e_up, e_dn = _listed_breakpoints(e_lo[q0:q1], e_hi[q0:q1], p1 - p0, la, lb, lt)
                right = la * (1.0 + 6.0 * eps)
                if (la - e_dn <= 4.0 * eps * la) and right < lb and -ds_a * width > 100.0 * (s_a - s_b):
                    ln = right  # λa on a breakpoint where S is far steeper than across the bracket
                elif e_in == e_in and e_in > la and e_in < lb:
                    ln = e_in  # a breakpoint inside the bracket
                else:
                    ln = ln_bis
                    dist_a = e_up - la
                    dist_b = max(e_up - lb, 4.0 * eps * e_up)
                    if e_up < np.inf and dist_b < 0.25 * dist_a:
                        # S may be singular at e_up: Newton in log(e_up - λ), else bisect that log-distance
                        l_sing = _singular_step(e_up, L_j, err, ds)
                        # (a probe next to e, where the root sits on the jump there, is taken however slow)
                        if l_sing > la and l_sing < lb and (slow < 2 or l_sing >= e_up * (1.0 - 16.0 * eps)):
                            ln = l_sing
                        else:
                            ln = e_up - math.sqrt(dist_a * dist_b)
                if not (ln > la and ln < lb):
                    ln = half
            if ulp_step and abs(err) > HOST_ULPS_STOP * c:
                # a Newton step below a few ulps with an error too large to stop on (next to a page in its
                # singular tail): the root sits on the jump at that page's breakpoint a few ulps away, or S
                # turns there (the page reaches a bound); a probe 4 ulps toward the root brackets the first,
                # and the second goes on from there
                l_probe = L_j * (1.0 + 4.0 * eps) if err > 0.0 else L_j * (1.0 - 4.0 * eps)
                if l_probe > la and l_probe < lb:
                    ln = l_probe
            L[j] = ln
            la_g[j], lb_g[j], sa_g[j], dsa_g[j], sb_g[j] = la, lb, s_a, ds_a, s_b
            prev_g[j], slow_g[j] = prev, slow
            listed_g[j] = listed
            open_g[n_next] = j
            n_next += 1
        n_open = n_next
        it += 1
        # the sums of the open groups at their new points, by chunks of their pages
        m = np.int64(0)
        for t_open in range(n_open):
            j = open_g[t_open]
            s_g[j] = 0.0
            ds_g[j] = 0.0
            for q in range(start[j] - base, start[j + 1] - base):
                _copy_page(m, q, k_p, w_p, a_p, b_p, lo_p, hi_p, k_c, w_c, a_c, b_c, lo_c, hi_c)
                lb_c[m] = L[j]
                g_c[m] = j
                m += 1
                if m == _CHUNK:
                    _chunk_to_groups(tok, m, k_c, lb_c, w_c, a_c, b_c, lo_c, hi_c, pb_c, db_c, ib, fb, g_c, s_g, ds_g)
                    m = np.int64(0)
        if m:
            _chunk_to_groups(tok, m, k_c, lb_c, w_c, a_c, b_c, lo_c, hi_c, pb_c, db_c, ib, fb, g_c, s_g, ds_g)


@njit(**_LOOP)
def _chunk_to_groups(tok, m, k_c, lb_c, w_c, a_c, b_c, lo_c, hi_c, pb_c, db_c, ib, fb, g_c, s_g, ds_g):
    """The rates of a chunk of m pages at their multipliers ``lb_c``, added to their groups' sums (``g_c``)."""
    _resp_chunk(tok, m, k_c, lb_c, w_c, a_c, b_c, lo_c, hi_c, pb_c, db_c, ib, fb)
    for t in range(m):
        g = g_c[t]
        s_g[g] += min(pb_c[t], _RATE_CLAMP)
        ds_g[g] += db_c[t]


# ---------------------------------------------------------------------------------------------------
# Host caps: λ and the multipliers λ_h of all binding hosts, found together in the same passes
# ---------------------------------------------------------------------------------------------------
@njit(**_INL)
def _low_marg_t(tok, k, lo, w, a, b, hi):
    """w f'(p_min), the multiplier at which a page leaves its lower bound; inf when p_max <= p_min."""
    if not hi > lo:
        return np.inf
    if lo <= 0.0:  # the same value; a literal 0 lets the p <= 0 branch of the marginal fold away
        return _marg_t(tok, k, 0.0, w, a, b)
    return _marg_t(tok, k, lo, w, a, b)


@njit(**_INL)
def _nonpos_scalar(x):
    """Whether x is shared by every page (shape (1,)) and <= 0."""
    return x.shape[0] == 1 and x[0] <= 0.0


_INF_BITS = np.int64(0x7FF0000000000000)  # +inf as an int64: non-negative floats order as their bit patterns


@njit(cache=True, error_model="numpy", fastmath=_FM | {"nnan"})
def _track_chunk(tok, m, kv, wv, av, bv, lov, hiv, lb, lam_at, db, bits, start, found, n_found):
    """Over one chunk: the smallest breakpoint above ``lam_at`` and the largest at or below it, among the
    pages evaluated there (``lb[j] == lam_at``); each page's breakpoint is left in ``db``. Those pages whose
    breakpoint lies strictly inside (l_a, l_b) are also counted from ``n_found``, their indices (``start``
    + j) written to ``found`` while it has room. ``bits``: int64 view of (λ_at, l_a, l_b) and two slots
    for the results.
    Returns (smallest above, largest at or below, new count).

    Breakpoints w f'(p_min) are never NaN nor below zero, and non-negative floats order as their bit
    patterns, so the three reductions run on the int64 view of ``db``: LLVM vectorises integer min and
    max; it does not vectorise the floating-point ones. A scalar p_min <= 0 folds the marginal value
    at 0 to its short form.
    """
    if _nonpos_scalar(lov):
        for j in range(m):
            e = _marg_t(tok, _get(kv, j), 0.0, _get(wv, j), _get(av, j), _get(bv, j))
            db[j] = e if _get(hiv, j) > lov[0] else np.inf
    else:
        for j in range(m):
            db[j] = _low_marg_t(tok, _get(kv, j), _get(lov, j), _get(wv, j), _get(av, j), _get(bv, j), _get(hiv, j))
    di = db.view(np.int64)
    lam_i, la_i, lb_i = bits[0], bits[1], bits[2]
    c_in = 0
    c_up = _INF_BITS
    c_dn = np.int64(0)
    for j in range(m):
        e = di[j]
        at = lb[j] == lam_at
        c_in += at & (e > la_i) & (e < lb_i)
        c_up = min(c_up, e if at & (e > lam_i) else _INF_BITS)
        c_dn = max(c_dn, e if at & (e <= lam_i) else np.int64(0))
    if c_in and n_found + c_in > found.shape[0]:
        n_found += c_in  # no room left: only the count
    elif c_in:  # the rare chunk with some inside is read again
        for j in range(m):
            e = di[j]
            if (lb[j] == lam_at) & (e > la_i) & (e < lb_i):
                found[n_found] = start + j
                n_found += 1
    bits[3], bits[4] = c_up, c_dn
    out = bits.view(np.float64)
    return out[3], out[4], n_found


@njit(**_INL)
def _scatter_pairs(flat, hv, pb, db, G):
    """Adds each page's pb, db of a chunk to its group's pair in ``flat`` (an (n_groups, 2) array, flat),
    host -1 to the last group."""
    for j in range(hv.shape[0]):
        h = hv[j]
        h = np.uint64(h + (h < 0) * G)  # unsigned: no second wraparound test
        flat[2 * h] += pb[j]  # a literal stride: a shift, where acc[h, 0] multiplies
        flat[2 * h + 1] += db[j]


@njit(**_LOOP)
def group_pass(tok, n, mu, imu, k, w, a, b, lo, hi, hosts, s_g, ds_g, acc, brk, lam_at, keep, found):
    """Per group g: Σ_{i∈g} p_i(mu[g]) and its derivative, left in s_g, ds_g (shape (n_groups,)).

    A group is a host; the last group holds the pages without a host (``hosts[i] = -1``); ``imu`` is
    1 / mu, gathered instead of mu by the kinds whose rate needs only 1/λ (no division per page). Per
    chunk of pages: gather each page's multiplier, compute the rates in a vectorised loop, add them up
    by host (``acc``: scratch, shape (n_groups, 2), sum and derivative side by side in one cache line).
    When ``brk`` has shape (3,) or more, it also receives, over the pages evaluated at ``lam_at`` (the groups
    at the global λ), the smallest breakpoint above it where a page leaves its lower bound, w f'(p_min)
    (inf if none; Σp may be singular just below it), the largest at or below it (0 if none) and the
    index of the first page at the smallest (-1 if none): vectorised reductions, no scatter. When
    ``brk`` has shape (6,), ``brk[3]``, ``brk[4]`` give an interval (λa, λb) on input, and ``brk[5]``
    receives the number of those pages whose breakpoint lies strictly inside it, the first
    ``found.shape[0]`` of them written to ``found`` (int64).

    ``keep`` (bool, shape (n_groups,), or (0,) for none): groups whose point has not moved since the last
    pass keep their sums, and their pages are not evaluated again (for the kinds that gather λ rather
    than 1/λ, whose rates cost far more than the test: the Lambert-W responses, the polynomial sync
    costs, mixed kinds).
    """
    G = mu.shape[0]
    track = brk.shape[0] > 0
    skip = keep.shape[0] > 0 and not _uses_il(tok)
    if acc.shape[1] != 2:  # the scatter below indexes with this literal stride
        raise ValueError("group_pass: acc must have shape (n_groups, 2)")
    acc[:, 0] = 0.0
    acc[:, 1] = 0.0
    flat = acc.reshape(acc.size)  # C-contiguous: a view
    e_up, e_dn, e_page = np.inf, 0.0, -1
    l_a, l_b = (brk[3], brk[4]) if brk.shape[0] >= 6 else (np.inf, 0.0)
    n_found = np.int64(0)
    lb = np.empty(_CHUNK)
    pb = np.empty(_CHUNK)
    db = np.empty(_CHUNK)
    tb = np.empty(_CHUNK)
    bits = np.empty(5, dtype=np.int64)  # λ_at, l_a, l_b as bit patterns, and two result slots (:func:`_track_chunk`)
    fbits = bits.view(np.float64)
    fbits[0], fbits[1], fbits[2] = lam_at, l_a, l_b
    ib, fb = chunk_scratch()
    # the pages of a kept group are evaluated at λ = NaN (their rates are not used; it costs a select), gathered
    # from a copy of mu with NaN per kept group. A per-page test of ``keep`` after the gather cost most where
    # kept and moving hosts mix, as a mispredicted branch would: a pass over 10^6 pages under detection took
    # 10.8 ms with no host kept, 13.4 / 15.0 / 12.0 ms with a quarter / half / three quarters kept (hosts
    # drawn at random); 10.0 / 9.4 / 8.8 ms this way
    mu_at = mu
    if skip:  # (a loop: np.where cost a first capped call about 3 s of compiling)
        mu_at = mu.copy()
        for g in range(G):
            if keep[g]:
                mu_at[g] = np.nan
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        hv = hosts[start:stop]
        kv, wv, av, bv, lov, hiv = _views(start, stop, k, w, a, b, lo, hi)
        if _uses_il(tok) and not track:
            _gather(lb, imu, hv)
            for j in range(stop - start):
                p, dp = _resp_il_t(tok, _get(kv, j), lb[j], _get(wv, j), _get(av, j), _get(bv, j), _get(lov, j),
                                   _get(hiv, j))
                pb[j] = p
                db[j] = dp
        else:
            _gather(lb, mu_at, hv)
            _resp_chunk(tok, stop - start, kv, lb, wv, av, bv, lov, hiv, pb, db, ib, fb)
        if track:
            c_up, c_dn, n_found = _track_chunk_t(tok, stop - start, kv, wv, av, bv, lov, hiv, lb, lam_at, tb,
                                                 bits, start, found, n_found)
            e_dn = max(e_dn, c_dn)
            if c_up < e_up:  # a new smallest: find its first page in this chunk
                e_up = c_up
                for j in range(stop - start):
                    if (tb[j] == c_up) & (lb[j] == lam_at):
                        e_page = start + j
                        break
        _scatter_pairs(flat, hv, pb, db, G)
    for g in range(G):
        kept = skip and keep[g]
        s_g[g] = s_g[g] if kept else acc[g, 0]
        ds_g[g] = ds_g[g] if kept else acc[g, 1]
    if track:
        brk[0] = e_up
        brk[1] = e_dn
        brk[2] = e_page
        if brk.shape[0] >= 6:
            brk[5] = n_found


@njit(**_INL)
def _buffer(x, m):
    """Room for m pages' entries of a per-page input; x itself when it is shared by every page (shape (1,))."""
    return x if x.shape[0] == 1 else np.empty(m, dtype=x.dtype)


@njit(**_INL)
def _put(dst, pos, src, j):
    """Entry j of a per-page input (or of a chunk's view of it) to position pos of its :func:`_buffer`.

    A shared input (shape (1,)) is its own buffer: only its one entry is (re)written. A view of a real
    input may have shape (1,) too (a last chunk of one page), so the test is on the buffer, not the source.
    """
    if pos < dst.shape[0]:
        dst[pos] = _get(src, j)


@njit(**_INL)
def _copy_page(pos, j, k, w, a, b, lo, hi, k_l, w_l, a_l, b_l, lo_l, hi_l):
    """Page j's data (of k ... hi, the arrays among them) to position ``pos`` of the ``*_l`` buffers."""
    _put(k_l, pos, k, j)
    _put(w_l, pos, w, j)
    _put(a_l, pos, a, j)
    _put(b_l, pos, b, j)
    _put(lo_l, pos, lo, j)
    _put(hi_l, pos, hi, j)


@njit(**_LOOP)
def window_pass(tok, n, tab, k, w, a, b, lo, hi, hosts, s_g, ds_g, acc, k_l, w_l, a_l, b_l, lo_l, hi_l, hosts_l):
    """:func:`group_pass` for Poisson freshness that also lists the pages whose rate may leave or reach a
    bound while their group's u = mu^(-1/2) moves by less than its window eps relative; ``tab`` (shape
    (n_groups, 2)) holds each group's 1/mu and eps.

    A page's unclipped rate is c_i u - Δ_i with c_i = sqrt(w_i Δ_i), the inverse marginal
    sqrt(w Δ / λ) - Δ of p / (p + Δ) (Azar et al. 2018; seed 001, Sec. 5) in u = λ^(-1/2): at u(1 + t)
    it is r + x t, with r and x = c_i u its value and slope at u, so it keeps its side of a bound b for
    |t| < eps unless |r - b| < eps x. Every other page is affine in u (or constant) across the window,
    and a group's sum over them is exactly affine there. The listed pages' data (those of k ... hi that
    are arrays, and the host) are copied, in page order, to the ``*_l`` buffers (of one length; a
    scalar's buffer is the scalar). Returns their count, or -1 where it exceeds the buffers.
    ``s_g``, ``ds_g``, ``acc`` as in :func:`group_pass`.
    """
    G = tab.shape[0]
    cap_n = hosts_l.shape[0]
    if acc.shape[1] != 2 or tab.shape[1] != 2:
        raise ValueError("window_pass: acc and tab must have shape (n_groups, 2)")
    flat_t = tab.reshape(tab.size)
    acc[:, 0] = 0.0
    acc[:, 1] = 0.0
    flat = acc.reshape(acc.size)
    lb = np.empty(_CHUNK)
    eb = np.empty(_CHUNK)
    pb = np.empty(_CHUNK)
    db = np.empty(_CHUNK)
    fb = np.empty(_CHUNK, dtype=np.int64)
    ib = np.empty(_CHUNK, dtype=np.int64)
    m = np.int64(0)
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        hv = hosts[start:stop]
        kv, wv, av, bv, lov, hiv = _views(start, stop, k, w, a, b, lo, hi)
        for j in range(stop - start):
            h = hv[j]
            r = 2 * np.uint64(h + (h < 0) * G)
            lb[j] = flat_t[r]
            eb[j] = flat_t[r + 1]
        for j in range(stop - start):
            il, wi, ai, lo_i, hi_i = lb[j], _get(wv, j), _get(av, j), _get(lov, j), _get(hiv, j)
            p, dp = _resp_il_t(tok, _get(kv, j), il, wi, ai, _get(bv, j), lo_i, hi_i)
            pb[j] = p
            db[j] = dp
            x = math.sqrt(wi * ai * il)
            r = x - ai
            ex = eb[j] * x
            fb[j] = (abs(r - lo_i) < ex) | (abs(r - hi_i) < ex)
        _scatter_pairs(flat, hv, pb, db, G)
        c = 0
        for j in range(stop - start):  # no branch: each position is written, and kept only where flagged
            ib[c] = j
            c += fb[j]
        if m + c <= cap_n:
            for q in range(c):
                j = ib[q]
                _copy_page(m + q, j, kv, wv, av, bv, lov, hiv, k_l, w_l, a_l, b_l, lo_l, hi_l)
                hosts_l[m + q] = hv[j]
        m += c
    for g in range(G):
        s_g[g] = acc[g, 0]
        ds_g[g] = acc[g, 1]
    return m if m <= cap_n else -1


@njit(**_LOOP)
def _window_base(tok, m, imu, ue, k_l, w_l, a_l, b_l, lo_l, hi_l, hosts_l, s_g, ds_g, base_s, slope):
    """After :func:`window_pass`: each group's sum over its pages not listed, as base_s + slope (u - ue)
    with u its own point (shape (n_groups,)), from the pass's sums less the listed pages' own."""
    G = s_g.shape[0]
    t_d = np.empty(G)
    for g in range(G):
        base_s[g] = s_g[g]
        t_d[g] = ds_g[g]
    for j in range(m):
        h = hosts_l[j]
        g = h + (h < 0) * G
        p, dp = _resp_il_t(tok, _get(k_l, j), imu[g], _get(w_l, j), _get(a_l, j), _get(b_l, j), _get(lo_l, j),
                           _get(hi_l, j))
        base_s[g] -= p
        t_d[g] -= dp
    for g in range(G):
        u3 = ue[g] * ue[g] * ue[g]
        slope[g] = -2.0 * t_d[g] / u3 if u3 > 0.0 else 0.0  # dS/dλ = -u³/2 dS/du


@njit(**_LOOP)
def _window_add(s_g, ds_g, ue, cu, base_s, slope):
    """Adds each group's part outside the listed pages, exact while |ue - cu| < eps cu, to a pass over them."""
    for g in range(s_g.shape[0]):
        u = ue[g]
        s_g[g] += base_s[g] + slope[g] * (u - cu[g])
        ds_g[g] -= 0.5 * slope[g] * u * u * u


@njit(**_LOOP)
def _window_left(ue, cu, fixed, tab, left):
    """Flags (``left``) and counts the groups whose point ``ue`` lies outside their window (``tab[:, 1]``,
    relative) around ``cu``."""
    out = 0
    for g in range(ue.shape[0]):
        f = (abs(ue[g] - cu[g]) >= tab[g, 1] * cu[g]) & (fixed[g] ^ True)
        left[g] = f
        out += f
    return out


@njit(**_PLAIN)
def _list_groups(n, k, w, a, b, lo, hi, hosts, left, m, k_l, w_l, a_l, b_l, lo_l, hi_l, hosts_l):
    """Lists every page of the groups flagged in ``left``: the listed pages of the other groups (the first
    ``m`` in the buffers of :func:`window_pass`) are kept, then one read of the host indices appends
    theirs. Returns the new count, or -1 where it exceeds the buffers."""
    G = left.shape[0]
    cap_n = hosts_l.shape[0]
    m2 = np.int64(0)
    for j in range(m):
        h = hosts_l[j]
        if not left[h + (h < 0) * G]:
            _copy_page(m2, j, k_l, w_l, a_l, b_l, lo_l, hi_l, k_l, w_l, a_l, b_l, lo_l, hi_l)
            hosts_l[m2] = h
            m2 += 1
    for i in range(n):
        h = hosts[i]
        if left[np.uint64(h + (h < 0) * G)]:  # rare: the branch is predicted
            if m2 == cap_n:
                return -1
            _copy_page(m2, i, k, w, a, b, lo, hi, k_l, w_l, a_l, b_l, lo_l, hi_l)
            hosts_l[m2] = h
            m2 += 1
    return m2


@njit(**_LOOP)
def _window_table(tab, mu, ue, uprev, fixed, base):
    """Each group's 1/mu and window (relative, in u): at least ``base``, else min(2 s, 4 s²) for a last
    step s (a model step leaves an error of order s²: about 0.4 s² for λ at 10^6 pages on the benchmark), and
    inf (every page listed) where that exceeds WINDOW_MAX for a host at its own multiplier (far from λ,
    its root still moving). Returns λ's window (the last group, the pages without a host, is always at
    λ); the pages are listed only where it is below WINDOW_MAX.
    """
    u = ue[-1]
    for g in range(ue.shape[0]):
        at_lam = ue[g] == u
        step = abs(ue[g] - uprev[g]) / ue[g] if ue[g] > 0.0 else 0.0
        wide = max(base, min(2.0 * step, 4.0 * step * step))
        tab[g, 0] = 1.0 / mu[g]
        tab[g, 1] = 0.0 if fixed[g] else (wide if (wide <= WINDOW_MAX) | at_lam else np.inf)
    return tab[-1, 1]


@njit(**_LOOP)
def _model_setup(A, C, kink, cap, fixed, s_fix, u_lo, u_hi, work):
    """The groups of :func:`_model_root` told apart by where their kink lies, without branches or compaction.

    Returns the value at u = 0 and slope of the groups whose kink lies outside (u_lo, u_hi), which are
    linear or constant inside it, and how many have theirs inside. The latter are written to ``work``
    (shape (3, n_groups): A, C, cap) and every other group as zeros, which adds min(0, 0 u - 0) = 0 and no
    slope to :func:`_model_sum`: one vectorised loop, where copying only the groups inside is a serial chain.
    """
    base = 0.0
    base_der = 0.0
    m_k = 0
    for g in range(A.shape[0]):
        a_g, c_g, cap_g, k_g = A[g], C[g], cap[g], kink[g]
        free = fixed[g] ^ True
        slope = free & (a_g > 0.0)
        capped = slope & (k_g <= u_lo)
        linear = slope & (k_g >= u_hi)
        inside = slope & (capped ^ True) & (linear ^ True)
        flat = min(cap_g, -c_g) if free & (slope ^ True) else 0.0
        base += (flat if free else s_fix[g]) + (cap_g if capped else 0.0) - (c_g if linear else 0.0)
        base_der += a_g if linear else 0.0
        work[0, g] = a_g if inside else 0.0
        work[1, g] = c_g if inside else 0.0
        work[2, g] = cap_g if inside else 0.0
        m_k += inside
    return base, base_der, m_k


@njit(**_PLAIN)
def _model_root(A, C, kink, cap, fixed, s_fix, budget, u, u_lo, u_hi, work):
    """Root in u of Σ_g min(cap_g, A_g u - C_g) = budget (fixed groups: s_fix), inside (u_lo, u_hi).

    ``kink[g] = (cap_g + C_g) / A_g`` where group g reaches its cap (for A_g > 0).

    The left side is concave, piecewise linear and nondecreasing in u, with a kink where each group
    reaches its cap. Groups whose kink lies outside the bracket are linear or constant inside it and
    are summed once (:func:`_model_setup`); Newton then runs over the others, each step one vectorised
    loop (:func:`_model_sum`; ``work``: scratch, shape (3, n_groups)).
    From any start it lands at or left of the root after one step and then climbs to it
    monotonically, exactly once it reaches the root's linear piece; it stops after 12 steps
    (the models are approximations far from the root anyway). Where the models have no slope left
    and stay below the budget, returns an expansion of u instead.
    """
    u0 = u
    base, base_der, m_k = _model_setup(A, C, kink, cap, fixed, s_fix, u_lo, u_hi, work)
    base -= budget
    w_a, w_c, w_cap = work[0], work[1], work[2]
    for _ in range(12):
        val, der = _model_sum(w_a, w_c, w_cap, u) if m_k else (0.0, 0.0)
        val += base + base_der * u
        der += base_der
        if val == 0.0:
            return u
        if der <= 0.0:
            if val < 0.0:
                return min(2.0 * u0, 0.5 * (u0 + u_hi))
            un = 0.5 * (u + u_lo) if u_lo > 0.0 else 0.5 * u
        else:
            un = u - val / der
        if not un > u_lo:
            un = 0.5 * (u + u_lo)
        if not un < u_hi:
            un = 0.5 * (u + u_hi)
        if abs(un - u) <= 4.0 * 2.220446049250313e-16 * u:
            return un
        u = un
    return u


@njit(**_LOOP)
def _model_sum(A, C, cap, u):
    """Σ min(cap, A u - C) and its slope in u, over arrays of one shape: a vectorised loop."""
    val = 0.0
    der = 0.0
    for j in range(A.shape[0]):
        m = A[j] * u - C[j]
        less = m < cap[j]
        val += m if less else cap[j]
        der += A[j] if less else 0.0
    return val, der


@njit(**_LOOP)
def _intake(s_g, ds_g, cap, fixed, ue, mu, u, u_lo, u_hi, la_g, s_la, ds_la, f_end, overshot, A, C, kink, bind, done,
            sure, tol):
    """Take in one pass's per-group sums: each group's model, bracket and state (:func:`capped_newton`).

    Per group g: the model S_g ≈ A_g u - C_g matched to its sum and derivative at its point ``ue[g]``
    (for a host that overshot its root, from the point where it was last over its cap), where it reaches
    its cap (``kink``), the bracket on its root, and whether it binds at λ = u^(-2), has converged and
    surely binds; ``f_end`` (shape (3, n_groups)) keeps S_g - c_g at both ends of the bracket, for regula
    falsi, the far end's halved when the same end moves twice in a row (Illinois), and which end moved
    last. Returns F's terms (R: each binding host at its cap; R_low: each unsure one at its sum),
    Σ dS of the groups at λ, and the counts of groups with a sum that is not finite, unsure and open.

    Two loops without branches, which vectorise (one loop storing to all twelve arrays does not).
    """
    eps = 2.220446049250313e-16
    R = 0.0
    R_low = 0.0
    D = 0.0
    n_bad = 0
    n_unsure = 0
    n_open = 0
    G = s_g.shape[0]
    for g in range(G):
        S, dS, c = s_g[g], ds_g[g], cap[g]
        fx = fixed[g]
        n_bad += ((abs(S) < np.inf) & (abs(dS) < np.inf)) ^ True
        ug, mg = ue[g], mu[g]
        own = ug < u
        over = (S > c) & (fx ^ True)
        under = (S < c) & (fx ^ True)
        uhi_old, la_old, sla_old, dsla_old = u_hi[g], la_g[g], s_la[g], ds_la[g]
        uhi = ug if (over & (ug < uhi_old)) else uhi_old
        e_g = abs(S - c)
        remodel = own & under & (uhi_old < np.inf)
        # the model at u_a = λ_a^(-1/2), where it was last over its cap: A = -2 S'(λ_a) λ_a^(3/2), A u_a - S
        m1 = -2.0 * dsla_old * la_old
        a0 = -2.0 * dS / (ug * ug * ug)
        Ag = m1 * math.sqrt(la_old) if remodel else a0
        Cg = (m1 - sla_old) if remodel else (a0 * ug - S)
        Ag = 0.0 if fx else Ag
        Cg = 0.0 if fx else Cg
        A[g] = Ag
        C[g] = Cg
        kink[g] = (c + Cg) / Ag if Ag > 0.0 else np.nan
        bnd = (own | over) & (fx ^ True)
        dn = (e_g <= tol * c) | ((e_g <= -dS * 4.0 * eps * mg) & (e_g <= HOST_ULPS_STOP * c))
        sr = dn | (uhi <= u)
        bind[g] = fx | bnd
        done[g] = fx | (bnd ^ True) | dn
        sure[g] = (bnd ^ True) | sr
        R += c if bnd else S
        R_low += c if (bnd & sr) else S
        D += 0.0 if (fx | bnd) else dS
        n_unsure += bnd & (sr ^ True)
        n_open += bnd & (dn ^ True)
    for g in range(G):  # then the brackets, from the signs of S_h - c_h (a loop of its own: it vectorises)
        S, c, fx = s_g[g], cap[g], fixed[g]
        ug, uhi_old = ue[g], u_hi[g]
        over = (S > c) & (fx ^ True)
        under = (S < c) & (fx ^ True)
        new_hi = over & (ug < uhi_old)
        u_hi[g] = ug if new_hi else uhi_old
        la_g[g] = mu[g] if new_hi else la_g[g]
        s_la[g] = S if new_hi else s_la[g]
        ds_la[g] = ds_g[g] if new_hi else ds_la[g]
        ulo = u_lo[g]
        new_lo = under & (ug > ulo)
        u_lo[g] = ug if new_lo else ulo
        # S - c at u_lo and u_hi for regula falsi, the far end's halved when the same end moves twice in a
        # row (Illinois); f_end[2, g]: the end that moved last (-1: u_lo, 1: u_hi)
        last = f_end[2, g]
        f_end[0, g] = (S - c) if new_lo else (0.5 * f_end[0, g] if new_hi & (last > 0.0) else f_end[0, g])
        f_end[1, g] = (S - c) if new_hi else (0.5 * f_end[1, g] if new_lo & (last < 0.0) else f_end[1, g])
        f_end[2, g] = -1.0 if new_lo else (1.0 if new_hi else last)
        overshot[g] = overshot[g] | (under & (ug < u) & (abs(S - c) > tol * c))
    return R, R_low, D, n_bad, n_unsure, n_open


@njit(**_INL)
def _bisect_point(u_lo, u_hi, grow):
    """A binding host's fallback point in u: the geometric midpoint of its bracket (u_lo, u_hi), or, while
    the bracket is open below (u_lo = 0), u_hi / grow, with grow squared (up to 1e30) for the next time.
    Returns (point, grow)."""
    if u_lo > 0.0:
        return math.sqrt(u_lo * u_hi), grow
    return u_hi / grow, min(grow * grow, 1e30)


@njit(**_INL)
def _falsi_point(u_lo, u_hi, f_lo, f_hi, other):
    """The regula falsi point of a host's bracket (u_lo, u_hi), S - c = f_lo < 0 and f_hi > 0 at its ends
    (:func:`_intake`), where both ends are known and it falls inside; else ``other``."""
    ur = u_lo - f_lo * (u_hi - u_lo) / (f_hi - f_lo)
    return ur if (u_lo > 0.0) & (u_hi < np.inf) & (ur > u_lo) & (ur < u_hi) else other


@njit(**_LOOP)
def _next_points(u, fixed, cap, ue, mu, s_g, ds_g, A, kink, u_lo, u_hi, f_end, bind, sure, done, overshot, prev_g, grow,
                 slow):
    """Each group's next evaluation point ``ue[g]`` (in u) and multiplier ``mu[g]`` for the pass at λ = u^(-2).

    Uncapped groups go to λ. A host under its cap at λ, unsure whether it binds there after an
    overshoot, or prone to overshoots and not yet known to bind at the new λ goes to its model's root if
    that says it binds at the new λ by a clear margin (and it has not overshot), else to λ. A binding
    host steps to its model's root, or by regula falsi on its bracket (``f_end``, from :func:`_intake`;
    a geometric bisection where that falls outside, an expansion while the bracket is open) where that
    root leaves the bracket or the last step did not halve its error; where the root
    lies outside the bracket and S_g > 0 > S_g', a log-log Newton step is tried first, in a second
    loop over those hosts only (``slow``: scratch flags), since log and exp keep the main loop from
    vectorising. A host whose point would be at or above u goes to λ; a converged one stays.
    """
    lam = 1.0 / (u * u)
    n_slow = 0
    for g in range(cap.shape[0]):
        fx, c = fixed[g], cap[g]
        ug, mg, S, dS = ue[g], mu[g], s_g[g], ds_g[g]
        kg, lo_g, hi_g, ov, pv, gr = kink[g], u_lo[g], u_hi[g], overshot[g], prev_g[g], grow[g]
        free = (c < np.inf) ^ True
        # under its cap at λ, or unsure whether it binds there after an overshoot, or prone to overshoots and
        # not yet known to bind at the new λ: at its model's root if that says it binds at the new λ by a
        # clear margin (and it has not overshot), else at λ
        model = (((bind[g] & sure[g]) ^ True) | (ov & (hi_g > u) & (done[g] ^ True))) & ((fx | free) ^ True)
        ur1 = kg if A[g] > 0.0 else np.inf
        ok = (ur1 < (1.0 - 1e-3) * u) & (ur1 > lo_g) & (ur1 < hi_g) & (ov ^ True)
        ue1 = ur1 if ok else u
        # binding: Newton on its own model, regula falsi where that leaves the bracket or does not halve the error
        e = abs(S - c)
        halved = e <= 0.5 * pv
        stay = done[g] & (ug < u) & ((fx | free | model) ^ True)  # converged and still binding
        inside = (kg > lo_g) & (kg < hi_g)
        log_step = (inside ^ True) & (S > 0.0) & (dS < 0.0)  # a log-log Newton step: left to the loop below
        bisect = (inside ^ True) | (halved ^ True)
        ur_b, gr_b = _bisect_point(lo_g, hi_g, gr)
        ur_b = _falsi_point(lo_g, hi_g, f_end[0, g], f_end[1, g], ur_b)
        ur2 = ur_b if bisect else kg
        ue2 = u if ur2 >= u else ur2
        newton = (fx | free | model | stay) ^ True
        mark = newton & log_step
        keep = fx | stay | mark
        ue_n = u if free else (ue1 if model else ue2)
        ue_n = ug if keep else ue_n
        ue[g] = ue_n
        mu[g] = mg if keep else 1.0 / (ue_n * ue_n)
        pv_n = np.inf if (model | (ue2 == u)) else e
        prev_g[g] = e if stay else (pv if (fx | free | mark) else pv_n)
        grow[g] = gr_b if (newton & bisect & (mark ^ True)) else gr
        slow[g] = mark
        n_slow += mark
    if n_slow == 0:
        return
    for g in range(cap.shape[0]):  # the log-log Newton steps (rare): log and exp do not vectorise
        if not slow[g]:
            continue
        ug, S, dS, c = ue[g], s_g[g], ds_g[g], cap[g]
        halved = abs(S - c) <= 0.5 * prev_g[g]
        prev_g[g] = abs(S - c)
        ur = ug * math.exp(0.5 * (math.log(S) - math.log(c)) * S / (mu[g] * dS))
        if not (ur > u_lo[g] and ur < u_hi[g]) or not halved:
            ur, grow[g] = _bisect_point(u_lo[g], u_hi[g], grow[g])
            ur = _falsi_point(u_lo[g], u_hi[g], f_end[0, g], f_end[1, g], ur)
        if ur >= u:
            ue[g] = u
            mu[g] = lam
            prev_g[g] = np.inf
        else:
            ue[g] = ur
            mu[g] = 1.0 / (ur * ur)


@njit(**_PLAIN)
def _takeout_root(tok, idx, R, D, lam, l_a, l_b, k, w, a, b, lo, hi):
    """The root in (l_a, l_b) of F_rest(x) + Σ_{i∈idx} p_i(x), where F(λ) = R, F'(λ) = D and F_rest is F
    without the pages ``idx``, taken linear in x; the pages' rates exact (they may be singular or jump at
    their breakpoints inside the bracket). Bisection, down to adjacent floats; returns a point strictly
    inside (l_a, l_b) (a jump right at an end is then closed from the other side).
    """
    eps = 2.220446049250313e-16
    f_rest, d_rest = R, D
    for t in range(idx.shape[0]):
        i = idx[t]
        p_i, dp_i = _resp_t(tok, _get(k, i), lam, _get(w, i), _get(a, i), _get(b, i), _get(lo, i), _get(hi, i))
        f_rest -= p_i
        d_rest -= dp_i
    x_a, x_b = l_a, l_b
    for _ in range(200):
        x_m = 0.5 * (x_a + x_b)
        if not (x_m > x_a and x_m < x_b):
            break
        f_m = f_rest + d_rest * (x_m - lam)
        for t in range(idx.shape[0]):
            i = idx[t]
            f_m += _resp_t(tok, _get(k, i), x_m, _get(w, i), _get(a, i), _get(b, i), _get(lo, i), _get(hi, i))[0]
        if f_m > 0.0:
            x_a = x_m
        else:
            x_b = x_m
    l_s = x_b if x_b < l_b * (1.0 - 4.0 * eps) else x_a
    return min(max(l_s, l_a * (1.0 + 8.0 * eps)), l_b * (1.0 - 8.0 * eps))


# ---------------------------------------------------------------------------------------------------
# Parts of capped_newton that only some kinds reach: compiled only for those
# ---------------------------------------------------------------------------------------------------
# capped_newton lists pages by window for Poisson freshness alone (``window`` > 0 only there), and tracks
# breakpoints and takes pages out of F only where Σp may be singular (``singular``: flat or constant
# marginals). numba compiles every function a kernel calls, whether its branch runs or not; under the
# other kinds these wrappers resolve to stubs that raise if reached, which spares compiling the real
# ones (with the other compile-time cuts, a fifth to a third of a capped first call). The token decides,
# as for the responses above.
_WINDOW_KINDS = (POISSON,)
_SINGULAR_KINDS = (PERIODIC, DETECTION, LINEAR, None)  # None: per-page kinds (ANY_TOKEN)


@njit(**_PLAIN)
def _unreachable():
    raise AssertionError("capped_newton reached a part not compiled for this objective")


def _only_for(kinds, real, stub):
    """A function of (tok, *args) that numba compiles as ``real`` where the token's kind is in ``kinds``
    and as ``stub`` (which raises) elsewhere."""
    def wrapper(tok, *args):  # pragma: no cover - compiled through the overload
        raise NotImplementedError

    @overload(wrapper)
    def wrapper_ol(tok, *args):
        return real if _BY_DTYPE[str(tok.dtype)] in kinds else stub

    return wrapper


def _stub_count(tok, *args):  # a page count; -1 would mean "too many"
    _unreachable()
    return np.int64(-1)


def _stub_none(tok, *args):
    _unreachable()


def _stub_track(tok, *args):  # (smallest breakpoint above, largest below, pages found)
    _unreachable()
    return np.inf, 0.0, np.int64(0)


def _stub_root(tok, *args):  # a multiplier
    _unreachable()
    return 0.0


def _stub_width(tok, *args):  # a window
    _unreachable()
    return np.inf


_window_pass_t = _only_for(_WINDOW_KINDS, lambda tok, *args: window_pass(tok, *args), _stub_count)
_window_base_t = _only_for(_WINDOW_KINDS, lambda tok, *args: _window_base(tok, *args), _stub_none)
_list_groups_t = _only_for(_WINDOW_KINDS, lambda tok, *args: _list_groups(*args), _stub_count)
_window_left_t = _only_for(_WINDOW_KINDS, lambda tok, *args: _window_left(*args), _stub_count)
_window_add_t = _only_for(_WINDOW_KINDS, lambda tok, *args: _window_add(*args), _stub_none)
_window_table_t = _only_for(_WINDOW_KINDS, lambda tok, *args: _window_table(*args), _stub_width)
_track_chunk_t = _only_for(_SINGULAR_KINDS, lambda tok, *args: _track_chunk(tok, *args), _stub_track)
_takeout_root_t = _only_for(_SINGULAR_KINDS, lambda tok, *args: _takeout_root(tok, *args), _stub_root)


@njit(**_PLAIN)
def capped_newton(tok, n, k, w, a, b, lo, hi, hosts, cap, fixed, budget, lam0, tol, max_pass, mu, dmu, s_g, ds_g,
                  bind, done, la_g, s_la, ds_la, singular, jump, pre, window, counts, mu0):
    """λ and the multipliers λ_h > λ of the binding hosts together, one pass over the pages per step.

    Groups g (shape (n_groups,)): the hosts, then the pages without a host (last; ``cap = inf``);
    ``cap[g] = inf`` for an uncapped host, ``fixed[g]`` for a host pinned at its lower bounds. At the
    optimum a host either binds, Σ_{i∈h} p_i(λ_h) = c_h with λ_h > λ, or takes S_h(λ) <= c_h, and
    F(λ) = Σ_h min(c_h, S_h(λ)) + S_free(λ) - B = 0. Everything is done in u = λ^(-1/2), in which
    S_h increases.

    Each host keeps a bracket on its root from the signs of S_h - c_h seen so far. A pass evaluates a
    host at its own Newton point while its bracket shows that it binds at the current λ, or while its
    model says so, and at λ otherwise; F is exact when every host evaluated away from λ is known to
    bind there, and brackets λ then. After a pass every group gets a model S_g ≈ A_g u - C_g matched
    to its sum and derivative (exact for p = sqrt(w Δ / λ) - Δ while none of the group's pages reaches a
    bound). The next λ is the root of the models'
    budget equation (:func:`_model_root`), or, when F kept its sign without falling below a quarter,
    a regula falsi step on the bracket with the Illinois modification (the models miss pages that
    reach a bound, and Newton then creeps up to the root from one side). The next λ_h is the root of
    the host's model, else a log-log Newton step; one that leaves the host's bracket, or does not
    halve its error, is replaced by regula falsi on the host's bracket with the Illinois modification
    (the sums of a Lambert-W objective are concave in u, so Newton from above lands below the root, and
    from below creeps up to it), or, while the bracket is open, an expansion.
    With ``singular`` (pages whose marginal value is flat or constant where they leave p_min: Σp falls
    like 1/log(e - λ) below their breakpoint e, or jumps there), the passes made once λ's bracket has
    closed also track the breakpoints next to λ among the pages evaluated at λ, and list those pages
    whose breakpoint lies inside the bracket; where they are few (64 to 1024, by n) and the bracket is
    narrower than TAKEOUT_WIDTH, they are taken out of F, and F_rest + Σ p_i = 0 is bisected with F_rest
    linear from the pass and each p_i exact (:func:`_takeout_root`; with them the page whose breakpoint
    is next above the bracket, within its width; a root pressed against an end of the bracket is not
    taken). Else, when the steps are slow and the next breakpoint above λ's bracket is the only one in it,
    or lies just above it, that page alone is taken out in the same way.

    ``mu0`` (shape (n_groups,), or (0,) for none): a warm start, each host whose entry is finite and above
    ``lam0`` starting from its own point there instead of from λ0 (the first pass is then made here).

    With ``pre``, ``s_g``, ``ds_g`` already hold the first pass, every group at ``lam0`` and the fixed
    ones at their lower bounds (:func:`host_bounds_at`); with ``singular`` it is made again here, since
    it must also find the breakpoints next to λ.

    With ``window`` > 0 (Poisson freshness only: each page's rate is affine in u between its bounds),
    once the window λ needs fits in WINDOW_MAX, a pass also lists the pages that may leave or reach a bound
    within each group's window (:func:`window_pass`, :func:`_window_table`); while every group's point
    stays inside its window, the next passes run over the listed pages only, with the rest of each group
    exactly affine in u. A few hosts that leave their windows while λ stays inside its own get all
    their pages listed (:func:`_list_groups`); otherwise the pages are listed again. The sums, and so
    the iterates, are those of full passes (to rounding). Once λ has settled, up to WAIT_PASSES more
    passes over the listed pages go to the binding hosts still open. ``counts`` (shape (5,), int) is
    incremented per pass: full passes, listing passes, passes over the listed pages, hosts' pages
    listed after they left their windows, and (``singular``) steps of λ from the take-out of the pages
    inside its bracket.

    Returns (status, λ, dλ, passes). :data:`JOINT_CONVERGED`: the budget and every binding host within
    ``tol``, or their Newton steps below a few ulps with the error below :data:`ULPS_STOP` of the budget
    for λ, :data:`HOST_ULPS_STOP` of the cap for a host; ``mu``, ``dmu`` hold each group's multiplier and
    its first-order correction (dλ for the groups at λ), ``bind`` whether its cap binds.
    :data:`JOINT_HOSTS_OPEN`: λ has converged but the hosts with ``done[g]`` False (all binding) have
    not; ``la_g``, ``s_la``, ``ds_la`` hold a point below each one's root (its sum above the cap there)
    for a per-host solver. :data:`JOINT_ON_JUMP`: as either, but λ's bracket has collapsed onto a jump of
    F: λ is its upper end, ``jump`` (shape (2,)) receives its lower end and the fraction θ of the jump
    taken by the pages at λ. :data:`JOINT_FAILED`: λ did not converge within ``max_pass`` passes, or a
    sum was not finite (the general solver takes over).
    """
    G = cap.shape[0]
    eps = 2.220446049250313e-16
    ue = np.zeros(G)  # each group's evaluation point in u
    u_lo = np.zeros(G)  # bracket (u_lo, u_hi) on each host's root
    u_hi = np.full(G, np.inf)
    f_end = np.zeros((3, G))  # regula falsi on each host's bracket (:func:`_intake`)
    A = np.zeros(G)
    C = np.zeros(G)
    kink = np.full(G, np.inf)  # where each group's model reaches its cap, (c_g + C_g) / A_g in u
    prev_g = np.full(G, np.inf)
    grow = np.full(G, 2.0)
    sure = np.ones(G, dtype=np.bool_)
    overshot = np.zeros(G, dtype=np.bool_)
    work = np.empty((3, G))
    slow = np.zeros(G, dtype=np.bool_)
    acc = np.empty((G, 2))
    imu = np.empty(G)
    brk = np.empty(6 if singular else 0)  # breakpoints next to λ among the groups evaluated there
    # the pages at λ whose breakpoint lies inside λ's bracket, while they are few (``singular``)
    found = np.empty(min(max(n // 512, 64), 1024) if singular else 0, dtype=np.int64)
    i_found = np.empty(found.shape[0] + 1, dtype=np.int64)
    lam_at = lam0  # the multiplier of the groups evaluated at λ, as stored in mu
    e_a = np.inf  # smallest breakpoint of the free groups above the lower end of λ's bracket
    i_a = -1  # its page
    e_bd = 0.0  # largest breakpoint of the free groups at or below its upper end
    e_bu = np.inf  # smallest above its upper end, and its page
    i_bu = -1
    gu_lo, gu_hi = 0.0, np.inf  # bracket on the root of F in u, and F there
    f_lo, f_hi = -np.inf, np.inf
    F_lo, F_hi = -np.inf, np.inf  # the same, never rescaled
    side = 0  # sign of F at the previous pass
    r_pos, r_neg = np.inf, np.inf  # |F| at the last pass with F > 0, F < 0
    width_1, width_2 = np.inf, np.inf  # width of λ's bracket (in u) one and two passes ago
    u = 1.0 / math.sqrt(lam0)
    for g in range(G):
        ue[g] = 0.0 if fixed[g] else u
        mu[g] = np.inf if fixed[g] else lam0
    for g in range(mu0.shape[0]):  # a warm start: the hosts that bound there start from their multipliers
        if not fixed[g] and cap[g] < np.inf and mu0[g] > lam0 and mu0[g] < np.inf:
            mu[g] = mu0[g]
            ue[g] = 1.0 / math.sqrt(mu0[g])
    pre = pre and mu0.shape[0] == 0
    pre = pre and not singular  # the caller's first pass carries no breakpoints: then make it here
    # ``window``: the pages listed by the last window_pass, and each group's sum over the others, affine in u
    listing = window > 0.0 and not singular
    cap_l = max(n // 8, 1024) if listing else 1  # at most this many pages listed
    k_b, w_b, a_b, b_b = _buffer(k, cap_l), _buffer(w, cap_l), _buffer(a, cap_l), _buffer(b, cap_l)
    lo_b, hi_b, hosts_b = _buffer(lo, cap_l), _buffer(hi, cap_l), np.empty(cap_l, dtype=hosts.dtype)
    m_l = np.int64(-1)  # pages listed (-1: no list)
    n_wait = 0  # passes made for the hosts after λ has settled
    cu = np.zeros(G)  # each group's point when they were listed
    uprev = ue.copy()  # each group's point at the previous pass
    tab = np.zeros((G, 2))  # 1/mu and window
    left = np.zeros(G, dtype=np.bool_)  # groups outside their windows
    keep = np.zeros(G, dtype=np.bool_)  # groups whose point has not moved since the last pass
    base_s = np.zeros(G)
    slope = np.zeros(G)
    for it in range(1, max_pass + 1):
        if not (pre and it == 1):  # with ``pre``, the caller has done the first pass (host_bounds_at)
            for g in range(G):
                imu[g] = 1.0 / mu[g]
            n_left = _window_left_t(tok, ue, cu, fixed, tab, left) if listing and m_l >= 0 else G
            if n_left and not left[G - 1] and n_left * 16 <= G:
                # a few hosts have left their windows (λ has not): all their pages are listed
                m_l = _list_groups_t(tok, n, k, w, a, b, lo, hi, hosts, left, m_l, k_b, w_b, a_b, b_b, lo_b, hi_b,
                                     hosts_b)
                if m_l >= 0:
                    counts[3] += 1
                    for g in range(G):
                        base_s[g] = 0.0 if left[g] else base_s[g]
                        slope[g] = 0.0 if left[g] else slope[g]
                        tab[g, 1] = np.inf if left[g] else tab[g, 1]
                    n_left = 0
                else:
                    listing = False
            if n_left == 0:
                # every group within its window: its listed pages, and the rest affine in u (exact)
                counts[2] += 1
                # (the start an int64, not the literal 0: numba compiled _views once more for a literal)
                group_pass(tok, m_l, mu, imu, *_views(np.int64(0), m_l, k_b, w_b, a_b, b_b, lo_b, hi_b), hosts_b[:m_l],
                           s_g, ds_g, acc, brk, lam_at, left[:0], found)
                _window_add_t(tok, s_g, ds_g, ue, cu, base_s, slope)
            elif listing and it > 1 and _window_table_t(tok, tab, mu, ue, uprev, fixed, window) <= WINDOW_MAX:
                # λ's last step was small: list the pages near a bound within each group's window
                counts[1] += 1
                m_l = _window_pass_t(tok, n, tab, k, w, a, b, lo, hi, hosts, s_g, ds_g, acc, k_b, w_b, a_b, b_b, lo_b,
                                  hi_b, hosts_b)
                if m_l < 0:
                    listing = False  # too many pages near a bound: full passes from here
                else:
                    for g in range(G):
                        cu[g] = ue[g]
                    _window_base_t(tok, m_l, imu, ue, *_views(np.int64(0), m_l, k_b, w_b, a_b, b_b, lo_b, hi_b),
                                   hosts_b[:m_l], s_g, ds_g, base_s, slope)
            else:
                m_l = np.int64(-1)
                counts[0] += 1
                for g in range(G):  # the hosts whose point has not moved since the last pass keep their sums
                    keep[g] = (ue[g] == uprev[g]) & ((ue[g] < u) | fixed[g]) & (it > 1)
                # with ``singular``, once λ's bracket has closed: the breakpoints next to λ, and the pages with
                # a breakpoint inside the bracket
                closed = gu_lo > 0.0 and gu_hi < np.inf
                if closed and singular:
                    brk[3] = 1.0 / (gu_hi * gu_hi)
                    brk[4] = 1.0 / (gu_lo * gu_lo)
                group_pass(tok, n, mu, imu, k, w, a, b, lo, hi, hosts, s_g, ds_g, acc, brk if closed else brk[:0],
                           lam_at, keep, found)
                if singular and not closed:
                    brk[0], brk[1], brk[2], brk[5] = np.inf, 0.0, -1.0, 0.0
        lam = 1.0 / (u * u)
        e_k = np.inf  # smallest breakpoint above λ among the groups evaluated at λ, its page, the largest below
        i_k = -1
        e_kd = 0.0
        n_in = 0
        if singular:
            e_k, e_kd, i_k, n_in = brk[0], brk[1], int(brk[2]), int(brk[5])
        R, R_low, D, n_bad, n_unsure, n_open = _intake(s_g, ds_g, cap, fixed, ue, mu, u, u_lo, u_hi, la_g, s_la,
                                                       ds_la, f_end, overshot, A, C, kink, bind, done, sure, tol)
        if n_bad:
            return JOINT_FAILED, lam, 0.0, it
        R -= budget  # F(λ) with each binding host at its cap; R_low <= F(λ) <= R, each unsure host at its sum
        R_low -= budget
        exact = n_unsure == 0  # counting c_h is exact when the host surely binds at λ: S_h(λ) >= S_h(λ') > c_h
        hosts_ok = n_open == 0
        waiting = n_wait > 0  # λ stays where it settled while the hosts go on
        # bracket on the root of F (F increases with u)
        if R < 0.0 and not waiting:
            if u > gu_lo:
                gu_lo, f_lo, F_lo, e_bd, e_bu, i_bu = u, R, R, e_kd, e_k, i_k
        elif R_low > 0.0 and not waiting:
            if u < gu_hi:
                gu_hi, f_hi, F_hi, e_a, i_a = u, R_low, R_low, e_k, i_k
        collapsed = not waiting and gu_lo > 0.0 and gu_hi < np.inf and gu_hi - gu_lo <= 8.0 * eps * gu_hi
        r = abs(R)
        small = r <= tol * budget or (D < 0.0 and r <= -D * 4.0 * eps * lam and r <= ULPS_STOP * budget)
        settled = exact and small
        if settled and not (collapsed or hosts_ok) and listing and m_l >= 0 and n_wait < WAIT_PASSES:
            # λ has settled; passes over the listed pages are cheap, so the open hosts go on here
            n_wait += 1
            _copy_into(uprev, ue)
            _next_points(u, fixed, cap, ue, mu, s_g, ds_g, A, kink, u_lo, u_hi, f_end, bind, sure, done,
                         overshot, prev_g, grow, slow)
            continue
        n_wait = 0
        if collapsed or settled:
            dlam = -R / D if D < 0.0 and not collapsed else 0.0
            for g in range(G):
                if fixed[g] or not done[g]:
                    dmu[g] = 0.0
                elif bind[g]:
                    dmu[g] = (cap[g] - s_g[g]) / ds_g[g] if ds_g[g] < 0.0 else 0.0
                else:
                    dmu[g] = dlam
            if collapsed:
                # the bracket has collapsed onto a jump of F (a page falling from its tail to p_min within
                # one ulp): the rates at λb and λa are mixed in the fraction θ that meets the budget
                jump[0] = 1.0 / (gu_hi * gu_hi)
                jump[1] = -F_lo / (F_hi - F_lo)
                return JOINT_ON_JUMP, 1.0 / (gu_lo * gu_lo), 0.0, it
            return (JOINT_CONVERGED if hosts_ok else JOINT_HOSTS_OPEN), lam, dlam, it
        now = 1 if R_low > 0.0 else (-1 if R < 0.0 else 0)
        # slow: |F| did not fall below a quarter of its value at the last pass on the same side (Newton
        # creeping up from one side, or cycling across a kink)
        creep = now != 0 and abs(R) > 0.25 * (r_pos if now > 0 else r_neg)
        if now > 0:
            r_pos = abs(R)
        elif now < 0:
            r_neg = abs(R)
        un = _model_root(A, C, kink, cap, fixed, s_g, budget, u, gu_lo, gu_hi, work)
        if creep and gu_lo > 0.0 and gu_hi < np.inf:
            # regula falsi on the bracket; Illinois: halve the value kept at the far end when the last
            # two passes fell on the same side
            if now == side:
                if now > 0:
                    f_lo *= 0.5
                else:
                    f_hi *= 0.5
            un = gu_lo - f_lo * (gu_hi - gu_lo) / (f_hi - f_lo)
        # the bracket has not halved in two slow passes: F is a step across it (e.g. every page leaving
        # p_min at one breakpoint, as under unweighted detection), where regula falsi and the steps
        # toward a breakpoint below land next to an end each pass; bisected instead (the probe of a jump
        # below may still take over)
        stuck = creep and gu_lo > 0.0 and gu_hi < np.inf and gu_hi - gu_lo > 0.5 * width_2
        width_2, width_1 = width_1, gu_hi - gu_lo
        side = now
        took = False
        if singular and gu_lo > 0.0 and gu_hi < np.inf and 0 < n_in <= found.shape[0] and \
                gu_hi - gu_lo <= TAKEOUT_WIDTH * gu_hi:
            # few pages at λ have their breakpoint inside λ's (narrow) bracket: F = F_rest + Σ those pages'
            # rates, F_rest linear from this pass (smooth there), the pages' rates exact
            l_a, l_b = 1.0 / (gu_hi * gu_hi), 1.0 / (gu_lo * gu_lo)
            m_in = 0
            for t in range(n_in):
                i = found[t]
                e = _low_marg_t(tok, _get(k, i), _get(lo, i), _get(w, i), _get(a, i), _get(b, i), _get(hi, i))
                if e > l_a and e < l_b:
                    i_found[m_in] = i
                    m_in += 1
            if m_in > 0:
                if i_bu >= 0 and e_bu >= l_b and e_bu - l_b < l_b - l_a:
                    i_found[m_in] = i_bu  # the next breakpoint above the bracket, within its width of it
                    m_in += 1
                l_s = _takeout_root_t(tok, i_found[:m_in], R, D, lam, l_a, l_b, k, w, a, b, lo, hi)
                # a root pressed against an end of the bracket: the model is off there (hosts reaching
                # their caps inside the bracket, or F_rest not linear across it); left to the other steps
                took = l_s > l_a * (1.0 + 8.0 * eps) and l_s < l_b * (1.0 - 8.0 * eps)
                un = 1.0 / math.sqrt(l_s) if took else un
                counts[4] += took
        if not took and singular and gu_lo > 0.0 and gu_hi < np.inf and e_a < np.inf:
            # mind the next breakpoint e above λa, where a page leaves p_min with a flat marginal (Σp
            # then falls like 1/log(e - λ)) or a constant one (Σp jumps): when it is the only one inside
            # λ's bracket [λa, λb], or the next one above it and λb is much nearer to it than λa, and
            # the steps are slow
            l_a, l_b = 1.0 / (gu_hi * gu_hi), 1.0 / (gu_lo * gu_lo)
            dist_a = e_a - l_a
            dist_b = max(e_a - l_b, 4.0 * eps * e_a)
            inside = e_a < l_b * (1.0 - 8.0 * eps)  # else λb sits on it (within rounding) or below it
            near = (inside and e_a == e_bd) or (not inside and dist_b < 0.25 * dist_a)
            if near and i_a >= 0 and (creep or not inside or not (1.0 / (un * un) > l_a and 1.0 / (un * un) < l_b)):
                # take that page out: F = F_rest + p_i with F_rest linear from this pass, p_i exact (one page
                # per bisection step: free), which also lands on a jump of p_i to within an ulp
                i_found[0] = i_a
                un = 1.0 / math.sqrt(_takeout_root_t(tok, i_found[:1], R, D, lam, l_a, l_b, k, w, a, b, lo, hi))
        if stuck and not took:
            un = math.sqrt(gu_lo * gu_hi)
        if singular and R < 0.0 and e_kd > 0.0 and lam - e_kd <= 16.0 * eps * lam:
            # λ sits a few ulps above a breakpoint e of a page evaluated at λ, with F < 0: the root may sit on
            # the jump of F at e (the page falls from its tail to p_min within an ulp), which a probe just
            # below e brackets at once (it collapses λ's bracket onto the jump); else the bracket moves to it
            u_p = 1.0 / math.sqrt(e_kd * (1.0 - 4.0 * eps))
            if u_p > gu_lo and u_p < gu_hi:
                un = u_p
        un = min(max(un, 0.125 * u), 8.0 * u)
        if not (un > gu_lo and un < gu_hi):
            un = math.sqrt(gu_lo * gu_hi) if gu_lo > 0.0 and gu_hi < np.inf else u
        if not (un > 0.0 and un < np.inf):
            return JOINT_FAILED, lam, 0.0, it
        u = un
        lam = 1.0 / (u * u)
        lam_at = lam
        _copy_into(uprev, ue)
        _next_points(u, fixed, cap, ue, mu, s_g, ds_g, A, kink, u_lo, u_hi, f_end, bind, sure, done, overshot,
                     prev_g, grow, slow)
    return JOINT_FAILED, 1.0 / (u * u), 0.0, max_pass


@njit(**_LOOP)
def finish_groups(tok, out, mu, dmu, k, w, a, b, lo, hi, hosts, sums):
    """Final rates, their KKT residual and per-group sums, in one pass.

    Each page takes p(mu[g]) + p'(mu[g]) dmu[g] of its group g, clipped to its bounds (written to
    ``out``); its KKT residual is measured against the corrected multiplier mu[g] + dmu[g] as in
    :func:`kkt_residual_hosts`; ``sums`` (shape (n_groups,)) receives Σ p per group. Returns the
    largest relative KKT residual.
    """
    n = out.shape[0]
    G = mu.shape[0]
    lb = np.empty(_CHUNK)
    db = np.empty(_CHUNK)
    rb = np.empty(_CHUNK)
    pb = np.empty(_CHUNK)
    qb = np.empty(_CHUNK)
    ib, fb = chunk_scratch()
    acc = np.zeros(G)
    worst = 0.0
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        hv = hosts[start:stop]
        _gather(lb, mu, hv)
        _gather(db, dmu, hv)
        kv, wv, av, bv, lov, hiv = _views(start, stop, k, w, a, b, lo, hi)
        ov = out[start:stop]
        if _lambert_kind(tok):  # the rates by chunks (:func:`_resp_chunk`); the other kinds in the loop below
            _resp_chunk(tok, stop - start, kv, lb, wv, av, bv, lov, hiv, pb, qb, ib, fb)
        for j in range(stop - start):
            lo_i, hi_i = _get(lov, j), _get(hiv, j)
            ki, wi, ai, bi = _get(kv, j), _get(wv, j), _get(av, j), _get(bv, j)
            p, dp = (pb[j], qb[j]) if _lambert_kind(tok) else _resp_t(tok, ki, lb[j], wi, ai, bi, lo_i, hi_i)
            p = min(max(p + dp * db[j], lo_i), hi_i)
            ov[j] = p
            L = lb[j] + db[j]
            mg = min(_marg_t(tok, ki, p, wi, ai, bi), 1e300)
            Lf = min(L, 1e300)
            d = mg - Lf
            at_lo = np.float64(p <= lo_i)
            at_hi = np.float64(p >= hi_i) * (1.0 - at_lo)
            free = np.float64((hi_i > lo_i) & (L < np.inf))
            r = free * (at_lo * max(d, 0.0) + at_hi * max(-d, 0.0) + (1.0 - at_lo - at_hi) * abs(d))
            rb[j] = r / Lf if Lf > 0.0 else r
        for j in range(stop - start):
            worst = max(worst, rb[j])
            h = hv[j]
            acc[h + (h < 0) * G] += ov[j]
    for g in range(G):
        sums[g] = acc[g]
    return worst
