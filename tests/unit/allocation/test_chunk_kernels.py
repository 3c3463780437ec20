"""The branch-free pieces of the Lambert-W passes: e^{-x} by table, φ's series, responses by chunks."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from numba import njit

from freshcrawl.allocation import _kernels as K


@njit(cache=False, error_model="numpy")
def _exp_neg_small_array(x):
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = K._exp_neg_small(x[i])
    return out


def _ulps(got, ref):
    return np.abs(got - ref) / np.spacing(np.abs(ref))


def test_exp_neg_small_is_within_one_ulp_of_the_math_library():
    rng = np.random.default_rng(3)
    grid = np.arange(0, 8 * 64) / 64.0  # the table's own points, where r = 0
    x = np.concatenate([grid, grid + 1e-17, rng.uniform(0.0, 8.0, 50_000), [0.0, 5e-324, 7.999999999999999]])
    ref = np.array([math.exp(-v) for v in x])
    assert _ulps(_exp_neg_small_array(x), ref).max() <= 1.0


def _phi_exact(x: float) -> float:
    """1 - (1 + x) e^{-x} for 0 <= x < 0.5 by its series in exact rational arithmetic."""
    q = Fraction(x)
    term, total = Fraction(1), Fraction(0)
    for k in range(1, 40):
        term = term * q / k  # x^k / k!
        if k >= 2:
            total += (-1) ** k * (k - 1) * term
    return float(total)


@pytest.mark.parametrize("x", [1e-300, 1e-8, 1e-3, 0.01, 0.1, 0.25, 0.3333, 0.49, 0.4999999])
def test_phi_series_is_correct_to_two_ulps_below_one_half(x):
    assert _ulps(np.float64(K.phi(x)), np.float64(_phi_exact(x))) <= 2.0


def test_phi_switches_to_the_closed_form_at_one_half():
    # the closed form to an ulp (the compiler may fuse its multiply-add); the series just below 0.5 agrees
    for x in (0.5, 0.75, 3.0, 30.0):
        ref = np.float64(1.0 - (1.0 + x) * math.exp(-x))
        assert _ulps(np.float64(K.phi(x)), ref) <= 1.0
    below = np.nextafter(0.5, 0.0)
    assert _ulps(np.float64(K.phi(below)), np.float64(_phi_exact(below))) <= 2.0
    assert np.isnan(K.phi(np.inf))  # 1 - inf * 0, as before: the callers test a / p = inf first


@njit(cache=False, error_model="numpy")
def _chunk_vs_scalar(tok, lam, w, a, lo, hi):
    """_resp_chunk over the pages in chunks of 256 (per-page λ; p_min, p_max per page or scalars), and _resp_t
    page by page."""
    n = lam.shape[0]
    p_c, d_c = np.empty(n), np.empty(n)
    p_s, d_s = np.empty(n), np.empty(n)
    ib, fb = K.chunk_scratch()
    pb, db = np.empty(K._CHUNK), np.empty(K._CHUNK)
    for start in range(0, n, K._CHUNK):
        stop = min(start + K._CHUNK, n)
        m = stop - start
        K._resp_chunk(tok, m, 0, lam[start:stop], w[start:stop], a[start:stop], 0.0, K._view(lo, start, stop),
                      K._view(hi, start, stop), pb, db, ib, fb)
        for j in range(m):
            p_c[start + j] = pb[j]
            d_c[start + j] = db[j]
    for i in range(n):
        p_s[i], d_s[i] = K._resp_t(tok, 0, lam[i], w[i], a[i], 0.0, K._get(lo, i), K._get(hi, i))
    return p_c, d_c, p_s, d_s


def _pages(kind, n, seed):
    """Pages of every kind the chunk's packing loop sorts: on the table, at p_min, on the general path."""
    rng = np.random.default_rng(seed)
    w = 0.1 + rng.pareto(1.5, n)
    a = rng.lognormal(0.0, 1.5, n)
    lo = np.where(rng.random(n) < 0.2, rng.uniform(0.0, 0.05, n), 0.0)
    hi = np.where(rng.random(n) < 0.2, rng.uniform(0.5, 5.0, n), np.inf)
    # λ such that y = λ a / w (periodic) or λ / w (detection) spreads over (0, 1.2)
    y = rng.uniform(0.0, 1.2, n)
    scale = a / w if kind == K.PERIODIC else 1.0 / w
    lam = y / scale
    special = rng.integers(0, 10, 64)
    at = rng.choice(n, 64, replace=False)
    for i, s in zip(at, special, strict=True):
        if s == 0:
            w[i] = 0.0  # no value
        elif s == 1:
            a[i] = 0.0  # never changes
        elif s == 2:
            a[i] = np.inf  # changes all the time
        elif s == 3:
            hi[i] = lo[i]  # pinned
        elif s == 4:
            lam[i] = 0.0  # y = 0
        elif s == 5:
            lam[i] = (1.0 - 10.0 ** -rng.uniform(2.5, 15)) / scale[i]  # 0.99 <= y < 1: the general path
        elif s == 6:
            lam[i] = np.nan  # a page of a group the pass skips
        elif s == 7:
            lam[i] = 1.0 / scale[i]  # y = 1 to rounding: at p_min or just off it
        elif s == 8:
            lam[i] = np.inf
        else:
            lam[i] = 0.99 / scale[i]  # at the table's end
    return lam, w, a, lo, hi


@pytest.mark.parametrize("kind", [K.PERIODIC, K.DETECTION])
@pytest.mark.parametrize("n", [1, 255, 256, 1000])
def test_resp_chunk_gives_each_page_its_scalar_response(kind, n):
    lam, w, a, lo, hi = _pages(kind, max(n, 64), seed=n)
    lam, w, a, lo, hi = lam[:n], w[:n], a[:n], lo[:n], hi[:n]
    p_c, d_c, p_s, d_s = _chunk_vs_scalar(K.TOKENS[kind], lam, w, a, lo, hi)
    # the same arithmetic page by page; where one compiled copy fuses a multiply-add and the other does
    # not, the Halley step's rounding moves the rate by a few ulps (seen: up to 1.2e-15 relative)
    np.testing.assert_allclose(p_c, p_s, rtol=1e-14, atol=0.0)
    np.testing.assert_allclose(d_c, d_s, rtol=1e-13, atol=0.0)
    # bounds and p_min are exact: the pages at p_min, at p_max and off both are the same pages
    np.testing.assert_array_equal(p_c == lo, p_s == lo)
    np.testing.assert_array_equal(p_c == hi, p_s == hi)
    if n == 1000:  # the instance reaches every branch of the packing loop
        with np.errstate(all="ignore"):
            y = lam * a / w if kind == K.PERIODIC else lam / w
            assert np.any((y > 0) & (y < K._Y_TAB) & (p_s > lo))  # the table
            assert np.any((y >= K._Y_TAB) & (y < 1) & (p_s > lo))  # the general path, off p_min
            assert np.any(y >= 1)  # at p_min
            assert np.any(p_s == hi)  # clipped at p_max


@pytest.mark.parametrize("kind", [K.PERIODIC, K.DETECTION])
@pytest.mark.parametrize("bounds", ["scalar p_min", "scalar p_max", "both scalar"])
def test_resp_chunk_with_scalar_bounds(kind, bounds):
    # p_min and p_max per page are packed with the pages on the table; a scalar one is not: both agree
    lam, w, a, lo, hi = _pages(kind, 1000, seed=11)
    lo = 0.01 if bounds != "scalar p_max" else lo
    hi = 2.0 if bounds != "scalar p_min" else hi
    p_c, d_c, p_s, d_s = _chunk_vs_scalar(K.TOKENS[kind], lam, w, a, lo, hi)
    np.testing.assert_allclose(p_c, p_s, rtol=1e-14, atol=0.0)
    np.testing.assert_allclose(d_c, d_s, rtol=1e-13, atol=0.0)
    np.testing.assert_array_equal(p_c == np.broadcast_to(hi, p_s.shape), p_s == hi)
    assert np.any(p_s == hi) and np.any(p_s == lo) and np.any((p_s > lo) & (p_s < hi))


def test_resp_chunk_of_other_kinds_is_the_scalar_loop():
    rng = np.random.default_rng(7)
    n = 300
    lam, w, a = rng.uniform(0.01, 2.0, n), rng.uniform(0.1, 3.0, n), rng.lognormal(0.0, 1.0, n)
    lo, hi = np.zeros(n), np.full(n, np.inf)
    for kind in (K.POISSON, K.HARMONIC):
        p_c, d_c, p_s, d_s = _chunk_vs_scalar(K.TOKENS[kind], lam, w, a, lo, hi)
        np.testing.assert_allclose(p_c, p_s, rtol=1e-15, atol=0.0)
        np.testing.assert_allclose(d_c, d_s, rtol=1e-15, atol=0.0)


def test_lambert_tail_table_agrees_with_the_halley_iterations():
    # above y = 0.99 (t = -log(1 - y) >= 4.6): the table in t and one Halley step against hinv's iterations
    y = np.concatenate([[K._Y_TAB, np.nextafter(1.0, 0.0)], 1.0 - np.logspace(-2, -16, 2_000)])
    y = y[(y >= K._Y_TAB) & (y < 1.0)]
    got = np.array([K.lambert_x(v)[0] for v in y])
    ref = np.array([K.hinv(-math.log1p(-v)) for v in y])
    assert _ulps(got, ref).max() <= 4.0
    assert -math.log1p(-np.nextafter(1.0, 0.0)) <= K._T_HI  # every y < 1 is on the table
