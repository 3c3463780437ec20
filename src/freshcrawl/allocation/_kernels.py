"""Compiled per-page kernels of the allocation solver.

Every kernel is one fused pass over the pages. Per-page inputs (``w``, ``a``, ``b``, ``lo``, ``hi``,
``kinds``) are arrays of length ``n`` or of length 1 (the same value for every page), so that scalar
bounds and unit weights cost no memory.

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
LINEAR          6     a p  (1 when a = inf)                    a = 1 / Δ
==============  ====  =======================================  ==============================

``_resp`` returns the page's optimal rate for a multiplier λ, ``clip(g(λ), lo, hi)`` with ``g`` the
inverse of ``w f'``, and its derivative with respect to λ (0 where clipped).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

POISSON, PERIODIC, HARMONIC, DETECTION, POLY, LOG, LINEAR = 0, 1, 2, 3, 4, 5, 6

_OPTS = dict(cache=True, error_model="numpy", nogil=True)


@njit(**_OPTS)
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


@njit(**_OPTS)
def hinv(t):
    """The x > 0 with x - log(1 + x) = t (t >= 0): x = -1 - W_{-1}(-exp(-1 - t))."""
    if t <= 0.0:
        return 0.0
    if t < 1.5:
        s = math.sqrt(2.0 * t)
        x = s * (1.0 + s * (1.0 / 3.0 + s * (1.0 / 36.0 + s * (-1.0 / 270.0 + s / 4320.0))))
    else:
        x = t + math.log1p(t + math.log1p(t))
    for _ in range(30):
        f = _h(x) - t
        d1 = x / (1.0 + x)
        d2 = 1.0 / ((1.0 + x) * (1.0 + x))
        step = f / d1
        denom = 1.0 - 0.5 * step * d2 / d1
        if denom > 0.5:
            step = step / denom
        xn = x - step
        if xn <= 0.0:
            xn = 0.5 * x
        if abs(xn - x) <= 1e-15 * xn:
            return xn
        x = xn
    return x


@njit(**_OPTS)
def phi(x):
    """1 - (1 + x) exp(-x), accurate for small x (x >= 0, may be inf)."""
    if x < 0.5:
        term = x  # x^k / k!, starting at k = 1
        s = 0.0
        sign = 1.0
        for k in range(2, 22):
            term = term * x / k
            s += sign * (k - 1) * term
            sign = -sign
        return s
    return 1.0 - (1.0 + x) * math.exp(-x)


@njit(**_OPTS)
def _at(arr, i):
    return arr[i] if arr.shape[0] > 1 else arr[0]


@njit(**_OPTS)
def is_active(kind, w, a, b):
    """Whether the page's marginal value w f'(p) is positive for some p."""
    if not w > 0.0:
        return False
    if kind == LOG:
        return True
    if kind == POLY:
        return a > 0.0 and b > 0.0
    return a > 0.0


@njit(**_OPTS)
def _resp(kind, lam, w, a, b, lo, hi):
    """Optimal rate clip(g(lam), lo, hi) and its derivative with respect to lam."""
    if lam == np.inf or hi <= lo:
        return lo, 0.0
    if not is_active(kind, w, a, b):
        return lo, 0.0
    if lam <= 0.0:
        return hi, 0.0
    g = 0.0
    dg = 0.0
    if kind == POISSON:
        s = math.sqrt(w * a / lam)
        g = s - a
        dg = -0.5 * s / lam
    elif kind == HARMONIC:
        q = w * a / lam
        g = 2.0 * q / (a + math.sqrt(a * a + 4.0 * q))
        dg = -g * (g + a) / (lam * (2.0 * g + a))
    elif kind == PERIODIC or kind == DETECTION:
        if kind == PERIODIC:
            y = lam * a / w
        else:
            y = lam / w
        if y >= 1.0:
            g = 0.0
        elif a == np.inf:
            g = np.inf
        else:
            t = -math.log1p(-y)
            x = hinv(t)
            g = a / x
            dg = -(g / x) * (y / lam) / (1.0 - y) * (1.0 + x) / x
    elif kind == POLY:
        g = (w * a * b / ((b + 1.0) * lam)) ** (1.0 / (b + 1.0))
        dg = -g / ((b + 1.0) * lam)
    elif kind == LOG:
        g = w / lam
        dg = -g / lam
    else:  # LINEAR
        g = np.inf if lam < w * a else 0.0
    if g <= lo:
        return lo, 0.0
    if g >= hi:
        return hi, 0.0
    return g, dg


@njit(**_OPTS)
def marginal(kind, p, w, a, b):
    """w f'(p), the marginal value of one more visit per day."""
    if not is_active(kind, w, a, b):
        return 0.0
    if kind == POISSON:
        return w * a / ((p + a) * (p + a))
    if kind == HARMONIC:
        if p <= 0.0:
            return np.inf
        return w * a / (p * (p + a))
    if kind == PERIODIC:
        if p <= 0.0:
            return w / a
        return w / a * phi(a / p)
    if kind == DETECTION:
        if p <= 0.0 or a == np.inf:
            return w
        return w * phi(a / p)
    if kind == POLY:
        if p <= 0.0:
            return np.inf
        return w * a * b / (b + 1.0) * p ** (-b - 1.0)
    if kind == LOG:
        if p <= 0.0:
            return np.inf
        return w / p
    return w * a


@njit(**_OPTS)
def value(kind, p, a, b):
    """f(p) of one page (unweighted)."""
    if kind == POISSON:
        if a <= 0.0:
            return 1.0
        return p / (p + a)
    if kind == PERIODIC:
        if a <= 0.0:
            return 1.0
        if p <= 0.0:
            return 0.0
        x = a / p
        return -math.expm1(-x) / x
    if kind == HARMONIC:
        if a <= 0.0:
            return 0.0
        if p <= 0.0:
            return -np.inf
        return -math.log1p(a / p)
    if kind == DETECTION:
        if p <= 0.0 or a <= 0.0:
            return 0.0
        if a == np.inf:
            return p
        return -p * math.expm1(-a / p)
    if kind == POLY:
        if a <= 0.0:
            return 0.0
        if p <= 0.0:
            return -np.inf if b > 0.0 else -a / (b + 1.0)
        return -a * p ** (-b) / (b + 1.0)
    if kind == LOG:
        if a <= 0.0:
            return 0.0
        if p <= 0.0:
            return -np.inf
        return math.log(p / a)
    if a == np.inf:
        return 1.0
    return a * p


@njit(**_OPTS)
def page_lambda(i, lam, hosts, lamhat):
    """Multiplier in force for page i: max(lam, lamhat[host]) for a page on a capped host."""
    if hosts.shape[0] > 0:
        h = hosts[i]
        if h >= 0 and lamhat[h] > lam:
            return lamhat[h]
    return lam


@njit(**_OPTS)
def global_sum(n, lam, kinds, w, a, b, lo, hi, hosts, lamhat):
    """Sum and derivative of the rates of the pages whose host cap does not bind at lam.

    Pages on hosts with lamhat[h] > lam are skipped (their host contributes its cap).
    """
    use_hosts = hosts.shape[0] > 0
    s = 0.0
    c = 0.0
    ds = 0.0
    for i in range(n):
        if use_hosts:
            h = hosts[i]
            if h >= 0 and lamhat[h] > lam:
                continue
        p, dp = _resp(_at(kinds, i), lam, _at(w, i), _at(a, i), _at(b, i), _at(lo, i), _at(hi, i))
        y = p - c
        t = s + y
        c = (t - s) - y
        s = t
        ds += dp
    return s, ds


@njit(**_OPTS)
def group_sums(lam_g, active_g, kinds, w, a, b, lo, hi, hosts):
    """Per-host sums and derivatives of the rates at each host's own multiplier lam_g[h]."""
    n_groups = lam_g.shape[0]
    s = np.zeros(n_groups)
    ds = np.zeros(n_groups)
    for i in range(hosts.shape[0]):
        h = hosts[i]
        if h < 0 or not active_g[h]:
            continue
        p, dp = _resp(_at(kinds, i), lam_g[h], _at(w, i), _at(a, i), _at(b, i), _at(lo, i), _at(hi, i))
        s[h] += p
        ds[h] += dp
    return s, ds


@njit(**_OPTS)
def host_bounds(n, n_hosts, kinds, w, a, b, lo, hi, hosts):
    """Per host: sum of lower bounds, sum at lam -> 0+ (active pages at hi), sum of upper bounds.

    The last entry (index n_hosts) collects the pages without a host.
    """
    low = np.zeros(n_hosts + 1)
    s0 = np.zeros(n_hosts + 1)
    up = np.zeros(n_hosts + 1)
    for i in range(n):
        h = n_hosts
        if hosts.shape[0] > 0 and hosts[i] >= 0:
            h = hosts[i]
        l = _at(lo, i)
        u = _at(hi, i)
        low[h] += l
        up[h] += u
        if is_active(_at(kinds, i), _at(w, i), _at(a, i), _at(b, i)):
            s0[h] += u
        else:
            s0[h] += l
    return low, s0, up


@njit(**_OPTS)
def mean_marginal(n, p_g, kinds, w, a, b, lo, hi, hosts, n_groups):
    """Geometric mean, per group, of the positive finite marginals at rate clip(p_g[group], lo, hi).

    Group = host (or n_groups - 1 for pages without a host, or when no hosts are given).
    """
    acc = np.zeros(n_groups)
    cnt = np.zeros(n_groups)
    for i in range(n):
        g = n_groups - 1
        if hosts.shape[0] > 0 and hosts[i] >= 0:
            g = hosts[i]
        p = min(max(p_g[g], _at(lo, i)), _at(hi, i))
        m = marginal(_at(kinds, i), p, _at(w, i), _at(a, i), _at(b, i))
        if m > 0.0 and m < np.inf:
            acc[g] += math.log(m)
            cnt[g] += 1.0
    out = np.ones(n_groups)
    for g in range(n_groups):
        if cnt[g] > 0:
            out[g] = math.exp(acc[g] / cnt[g])
    return out


@njit(**_OPTS)
def final_rates(out, lam, lam2, theta, dlam, kinds, w, a, b, lo, hi, hosts, lamhat, h_lam2, h_theta, h_dlam):
    """Write the rates: p(L) + dp(L) * dL, or the interpolation between p(L) and p(L2) at a jump."""
    use_hosts = hosts.shape[0] > 0
    for i in range(out.shape[0]):
        L, L2, th, dl = lam, lam2, theta, dlam
        if use_hosts:
            h = hosts[i]
            if h >= 0 and lamhat[h] > lam:
                L, L2, th, dl = lamhat[h], h_lam2[h], h_theta[h], h_dlam[h]
        k, wi, ai, bi, l, u = _at(kinds, i), _at(w, i), _at(a, i), _at(b, i), _at(lo, i), _at(hi, i)
        p, dp = _resp(k, L, wi, ai, bi, l, u)
        if th != 0.0:
            p2, _ = _resp(k, L2, wi, ai, bi, l, u)
            v = p + th * (p2 - p)
        elif dp != 0.0 and dl != 0.0:
            v = p + dp * dl
        else:
            v = p
        out[i] = min(max(v, l), u)


@njit(**_OPTS)
def kkt_residual(p, lam, kinds, w, a, b, lo, hi, hosts, lamhat):
    """Largest relative violation of the KKT conditions w f'(p_i) = λ_i (or the bound's sign)."""
    worst = 0.0
    for i in range(p.shape[0]):
        L = page_lambda(i, lam, hosts, lamhat)
        l, u = _at(lo, i), _at(hi, i)
        if u <= l or L == np.inf:
            continue
        m = marginal(_at(kinds, i), p[i], _at(w, i), _at(a, i), _at(b, i))
        if p[i] <= l:
            r = max(0.0, m - L)
        elif p[i] >= u:
            r = max(0.0, L - m)
        else:
            r = abs(m - L)
        if r > 0.0:
            if L > 0.0:
                r = r / L
            if r > worst:
                worst = r
    return worst


@njit(**_OPTS)
def objective_sum(p, kinds, w, a, b, offset):
    """Σ w_i (f_i(p_i) + offset); pages with w_i = 0 contribute 0."""
    s = 0.0
    c = 0.0
    for i in range(p.shape[0]):
        wi = _at(w, i)
        if wi == 0.0:
            continue
        v = wi * (value(_at(kinds, i), p[i], _at(a, i), _at(b, i)) + offset)
        if v == -np.inf:
            return -np.inf
        y = v - c
        t = s + y
        c = (t - s) - y
        s = t
    return s


@njit(**_OPTS)
def values_array(kind, p, a, b):
    """f(p_i) for every page (unweighted), shape (n,)."""
    out = np.empty(p.shape[0])
    for i in range(p.shape[0]):
        out[i] = value(kind, p[i], _at(a, i), _at(b, i))
    return out


@njit(**_OPTS)
def marginals_array(kind, p, a, b):
    """f'(p_i) for every page (unweighted), shape (n,)."""
    out = np.empty(p.shape[0])
    for i in range(p.shape[0]):
        out[i] = marginal(kind, p[i], 1.0, _at(a, i), _at(b, i))
    return out


@njit(**_OPTS)
def responses_array(kind, lam, a, b):
    """g(λ_i), the p >= 0 with f'(p) = λ_i (0 when f'(0) <= λ_i), shape (n,)."""
    n = max(lam.shape[0], a.shape[0], b.shape[0])
    out = np.empty(n)
    for i in range(n):
        out[i], _ = _resp(kind, _at(lam, i), 1.0, _at(a, i), _at(b, i), 0.0, np.inf)
    return out
