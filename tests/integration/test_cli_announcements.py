"""``crawl add --sitemap/--feed`` and what ``crawl status`` and ``crawl explain`` say of the sources."""

from __future__ import annotations

from click.testing import CliRunner

from freshcrawl.cli import main
from freshcrawl.store import open_store


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_add_sitemaps_and_feeds(tmp_path):
    db = str(tmp_path / "crawl.db")
    urls = tmp_path / "urls.txt"
    urls.write_text("https://example.org/a\n")
    r = run(
        "crawl",
        "add",
        "--db",
        db,
        str(urls),
        "--sitemap",
        "https://example.org/sitemap.xml",
        "--sitemap",
        "auto",
        "--feed",
        "https://example.org/feed.xml",
    )
    assert r.exit_code == 0, r.output
    assert "added 1 page(s)" in r.output
    assert "2 sitemap(s) and feed(s) to read; robots.txt sitemaps are read" in r.output
    store = open_store(db)
    try:
        rows = store.source_rows()
        assert store.settings()["sitemaps_auto"] is True
    finally:
        store.close()
    assert [(x["url"], x["kind"], x["how"]) for x in rows] == [
        ("https://example.org/sitemap.xml", "sitemap", "user"),
        ("https://example.org/feed.xml", "feed", "user"),
    ]
    st = run("crawl", "status", "--db", db)
    assert (
        "source: https://example.org/sitemap.xml [sitemap, user] read -: not read yet" in st.output
    )
    # a second add of the same source is idempotent
    again = run("crawl", "add", "--db", db, "--feed", "https://example.org/feed.xml")
    assert again.exit_code == 0 and "1 sitemap(s) and feed(s) to read" in again.output


def test_bad_sources_are_refused_with_the_option_named(tmp_path):
    db = str(tmp_path / "crawl.db")
    r = run("crawl", "add", "--db", db, "--sitemap", "ftp://example.org/sitemap.xml")
    assert r.exit_code == 2 and "--sitemap" in r.output
    r = run("crawl", "add", "--db", db, "--feed", "http://169.254.169.254/feed")
    assert r.exit_code == 2 and "--feed" in r.output
    r = run("crawl", "add", "--db", db)
    assert r.exit_code == 2 and "give URLS_FILE, --sitemap or --feed" in r.output
    # nothing of a command with a bad source is written
    r = run(
        "crawl",
        "add",
        "--db",
        db,
        "--sitemap",
        "https://example.org/s.xml",
        "--feed",
        "ftp://x.test/f",
    )
    assert r.exit_code == 2 and not (tmp_path / "crawl.db").exists()
