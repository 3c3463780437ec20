"""Numba kernels of the change-rate estimators: one scalar step per estimator, and the batch loops.

Every estimator's update rule is written once, as an ``@njit`` scalar step, and run by one fused loop
over the observations (numba inlines the step). An estimator's ``learn_many`` and ``learn_one`` both
call that loop (``learn_one`` on a single observation), so the two methods cannot drift apart.

Equation numbers refer to Avrachenkov, Patil, Thoppe, "Online Algorithms for Estimating Change Rates of
Web Pages" (seed 001). Times are in days, rates in changes (or visits) per day.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numba import njit

#: Stepsizes (k + 1)^-eta and momentum weights zeta_k are tabulated for k below this many visits: a
#: table lookup instead of a libm pow per observation (pow dominates the SA/SAM loops otherwise).
TABLE_SIZE = 1 << 15


@lru_cache(maxsize=64)
def step_table(eta: float) -> np.ndarray:
    """(k + 1)^-eta for k = 0 .. TABLE_SIZE - 1 (read-only, shared by every estimator with this eta)."""
    k = np.arange(TABLE_SIZE, dtype=np.float64)
    t = (k + 1.0) ** -eta
    t.flags.writeable = False
    return t


@lru_cache(maxsize=64)
def zeta_table(eta: float, beta: float, omega: float) -> np.ndarray:
    """zeta_k of eq. (10) for k = 0 .. TABLE_SIZE - 1; zeta_0 = 0 (beta_{-1} is infinite)."""
    k = np.arange(TABLE_SIZE, dtype=np.float64)
    z = np.zeros(TABLE_SIZE)
    z[1:] = ((k[1:] + 1.0) ** -beta - omega * (k[1:] + 1.0) ** -eta) / k[1:] ** -beta
    z.flags.writeable = False
    return z


# --------------------------------------------------------------------------------------------------
# stepsize sequences
# --------------------------------------------------------------------------------------------------

#: codes of the LLN regulariser alpha_k (eq. (1)).
ALPHA_ONE, ALPHA_LOG, ALPHA_SQRT, ALPHA_POWER = 0, 1, 2, 3


@njit(cache=True, inline="always")
def alpha_k(k, kind, power):
    """alpha_k of eq. (1) for k >= 1: 1, log(k + 1), sqrt(k) or k**power."""
    if kind == 0:
        return 1.0
    if kind == 1:
        return math.log(k + 1.0)
    if kind == 2:
        return math.sqrt(k)
    return k**power


@njit(cache=True, inline="always")
def g_missed(u):
    """u / (e^u - 1) for u >= 0 (1 at u = 0): the share of a changed interval that eq. (15) credits."""
    if u < 1e-8:
        return 1.0 - 0.5 * u
    if u > 700.0:
        return 0.0
    return u / math.expm1(u)


# --------------------------------------------------------------------------------------------------
# scalar steps (the single source of each update rule)
# --------------------------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def naive_step(n, c, changed, p):
    """Naive estimator (Sec. 3.4): w_k = p * I_hat_k / k. Returns (n, c, delta)."""
    n += 1
    c += changed
    return n, c, p * c / n


@njit(cache=True, inline="always")
def naive_interval_step(n, c, sum_tau, changed, tau):
    """Naive estimator with observed intervals: I_hat_k / sum_j tau_j. Returns (n, c, sum_tau, delta)."""
    n += 1
    c += changed
    sum_tau += tau
    return n, c, sum_tau, c / sum_tau


@njit(cache=True, inline="always")
def lln_step(n, c, changed, p, kind, power):
    """LLN estimator, eq. (1): x_k = p * I_hat_k / (k + alpha_k - I_hat_k). Returns (n, c, delta)."""
    n += 1
    c += changed
    return n, c, p * c / (n + alpha_k(n, kind, power) - c)


@njit(cache=True, inline="always")
def lln_interval_step(delta, n, c, num, den0, sum_tau, changed, tau, kind, power):
    """Interval-aware LLN: ratio of running sums whose fixed point is the root of eq. (15).

    num += I * g(delta * tau) with g(u) = u / (e^u - 1) at the estimate in force before the visit,
    den0 += (1 - I) * tau, and delta = num / (T0 + alpha_k (T0 + mean(tau)) / (n0 + 1)) with T0 = den0
    and n0 = k - I_hat the unchanged visits (eq. (1)'s regulariser, in days).
    Returns (delta, n, c, num, den0, sum_tau).
    """
    n += 1
    sum_tau += tau
    if changed:
        c += 1
        num += g_missed(delta * tau)
    else:
        den0 += tau
    n0 = n - c
    # eq. (1)'s alpha_k pseudo-visits without change, each as long as the mean unchanged interval shrunk
    # towards the mean interval: (T0 + mean tau) / (n0 + 1).
    delta = num / (den0 + alpha_k(n, kind, power) * (den0 + sum_tau / n) / (n0 + 1.0))
    return delta, n, c, num, den0, sum_tau


@njit(cache=True, inline="always")
def _step(n, eta, etab):
    """eta_k = (k + 1)^-eta, from the table when k is in it."""
    if n < etab.shape[0]:
        return etab[n]
    return (n + 1.0) ** -eta


@njit(cache=True, inline="always")
def sa_step(y, n, changed, p, eta, etab):
    """SA estimator, eq. (2): y <- y + eta_k [I (y + p) - y], eta_k = (k + 1)^-eta. Returns (y, n)."""
    step = _step(n, eta, etab)
    c = np.float64(changed)  # branch-free: the flag is unpredictable
    y = y + step * (c * (y + p) - y)
    return y, n + 1


@njit(cache=True, inline="always")
def sa_interval_step(y, n, changed, tau, p, eta, etab):
    """Interval-aware SA: y <- max(0, y + eta_k (y + p) (I - (1 - e^{-y tau}))). Returns (y, n)."""
    step = _step(n, eta, etab)
    resid = np.float64(changed) - 1.0 + math.exp(-y * tau)
    y = max(y + step * (y + p) * resid, 0.0)
    return y, n + 1


@njit(cache=True, inline="always")
def sa_interval_forget_step(y, n, changed, tau, p, eta, etab, decay_per_day):
    """SA-interval with a step floor: gamma_k = max((k + 1)^-eta, 1 - e^{-decay_per_day * tau}).

    decay_per_day = ln 2 / half_life: the floor is the weight the newest visit gets in an exponential
    average whose weights halve every half_life days, so old observations are forgotten at that pace
    once the decreasing step has fallen below it. Returns (y, n).
    """
    step = max(_step(n, eta, etab), -math.expm1(-decay_per_day * tau))
    resid = np.float64(changed) - 1.0 + math.exp(-y * tau)
    y = max(y + step * (y + p) * resid, 0.0)
    return y, n + 1


@njit(cache=True, inline="always")
def _zeta(n, eta_k, beta, omega, ztab):
    """zeta_k of eq. (10); zeta_0 = 0 (beta_{-1} is infinite)."""
    if n < ztab.shape[0]:
        return ztab[n]
    if n == 0:
        return 0.0
    beta_k = (n + 1.0) ** -beta
    beta_km1 = float(n) ** -beta
    return (beta_k - omega * eta_k) / beta_km1


@njit(cache=True, inline="always")
def sam_step(z, z_prev, n, changed, p, eta, beta, omega, etab, ztab):
    """SAM estimator, eq. (3) with zeta_k of eq. (10), projected on [0, inf). Returns (z, z_prev, n)."""
    eta_k = _step(n, eta, etab)
    c = np.float64(changed)
    z_new = max(
        z + eta_k * (c * (z + p) - z) + _zeta(n, eta_k, beta, omega, ztab) * (z - z_prev), 0.0
    )
    return z_new, z, n + 1


@njit(cache=True, inline="always")
def sam_interval_step(z, z_prev, n, changed, tau, p, eta, beta, omega, etab, ztab):
    """Interval-aware SAM: the SA-interval increment plus the momentum term of eq. (3)/(10)."""
    eta_k = _step(n, eta, etab)
    resid = np.float64(changed) - 1.0 + math.exp(-z * tau)
    z_new = max(
        z + eta_k * (z + p) * resid + _zeta(n, eta_k, beta, omega, ztab) * (z - z_prev), 0.0
    )
    return z_new, z, n + 1


# --------------------------------------------------------------------------------------------------
# batch validation (one pass, before anything is mutated)
# --------------------------------------------------------------------------------------------------

ERR_NONE, ERR_PAGE, ERR_TAU, ERR_P, ERR_UNSORTED = 0, 1, 2, 3, 4


@njit(cache=True)
def _all_positive_finite(x):
    """True when every entry of the 2-d array is > 0 and finite (branch-free pass, vectorisable)."""
    ok = True
    for r in range(x.shape[0]):
        row_ok = True
        for i in range(x.shape[1]):
            v = x[r, i]
            row_ok &= (v > 0.0) & (v < np.inf)
        ok &= row_ok
    return ok


@njit(cache=True)
def check_batch(pages, tau, p, n_pages):
    """Return (code, row, index) of the first bad entry; code 4: pages not strictly increasing.

    ``pages`` has shape (m,); ``tau`` and ``p`` have shape (k, m) (k rounds of visits of those pages).
    A branch-free pass decides whether everything is valid; only invalid input is searched entry by entry.
    """
    m = pages.shape[0]
    in_range = True
    increasing = True
    prev = -1
    for i in range(m):
        pg = pages[i]
        in_range &= (pg >= 0) & (pg < n_pages)
        increasing &= pg > prev
        prev = pg
    if not in_range:
        for i in range(m):
            if pages[i] < 0 or pages[i] >= n_pages:
                return 1, 0, i
    for code, x in ((2, tau), (3, p)):
        if not _all_positive_finite(x):
            for r in range(x.shape[0]):
                for i in range(m):
                    v = x[r, i]
                    if not (v > 0.0 and v < np.inf):
                        return code, r, i
    if not increasing:
        return 4, 0, -1
    return 0, 0, -1


@njit(cache=True)
def find_duplicate(pages, mark):
    """Index of the first page listed twice (-1 if none); ``mark`` (n_pages,) is all False on entry and exit."""
    dup = -1
    m = pages.shape[0]
    stop = m
    for i in range(m):
        j = pages[i]
        if mark[j]:
            dup = i
            stop = i
            break
        mark[j] = True
    for i in range(stop):
        mark[pages[i]] = False
    return dup


# --------------------------------------------------------------------------------------------------
# batch loops (fused, no temporaries): ``pages`` (m,), observations (k, m) = k rounds, in row order
# --------------------------------------------------------------------------------------------------


@njit(cache=True)
def naive_batch(pages, changed, p, n_vis, n_chg, delta):
    for r in range(changed.shape[0]):
        for i in range(pages.shape[0]):
            j = pages[i]
            n_vis[j], n_chg[j], delta[j] = naive_step(
                n_vis[j], n_chg[j], 1 if changed[r, i] else 0, p[r, i]
            )


@njit(cache=True)
def naive_interval_batch(pages, changed, tau, n_vis, n_chg, sum_tau, delta):
    for r in range(changed.shape[0]):
        for i in range(pages.shape[0]):
            j = pages[i]
            n_vis[j], n_chg[j], sum_tau[j], delta[j] = naive_interval_step(
                n_vis[j], n_chg[j], sum_tau[j], 1 if changed[r, i] else 0, tau[r, i]
            )


@njit(cache=True)
def lln_batch(pages, changed, p, n_vis, n_chg, delta, kind, power):
    for r in range(changed.shape[0]):
        for i in range(pages.shape[0]):
            j = pages[i]
            n_vis[j], n_chg[j], delta[j] = lln_step(
                n_vis[j], n_chg[j], 1 if changed[r, i] else 0, p[r, i], kind, power
            )


@njit(cache=True)
def lln_interval_batch(pages, changed, tau, n_vis, n_chg, num, den0, sum_tau, delta, kind, power):
    for r in range(changed.shape[0]):
        for i in range(pages.shape[0]):
            j = pages[i]
            delta[j], n_vis[j], n_chg[j], num[j], den0[j], sum_tau[j] = lln_interval_step(
                delta[j],
                n_vis[j],
                n_chg[j],
                num[j],
                den0[j],
                sum_tau[j],
                changed[r, i],
                tau[r, i],
                kind,
                power,
            )


@njit(cache=True)
def sa_batch(pages, changed, p, n_vis, delta, eta, etab):
    for r in range(changed.shape[0]):
        for i in range(pages.shape[0]):
            j = pages[i]
            delta[j], n_vis[j] = sa_step(delta[j], n_vis[j], changed[r, i], p[r, i], eta, etab)


@njit(cache=True)
def sa_interval_batch(pages, changed, tau, p, n_vis, delta, eta, etab):
    for r in range(changed.shape[0]):
        for i in range(pages.shape[0]):
            j = pages[i]
            delta[j], n_vis[j] = sa_interval_step(
                delta[j], n_vis[j], changed[r, i], tau[r, i], p[r, i], eta, etab
            )


@njit(cache=True)
def sa_interval_forget_batch(pages, changed, tau, p, n_vis, delta, eta, etab, decay_per_day):
    for r in range(changed.shape[0]):
        for i in range(pages.shape[0]):
            j = pages[i]
            delta[j], n_vis[j] = sa_interval_forget_step(
                delta[j], n_vis[j], changed[r, i], tau[r, i], p[r, i], eta, etab, decay_per_day
            )


@njit(cache=True)
def sam_batch(pages, changed, p, n_vis, delta, prev, eta, beta, omega, etab, ztab):
    for r in range(changed.shape[0]):
        for i in range(pages.shape[0]):
            j = pages[i]
            delta[j], prev[j], n_vis[j] = sam_step(
                delta[j], prev[j], n_vis[j], changed[r, i], p[r, i], eta, beta, omega, etab, ztab
            )


@njit(cache=True)
def sam_interval_batch(pages, changed, tau, p, n_vis, delta, prev, eta, beta, omega, etab, ztab):
    for r in range(changed.shape[0]):
        for i in range(pages.shape[0]):
            j = pages[i]
            delta[j], prev[j], n_vis[j] = sam_interval_step(
                delta[j],
                prev[j],
                n_vis[j],
                changed[r, i],
                tau[r, i],
                p[r, i],
                eta,
                beta,
                omega,
                etab,
                ztab,
            )


# --------------------------------------------------------------------------------------------------
# root finding for MLE (eq. (15)) and moment matching (Sec. 3.4), on weighted intervals
# --------------------------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _mid(lo, hi):
    """Bisection point: geometric while the bracket spans more than a factor 4, arithmetic after."""
    if lo > 0.0 and hi > 4.0 * lo:
        return math.sqrt(lo) * math.sqrt(hi)
    return 0.5 * (lo + hi)


@njit(cache=True, error_model="numpy")
def _newton_step(x, f, df, lo, hi):
    """One safeguarded Newton step for the root of a decreasing f, kept inside the bracket (lo, hi).

    ``f``, ``df``: f and f' at ``x``. The bracket shrinks to the side of the root that the sign of f
    shows; a step that leaves it (or a non-negative f') is replaced by :func:`_mid`. Returns
    ``(x_next, lo, hi, done)``: done when f(x) = 0 (then ``x_next`` is x) or when the step or the bracket
    is within 1e-13 relative.
    """
    if f > 0.0:
        lo = x
    else:
        hi = x
    if f == 0.0:
        return x, lo, hi, True
    x_new = x - f / df if df < 0.0 else _mid(lo, hi)
    if not (x_new > lo and x_new < hi):
        x_new = _mid(lo, hi)
    return x_new, lo, hi, abs(x_new - x) <= 1e-13 * x or (hi - lo) <= 1e-13 * hi


@njit(cache=True, error_model="numpy")
def mle_root(tau_c, w_c, t0, tau_mean, x0):
    """Root of sum_b w_b tau_b / (e^{D tau_b} - 1) = t0 for D > 0 (eq. (15)).

    ``tau_c``/``w_c``: intervals of the changed visits and their multiplicities; ``t0``: total length of
    the unchanged intervals. Degenerate cases: no changed visit -> 0; no unchanged visit (t0 == 0) -> t0
    is replaced by ``tau_mean`` (one pseudo-visit of mean length that saw no change), which keeps the
    value finite. ``x0`` is a warm start (ignored when outside the bracket).
    """
    n_c = 0.0
    t1 = 0.0
    for b in range(tau_c.shape[0]):
        n_c += w_c[b]
        t1 += w_c[b] * tau_c[b]
    if n_c <= 0.0:
        return 0.0
    if t0 <= 0.0:
        t0 = tau_mean
    # u/(e^u-1) lies in [1 - u/2, 1], so the root lies in [n_c/(t0 + t1/2), n_c/t0].
    lo = n_c / (t0 + 0.5 * t1)
    hi = n_c / t0
    x = x0 if (x0 > lo and x0 < hi) else _mid(lo, hi)
    for _ in range(400):
        f = -t0
        df = 0.0
        for b in range(tau_c.shape[0]):
            w = w_c[b]
            if w == 0.0:
                continue
            t = tau_c[b]
            u = x * t
            if u > 700.0:
                continue
            em1 = math.expm1(u)
            if em1 <= 0.0:
                f += w / x
                df -= w / (x * x)
                continue
            h = t / em1
            f += w * h
            df -= w * h * h * (em1 + 1.0)
        x, lo, hi, done = _newton_step(x, f, df, lo, hi)
        if done:
            return x
    return x


@njit(cache=True, error_model="numpy")
def mm_root(tau, w, n0, x0):
    """Root of sum_b w_b e^{-D tau_b} = n0 for D >= 0 (moment matching, Sec. 3.4 of seed 001).

    ``tau``/``w``: all intervals and their multiplicities; ``n0``: number of unchanged visits.
    Degenerate cases: n0 == total (no change) -> 0; n0 == 0 (every visit changed) -> n0 = 1/2.
    """
    total = 0.0
    tsum = 0.0
    tmin = np.inf
    for b in range(tau.shape[0]):
        if w[b] > 0.0:
            total += w[b]
            tsum += w[b] * tau[b]
            tmin = min(tmin, tau[b])
    if total <= 0.0 or n0 >= total:
        return 0.0
    if n0 <= 0.0:
        n0 = 0.5
    # Jensen: sum w e^{-D tau} >= total e^{-D mean(tau)}, and <= total e^{-D min(tau)}.
    r = math.log(total / n0)
    lo = r / (tsum / total)
    hi = r / tmin
    if hi <= lo:
        return lo
    x = x0 if (x0 > lo and x0 < hi) else _mid(lo, hi)
    for _ in range(400):
        f = -n0
        df = 0.0
        for b in range(tau.shape[0]):
            if w[b] == 0.0:
                continue
            e = w[b] * math.exp(-x * tau[b])
            f += e
            df -= tau[b] * e
        x, lo, hi, done = _newton_step(x, f, df, lo, hi)
        if done:
            return x
    return x


@njit(cache=True)
def mle_exact(changed, tau):
    """Exact MLE of eq. (15) from a full history (O(k))."""
    k = tau.shape[0]
    n_c = 0
    for i in range(k):
        if changed[i]:
            n_c += 1
    tau_c = np.empty(n_c)
    w_c = np.ones(n_c)
    t0 = 0.0
    j = 0
    for i in range(k):
        if changed[i]:
            tau_c[j] = tau[i]
            j += 1
        else:
            t0 += tau[i]
    tau_mean = (t0 + tau_c.sum()) / k if k > 0 else 1.0
    return mle_root(tau_c, w_c, t0, tau_mean, -1.0)


@njit(cache=True)
def mm_exact(changed, tau):
    """Exact moment-matching estimate from a full history (O(k))."""
    k = tau.shape[0]
    n0 = 0.0
    for i in range(k):
        if not changed[i]:
            n0 += 1.0
    return mm_root(tau, np.ones(k), n0, -1.0)


@njit(cache=True)
def mle_exact_path(changed, tau):
    """Exact MLE after each of the k visits (solved afresh each time, warm-started): shape (k,)."""
    k = tau.shape[0]
    out = np.empty(k)
    tau_c = np.empty(k)
    w_c = np.ones(k)
    n_c = 0
    t0 = 0.0
    tsum = 0.0
    x = -1.0
    for i in range(k):
        tsum += tau[i]
        if changed[i]:
            tau_c[n_c] = tau[i]
            n_c += 1
        else:
            t0 += tau[i]
        x = mle_root(tau_c[:n_c], w_c[:n_c], t0, tsum / (i + 1), x)
        out[i] = x
    return out


@njit(cache=True)
def mm_exact_path(changed, tau):
    """Exact moment-matching estimate after each of the k visits: shape (k,)."""
    k = tau.shape[0]
    out = np.empty(k)
    w = np.ones(k)
    n0 = 0.0
    x = -1.0
    for i in range(k):
        if not changed[i]:
            n0 += 1.0
        x = mm_root(tau[: i + 1], w[: i + 1], n0, x)
        out[i] = x
    return out


@njit(cache=True)
def exact_batch_solve(log_pages, log_changed, log_tau, dirty_pages, delta, use_mm):
    """Re-solve the exact MLE (or MM) of every page in ``dirty_pages`` (distinct) from the visit log.

    One pass over the log gathers each listed page's visits in log order (a counting sort restricted to
    those pages), then each page's equation is solved on its whole history: O(log length + their visits).
    """
    m = dirty_pages.shape[0]
    # slot[j] = q for the q-th listed page; the entries of other pages are never initialised, so a
    # lookup is checked against dirty_pages (sparse-set membership)
    slot = np.empty(delta.shape[0], dtype=np.intp)
    for q in range(m):
        slot[dirty_pages[q]] = q
    starts = np.zeros(m + 1, dtype=np.intp)
    for i in range(log_pages.shape[0]):
        q = slot[log_pages[i]]
        if 0 <= q < m and dirty_pages[q] == log_pages[i]:
            starts[q + 1] += 1
    for q in range(m):
        starts[q + 1] += starts[q]
    fill = starts[:m].copy()
    ch = np.empty(starts[m], dtype=np.bool_)
    ta = np.empty(starts[m])
    for i in range(log_pages.shape[0]):
        q = slot[log_pages[i]]
        if 0 <= q < m and dirty_pages[q] == log_pages[i]:
            ch[fill[q]] = log_changed[i]
            ta[fill[q]] = log_tau[i]
            fill[q] += 1
    for q in range(m):
        a = starts[q]
        b = starts[q + 1]
        if use_mm:
            delta[dirty_pages[q]] = mm_exact(ch[a:b], ta[a:b])
        else:
            delta[dirty_pages[q]] = mle_exact(ch[a:b], ta[a:b])


# --------------------------------------------------------------------------------------------------
# binned sufficient statistics (online MLE / MM, O(n_bins) per update)
# --------------------------------------------------------------------------------------------------
# Per page, ``n_bins`` slots; slot s holds key_s = log(tau) centre and, in ``st[s, 0:6]``:
# counts of changed/unchanged visits, sums of their intervals (days), sums of squared intervals.
# A slot's intervals are represented by two points that match their first two moments, so a slot is
# exact for equal intervals and second-order accurate otherwise.


@njit(cache=True, inline="always")
def bins_insert(key, st, changed, tau, log_width):
    """Add one visit to a page's slots (key (n_bins,), st (n_bins, 6)); merge the two closest when full."""
    nb = key.shape[0]
    lt = math.log(tau)
    free = -1
    best = -1
    for s in range(nb):
        if st[s, 0] + st[s, 1] == 0.0:
            if free < 0:
                free = s
            continue
        if abs(key[s] - lt) <= 0.5 * log_width:
            best = s
            break
    if best < 0:
        if free >= 0:
            best = free
            key[best] = lt
        else:
            ba = 0
            bb = 1
            gap = np.inf
            for s in range(nb):
                for r in range(s + 1, nb):
                    d = abs(key[s] - key[r])
                    if d < gap:
                        gap = d
                        ba = s
                        bb = r
            wa = st[ba, 0] + st[ba, 1]
            wb = st[bb, 0] + st[bb, 1]
            key[ba] = (wa * key[ba] + wb * key[bb]) / (wa + wb)
            for q in range(6):
                st[ba, q] += st[bb, q]
                st[bb, q] = 0.0
            best = bb
            key[bb] = lt
    o = 0 if changed else 1
    st[best, o] += 1.0
    st[best, 2 + o] += tau
    st[best, 4 + o] += tau * tau


@njit(cache=True, inline="always")
def _two_points(n, s1, s2, out_t, out_w, m):
    """Append a two-point representation of n intervals with sum s1 and sum of squares s2."""
    mean = s1 / n
    var = s2 / n - mean * mean
    if not (
        var > 1e-12 * mean * mean and var < np.inf
    ):  # equal intervals, or overflow of the squares
        out_t[m] = mean
        out_w[m] = n
        return m + 1
    sd = math.sqrt(var)
    a = mean - sd
    a = max(a, 0.1 * mean)
    b = mean + var / (mean - a)
    wb = n * (mean - a) / (b - a)
    out_t[m] = a
    out_w[m] = n - wb
    out_t[m + 1] = b
    out_w[m + 1] = wb
    return m + 2


@njit(cache=True, inline="always")
def bins_solve(st, x0, use_mm, scratch_t, scratch_w):
    """Solve eq. (15) (or the MM equation) on a page's slots; O(n_bins) per Newton step."""
    nb = st.shape[0]
    m = 0
    if use_mm:
        n0 = 0.0
        for s in range(nb):
            n0 += st[s, 1]
            if st[s, 0] > 0.0:
                m = _two_points(st[s, 0], st[s, 2], st[s, 4], scratch_t, scratch_w, m)
            if st[s, 1] > 0.0:
                m = _two_points(st[s, 1], st[s, 3], st[s, 5], scratch_t, scratch_w, m)
        if n0 > 0.0 and n0 < 0.5:
            # decayed weights (forgetting): the 1/2 pseudo-visit of mm_root also applies to a fraction of
            # an unchanged visit; for integer counts this never fires, so n0 = 0 -> 1/2 stays continuous
            n0 = 0.5
        return mm_root(scratch_t[:m], scratch_w[:m], n0, x0)
    t0 = 0.0
    n = 0.0
    n0 = 0.0
    ts = 0.0
    for s in range(nb):
        t0 += st[s, 3]
        n0 += st[s, 1]
        n += st[s, 0] + st[s, 1]
        ts += st[s, 2] + st[s, 3]
        if st[s, 0] > 0.0:
            m = _two_points(st[s, 0], st[s, 2], st[s, 4], scratch_t, scratch_w, m)
    if n0 > 0.0 and n0 < 1.0:
        # decayed weights (forgetting): top the unchanged evidence up to one visit of mean length, the
        # pseudo-visit mle_root adds when there is none; integer counts never get here, and n0 -> 0
        # meets mle_root's own rule continuously
        t0 += (1.0 - n0) * (ts / n)
    return mle_root(scratch_t[:m], scratch_w[:m], t0, ts / n, x0)


@njit(cache=True)
def binned_batch(pages, changed, tau, n_vis, key, st, log_width):
    """Add k rounds of visits to the slots of ``pages``; O(n_bins) per visit (the solve is separate)."""
    for r in range(changed.shape[0]):
        for i in range(pages.shape[0]):
            j = pages[i]
            bins_insert(key[j], st[j], changed[r, i], tau[r, i], log_width)
            n_vis[j] += 1


@njit(cache=True)
def binned_solve(dirty_pages, st, n_vis, delta, use_mm):
    """Re-solve eq. (15) (or MM) on the slots of each page in ``dirty_pages``, warm-started."""
    nb = st.shape[1]
    scratch_t = np.empty(4 * nb)
    scratch_w = np.empty(4 * nb)
    for q in range(dirty_pages.shape[0]):
        j = dirty_pages[q]
        if n_vis[j] == 0:
            continue
        delta[j] = bins_solve(st[j], delta[j], use_mm, scratch_t, scratch_w)


# --------------------------------------------------------------------------------------------------
# exponential forgetting of the binned statistics (tracking a slowly varying Δ)
# --------------------------------------------------------------------------------------------------

#: A slot whose decayed weight falls below this many visits is emptied (and can take a new interval).
FORGET_FLOOR = 1e-9


@njit(cache=True, inline="always")
def bins_decay(st, factor):
    """Multiply a page's slot statistics (n_bins, 6) by ``factor``; empty slots lighter than FORGET_FLOOR."""
    for s in range(st.shape[0]):
        w = (st[s, 0] + st[s, 1]) * factor
        if w < FORGET_FLOOR:
            for q in range(6):
                st[s, q] = 0.0
        else:
            for q in range(6):
                st[s, q] *= factor


@njit(cache=True)
def binned_batch_forget(pages, changed, tau, n_vis, n_eff, key, st, log_width, decay_per_day):
    """As ``binned_batch``, but first decay the page's statistics by e^{-decay_per_day * tau}.

    ``decay_per_day`` = ln 2 / half_life. tau is the time since the page's previous visit, which is its
    previous update, so every past visit j ends up weighted by 2^{-(t - t_j)/half_life}. ``n_eff`` (n_pages,)
    holds the decayed number of visits (the effective sample size).
    """
    for r in range(changed.shape[0]):
        for i in range(pages.shape[0]):
            j = pages[i]
            factor = math.exp(-decay_per_day * tau[r, i])
            bins_decay(st[j], factor)
            bins_insert(key[j], st[j], changed[r, i], tau[r, i], log_width)
            n_vis[j] += 1
            n_eff[j] = n_eff[j] * factor + 1.0
