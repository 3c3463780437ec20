"""Announcements in the frontier: what visits make of them (trust), the plan they feed, restarts.

The Announcer is driven with exact timelines; the frontier with hand-made outcomes carrying a
sitemap's bytes (no HTTP), on SQLite.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from freshcrawl.crawler.outcome import FetchOutcome, Outcome, RobotsOutcome
from freshcrawl.frontier import CrawlSettings, Frontier, RobotsVisit, parse_url_list
from freshcrawl.frontier.announce import (
    FUTURE_SLACK_S,
    MAX_FUTURE,
    MIN_JUDGED,
    Announcer,
    Tally,
    judge_trust,
)
from freshcrawl.frontier.sources import add_sources, ingest
from freshcrawl.store import open_store

T0 = 1_800_000_000.0
SRC = "sitemap:http://a.test/sitemap.xml"


@pytest.mark.parametrize(
    ("tally", "state", "words"),
    [
        (Tally(), "learning", "0 of 4 visits judged"),
        (Tally(confirmed=3), "learning", "3 of 4"),
        (Tally(confirmed=4), "trusted", "4 of 4 announcements confirmed"),
        (Tally(confirmed=3, refuted=1), "trusted", "3 of 4 announcements confirmed"),
        (
            Tally(confirmed=2, refuted=2),
            "demoted",
            "announces changes that visits do not find: 2 of 4",
        ),
        (Tally(confirmed=2, missed=2), "demoted", "misses changes that visits find"),
        (Tally(missed=4), "demoted", "0 of 4 changes found were announced"),
        (Tally(confirmed=9, future=MAX_FUTURE), "demoted", "in the future"),
    ],
)
def test_judge_trust(tally, state, words):
    got = judge_trust(tally)
    assert got[0] == state and words in got[1], got


def _timeline(mode: str, n_visits: int) -> Announcer:
    """One page of host 0: it changes just before each visit (every 10 s); the source is read between
    visits and announces as ``mode`` says; the visits are judged."""
    an = Announcer(np.random.default_rng(0))
    an.list_page(0, SRC, T0)
    copy = T0 + 1
    for j in range(1, n_visits + 1):
        change = copy + 5
        read = change + 2
        stamp = {
            "honest": change,
            "bumped": read,
            "frozen": T0,
            "future": read + 2 * FUTURE_SLACK_S,
        }[mode]
        an.announce(0, 0, SRC, stamp, read, copy)
        an.horizon[SRC] = read
        visit = read + 3
        changed = (
            mode != "bumped" or j % 2 == 0
        )  # the bumped source's page changes every other visit
        an.on_visit(0, 0, copy, visit, changed)
        copy = visit
        an.horizon[SRC] = visit + 5  # read again after the visit, nothing new
        an.refresh(visit + 5)
    return an


def test_an_honest_source_is_trusted_after_min_judged_visits():
    assert _timeline("honest", MIN_JUDGED - 1).state[(SRC, 0)][0] == "learning"
    an = _timeline("honest", MIN_JUDGED)
    assert an.state[(SRC, 0)] == (
        "trusted",
        "4 of 4 announcements confirmed by visits; 4 of 4 changes found were announced",
    )


@pytest.mark.parametrize(
    ("mode", "n", "words"),
    [
        ("bumped", MIN_JUDGED, "announces changes that visits do not find: 2 of 4"),
        (
            "frozen",
            MIN_JUDGED,
            "misses changes that visits find: 0 of 0 announcements confirmed by visits; 0 of 4",
        ),
        ("future", MAX_FUTURE, "3 announcements dated in the future"),
    ],
)
def test_lying_sources_are_demoted_within_a_bounded_number_of_visits(mode, n, words):
    an = _timeline(mode, n)
    state, reason = an.state[(SRC, 0)]
    assert state == "demoted" and words in reason, reason
    assert _timeline(mode, n - 1).state[(SRC, 0)][0] == "learning"


def test_a_change_announced_late_is_judged_once_the_source_has_spoken():
    an = Announcer(np.random.default_rng(0))
    an.list_page(0, SRC, T0)
    an.horizon[SRC] = T0 + 1
    an.on_visit(0, 0, T0 + 2, T0 + 20, True)  # changed, nothing announced yet: pending
    an.refresh(T0 + 21)
    assert an.tally == {} and len(an.pending) == 1
    an.announce(0, 0, SRC, T0 + 10, T0 + 30, T0 + 20)
    an.horizon[SRC] = T0 + 30
    an.refresh(T0 + 31)
    assert an.tally[(SRC, 0)] == Tally(confirmed=1) and an.pending == []
    # a later change hides an earlier one in a sitemap: neither confirmed nor missed
    an.on_visit(0, 0, T0 + 20, T0 + 40, True)
    an.announce(0, 0, SRC, T0 + 45, T0 + 50, T0 + 40)
    an.horizon[SRC] = T0 + 50
    an.refresh(T0 + 51)
    assert an.tally[(SRC, 0)] == Tally(confirmed=1)


# ------------------------------------------------------------------------------------ frontier
def _iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).isoformat()


def _sitemap(urls, stamps) -> bytes:
    rows = "".join(
        f"<url><loc>{u}</loc><lastmod>{_iso(t)}</lastmod></url>"
        for u, t in zip(urls, stamps, strict=True)
    )
    return f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{rows}</urlset>'.encode()


class Site:
    """Four pages of a.test that change at known times, and its honest (or lying) sitemap."""

    def __init__(self, mode: str) -> None:
        self.urls = [f"http://a.test/p{i}" for i in range(4)]
        self.mode = mode
        self.changes = {u: [T0 - 100.0] for u in self.urls}

    def change(self, i: int, t: float) -> None:
        self.changes[self.urls[i]].append(t)

    def answer(self, visit, t: float) -> FetchOutcome:
        url = visit.url
        if url.endswith("sitemap.xml"):
            stamps = [self.changes[u][-1] if self.mode == "honest" else t for u in self.urls]
            body = _sitemap(self.urls, stamps)
            sig = str(hash(body))
        else:
            body, sig = None, str(len([c for c in self.changes[url] if c <= t]))
        old = visit.request.signature
        kind = (
            Outcome.FIRST if old is None else (Outcome.UNCHANGED if old == sig else Outcome.CHANGED)
        )
        return FetchOutcome(url, kind, "x", t, 0.01, 200, 10, signature=sig, body=body)


def _crawl(tmp_path, mode):
    store = open_store(tmp_path / "crawl.db")
    site = Site(mode)
    store.add_pages(parse_url_list(site.urls), now=T0)
    frontier = Frontier(
        store, CrawlSettings(budget=8640.0, min_delay_s=0.0, replan_every_s=30.0), now=T0
    )
    (sid,) = add_sources(frontier, ["http://a.test/sitemap.xml"], "sitemap", now=T0)
    for item in frontier.due(T0 + 1e6, 10):
        assert isinstance(item, RobotsVisit)
        frontier.record_robots(item, RobotsOutcome(item.origin, 200, "", T0, 0.01, "ok"))
    return store, site, frontier, sid


def _run(frontier, site, t, t_end, step=1.0, changes=()):
    """Visit what is due every ``step`` seconds up to ``t_end``; page i changes at the times given."""
    changes = sorted(changes)
    while t < t_end:
        t += step
        while changes and changes[0][0] <= t:
            site.change(changes[0][1], changes.pop(0)[0])
        if t >= frontier.next_replan:
            frontier.replan(t)
        items = [v for v in frontier.due(t, 10, per_host=10) if not isinstance(v, RobotsVisit)]
        frontier.record([(v, site.answer(v, t)) for v in items])
    return t


def test_an_honest_sitemap_makes_its_pages_completely_observed_and_changes_are_followed(tmp_path):
    store, site, frontier, sid = _crawl(tmp_path, "honest")
    try:
        rng = np.random.default_rng(1)
        changes = [(T0 + float(t), i) for i in range(4) for t in np.cumsum(rng.exponential(60, 12))]
        t = _run(frontier, site, T0, T0 + 600, changes=changes)
        frontier.replan(t)
        (row,) = store.trust_rows()
        assert row["state"] == "trusted" and row["n_refuted"] == 0 and row["n_missed"] == 0, row
        assert row["n_confirmed"] >= MIN_JUDGED
        assert frontier.policy.completely_observed_[:4].all()
        assert set(frontier.announcer.follow_p) == {0, 1, 2, 3}
        # a new change announced by the sitemap is followed: the page is due at once
        site.change(2, t + 0.5)
        due_before = frontier.next_due[2]
        frontier.hold(sid, t + 1)
        items = frontier.due(t + 1, 10, per_host=10)
        sitemap = next(v for v in items if v.page_id == sid)
        frontier.release([v for v in items if v is not sitemap])
        frontier.record([(sitemap, site.answer(sitemap, t + 1))])
        assert frontier.next_due[2] == t + 1 < due_before
        log = store.announcement_log()
        assert (3, SRC, t + 0.5) in [entry[:3] for entry in log]
        # the visit made for the announcement judges the source but is not taught: it finds the
        # change by construction; the sitemap's own reads are never taught (its rate is no page's)
        n_obs, n_confirmed = int(frontier.n_obs[2]), row["n_confirmed"]
        assert frontier.following == {2}
        (visit,) = [v for v in frontier.due(t + 2, 10, per_host=10) if v.page_id == 3]
        frontier.record([(visit, site.answer(visit, t + 2))])
        frontier.replan(t + 2)
        assert frontier.following == set() and frontier.n_obs[2] == n_obs
        assert store.trust_rows()[0]["n_confirmed"] == n_confirmed + 1
        page_id, _, _, tau, *_ = store.learning_log()  # what a restart teaches: tau > 0
        assert (page_id == sid).any() and not (tau[page_id == sid] > 0).any()
        assert frontier.n_obs[sid - 1] == 0
        assert np.isfinite(frontier.policy.rates_[sid - 1]) and frontier.policy.rates_[sid - 1] > 0
        # explain and status say so
        from freshcrawl.frontier.report import crawl_status, explain_page

        ex = explain_page(store, site.urls[2])["announcements"]
        assert ex["completely_observed"] and ex["sources"][0]["state"] == "trusted"
        assert crawl_status(store)["announcements"]["sources"][0]["why"] == "sitemap: 4 URLs"
    finally:
        store.close()


def test_a_bumped_sitemap_is_demoted_with_its_reason_and_survives_a_restart(tmp_path):
    store, site, frontier, _ = _crawl(tmp_path, "bumped")
    try:
        changes = [(T0 + 300.0 * j + 7 * i, i) for i in range(4) for j in range(1, 3)]
        t = _run(frontier, site, T0, T0 + 600, changes=changes)
        frontier.replan(t)
        (row,) = store.trust_rows()
        assert (
            row["state"] == "demoted"
            and "announces changes that visits do not find" in row["reason"]
        )
        assert not frontier.policy.completely_observed_.any() and frontier.announcer.follow_p == {}
        n_log = len(store.announcement_log())
        again = Frontier(store, frontier.settings, now=t + 1)
        assert again.announcer.state[(SRC, 0)] == ("demoted", row["reason"])
        assert sum(len(p.times.get(SRC, [])) for p in again.announcer.pages.values()) == n_log
    finally:
        store.close()


def test_announcements_from_a_pipeline_and_future_dates(tmp_path):
    store, site, frontier, _ = _crawl(tmp_path, "honest")
    try:
        _run(frontier, site, T0, T0 + 20)
        got = ingest(
            frontier,
            "rest:cms",
            [
                (site.urls[0], T0 + 15, None, None),
                (site.urls[1], T0 + 20 + 2 * FUTURE_SLACK_S, None, None),
                ("http://a.test/unknown", T0, None, None),
            ],
            now=T0 + 21,
        )
        assert (got.n_entries, got.n_new, got.n_future, got.n_unknown, got.n_followed) == (
            3,
            1,
            1,
            1,
            0,
        )
        notes = [(r[1], r[4]) for r in store.announcement_log() if r[1] == "rest:cms"]
        assert notes == [("rest:cms", None), ("rest:cms", "future")]
        # the same announcement again is not logged twice
        assert (
            ingest(frontier, "rest:cms", [(site.urls[0], T0 + 15, None, None)], now=T0 + 22).n_new
            == 0
        )
    finally:
        store.close()


def test_bad_sitemaps_are_recorded_reads_and_an_index_adds_its_sitemaps(tmp_path):
    store, _, frontier, sid = _crawl(tmp_path, "honest")
    try:
        frontier.hold(sid, T0 + 1)
        items = frontier.due(T0 + 1, 10, per_host=10)
        (visit,) = [v for v in items if v.page_id == sid]
        frontier.release([v for v in items if v is not visit])
        broken = b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://a.test/p0</loc></url>\n<url></oops>'
        frontier.record(
            [
                (
                    visit,
                    FetchOutcome(
                        visit.url,
                        Outcome.FIRST,
                        "x",
                        T0 + 1,
                        0.01,
                        200,
                        10,
                        signature="a",
                        body=broken,
                    ),
                )
            ]
        )
        (row,) = store.source_rows()
        assert row["n_entries"] == 1 and row["read_at"] == T0 + 1
        assert "line 2, column 8: mismatched tag" in row["why"]
        index = (
            b'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            b"<sitemap><loc>http://a.test/more.xml</loc></sitemap>"
            b"<sitemap><loc>http://elsewhere.test/s.xml</loc></sitemap></sitemapindex>"
        )
        frontier.hold(sid, T0 + 2)
        items = frontier.due(T0 + 2, 10, per_host=10)
        (visit,) = [v for v in items if v.page_id == sid]
        frontier.release([v for v in items if v is not visit])
        frontier.record(
            [
                (
                    visit,
                    FetchOutcome(
                        visit.url,
                        Outcome.CHANGED,
                        "x",
                        T0 + 2,
                        0.01,
                        200,
                        10,
                        signature="b",
                        body=index,
                    ),
                )
            ]
        )
        rows = store.source_rows()
        assert [(r["url"], r["how"]) for r in rows] == [
            ("http://a.test/sitemap.xml", "user"),
            ("http://a.test/more.xml", "index"),
        ]
        assert "'http://elsewhere.test/s.xml' refused" in rows[0]["why"]
        assert store.page_by_url("http://elsewhere.test/s.xml") is None
    finally:
        store.close()
