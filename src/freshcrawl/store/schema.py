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

__all__ = ["metadata", "crawl", "hosts", "pages", "observations", "url_metadata", "PAGE_STATUSES"]

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
