"""The frontier's dispatch, politeness and learning, driven with hand-made outcomes (no HTTP).

Every test runs on a SQLite file and on a PostgreSQL database (the ``db_url`` fixture).
"""

from __future__ import annotations

import numpy as np
import pytest

from freshcrawl.crawler.outcome import ErrorKind, FetchOutcome, Outcome, RobotsOutcome
from freshcrawl.errors import UnknownNameError
from freshcrawl.frontier import CrawlSettings, Frontier, RobotsVisit, Visit, parse_url_list
from freshcrawl.store import open_store

T0 = 1_800_000_000.0  # seconds since the epoch


class Crawls:
    """Builds frontiers on one database and closes every store it opened."""

    def __init__(self, db_url):
        self.db_url = db_url
        self.stores = []

    def open(self):
        store = open_store(self.db_url)
        self.stores.append(store)
        return store

    def __call__(self, urls, **settings):
        store = self.open()
        store.add_pages(parse_url_list(urls), now=T0)
        values = {"budget": 86400.0, "min_delay_s": 1.0, **settings}
        return store, Frontier(store, CrawlSettings(**values), now=T0)


@pytest.fixture
def make(db_url):
    crawls = Crawls(db_url)
    yield crawls
    for store in crawls.stores:
        store.close()


def robots(frontier, visit, status=200, text="", t=T0, retry_after=None):
    frontier.record_robots(visit, RobotsOutcome(visit.origin, status, text, t, 0.01, "ok", retry_after))


def fetched(visit, outcome=Outcome.FIRST, t=T0, *, sig="s1", status=200, error=None, retry_after=None, why="x"):
    return (visit, FetchOutcome(visit.url, outcome, why, t, 0.01, status, 10, signature=sig, error=error,
                                retry_after_s=retry_after))


def open_hosts(frontier, t=T0, text=""):
    """Answer the robots.txt visits that come first; return the time after the hosts' delay."""
    for item in frontier.due(t + 1e6, 100):
        assert isinstance(item, RobotsVisit)
        robots(frontier, item, text=text, t=t)
    return t


def test_parse_url_list_reports_every_bad_line():
    rows = parse_url_list(["# comment", "", "HTTP://A.test/x 2.5", "https://b.test"], source="f")
    assert rows == [("http://a.test/x", "http://a.test", 2.5), ("https://b.test/", "https://b.test", 1.0)]
    with pytest.raises(ValueError, match=r"2 bad line\(s\) in urls.txt; nothing was added") as err:
        parse_url_list(["http://ok.test/", "ftp://x.test/", "http://ok.test/ -1"], source="urls.txt")
    assert "urls.txt:2:" in str(err.value) and "urls.txt:3: weight must be" in str(err.value)


def test_settings_are_checked():
    with pytest.raises(ValueError, match="budget"):
        CrawlSettings(budget=0.0)
    with pytest.raises(ValueError, match="signature"):
        CrawlSettings(signature="md5")
    with pytest.raises(UnknownNameError, match="oracle"):
        CrawlSettings(policy="oracle")


def test_robots_first_then_one_request_per_host_and_the_delay(make):
    store, f = make(["http://a.test/1", "http://a.test/2", "http://b.test/1"], min_delay_s=2.0)
    first = f.due(T0 + 1000, 10)
    assert sorted(type(v).__name__ for v in first) == ["RobotsVisit", "RobotsVisit"]
    assert f.due(T0 + 1000, 10) == []  # both hosts busy with their robots.txt
    for v in first:
        robots(f, v, t=T0)
    assert f.due(T0 + 1.9, 10) == []  # a robots.txt fetch is a request: the delay holds after it
    visits = f.due(T0 + 1000, 10)
    assert len(visits) == 2 and {v.host_id for v in visits} == {1, 2}  # one per host
    a = next(v for v in visits if v.url.startswith("http://a.test"))
    f.record([fetched(a, t=T0 + 10)])
    other_a = [v for v in f.due(T0 + 11.99, 10) if v.url.startswith("http://a.test")]
    assert other_a == []
    assert [v.url for v in f.due(T0 + 12.0, 10) if isinstance(v, Visit)][0].startswith("http://a.test")


def test_crawl_delay_becomes_the_host_cap_of_the_plan(make):
    urls = [f"http://slow.test/{i}" for i in range(20)] + [f"http://fast.test/{i}" for i in range(20)]
    store, f = make(urls, budget=1e6, min_delay_s=0.0)
    for v in f.due(T0 + 1000, 10):
        robots(f, v, text="User-agent: *\nCrawl-delay: 8.64\n" if "slow" in v.origin else "", t=T0)
    f.replan(T0 + 1)
    slow = np.array([u.startswith("http://slow") for u in urls])
    rate = f.rate[: len(urls)]
    assert rate[slow].sum() == pytest.approx(10_000.0, rel=1e-9)  # 86,400 / 8.64 visits per day
    assert rate.sum() == pytest.approx(1e6, rel=1e-9)
    ex = store.page_rows([1])[1]
    assert ex["rate"] == pytest.approx(rate[0])


def test_retry_after_is_a_floor_and_throttling_is_not_a_page_error(make):
    store, f = make(["http://a.test/1", "http://a.test/2"], min_delay_s=0.0)
    open_hosts(f)
    v = f.due(T0 + 1000, 1)[0]
    f.record([fetched(v, Outcome.NO_INFO, t=T0 + 5, sig=None, status=429, error=ErrorKind.THROTTLED,
                      retry_after=100.0)])
    assert f.due(T0 + 5 + 100.0, 10) == []  # end of the answer (5.01) + 100 s
    assert len(f.due(T0 + 105.02, 10)) == 1
    assert store.page_rows([v.page_id])[v.page_id]["n_errors"] == 0
    host = store.host_row(1)
    assert host["backoff_until"] == pytest.approx(T0 + 105.01) and host["n_backoff"] == 1


def test_exponential_backoff_with_jitter_after_server_errors(make):
    store, f = make(["http://a.test/1"], min_delay_s=0.0, backoff_base_s=10.0, backoff_max_s=1000.0,
                    max_page_errors=100)
    open_hosts(f)
    t = T0
    waits = []
    for n in range(1, 7):
        v = [x for x in f.due(t + 5000, 1) if isinstance(x, Visit)][0]
        t = max(t, v.due) + 1
        f.record([fetched(v, Outcome.NO_INFO, t=t, sig=None, status=503, error=ErrorKind.SERVER)])
        waits.append(store.host_row(1)["backoff_until"] - (t + 0.01))
        t = store.host_row(1)["backoff_until"]
    for n, w in enumerate(waits, start=1):
        full = min(1000.0, 10.0 * 2 ** (n - 1))
        assert 0.5 * full - 1e-6 <= w <= full + 1e-6
    v = [x for x in f.due(t + 5000, 1) if isinstance(x, Visit)][0]
    f.record([fetched(v, t=t + 100)])
    assert store.host_row(1)["n_backoff"] == 0


def test_a_page_that_keeps_failing_is_marked_failed(make):
    store, f = make(["http://a.test/gone"], min_delay_s=0.0, max_page_errors=3)
    open_hosts(f)
    t = T0
    for n in range(1, 4):
        v = f.due(t + 5000, 5)[0]
        assert v.url.endswith("gone")
        t = max(t, v.due) + 1
        f.record([fetched(v, Outcome.NO_INFO, t=t, sig=None, status=404, error=ErrorKind.PAGE, why="http-404")])
        assert store.page_by_url("http://a.test/gone")["n_errors"] == n
    row = store.page_by_url("http://a.test/gone")
    assert row["status"] == "failed" and row["n_errors_total"] == 3 and row["last_error"] == "http-404"
    assert f.due(t + 5000, 5) == []
    from freshcrawl.frontier.report import crawl_status

    assert crawl_status(store)["failed_pages"] == [
        {"url": "http://a.test/gone", "last_error": "http-404", "errors_in_a_row": 3}
    ]


def test_robots_disallow_is_recorded_and_lifted_by_a_new_robots_txt(make):
    store, f = make(["http://a.test/private/x", "http://a.test/public"], min_delay_s=0.0)
    open_hosts(f, text="User-agent: *\nDisallow: /private\n")
    urls = set()
    for _ in range(3):
        for v in f.due(T0 + 1000, 5):
            urls.add(v.url)
            f.record([fetched(v, t=T0 + 1)])
    assert urls == {"http://a.test/public"}
    assert store.page_by_url("http://a.test/private/x")["status"] == "disallowed"
    log = store.observation_log(page_id=1)
    assert [(r["outcome"], r["why"], r["error"]) for r in log] == [("no-info", "robots", "robots")]
    # a day later robots.txt is fetched again, and allows everything now
    later = T0 + 86_400 + 10
    item = next(x for x in f.due(later, 5) if isinstance(x, RobotsVisit))
    robots(f, item, text="User-agent: *\nAllow: /\n", t=later)
    assert store.page_by_url("http://a.test/private/x")["status"] == "active"
    seen = set()
    for k in range(3):
        for v in f.due(later + 1 + k, 5):
            seen.add(v.url)
            f.record([fetched(v, t=later + 1 + k)])
    assert "http://a.test/private/x" in seen


def test_robots_5xx_disallows_the_host_until_a_retry_succeeds(make):
    store, f = make(["http://a.test/1"], min_delay_s=0.0, backoff_base_s=60.0)
    item = f.due(T0 + 1, 5)[0]
    robots(f, item, status=503, text=None, t=T0)
    until = store.host_row(1)["backoff_until"]
    assert T0 + 30 <= until <= T0 + 60.02
    assert f.due(until - 0.001, 5) == []
    retry = f.due(until, 5)
    assert [type(x).__name__ for x in retry] == ["RobotsVisit"]
    robots(f, retry[0], status=404, text=None, t=until)
    assert [x.url for x in f.due(until + 100, 5)] == ["http://a.test/1"]


def test_observations_carry_tau_and_rate_and_teach_the_policy(make):
    store, f = make(["http://a.test/1"], min_delay_s=0.0, budget=24.0)
    open_hosts(f)
    v = f.due(T0 + 5000, 1)[0]
    f.record([fetched(v, t=T0 + 100)])
    rate = f.rate[0]
    assert rate == pytest.approx(24.0)
    v = f.due(T0 + 5000, 1)[0]
    assert v.request.signature == "s1"
    f.record([fetched(v, Outcome.CHANGED, t=T0 + 100 + 1800, sig="s2")])
    row = store.observation_log(page_id=1, outcomes=["changed"])[0]
    assert row["tau_days"] == pytest.approx(1800 / 86400) and row["rate"] == pytest.approx(24.0)
    f.replan(T0 + 2000)
    assert store.page_rows([1])[1]["n_obs"] == 1
    assert np.isfinite(f.policy.estimated_delta()[0])


def test_restart_replays_the_log_and_keeps_politeness(make):
    urls = [f"http://h{i % 3}.test/{i}" for i in range(12)]
    store, f = make(urls, min_delay_s=5.0, budget=500.0)
    open_hosts(f)
    rng = np.random.default_rng(1)
    t = T0 + 10
    for _ in range(40):
        for v in f.due(t, 5):
            if isinstance(v, Visit):
                kind = Outcome.CHANGED if rng.random() < 0.5 else Outcome.UNCHANGED
                f.record([fetched(v, kind if v.request.signature else Outcome.FIRST, t=t, sig=str(rng.random()))])
        t += 5.0
    f.replan(t)
    before = f.policy.estimated_delta().copy()
    restart = t + 0.5
    g = Frontier(make.open(), f.settings, now=restart)
    after = g.policy.estimated_delta()
    assert np.array_equal(np.isnan(before), np.isnan(after))
    np.testing.assert_allclose(after[~np.isnan(after)], before[~np.isnan(before)], rtol=1e-12)
    # no host is contacted before a full delay after the restart
    assert [v for v in g.due(restart + 4.99, 10) if isinstance(v, Visit)] == []
    assert len(g.due(restart + 3000, 10)) == 3  # one per host once they are due


def test_pages_added_by_another_process_join_at_the_next_plan(make):
    store, f = make(["http://a.test/1"], budget=100.0)
    make.open().add_pages(parse_url_list(["http://a.test/2", "http://c.test/3"]), now=T0 + 1)
    f.replan(T0 + 2)
    assert f.rate[:3].tolist() == pytest.approx([100 / 3] * 3)
    assert {type(v).__name__ for v in f.due(T0 + 1000, 10)} == {"RobotsVisit"}


@pytest.mark.parametrize("policy", ["uniform", "nutch", "stormcrawler", "heritrix", "proportional",
                                    "learned:sa-interval", "asyncmirrorsync", "htraa"])
def test_every_baseline_policy_plans_live(tmp_path, policy):
    store = open_store(tmp_path / "c.db")
    store.add_pages(parse_url_list(["http://a.test/1", "http://a.test/2"]), now=T0)
    try:
        f = Frontier(store, CrawlSettings(budget=2400.0, policy=policy), now=T0)
        assert 0 < f.rate[:2].sum() <= 2400.0 * (1 + 1e-12)
        assert f.rate[2:].sum() == 0
    finally:
        store.close()


def test_a_host_whose_pages_are_all_disallowed_still_gets_robots_txt_again(make):
    store, f = make(["http://a.test/private/1", "http://a.test/private/2"], min_delay_s=0.0)
    open_hosts(f, text="User-agent: *\nDisallow: /private\n")
    assert f.due(T0 + 1000, 5) == [] and f.due(T0 + 1000, 5) == []  # one page of the host per call
    assert {store.page_rows([1, 2])[i]["status"] for i in (1, 2)} == {"disallowed"}
    later = T0 + 86_400
    item = f.due(later, 5)
    assert [type(x).__name__ for x in item] == ["RobotsVisit"]
    robots(f, item[0], text="", t=later)
    assert {v.url for v in f.due(later + 1, 5)} <= {"http://a.test/private/1", "http://a.test/private/2"}


def test_a_lease_that_runs_out_hands_the_visit_out_again(make):
    store, f = make(["http://a.test/1"], min_delay_s=0.0)
    open_hosts(f)
    v = f.due(T0 + 1000, 5, lease_s=60.0)
    assert len(v) == 1 and isinstance(v[0], Visit)
    assert f.due(T0 + 1059.9, 5) == []  # leased: neither the page nor its host is handed out
    again = f.due(T0 + 1060.0, 5)
    assert [x.page_id for x in again] == [v[0].page_id]  # the fetcher never reported: due again
    f.record([fetched(again[0], t=T0 + 1061)])
    assert store.observation_log(page_id=1)[0]["outcome"] == "first"



def test_several_pages_of_a_host_handed_out_together_hold_it_until_the_last_report(make):
    urls = [f"http://a.test/{j}" for j in range(5)] + ["http://b.test/1", "http://c.test/1"]
    store, f = make(urls, min_delay_s=0.0)
    open_hosts(f)
    t = T0 + 1000
    got = f.due(t, 3, per_host=3, lease_s=60.0)  # three hosts, up to three pages of each
    by_host: dict[int, list[Visit]] = {}
    for v in got:
        by_host.setdefault(v.host_id, []).append(v)
    assert sorted(len(vs) for vs in by_host.values()) == [1, 1, 3]
    assert [v.due for v in got] == sorted(v.due for v in got)  # earliest due first
    a = by_host[1]
    assert f.due(t, 10, per_host=3) == []  # every host is held
    f.record([fetched(a[0], t=t + 1), fetched(a[1], t=t + 2)])
    out = [v for v in f.due(t + 3, 10, per_host=3) if v.host_id == 1]
    assert out == []  # the third page of a is still out: a is held
    f.release([a[2]])
    again = {v.url for v in f.due(t + 3, 10, per_host=3) if v.host_id == 1}
    assert a[2].url in again and len(again) == 3


def test_robots_txt_is_handed_out_only_when_asked(make):
    store, f = make(["http://a.test/1", "http://b.test/1"], min_delay_s=0.0)
    got = f.due(T0 + 10, 10, robots=False, hosts=np.array([True, False]))
    assert [(type(v).__name__, v.host_id) for v in got] == [("Visit", 1)]  # host a only, no robots.txt
    later = f.due(T0 + 10, 10)  # a fetcher that enforces robots.txt through the frontier
    assert [type(v).__name__ for v in later] == ["RobotsVisit"]


def test_a_plan_in_three_steps_keeps_dispatching_and_recording_meanwhile(make):
    """prepare_plan / compute_plan / apply_plan: visits and outcomes between the steps are kept, the
    next plan is not due while one is under way, and a failed plan leaves the plan in force."""
    urls = [f"http://127.0.0.{2 + k % 2}/p{k}" for k in range(6)]
    store, f = make(urls, min_delay_s=0.0)
    t = open_hosts(f) + 1.0
    job = f.prepare_plan(t)
    assert f.planning and f.next_replan == np.inf
    with pytest.raises(RuntimeError):
        f.prepare_plan(t)
    visits = f.due(t + 600.0, 10)  # the plan in force still hands out visits
    assert visits and all(isinstance(v, Visit) for v in visits)
    f.record([fetched(v, t=t + 2.0) for v in visits])  # and takes their outcomes
    plan = f.compute_plan(job)
    f.apply_plan(job, plan, now=t + 3.0)
    assert not f.planning and f.planned_at == t and np.isfinite(f.next_replan)
    assert f.last_copy[visits[0].page_id - 1] == t + 2.0
    rows = store.page_rows([v.page_id for v in visits])
    assert all(rows[v.page_id]["last_copy_at"] == t + 2.0 for v in visits)
    job = f.prepare_plan(t + 10.0)
    n_pending = len(job.pending)
    f.cancel_plan(job)
    assert not f.planning and len(f._pending) == n_pending


def visit_all(frontier, now, t, outcome=Outcome.FIRST):
    """Visit every page due at ``now`` (a host hands out one at a time), each answered at ``t``."""
    done = []
    for _ in range(100):
        got = frontier.due(now, 100)
        if not got:
            return done
        frontier.record([fetched(v, outcome, t=t, sig="s2" if outcome is Outcome.CHANGED else "s1")
                         for v in got])
        done += got
    raise AssertionError("visits kept coming")


def test_a_plan_comes_once_a_tenth_of_the_pages_has_news(make):
    """``replan_after``: the next plan is due as soon as 10% of the active pages (here 2 of 20) have a
    new observation, long before ``replan_every_s``; first copies teach nothing and do not count. The
    plan saves each host's rate prior, and ``explain_page`` shows the page's posterior against it."""
    from freshcrawl.frontier.report import explain_page

    urls = [f"http://h{k % 2}.test/p{k}" for k in range(20)]
    store, f = make(urls, min_delay_s=0.0, budget=20 * 24.0, replan_after=0.1, replan_every_s=3600.0)
    t = open_hosts(f) + 1.0
    f.replan(t)
    clock_due = f.planned_at + 3600.0
    assert f.next_replan == clock_due
    firsts = visit_all(f, t + 3600.0, t + 1.0)  # within the first period (24 visits a day)
    assert len(firsts) == 20  # first copies: no observation
    assert f.n_news == 0 and f.next_replan == clock_due
    seconds = f.due(t + 3650.0, 20)  # one page of each host
    assert len(seconds) == 2
    f.record([fetched(seconds[0], Outcome.CHANGED, t=t + 3601.0, sig="s2")])
    assert f.n_news == 1 and f.next_replan == clock_due  # 1 of 20: not yet
    f.record([fetched(seconds[1], Outcome.UNCHANGED, t=t + 3601.0)])
    assert f.n_news == 2 and f.next_replan <= t + 3601.0  # 2 of 20: due now
    f.replan(t + 3702.0)
    assert f.n_news == 0 and f.next_replan == t + 3702.0 + 3600.0
    prior = store.settings()["rate_prior"]["hosts"]
    assert set(prior) == {"1", "2"} and all(m > 0 and v > 0 for m, v in prior.values())
    ex = explain_page(store, seconds[0].url, now=t + 3703.0)
    post = ex["rate_posterior"]
    host = str(store.page_by_url(seconds[0].url)["host_id"])
    assert (post["prior_mean"], post["prior_sd"] ** 2) == pytest.approx(tuple(prior[host]))
    assert post["interval"][0] < post["mean"] < post["interval"][1]
    assert 0.0 <= post["learned"] <= 1.0 and post["learning"] == (post["learned"] < 0.5)
    assert "planned on Δ" in post["summary"]
    with pytest.raises(ValueError, match="replan_after"):
        CrawlSettings(replan_after=1.5)


def test_replan_after_zero_keeps_plans_on_the_clock(make):
    urls = [f"http://h.test/p{k}" for k in range(4)]
    _, f = make(urls, min_delay_s=0.0, budget=4 * 24.0, replan_after=0.0, replan_every_s=3600.0)
    t = open_hosts(f) + 1.0
    f.replan(t)
    visit_all(f, t + 3600.0, t + 1.0)
    visit_all(f, t + 3650.0, t + 3601.0, Outcome.CHANGED)
    assert f.n_news == 4 and f.next_replan == t + 3600.0
