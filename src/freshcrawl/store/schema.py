"""The crawl state's tables (SQLAlchemy Core), shared by SQLite and PostgreSQL.

Times are seconds since the Unix epoch (``REAL`` / double precision), rates visits per day.

``crawl``
    One row per setting of the crawl (``key``, ``value`` as JSON text): budget, policy, signature mode,
    user agent, politeness defaults.
``hosts``
    One row per origin (``scheme://name[:port]``, the scope of a robots.txt, RFC 9309 Sec. 2.3): the
    robots.txt as fetched (status, text, time), its Crawl-delay, the user's politeness settings, the
    time of the last request, the back-off and error counts.
``pages``
    One row per URL (normalised): host, weight, when added or removed, the last visit and the last visit
    that gave a copy, the validators and signature of that copy, the estimator's Δ̂ and observation
    count at the last plan, the current crawl rate, the next due time, error counts and a status.
``observations``
    The append-only log of visits: page, time, outcome (changed / unchanged / first / no-info), τ and the
    rate in force for observations, HTTP status, bytes, elapsed time, why, the error kind and the source
    (``fetcher`` or the name of an outside reporter). The estimators' state is a function of this log.
``url_metadata``
    What a URLFrontier client keeps with a URL (JSON, key -> list of strings; revision 0002), handed
    back with it; freshcrawl does not read it.
``sources``
    The pages that are sitemaps or feeds (revision 0004): their kind, how they joined (``user``,
    ``robots`` for a robots.txt ``Sitemap:`` line, ``index`` for a sitemap index's child), the last
    read (time, URLs, whether a limit cut it, and what it said, problems included).
``announcements``
    The append-only log of announced changes (revision 0004): page, source (``sitemap:<url>``,
    ``feed:<url>``, a REST client's name, ``grpc:sitemap`` ...), the announced change time, when it
    was received, and a note (``future``: dated after it was received; ``naive-tz``: read as UTC).
``trust``
    Per source and host (revision 0004): visits that confirmed or refuted its announcements, changes
    it missed, dates in the future, and the state the plan uses (``learning``, ``trusted``,
    ``demoted``) with its reason.
``page_hints``
    A sitemap's ``changefreq`` and ``priority`` of a page (revision 0004): priors of Δ and weight.

``pages.next_due`` has no index on purpose: a re-plan rewrites it for every page, and an index would
make that a random B-tree update per page, an order of magnitude slower on SQLite; the frontier
keeps the due times in memory.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

__all__ = [
    "metadata",
    "crawl",
    "hosts",
    "pages",
    "observations",
    "url_metadata",
    "sources",
    "announcements",
    "trust",
    "page_hints",
    "PAGE_STATUSES",
]

#: ``active``: scheduled; ``disallowed``: robots.txt forbids it (re-checked when robots.txt is fetched
#: again); ``failed``: too many errors in a row, no longer visited (reported by ``crawl status``);
#: ``removed``: taken out of the crawl (its observations stay in the log).
PAGE_STATUSES = ("active", "disallowed", "failed", "removed")

metadata = MetaData()

crawl = Table(
    "crawl",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

hosts = Table(
    "hosts",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("origin", String(512), nullable=False, unique=True),
    Column("robots_status", Integer),
    Column("robots_text", Text),
    Column("robots_fetched_at", Float),
    Column("robots_why", String(64)),
    Column("crawl_delay_s", Float),
    Column("min_delay_s", Float),
    Column("max_per_day", Float),
    Column("last_request_at", Float),
    Column("backoff_until", Float),
    Column("n_backoff", Integer, nullable=False, server_default="0"),
    Column("n_errors", Integer, nullable=False, server_default="0"),
)

pages = Table(
    "pages",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("url", Text, nullable=False, unique=True),
    Column("host_id", Integer, ForeignKey("hosts.id"), nullable=False),
    Column("weight", Float, nullable=False, server_default="1"),
    Column("added_at", Float, nullable=False),
    Column("removed_at", Float),
    Column("status", String(16), nullable=False, server_default="active"),
    Column("last_visit_at", Float),
    Column("last_copy_at", Float),
    Column("etag", Text),
    Column("last_modified", Text),
    Column("signature", String(128)),
    Column("delta_hat", Float),
    Column("n_obs", Integer, nullable=False, server_default="0"),
    Column("rate", Float, nullable=False, server_default="0"),
    Column("next_due", Float, nullable=False),
    Column("n_errors", Integer, nullable=False, server_default="0"),
    Column("n_errors_total", Integer, nullable=False, server_default="0"),
    Column("last_error", String(64)),
    Index("ix_pages_host_id", "host_id"),
)

observations = Table(
    "observations",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("page_id", Integer, ForeignKey("pages.id"), nullable=False),
    Column("time", Float, nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("tau_days", Float),
    Column("rate", Float),
    Column("status", Integer),
    Column("n_bytes", BigInteger, nullable=False, server_default="0"),
    Column("elapsed_s", Float, nullable=False, server_default="0"),
    Column("why", String(64), nullable=False),
    Column("error", String(16)),
    Column("source", String(64), nullable=False, server_default="fetcher"),
    Index("ix_observations_page_id", "page_id", "time"),
)

#: Metadata a URLFrontier client keeps with a URL (JSON: key -> list of strings), handed back with it.
url_metadata = Table(
    "url_metadata",
    metadata,
    Column("page_id", Integer, ForeignKey("pages.id"), primary_key=True),
    Column("metadata", Text, nullable=False),
)

#: Pages that are sitemaps or feeds (revision 0004).
sources = Table(
    "sources",
    metadata,
    Column("page_id", Integer, ForeignKey("pages.id"), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("how", String(16), nullable=False),
    Column("added_at", Float, nullable=False),
    Column("read_at", Float),
    Column("n_entries", Integer, nullable=False, server_default="0"),
    Column("truncated", Integer, nullable=False, server_default="0"),
    Column("why", Text),
)

#: Announced changes (revision 0004).
announcements = Table(
    "announcements",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("page_id", Integer, ForeignKey("pages.id"), nullable=False),
    Column("source", String(600), nullable=False),
    Column("changed_at", Float, nullable=False),
    Column("received_at", Float, nullable=False),
    Column("note", String(16)),
    Index("ix_announcements_page_id", "page_id", "changed_at"),
)

#: Trust in each source on each host (revision 0004).
trust = Table(
    "trust",
    metadata,
    Column("source", String(600), primary_key=True),
    Column("host_id", Integer, ForeignKey("hosts.id"), primary_key=True),
    Column("n_confirmed", Integer, nullable=False, server_default="0"),
    Column("n_refuted", Integer, nullable=False, server_default="0"),
    Column("n_missed", Integer, nullable=False, server_default="0"),
    Column("n_future", Integer, nullable=False, server_default="0"),
    Column("state", String(16), nullable=False, server_default="learning"),
    Column("reason", Text),
    Column("updated_at", Float),
)

#: A sitemap's changefreq and priority of a page (revision 0004).
page_hints = Table(
    "page_hints",
    metadata,
    Column("page_id", Integer, ForeignKey("pages.id"), primary_key=True),
    Column("changefreq", String(16)),
    Column("priority", Float),
)
