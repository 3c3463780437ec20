"""The update rules of the change-rate estimators, vectorised over pages with numpy.

Every batch function takes ``pages`` (m,), distinct, and observations of shape (k, m): k rounds of visits
of those pages, applied row by row (the same as k calls). A row updates all its pages at once; the only
loops are over the rows and, in the root-finders, over Newton iterations (on the pages not yet
converged). An estimator's ``learn_many`` and ``learn_one`` both call these functions (``learn_one`` on a
single observation), so the two methods cannot drift apart.

Equation numbers refer to Avrachenkov, Patil, Thoppe, "Online Algorithms for Estimating Change Rates of
Web Pages" (seed 001). Times are in days, rates in changes (or visits) per day.
"""

from __future__ import annotations

from functools import lru_cache, wraps

import numpy as np


def _quiet(fn):
    """Run ``fn`` without floating-point warnings: an extreme observation (tau near the largest float)
    gives inf or 0 in an intermediate, and the results stay finite where the rules say so."""

    @wraps(fn)
    def quiet(*args, **kwargs):
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)

    return quiet


# --------------------------------------------------------------------------------------------------
# stepsize sequences
# --------------------------------------------------------------------------------------------------

#: Stepsizes (k + 1)^-eta and momentum weights zeta_k are tabulated for k below this many visits.
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


def _step(n: np.ndarray, eta: float) -> np.ndarray:
    """eta_k = (k + 1)^-eta for visit counts ``n`` (int, any shape), from the table when k is in it."""
    step = step_table(eta)[np.minimum(n, TABLE_SIZE - 1)]
    big = n >= TABLE_SIZE
    if big.any():
        step[big] = (n[big] + 1.0) ** -eta
    return step


def _zeta(n: np.ndarray, eta: float, beta: float, omega: float) -> np.ndarray:
    """zeta_k of eq. (10) for visit counts ``n``; zeta_0 = 0."""
    z = zeta_table(eta, beta, omega)[np.minimum(n, TABLE_SIZE - 1)]
    big = n >= TABLE_SIZE
    if big.any():
        nb = n[big].astype(np.float64)
        z[big] = ((nb + 1.0) ** -beta - omega * (nb + 1.0) ** -eta) / nb**-beta
    return z


#: codes of the LLN regulariser alpha_k (eq. (1)).
ALPHA_ONE, ALPHA_LOG, ALPHA_SQRT, ALPHA_POWER = 0, 1, 2, 3


def alpha_k(k: np.ndarray, kind: int, power: float) -> np.ndarray | float:
    """alpha_k of eq. (1) for k >= 1 (int array): 1, log(k + 1), sqrt(k) or k**power."""
    if kind == ALPHA_ONE:
        return 1.0
    if kind == ALPHA_LOG:
        return np.log(k + 1.0)
    if kind == ALPHA_SQRT:
        return np.sqrt(k)
    return k.astype(np.float64) ** power


def g_missed(u: np.ndarray) -> np.ndarray:
    """u / (e^u - 1) for u >= 0 (1 at u = 0): the share of a changed interval that eq. (15) credits."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        g = u / np.expm1(u)
    g = np.where(u < 1e-8, 1.0 - 0.5 * u, g)
    return np.where(u > 700.0, 0.0, g)


# --------------------------------------------------------------------------------------------------
# batch validation (one pass, before anything is mutated)
# --------------------------------------------------------------------------------------------------

ERR_NONE, ERR_PAGE, ERR_TAU, ERR_P, ERR_UNSORTED = 0, 1, 2, 3, 4


def check_batch(pages, tau, p, n_pages):
    """Return (code, row, index) of the first bad entry; code 4: pages not strictly increasing.

    ``pages`` has shape (m,); ``tau`` and ``p`` have shape (k, m) (k rounds of visits of those pages).
    """
    if pages.size and (pages.min() < 0 or pages.max() >= n_pages):
        return ERR_PAGE, 0, int(np.flatnonzero((pages < 0) | (pages >= n_pages))[0])
    for code, x in ((ERR_TAU, tau), (ERR_P, p)):
        bad = ~((x > 0.0) & (x < np.inf))
        if bad.any():
            row, i = np.unravel_index(int(np.argmax(bad)), x.shape)
            return code, int(row), int(i)
    if pages.size > 1 and not (pages[1:] > pages[:-1]).all():
        return ERR_UNSORTED, 0, -1
    return ERR_NONE, 0, -1


def find_duplicate(pages, n_pages):
    """Index of the first entry of ``pages`` (m,) whose page is listed before it; -1 if none."""
    mark = np.zeros(n_pages, dtype=np.bool_)
    mark[pages] = True
    if np.count_nonzero(mark) == pages.shape[0]:
        return -1
    order = np.argsort(pages, kind="stable")
    s = pages[order]
    again = order[1:][s[1:] == s[:-1]]
    return int(again.min()) if again.size else -1


# --------------------------------------------------------------------------------------------------
# the running-sum rules (naive, LLN): ``pages`` (m,), observations (k, m)
# --------------------------------------------------------------------------------------------------


def _count(pages, changed, n_vis, n_chg):
    """Add the k rows of visits to the visit and change counts of ``pages``; return both, shape (m,)."""
    n = n_vis[pages] + changed.shape[0]
    c = n_chg[pages] + np.count_nonzero(changed, axis=0)
    n_vis[pages], n_chg[pages] = n, c
    return n, c


@_quiet
def naive_batch(pages, changed, p, n_vis, n_chg, delta):
    """Naive estimator (Sec. 3.4): w_k = p * I_hat_k / k, p of the latest visit."""
    n, c = _count(pages, changed, n_vis, n_chg)
    delta[pages] = p[-1] * c / n


@_quiet
def lln_batch(pages, changed, p, n_vis, n_chg, delta, kind, power):
    """LLN estimator, eq. (1): x_k = p * I_hat_k / (k + alpha_k - I_hat_k), p of the latest visit."""
    n, c = _count(pages, changed, n_vis, n_chg)
    delta[pages] = p[-1] * c / (n + alpha_k(n, kind, power) - c)


@_quiet
def naive_interval_batch(pages, changed, tau, n_vis, n_chg, sum_tau, delta):
    """Naive estimator with observed intervals: I_hat_k / sum_j tau_j."""
    _, c = _count(pages, changed, n_vis, n_chg)
    s = sum_tau[pages]
    for r in range(tau.shape[0]):  # row by row: the sums keep the order of single updates
        s += tau[r]
    sum_tau[pages] = s
    delta[pages] = c / s


@_quiet
def lln_interval_batch(pages, changed, tau, n_vis, n_chg, num, den0, sum_tau, delta, kind, power):
    """Interval-aware LLN: ratio of running sums whose fixed point is the root of eq. (15).

    num += I * g(delta * tau) with g(u) = u / (e^u - 1) at the estimate in force before the visit,
    den0 += (1 - I) * tau, and delta = num / (T0 + alpha_k (T0 + mean(tau)) / (n0 + 1)) with T0 = den0
    and n0 = k - I_hat the unchanged visits (eq. (1)'s regulariser, in days).
    """
    x, n, c = delta[pages], n_vis[pages], n_chg[pages]
    nu, d0, s = num[pages], den0[pages], sum_tau[pages]
    for r in range(changed.shape[0]):
        ch, t = changed[r], tau[r]
        n += 1
        s += t
        c += ch
        nu += np.where(ch, g_missed(x * t), 0.0)
        d0 += np.where(ch, 0.0, t)
        # eq. (1)'s alpha_k pseudo-visits without change, each as long as the mean unchanged interval
        # shrunk towards the mean interval: (T0 + mean tau) / (n0 + 1).
        x = nu / (d0 + alpha_k(n, kind, power) * (d0 + s / n) / (n - c + 1.0))
    delta[pages], n_vis[pages], n_chg[pages] = x, n, c
    num[pages], den0[pages], sum_tau[pages] = nu, d0, s


# --------------------------------------------------------------------------------------------------
# the stochastic-approximation rules (SA, SAM and their interval forms)
# --------------------------------------------------------------------------------------------------


@_quiet
def sa_batch(
    pages,
    changed,
    tau,
    p,
    n_vis,
    delta,
    eta,
    *,
    interval=False,
    decay_per_day=None,
    prev=None,
    momentum=None,
):
    """SA of eq. (2), or SAM of eq. (3)/(10) when ``prev`` (z_{k-1}) and ``momentum`` (beta, omega) are
    given; projected on [0, inf).

    The increment is eta_k [I (y + p) - y] (eq. (2)), or with ``interval`` eta_k (y + p)(I - (1 -
    e^{-y tau})), the residual of the change probability of the interval observed. ``decay_per_day``
    (= ln 2 / half_life) floors the step at 1 - e^{-decay_per_day * tau}, the weight of the newest visit
    in an exponential average whose weights halve every half_life days. SAM adds zeta_k (z_k - z_{k-1}).
    """
    y, n = delta[pages], n_vis[pages]
    k = changed.shape[0]
    visit = n + np.arange(k)[:, None]  # (k, m): k of eq. (2) at each row
    steps = _step(visit, eta)
    if decay_per_day is not None:
        np.maximum(steps, -np.expm1(-decay_per_day * tau), out=steps)
    zetas = None if prev is None else _zeta(visit, eta, *momentum)
    z_prev = None if prev is None else prev[pages]
    c = changed.astype(np.float64)
    if interval:
        c -= 1.0
        neg_tau = -tau
    work, y_new = np.empty_like(y), np.empty_like(y)
    for r in range(k):
        if interval:  # y + eta_k (y + p) (I - 1 + e^{-y tau})
            np.multiply(y, neg_tau[r], out=work)
            np.exp(work, out=work)
            work += c[r]
            np.add(y, p[r], out=y_new)
            y_new *= steps[r]
            y_new *= work
        else:  # y + eta_k (I (y + p) - y)
            np.add(y, p[r], out=y_new)
            y_new *= c[r]
            y_new -= y
            y_new *= steps[r]
        y_new += y
        if zetas is not None:
            np.subtract(y, z_prev, out=work)
            work *= zetas[r]
            y_new += work
            z_prev = y.copy()
        np.maximum(y_new, 0.0, out=y)
    delta[pages], n_vis[pages] = y, n + k
    if z_prev is not None:
        prev[pages] = z_prev


# --------------------------------------------------------------------------------------------------
# root finding for MLE (eq. (15)) and moment matching (Sec. 3.4), on weighted intervals of many pages
# --------------------------------------------------------------------------------------------------
# Each equation is summed over intervals ``tau`` (N,) with multiplicities ``w`` (N,) that belong to
# segments ``seg`` (N,) in 0 .. S-1, one per page; sums per page are np.bincount (in the order of the
# intervals). Zero weights are allowed (padding) and count for nothing.


def _mid(lo, hi):
    """Bisection point: geometric while the bracket spans more than a factor 4, arithmetic after."""
    return np.where((lo > 0.0) & (hi > 4.0 * lo), np.sqrt(lo) * np.sqrt(hi), 0.5 * (lo + hi))


def _newton(fdf, x0, lo, hi, max_iter=400):
    """Roots of decreasing functions of many pages at once, by safeguarded Newton inside brackets.

    ``fdf(x, act)`` returns f and f' at ``x`` (shape (a,)) of the pages ``act`` (indices, shape (a,)).
    The bracket shrinks to the side of the root that the sign of f shows; a step that leaves it (or a
    non-negative f') is replaced by :func:`_mid`. A page stops when f(x) = 0 or when the step or the
    bracket is within 1e-13 relative; ``x0`` is a warm start, used when inside the bracket. Called
    under ``_quiet`` (a zero f' gives an infinite step, which the bracket rejects).
    """
    x = np.where((x0 > lo) & (x0 < hi), x0, _mid(lo, hi))
    act = np.arange(x.shape[0])
    xa, la, ha = x, lo, hi
    for _ in range(max_iter):
        if not act.size:
            break
        f, df = fdf(xa, act)
        above = f > 0.0
        la = np.where(above, xa, la)
        ha = np.where(above, ha, xa)
        xn = xa - f / df
        xn = np.where((df < 0.0) & (xn > la) & (xn < ha), xn, _mid(la, ha))
        zero = f == 0.0
        xn = np.where(zero, xa, xn)
        done = zero | (np.abs(xn - xa) <= 1e-13 * xa) | ((ha - la) <= 1e-13 * ha)
        x[act] = xn
        keep = ~done
        act, xa, la, ha = act[keep], xn[keep], la[keep], ha[keep]
    return x


def _segments(seg, n_seg, solve, *arrays):
    """The intervals of the segments ``solve`` (sorted indices), renumbered 0 .. len(solve) - 1.

    ``seg`` (N,) is non-decreasing. Returns the renumbered segment of each kept interval, the start of
    each kept segment's range (len(solve) + 1,), and the kept entries of ``arrays``.
    """
    where = np.full(n_seg, -1)
    where[solve] = np.arange(solve.size)
    s = where[seg]
    keep = s >= 0
    s = s[keep]
    return s, np.searchsorted(s, np.arange(solve.size + 1)), [a[keep] for a in arrays]


def _points_of(act, n_solve, starts, s, arrays):
    """Entries of ``arrays`` that belong to the active segments ``act`` (sorted), and the position in
    ``act`` of each entry's segment."""
    if act.size == n_solve:
        return s, arrays
    lens = starts[act + 1] - starts[act]
    idx = np.repeat(starts[act] - np.cumsum(lens) + lens, lens) + np.arange(lens.sum())
    return np.repeat(np.arange(act.size), lens), [a[idx] for a in arrays]


@_quiet
def mle_root(tau_c, w_c, seg, n_seg, t0, tau_mean, x0):
    """Roots D > 0 of sum_b w_b tau_b / (e^{D tau_b} - 1) = t0 of every segment (eq. (15)): shape (S,).

    ``tau_c``/``w_c``: intervals of the changed visits and their multiplicities, ``seg`` their segment
    (non-decreasing); ``t0`` (S,): total length of the unchanged intervals. Degenerate cases: no changed
    visit -> 0; no unchanged visit (t0 == 0) -> t0 is replaced by ``tau_mean`` (one pseudo-visit of mean
    length that saw no change), which keeps the value finite. ``x0`` (S,) is a warm start (ignored
    outside the bracket).
    """
    n_c = np.bincount(seg, weights=w_c, minlength=n_seg)
    t1 = np.bincount(seg, weights=w_c * tau_c, minlength=n_seg)
    out = np.zeros(n_seg)
    solve = np.flatnonzero(n_c > 0.0)
    if not solve.size:
        return out
    t0 = np.where(t0 > 0.0, t0, tau_mean)[solve]
    # u/(e^u-1) lies in [1 - u/2, 1], so the root lies in [n_c/(t0 + t1/2), n_c/t0].
    n_c = n_c[solve]
    lo, hi = n_c / (t0 + 0.5 * t1[solve]), n_c / t0
    nz = w_c != 0.0
    s, starts, points = _segments(seg[nz], n_seg, solve, tau_c[nz], w_c[nz])

    def fdf(x, act):
        pos, (t, w) = _points_of(act, solve.size, starts, s, points)
        xs = x[pos]
        u = xs * t
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            em1 = np.expm1(u)
            small = em1 <= 0.0  # u underflowed: the term is w / x
            h = t / em1
            fb = np.where(small, w / xs, w * h)
            dfb = np.where(small, -w / (xs * xs), -w * h * h * (em1 + 1.0))
        far = u > 700.0
        fb[far] = 0.0
        dfb[far] = 0.0
        a = act.size
        return (
            np.bincount(pos, weights=fb, minlength=a) - t0[act],
            np.bincount(pos, weights=dfb, minlength=a),
        )

    out[solve] = _newton(fdf, x0[solve], lo, hi)
    return out


@_quiet
def mm_root(tau, w, seg, n_seg, n0, x0):
    """Roots D >= 0 of sum_b w_b e^{-D tau_b} = n0 of every segment (moment matching, Sec. 3.4 of seed
    001): shape (S,).

    ``tau``/``w``: all intervals and their multiplicities, ``seg`` their segment (non-decreasing);
    ``n0`` (S,): number of unchanged visits. Degenerate cases: n0 == total (no change) -> 0; n0 == 0
    (every visit changed) -> n0 = 1/2.
    """
    pos = w > 0.0
    tau, w, seg = tau[pos], w[pos], seg[pos]
    total = np.bincount(seg, weights=w, minlength=n_seg)
    tsum = np.bincount(seg, weights=w * tau, minlength=n_seg)
    tmin = np.full(n_seg, np.inf)
    if seg.size:
        first = np.flatnonzero(np.r_[True, seg[1:] != seg[:-1]])
        tmin[seg[first]] = np.minimum.reduceat(tau, first)
    out = np.zeros(n_seg)
    solve = np.flatnonzero((total > 0.0) & (n0 < total))
    if not solve.size:
        return out
    n0 = np.where(n0 > 0.0, n0, 0.5)[solve]
    total = total[solve]
    # Jensen: sum w e^{-D tau} >= total e^{-D mean(tau)}, and <= total e^{-D min(tau)}.
    r = np.log(total / n0)
    lo, hi = r / (tsum[solve] / total), r / tmin[solve]
    s, starts, points = _segments(seg, n_seg, solve, tau, w)

    def fdf(x, act):
        pos, (t, wb) = _points_of(act, solve.size, starts, s, points)
        e = wb * np.exp(-x[pos] * t)
        a = act.size
        return (
            np.bincount(pos, weights=e, minlength=a) - n0[act],
            -np.bincount(pos, weights=t * e, minlength=a),
        )

    out[solve] = np.where(hi <= lo, lo, _newton(fdf, x0[solve], lo, np.maximum(hi, lo)))
    return out


@_quiet
def exact_roots(changed, tau, seg, n_seg, use_mm, x0=None):
    """The exact MLE (eq. (15)) or MM estimate of every segment's whole history: shape (S,).

    ``changed`` (N,) bool, ``tau`` (N,) days, ``seg`` (N,) segment of each visit, in visit order within
    a segment. A segment without visits gets 0 (callers do not ask for one).
    """
    x0 = np.full(n_seg, -1.0) if x0 is None else x0
    ones = np.ones(tau.shape[0])
    if use_mm:
        n0 = np.bincount(seg, weights=(~changed).astype(np.float64), minlength=n_seg)
        return mm_root(tau, ones, seg, n_seg, n0, x0)
    k = np.bincount(seg, minlength=n_seg)
    t0 = np.bincount(seg[~changed], weights=tau[~changed], minlength=n_seg)
    t1 = np.bincount(seg[changed], weights=tau[changed], minlength=n_seg)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau_mean = np.where(k > 0, (t0 + t1) / k, 1.0)
    return mle_root(tau[changed], ones[changed], seg[changed], n_seg, t0, tau_mean, x0)


@_quiet
def exact_path(changed, tau, use_mm):
    """Exact MLE (or MM) estimate after each of the k visits of one page: shape (k,).

    Every prefix is a segment of its own, solved at once; prefixes are taken in chunks of about 2^22
    intervals so that memory stays bounded (the cost is O(k^2) intervals in all, as solving after each
    visit is).
    """
    k = tau.shape[0]
    out = np.empty(k)
    i = 0
    while i < k:
        # prefixes i+1 .. j, of at most about 2^22 intervals in all
        j = i + 1
        while j < k and (j + 1 - i) * (j + 1) <= 1 << 22:
            j += 1
        lens = np.arange(i + 1, j + 1)
        idx = np.arange(lens.sum()) - np.repeat(np.cumsum(lens) - lens, lens)
        seg = np.repeat(np.arange(lens.size), lens)
        out[i:j] = exact_roots(changed[idx], tau[idx], seg, lens.size, use_mm)
        i = j
    return out


@_quiet
def exact_batch_solve(log_pages, log_changed, log_tau, dirty_pages, delta, use_mm):
    """Re-solve the exact MLE (or MM) of every page in ``dirty_pages`` (distinct) from the visit log.

    The listed pages' visits are gathered in log order (a stable sort by page of their log entries) and
    each page's equation is solved on its whole history: O(log length + their visits) per Newton step.
    """
    slot = np.full(delta.shape[0], -1)
    slot[dirty_pages] = np.arange(dirty_pages.shape[0])
    seg = slot[log_pages]
    mine = np.flatnonzero(seg >= 0)
    order = mine[np.argsort(seg[mine], kind="stable")]
    delta[dirty_pages] = exact_roots(
        log_changed[order], log_tau[order], seg[order], dirty_pages.shape[0], use_mm
    )


# --------------------------------------------------------------------------------------------------
# binned sufficient statistics (online MLE / MM, O(n_bins) per update)
# --------------------------------------------------------------------------------------------------
# Per page, ``n_bins`` slots; slot s holds key_s = log(tau) centre (NaN while free) and, in ``st[s, 0:6]``:
# counts of changed/unchanged visits, sums of their intervals (days), sums of squared intervals.
# A slot's intervals are represented by two points that match their first two moments, so a slot is
# exact for equal intervals and second-order accurate otherwise.

#: Pages whose slots are updated or solved in one pass: the temporaries of a pass stay in the cache (one
#: pass over 10^6 pages makes them 128 MB each, and the insert takes twice as long).
_CHUNK = 1 << 16

#: A slot whose decayed weight falls below this many visits is emptied (and can take a new interval).
FORGET_FLOOR = 1e-9


def _bins_insert(pages, key, st, changed, tau, log_width):
    """Add one visit to the slots of each of ``pages`` (distinct), in key (n_pages, n_bins; NaN for a
    free slot) and st (n_pages, n_bins, 6), in place.

    The visit joins the first taken slot whose key is within log_width/2 of log(tau), else the first
    free slot, else the two closest slots are merged and the freed slot takes it.
    """
    m, nb = pages.shape[0], key.shape[1]
    rows = np.arange(m)
    lt = np.log(tau)
    kp = key[pages]
    match = np.abs(kp - lt[:, None]) <= 0.5 * log_width  # False on free slots (NaN keys)
    best = match.argmax(axis=1)
    new = np.flatnonzero(~match[rows, best])
    if new.size:
        free = np.isnan(kp[new])
        slot = free.argmax(axis=1)
        full = new[~free[np.arange(new.size), slot]]
        best[new] = slot
        if full.size:
            # the closest pair (s, r), s < r, first in (s, r) order: s takes the merged slot, r the visit
            pf = pages[full]
            ks = kp[full]
            sa, ra = np.triu_indices(nb, 1)
            pair = np.abs(ks[:, sa] - ks[:, ra]).argmin(axis=1)
            ba, bb = sa[pair], ra[pair]
            wa = st[pf, ba, 0] + st[pf, ba, 1]
            wb = st[pf, bb, 0] + st[pf, bb, 1]
            key[pf, ba] = (wa * key[pf, ba] + wb * key[pf, bb]) / (wa + wb)
            st[pf, ba] += st[pf, bb]
            st[pf, bb] = 0.0
            best[full] = bb
        key[pages[new], best[new]] = lt[new]
    at = (pages * nb + best) * 6 + np.where(changed, 0, 1)
    at = at[:, None] + np.array([0, 2, 4])
    flat = st.reshape(-1)
    flat[at] += np.stack([np.ones(m), tau, tau * tau], axis=1)


@_quiet
def binned_batch(pages, changed, tau, n_vis, key, st, log_width, decay_per_day=None, n_eff=None):
    """Add k rounds of visits to the slots of ``pages``; O(n_bins) per visit (the solve is separate).

    With ``decay_per_day`` (= ln 2 / half_life), each page's statistics are first multiplied by
    e^{-decay_per_day * tau} (tau: the time since its previous visit, which is its previous update, so
    every past visit j ends up weighted by 2^{-(t - t_j)/half_life}); a slot lighter than FORGET_FLOOR
    visits is emptied. ``n_eff`` (n_pages,) then holds the decayed number of visits.
    """
    for r in range(changed.shape[0]):
        if decay_per_day is not None:
            factor = np.exp(-decay_per_day * tau[r])
            s = st[pages] * factor[:, None, None]
            gone = (s[:, :, 0] + s[:, :, 1]) < FORGET_FLOOR
            s[gone] = 0.0
            st[pages] = s
            k = key[pages]
            k[gone] = np.nan
            key[pages] = k
            n_eff[pages] = n_eff[pages] * factor + 1.0
        for c in range(0, pages.shape[0], _CHUNK):
            part = slice(c, c + _CHUNK)
            _bins_insert(pages[part], key, st, changed[r, part], tau[r, part], log_width)
    n_vis[pages] += changed.shape[0]


def _two_points(n, s1, s2):
    """Two-point representations (t_a, w_a, t_b, w_b) of n intervals with sum s1 and sum of squares s2.

    Where the variance vanishes (equal intervals, or overflow of the squares), one point (mean, n) and
    w_b = 0; where n = 0, both weights are 0.
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mean = s1 / n
        var = s2 / n - mean * mean
        spread = (var > 1e-12 * mean * mean) & (var < np.inf)
        a = np.maximum(mean - np.sqrt(var), 0.1 * mean)
        b = mean + var / (mean - a)
        wb = np.where(spread, n * (mean - a) / (b - a), 0.0)
    return np.where(spread, a, mean), n - wb, np.where(spread, b, mean), wb


@_quiet
def binned_solve(dirty_pages, st, n_vis, delta, use_mm):
    """Re-solve eq. (15) (or MM) on the slots of each page in ``dirty_pages``, warm-started."""
    pages = dirty_pages[n_vis[dirty_pages] > 0]
    for c in range(0, pages.shape[0], _CHUNK):
        _binned_solve(pages[c : c + _CHUNK], st, delta, use_mm)


def _binned_solve(pg, st, delta, use_mm):
    s = st[pg]  # (m, n_bins, 6)
    m, nb = s.shape[:2]
    flat = s.reshape(m * nb, 6)
    # the taken slots, page by page; each gives the two points of its changed visits (and for MM then
    # those of its unchanged visits), weight 0 where there are none
    kinds = (0, 1) if use_mm else (0,)
    slot = np.flatnonzero(flat[:, 0] + flat[:, 1] > 0.0 if use_mm else flat[:, 0] > 0.0)
    f = flat[slot]
    pts = [_two_points(f[:, o], f[:, 2 + o], f[:, 4 + o]) for o in kinds]
    t = np.stack([x for ta, _, tb, _ in pts for x in (ta, tb)], axis=1).ravel()
    w = np.stack([x for _, wa, _, wb in pts for x in (wa, wb)], axis=1).ravel()
    seg = np.repeat(slot // nb, 2 * len(kinds))
    n0 = s[:, :, 1].sum(axis=1)
    if use_mm:
        # decayed weights (forgetting): the 1/2 pseudo-visit of mm_root also applies to a fraction of
        # an unchanged visit; for integer counts this never fires, so n0 = 0 -> 1/2 stays continuous
        n0 = np.where((n0 > 0.0) & (n0 < 0.5), 0.5, n0)
        delta[pg] = mm_root(t, w, seg, m, n0, delta[pg])
        return
    t0 = s[:, :, 3].sum(axis=1)
    n = (s[:, :, 0] + s[:, :, 1]).sum(axis=1)
    ts = (s[:, :, 2] + s[:, :, 3]).sum(axis=1)
    # decayed weights (forgetting): top the unchanged evidence up to one visit of mean length, the
    # pseudo-visit mle_root adds when there is none; integer counts never get here, and n0 -> 0 meets
    # mle_root's own rule continuously
    t0 = np.where((n0 > 0.0) & (n0 < 1.0), t0 + (1.0 - n0) * (ts / n), t0)
    delta[pg] = mle_root(t, w, seg, m, t0, ts / n, delta[pg])
