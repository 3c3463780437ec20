"""``freshcrawl crawl add/run/status/explain/export`` and ``freshcrawl estimate`` on the export, through
click's runner, against a small test web, on SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from freshcrawl.cli import main
from freshcrawl.store import open_store
from freshcrawl.testing import HostSpec, TestWeb, make_pages


def invoke(*args: str, input: str | None = None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def n_pages(db: str) -> int:
    store = open_store(db)
    try:
        return sum(store.counts()["pages"].values())
    finally:
        store.close()


def test_add_refuses_a_file_with_bad_lines_whole_and_names_them(db_url, tmp_path):
    urls = tmp_path / "urls.txt"
    urls.write_text("http://127.0.0.2:8000/a\n# a comment\n\nnot a url\nhttp://127.0.0.2:8000/b 2.5\n"
                    "http://127.0.0.2:8000/c -1\nhttp://127.0.0.2:8000/d 1 extra\n")
    res = invoke("crawl", "add", "--db", db_url, str(urls))
    assert res.exit_code != 0
    assert "3 bad line(s)" in res.output and "nothing was added" in res.output
    for line in (4, 6, 7):
        assert f"urls.txt:{line}:" in res.output
    assert "urls.txt:1:" not in res.output and "urls.txt:5:" not in res.output
    store = open_store(db_url)  # the refused file added nothing (the database may not even exist yet)
    try:
        assert store.counts()["pages"] == {}
    finally:
        store.close()


def test_add_from_stdin_with_weights_skips_known_urls(db_url):
    text = "http://127.0.0.2:8000/a 2.5\nhttp://127.0.0.3:8000/b\nhttp://127.0.0.2:8000/a\n"
    res = invoke("crawl", "add", "--db", db_url, "-", input=text)
    assert res.exit_code == 0, res.output
    assert "added 2 page(s) (1 already in the crawl); 2 host(s)" in res.output
    res = invoke("crawl", "add", "--db", db_url, "-", input="http://127.0.0.2:8000/a 9\n")
    assert "added 0 page(s) (1 already in the crawl)" in res.output
    store = open_store(db_url)
    try:
        weights = {r["url"]: r["weight"] for r in store.page_rows([1, 2]).values()}
    finally:
        store.close()
    assert weights == {"http://127.0.0.2:8000/a": 2.5, "http://127.0.0.3:8000/b": 1.0}
    bad = invoke("crawl", "add", "--db", db_url, "-", input="http://127.0.0.2:8000/z nan\n")
    assert bad.exit_code != 0 and "<stdin>:1:" in bad.output
    assert n_pages(db_url) == 2


def test_run_status_explain_export_estimate(db_url, tmp_path):
    pages = make_pages(12, 2, (0.2, 2.0), seed=4)
    with TestWeb(pages, hosts=[HostSpec(), HostSpec(crawl_delay=0.2, disallow=["/page/11"])], seed=4) as web:
        urls = web.urls()
        res = invoke("crawl", "add", "--db", db_url, "-", input="\n".join(f"{u} {1 + k % 3}" for k, u in enumerate(urls)))
        assert res.exit_code == 0, res.output
        res = invoke("crawl", "run", "--db", db_url, "--budget", "8/s", "--for", "5s", "--replan-every", "1s",
                     "--min-delay", "0.1s", "--timeout", "2s")
        assert res.exit_code == 0, res.output
        requests = [r for r in web.requests() if r.page is not None]

    res = invoke("crawl", "status", "--db", db_url, "--json")
    assert res.exit_code == 0, res.output
    st = json.loads(res.output)
    store = open_store(db_url)
    try:
        counts = store.counts()
        log = store.observation_log()
        rows = store.page_rows(range(1, 13))
    finally:
        store.close()
    assert st["n_pages"] == 12 and st["hosts"] == 2
    assert st["pages"] == counts["pages"] == {"active": 11, "disallowed": 1}
    assert st["observations"] == counts["observations"]
    assert sum(st["observations"].values()) == len(log)
    fetched = [o for o in log if o["why"] != "robots"]
    assert len(fetched) == len(requests)  # a clean run commits every visit it made
    assert st["budget"] == pytest.approx(8 * 86400)
    assert 0 < st["budget_in_use"] <= st["budget"] * (1 + 1e-9)
    assert st["budget_in_use"] == pytest.approx(sum(r["rate"] for r in rows.values()))
    assert st["estimated_freshness"] is not None and 0 <= st["estimated_freshness"] <= 1
    assert st["failed_pages"] == [] and st["hosts_in_backoff"] == 0
    assert st["settings"]["policy"] == "learned" and st["settings"]["min_delay_s"] == pytest.approx(0.1)

    busiest = max(rows.values(), key=lambda r: sum(o["page_id"] == r["id"] for o in fetched))
    res = invoke("crawl", "explain", busiest["url"], "--db", db_url, "--json")
    assert res.exit_code == 0, res.output
    ex = json.loads(res.output)
    mine = [o for o in log if o["page_id"] == busiest["id"]]
    learn = [o for o in mine if o["outcome"] in ("changed", "unchanged")]
    assert ex["url"] == busiest["url"] and ex["weight"] == busiest["weight"]
    assert ex["n_log_rows"] == len(mine) and ex["n_observations"] == len(learn) >= 2
    assert ex["n_changes"] == sum(o["outcome"] == "changed" for o in learn)
    assert [o["time"] for o in ex["observations"]] == sorted((o["time"] for o in mine), reverse=True)[:20]
    lo, hi = ex["delta_interval"]
    assert 0 <= lo <= hi
    if ex["delta_hat"] is not None:
        assert lo <= ex["delta_hat"] <= hi
    lim = ex["limits"]
    assert set(lim) == {"budget", "host_cap", "backoff", "robots", "errors"}
    assert lim["budget"]["budget"] == pytest.approx(8 * 86400)
    delay = lim["host_cap"]["delay_s"]
    assert delay == pytest.approx(0.2 if busiest["url"].startswith(web.hosts[1].origin + "/") else 0.1)
    assert lim["host_cap"]["cap_per_day"] == pytest.approx(86400 / delay)
    assert lim["robots"]["disallowed"] is False and lim["errors"]["failed"] is False
    # how uncertain its rate is and what the plan made of it: the posterior under its host's prior
    post = ex["rate_posterior"]
    assert post["prior_mean"] > 0 and post["prior_sd"] > 0
    assert post["interval"][0] <= post["mean"] <= post["interval"][1] and post["sd"] > 0
    assert 0 <= post["learned"] <= 1 and post["learning"] == (post["learned"] < 0.5)
    # the text form says the same
    res = invoke("crawl", "explain", busiest["url"], "--db", db_url)
    assert res.exit_code == 0 and f"observations: {len(learn)}" in res.output
    assert f"posterior: Δ = {post['mean']:.4g} ± {post['sd']:.4g} changes/day" in res.output
    assert "plan: planned on Δ" in res.output

    blocked = next(u for u in urls if u.endswith("/page/11"))
    ex_b = json.loads(invoke("crawl", "explain", blocked, "--db", db_url, "--json").output)
    assert ex_b["status"] == "disallowed" and ex_b["limits"]["robots"]["disallowed"] is True

    # a URL not in the crawl, a malformed one: clear errors, exit code != 0
    res = CliRunner().invoke(main, ["crawl", "explain", "http://127.0.0.9:1/nowhere", "--db", db_url])
    assert res.exit_code != 0 and "is not in this crawl" in res.output
    res = CliRunner().invoke(main, ["crawl", "explain", "not a url", "--db", db_url])
    assert res.exit_code != 0 and "URL" in res.output

    out = tmp_path / "visits.csv"
    res = invoke("crawl", "export", "--db", db_url, "--out", str(out))
    assert res.exit_code == 0, res.output
    table = pd.read_csv(out)
    copies = [o for o in log if o["outcome"] in ("first", "changed", "unchanged")]
    assert list(table.columns) == ["page", "time", "changed"]
    assert len(table) == len(copies) and f"wrote {len(copies)} visits" in res.output
    assert set(table["page"]) <= set(urls) and table["changed"].sum() == sum(o["outcome"] == "changed" for o in copies)

    est_out = tmp_path / "rates.csv"
    res = invoke("estimate", str(out), "--method", "mle", "--out", str(est_out), "--json")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert summary["n_pages"] == table["page"].nunique()
    assert summary["n_observations"] == len(table) - table["page"].nunique()
    assert summary["n_changed"] == sum(o["outcome"] == "changed" for o in copies)
    rates = pd.read_csv(est_out)
    assert set(rates["page"]) == set(table["page"]) and (rates["delta"] >= 0).all()


def test_commands_on_a_missing_database_fail_clearly(tmp_path):
    missing = str(tmp_path / "none.db")
    for args in (["crawl", "status", "--db", missing], ["crawl", "run", "--db", missing, "--for", "1s"],
                 ["crawl", "export", "--db", missing, "--out", str(tmp_path / "v.csv")]):
        res = CliRunner().invoke(main, args)
        assert res.exit_code != 0 and "no crawl database" in res.output, (args, res.output)
    res = CliRunner().invoke(main, ["crawl", "run", "--db", str(tmp_path / "x.db"), "--for", "1s"])
    assert res.exit_code != 0


def test_run_refuses_a_database_another_process_writes(db_url, tmp_path):
    """One writer per crawl database: `crawl run` is refused while a `serve` (or another run) holds it."""
    from freshcrawl.store import acquire_writer_lock

    urls = tmp_path / "urls.txt"
    urls.write_text("http://127.0.0.2:9/a\n")
    assert invoke("crawl", "add", "--db", db_url, str(urls)).exit_code == 0
    with acquire_writer_lock(db_url):
        result = invoke("crawl", "run", "--db", db_url, "--budget", "10/day", "--for", "1s")
        assert result.exit_code != 0
        assert "already served by another process" in result.output
    store = open_store(db_url)
    try:  # nothing was visited, nothing planned by the refused run
        assert store.counts()["observations"] == {}
    finally:
        store.close()
