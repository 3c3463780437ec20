"""The compiled per-host loop for binding host caps, against the general vectorised host solver."""

from __future__ import annotations

import numpy as np
import pytest

from freshcrawl.allocation import _kernels as K
from freshcrawl.allocation import allocate, get_objective, solve

_NO_KEEP = np.zeros(0, dtype=bool)  # group_pass: no group keeps its sums
_NO_FOUND = np.zeros(0, dtype=np.int64)  # group_pass: no pages listed by their breakpoint
_NO_POINT = (np.zeros(0),) * 3  # host_newton: no group's last point above its lower end

KERNEL_NAMES = ["freshness-poisson", "freshness-periodic", "harmonic", "detection", "detection-discrete"]


def capped_instance(seed, n=2000, n_hosts=200, discrete=False):
    rng = np.random.default_rng(seed)
    delta = rng.uniform(0.01, 0.99, n) if discrete else rng.lognormal(0.0, 1.5, n)
    w = 0.1 + rng.pareto(1.5, n)
    hosts = rng.integers(-1, n_hosts, n)  # -1: pages without a host
    budget = 0.5 * n
    share = np.bincount(hosts[hosts >= 0], minlength=n_hosts) / n
    caps = 1.1 * budget * share
    caps[::7] = np.inf  # some hosts uncapped
    return delta, w, hosts, caps, budget


def general_path(monkeypatch):
    """Every binding host handed to the general solver: the compiled loop gets no passes."""
    monkeypatch.setattr(solve, "_HOST_ITER", 0)


@pytest.mark.parametrize("name", KERNEL_NAMES)
def test_compiled_host_loop_matches_the_general_solver(name, monkeypatch):
    delta, w, hosts, caps, budget = capped_instance(1, discrete=name == "detection-discrete")
    kw = dict(weights=w, objective=name, p_min=1e-3, hosts=hosts, host_caps=caps)
    fast = allocate(delta, budget, **kw)
    n_bind = int(np.sum(fast.host_lam > fast.lam))
    assert n_bind > 20  # the instance exercises the host loop
    general_path(monkeypatch)
    ref = allocate(delta, budget, **kw)
    for res in (fast, ref):
        assert res.success and res.kkt_residual <= 1e-9
        assert abs(res.p.sum() - budget) <= 1e-9 * budget
        sums = np.bincount(hosts[hosts >= 0], weights=res.p[hosts >= 0], minlength=caps.size)
        fin = np.isfinite(caps)
        assert np.all(sums[fin] <= caps[fin] * (1 + 1e-9))
    # the optimum is unique (strictly concave objectives): both paths give the same rates
    np.testing.assert_allclose(fast.p, ref.p, rtol=1e-8, atol=1e-10 * budget / delta.size)
    np.testing.assert_allclose(fast.host_lam, ref.host_lam, rtol=1e-8)


@pytest.mark.parametrize("name", ["freshness-poisson", "detection"])
def test_single_page_hosts_sit_at_their_cap_with_the_marginal_as_multiplier(name):
    # one page per host: the host's multiplier is that page's marginal value at p = c_h exactly
    rng = np.random.default_rng(2)
    n = 400
    delta = rng.lognormal(0.0, 1.0, n)
    w = 0.5 + rng.random(n)
    hosts = np.arange(n)
    budget = 0.5 * n
    free = allocate(delta, budget, weights=w, objective=name)
    sel = np.flatnonzero(free.p > 0.1)[:100]  # capping lowers λ, so these still want more than 0.05
    assert sel.size == 100
    caps = np.full(n, np.inf)
    caps[sel] = 0.05
    res = allocate(delta, budget, weights=w, objective=name, hosts=hosts, host_caps=caps)
    assert res.success and res.kkt_residual <= 1e-12
    np.testing.assert_allclose(res.p[sel], 0.05, rtol=1e-12)
    obj = solve.get_objective(name)
    np.testing.assert_allclose(res.host_lam[sel], w[sel] * obj.derivative(np.full(100, 0.05), delta[sel]),
                               rtol=1e-10)
    assert np.all(res.host_lam[sel] > res.lam)


def test_host_root_on_a_jump_interpolates_in_the_compiled_loop(monkeypatch):
    # pages 0 and 1 observed completely (constant marginals w/Δ = 1 and 0.5, p <= Δ): their host's sum
    # jumps from 1 to 3 at λ = 0.5, so its cap 1.5 is met by page 1 taking a quarter of that jump
    delta = np.array([1.0, 2.0, 1.0])
    complete = np.array([True, True, False])
    hosts = np.array([0, 0, -1])
    kw = dict(objective="freshness-poisson", hosts=hosts, host_caps=[1.5], observed_completely=complete)
    res = allocate(delta, 4.5, **kw)
    # page 2: sqrt(Δ/λ) - Δ = 3 at λ = 1/16
    np.testing.assert_allclose(res.p, [1.0, 0.5, 3.0], rtol=1e-12)
    assert res.lam == pytest.approx(1.0 / 16.0, rel=1e-12)
    assert res.host_lam[0] == pytest.approx(0.5, rel=1e-12)
    general_path(monkeypatch)
    ref = allocate(delta, 4.5, **kw)
    np.testing.assert_allclose(res.p, ref.p, rtol=1e-12)


def test_group_pages_is_a_stable_counting_sort():
    hosts = np.array([3, -1, 0, 3, 2, 0, 3, -1, 1])
    perm, start = K.group_pages(hosts, np.array([3, 0]), 4)
    np.testing.assert_array_equal(start, [0, 3, 5])
    np.testing.assert_array_equal(perm, [0, 3, 6, 2, 5])


def test_host_newton_power_law_in_one_step():
    # a pure power law (the sync-cost kind with c(τ) = a τ: p = sqrt(w a / (2 λ))), S(λ) = 5 / sqrt(λ)
    tok = K.TOKENS[K.POLY]
    a = np.array([8.0, 18.0])  # p = 2 / sqrt(λ) and 3 / sqrt(λ)
    perm = np.arange(2)
    start = np.array([0, 2])
    lam = 1.0
    s0 = 5.0
    ds0 = -0.5 * s0 / lam
    out_lam, out_dlam, out_lam2, out_theta = np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1)
    iters = np.zeros(1, dtype=np.int64)
    K.host_newton(tok, perm, start, np.array([2.5]), np.array([lam]), np.array([s0]), np.array([ds0]), 0, 1.0, a, 1.0, 0.0,
                  np.inf, 1e-12, 40, False, out_lam, out_dlam, out_lam2, out_theta, iters, *_NO_POINT)
    # S = 2.5 at λ = 4: one log-log Newton step lands there, the pass at that point confirms it
    assert out_lam[0] == pytest.approx(4.0, rel=1e-14)
    assert iters[0] == 1 and out_theta[0] == 0.0


def test_host_newton_starts_from_a_last_point_under_the_target():
    # S = 5 / sqrt(λ) with target 2.5 (root λ = 4) and its lower end at λ = 1; a last point at λ = 16 (S = 1.25,
    # under the target) is where the first step is taken from
    tok = K.TOKENS[K.POLY]
    a = np.array([8.0, 18.0])
    perm, start = np.arange(2), np.array([0, 2])
    out = [np.zeros(1) for _ in range(4)]
    iters = np.zeros(1, dtype=np.int64)

    def solve_from(last):
        K.host_newton(tok, perm, start, np.array([2.5]), np.array([1.0]), np.array([5.0]), np.array([-2.5]), 0, 1.0,
                      a, 1.0, 0.0, np.inf, 1e-12, 40, False, *out, iters, *(np.array([x]) for x in last))
        assert out[0][0] == pytest.approx(4.0, rel=1e-14)
        return int(iters[0])

    # with its true derivative the log-log step from there lands on the root; with one that points to λ = 9
    # instead it takes more steps: the first was taken from the last point, not from the lower end
    assert solve_from((16.0, 1.25, -0.5 * 1.25 / 16.0)) == 1
    assert solve_from((16.0, 1.25, np.log(2.0) * 1.25 / (16.0 * np.log(9.0 / 16.0)))) > 1
    # a last point over the target, or not above the lower end, is not a start: one step from the lower end
    assert solve_from((2.0, 5.0, -10.0)) == 1
    assert solve_from((0.5, 1.0, -10.0)) == 1


def test_group_pages_with_pages_without_a_host_and_no_match():
    # -1 (no host) is never selected; a selected host without pages gets an empty range
    hosts = np.array([-1, 2, -1, 2, 0, 1, 2])
    perm, start = K.group_pages(hosts, np.array([2, 3, 1]), 4)
    np.testing.assert_array_equal(start, [0, 3, 3, 4])
    np.testing.assert_array_equal(perm, [1, 3, 6, 5])
    perm, start = K.group_pages(np.array([-1, -1]), np.array([0]), 1)
    np.testing.assert_array_equal(start, [0, 0])
    assert perm.size == 0


def test_group_pages_past_its_first_buffer():
    # more pages found than the first buffer holds (2^14): it doubles, and the order is still stable
    rng = np.random.default_rng(3)
    hosts = rng.integers(-1, 1000, 100_000)
    sel = rng.choice(1000, 400, replace=False)
    perm, start = K.group_pages(hosts, sel, 1000)
    assert start[-1] > 1 << 14
    for j, h in enumerate(sel):
        np.testing.assert_array_equal(perm[start[j]:start[j + 1]], np.flatnonzero(hosts == h))


@pytest.mark.parametrize("name", ["freshness-periodic", "detection", "freshness-poisson"])
def test_host_newton_rounds_meet_each_cap(name):
    # hosts of 1, 300 (more than a chunk: a chunk holds pages of two hosts), 40 and 9000 pages, solved in rounds;
    # each host's sum at its multiplier meets its cap, page by page from the scalar response
    rng = np.random.default_rng(5)
    sizes = [1, 300, 40, 9000, 9000]  # two batches of the rounds (up to 2^14 pages each)
    n = sum(sizes)
    w = 0.1 + rng.pareto(1.5, n)
    obj = get_objective(name)
    a, b = obj._params(rng.lognormal(0.0, 1.5, n))
    tok = K.TOKENS[obj._kind]
    perm = rng.permutation(n)
    start = np.concatenate([[0], np.cumsum(sizes)])
    lam = 0.02
    sums = np.array([K.global_sum(tok, p1 - p0, lam, 0, w[perm[p0:p1]], a[perm[p0:p1]], b, 0.0, np.inf)
                     for p0, p1 in zip(start[:-1], start[1:], strict=True)])
    target = 0.6 * sums[:, 0]
    g = len(sizes)
    out_lam, out_dlam, out_lam2, out_theta = np.zeros(g), np.zeros(g), np.zeros(g), np.zeros(g)
    iters = np.zeros(g, dtype=np.int64)
    K.host_newton(tok, perm, start, target, np.full(g, lam), sums[:, 0].copy(), sums[:, 1].copy(), 0, w, a, b,
                  0.0, np.inf, 1e-12, 40, True, out_lam, out_dlam, out_lam2, out_theta, iters, *_NO_POINT)
    assert np.all(iters > 0) and np.all(out_lam > lam)

    def host_sum(j, lam_j):
        pages = perm[start[j]:start[j + 1]]
        return sum(K.resp_any(obj._kind, lam_j, w[i], a[i], b, 0.0, np.inf)[0] for i in pages)

    for j in range(g):
        if out_theta[j] == 0.0:
            assert host_sum(j, out_lam[j]) == pytest.approx(target[j], rel=1e-11)
        else:  # a root on a jump of the host's sum: the sums at its two ends straddle the cap
            assert host_sum(j, out_lam[j]) <= target[j] <= host_sum(j, out_lam2[j])


def test_index_range():
    assert K.index_range(np.array([3, -1, 7, 0])) == (-1, 7)
    assert K.index_range(np.array([5])) == (5, 5)


@pytest.mark.parametrize("kind", [K.POISSON, K.HARMONIC])
def test_host_bounds_at_is_host_bounds_and_the_first_pass(kind):
    # one pass for the feasibility sums and every host's Σp, Σdp/dλ at λ0: the same numbers as the two
    # passes it replaces (bit for bit: the same additions in the same order), pages without a host last
    rng = np.random.default_rng(4)
    n, n_hosts = 3000, 50
    delta = rng.lognormal(0.0, 1.5, n)
    delta[::17] = 0.0  # pages with no value: at p_min at any λ > 0, at p_max as λ -> 0+
    w = 0.1 + rng.pareto(1.5, n)
    lo = np.where(rng.random(n) < 0.5, 0.1, 0.0)
    hi = np.where(rng.random(n) < 0.5, 3.0, np.inf)
    hosts = rng.integers(-1, n_hosts, n)
    prob = solve._KernelProblem(n, kind, w, delta, 0.0, lo, hi)
    low, s0, up, s, ds = K.host_bounds_at(prob.tok, n, n_hosts, 0.7, *prob._args(), hosts)
    for got, want in zip((low, s0, up), prob.host_bounds(n_hosts, hosts)):
        np.testing.assert_array_equal(got, want)
    s_ref, ds_ref = prob.host_sums(0.7, hosts, n_hosts)
    np.testing.assert_allclose(s, s_ref, rtol=1e-13)
    np.testing.assert_allclose(ds, ds_ref, rtol=1e-13)
    assert np.isinf(up[n_hosts]) and s.shape == (n_hosts + 1,)


def test_group_pass_breakpoints_next_to_lambda():
    # detection with p_min = 0: page i leaves p_min at λ = w_i. Over the pages of the groups evaluated at
    # λ = 1 (hosts 0, 2 and the pages without a host), brk holds the smallest w above 1, the largest w at
    # or below 1 and the first page at the smallest; host 1 sits at its own multiplier and is left out.
    # The sums per group are those of the uncapped pass at each group's multiplier.
    rng = np.random.default_rng(8)
    n = 700  # more than two chunks
    w = rng.uniform(0.2, 3.0, n)
    delta = rng.lognormal(0.0, 1.0, n)
    hosts = rng.integers(-1, 3, n)
    lam = 1.0
    mu = np.array([lam, 1.7, lam, lam])  # hosts 0, 1, 2, then the pages without a host
    at = mu[np.where(hosts < 0, 3, hosts)] == lam
    w[np.flatnonzero(at & (w > lam))[5]] = 1.0 + 1e-9  # the smallest above λ, twice, on pages in order
    w[np.flatnonzero(at & (w > lam))[9]] = 1.0 + 1e-9
    w[np.flatnonzero(~at)[0]] = 1.0 + 1e-12  # nearer still, but on host 1: not counted
    prob = solve._KernelProblem(n, K.DETECTION, w, delta, 0.0, 0.0, np.inf)
    s, ds, acc, brk = np.empty(4), np.empty(4), np.empty((4, 2)), np.empty(3)
    K.group_pass(prob.tok, n, mu, 1.0 / mu, *prob._args(), hosts, s, ds, acc, brk, lam, _NO_KEEP, _NO_FOUND)
    above = at & (w > lam)
    assert brk[0] == w[above].min() == 1.0 + 1e-9
    assert brk[1] == w[at & (w <= lam)].max()
    assert brk[2] == np.flatnonzero(above & (w == brk[0]))[0]
    for g in range(4):
        pages = np.flatnonzero(np.where(hosts < 0, 3, hosts) == g)
        sub = solve._KernelProblem(pages.size, K.DETECTION, w[pages], delta[pages], 0.0, 0.0, np.inf)
        ref, dref = sub.global_sum(mu[g])
        assert s[g] == pytest.approx(ref, rel=1e-12) and ds[g] == pytest.approx(dref, rel=1e-12)
    # with an interval (brk[3], brk[4]): the pages at λ whose breakpoint lies strictly inside it, counted and
    # listed in page order while the list has room; past that, counted only
    inside = at & (w > 0.9) & (w < 1.3)
    s2 = np.empty(4)
    for room in (inside.sum() + 3, inside.sum() - 1):
        brk6, found = np.array([0.0, 0.0, 0.0, 0.9, 1.3, -1.0]), np.full(room, -1)
        K.group_pass(prob.tok, n, mu, 1.0 / mu, *prob._args(), hosts, s2, ds, acc, brk6, lam, _NO_KEEP, found)
        np.testing.assert_array_equal(brk6[:3], brk)
        assert brk6[5] == inside.sum() > 20
        if room > inside.sum():
            np.testing.assert_array_equal(found[: inside.sum()], np.flatnonzero(inside))
    # no tracking: the sums alone, and a scratch of the wrong width is refused
    K.group_pass(prob.tok, n, mu, 1.0 / mu, *prob._args(), hosts, s2, ds, acc, np.empty(0), lam, _NO_KEEP,
                 _NO_FOUND)
    np.testing.assert_array_equal(s2, s)
    with pytest.raises(ValueError, match="acc must have shape"):
        K.group_pass(prob.tok, n, mu, 1.0 / mu, *prob._args(), hosts, s2, ds, np.empty((4, 3)), np.empty(0), lam,
                     _NO_KEEP, _NO_FOUND)


def test_listed_breakpoints_wide_agrees_with_the_fold():
    # the vectorised form for hosts of many pages (reductions on the breakpoints' bit patterns) gives the
    # breakpoint nearest to lt inside (la, lb), the smallest at or above lb and the largest at or below la
    # as the page-by-page fold does: with NaN (no breakpoint), inf, -0.0, repeated values, lb = inf, and
    # lt on a breakpoint
    rng = np.random.default_rng(11)
    fb = np.empty(7)
    n_inside = 0
    for _ in range(3000):
        m = int(rng.integers(1, 120))
        e_lo = 0.1 + rng.pareto(1.5, m)
        e_hi = np.where(rng.random(m) < 0.3, 0.5 + rng.pareto(1.5, m), np.nan)
        e_lo[rng.random(m) < 0.15] = np.nan
        e_lo[rng.random(m) < 0.05] = np.inf
        e_lo[rng.random(m) < 0.05] = -0.0
        e_lo[: m // 4] = e_lo[m - m // 4:]  # repeated values
        la = 2.0 * rng.random()
        lb = la * (1.0 + 3.0 * rng.random()) if rng.random() < 0.9 else np.inf
        finite = e_lo[np.isfinite(e_lo) & (e_lo > 0.0)]
        lt = rng.choice(finite) if finite.size and rng.random() < 0.2 else la + (min(lb, 5.0 * la) - la) * rng.random()
        want = K._listed_breakpoints(e_lo, e_hi, m, la, lb, lt)
        got = K._listed_breakpoints_wide(e_lo, e_hi, m, la, lb, lt, fb)
        np.testing.assert_array_equal(got, want)
        n_inside += not np.isnan(want[0])
    assert n_inside > 2000  # most draws have breakpoints inside the bracket


def _group_pass_instance(rng, name, n, G):
    """n pages over G - 1 hosts and pages without a host (-1), p_min = 0: (Δ, w, hosts, kernel problem)."""
    delta = rng.lognormal(0.0, 1.5, n)
    w = 0.1 + rng.pareto(1.5, n)
    hosts = rng.integers(-1, G - 1, n)
    obj = solve.get_objective(name)
    return delta, w, hosts, solve._KernelProblem(n, obj._kind, w, *obj._params(delta), 0.0, np.inf)


@pytest.mark.parametrize("name", ["detection", "freshness-periodic", "freshness-poisson"])
def test_group_pass_keeps_the_sums_of_groups_that_did_not_move(name):
    # flagged groups keep the sums they hold (their pages are not evaluated again) under the Lambert-W
    # kinds; the others are summed as in a full pass; the closed forms (1/λ gathered) ignore the flags
    rng = np.random.default_rng(3)
    n, G = 3000, 31
    _, _, hosts, prob = _group_pass_instance(rng, name, n, G)
    mu = rng.uniform(0.1, 2.0, G)
    s_ref, ds_ref = np.empty(G), np.empty(G)
    acc = np.empty((G, 2))
    K.group_pass(prob.tok, n, mu, 1.0 / mu, *prob._args(), hosts, s_ref, ds_ref, acc, np.empty(0), 1.0, _NO_KEEP,
                 _NO_FOUND)
    keep = rng.random(G) < 0.5
    s, ds = np.full(G, -7.0), np.full(G, 3.0)  # what the kept groups hold from "the last pass"
    K.group_pass(prob.tok, n, mu, 1.0 / mu, *prob._args(), hosts, s, ds, acc, np.empty(0), 1.0, keep, _NO_FOUND)
    if name == "freshness-poisson":
        np.testing.assert_array_equal(s, s_ref)
        return
    np.testing.assert_array_equal(s[keep], -7.0)
    np.testing.assert_array_equal(ds[keep], 3.0)
    np.testing.assert_allclose(s[~keep], s_ref[~keep], rtol=1e-14)
    np.testing.assert_allclose(ds[~keep], ds_ref[~keep], rtol=1e-14)


@pytest.mark.parametrize("name", ["detection", "freshness-periodic"])
def test_group_pass_tracks_the_breakpoints_of_the_pages_at_lambda_only(name):
    # the pages of kept groups are evaluated at NaN: the breakpoints tracked next to λ, and the pages counted
    # inside (l_a, l_b), are those of the groups at λ only (a kept group is never at λ in capped_newton)
    rng = np.random.default_rng(4)
    n, G = 4000, 41
    delta, w, hosts, prob = _group_pass_instance(rng, name, n, G)
    e = w if name == "detection" else w / delta  # w f'(0), where a page leaves p_min = 0
    lam, l_a, l_b = float(np.median(e)), 0.5 * float(np.median(e)), 2.0 * float(np.median(e))
    mu = np.full(G, lam)
    s, ds, acc = np.empty(G), np.empty(G), np.empty((G, 2))
    found = np.empty(n, dtype=np.int64)
    for keep in (np.zeros(G, dtype=bool), rng.random(G) < 0.5, np.ones(G, dtype=bool)):
        keep[G - 1] = False  # the pages without a host
        brk = np.array([np.inf, 0.0, -1.0, l_a, l_b, 0.0])
        K.group_pass(prob.tok, n, mu, 1.0 / mu, *prob._args(), hosts, s, ds, acc, brk, lam, keep, found)
        at = ~keep[np.where(hosts < 0, G - 1, hosts)]
        inside = np.flatnonzero(at & (e > l_a) & (e < l_b))
        assert brk[5] == inside.size
        np.testing.assert_array_equal(found[:inside.size], inside)
        assert brk[0] == np.min(e[at & (e > lam)])
        assert brk[1] == np.max(e[at & (e <= lam)])
        assert brk[2] == np.flatnonzero(at & (e == brk[0]))[0]
