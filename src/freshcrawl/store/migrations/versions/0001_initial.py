"""The first schema: crawl settings, hosts, pages and the observation log.

Revision ID: 0001
Revises:
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "crawl",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    op.create_table(
        "hosts",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("origin", sa.String(512), nullable=False, unique=True),
        sa.Column("robots_status", sa.Integer),
        sa.Column("robots_text", sa.Text),
        sa.Column("robots_fetched_at", sa.Float),
        sa.Column("robots_why", sa.String(64)),
        sa.Column("crawl_delay_s", sa.Float),
        sa.Column("min_delay_s", sa.Float),
        sa.Column("max_per_day", sa.Float),
        sa.Column("last_request_at", sa.Float),
        sa.Column("backoff_until", sa.Float),
        sa.Column("n_backoff", sa.Integer, nullable=False, server_default="0"),
        sa.Column("n_errors", sa.Integer, nullable=False, server_default="0"),
    )
    op.create_table(
        "pages",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("url", sa.Text, nullable=False, unique=True),
        sa.Column("host_id", sa.Integer, sa.ForeignKey("hosts.id"), nullable=False),
        sa.Column("weight", sa.Float, nullable=False, server_default="1"),
        sa.Column("added_at", sa.Float, nullable=False),
        sa.Column("removed_at", sa.Float),
        sa.Column("status", sa.String(16), nullable=False, server_default="active"),
        sa.Column("last_visit_at", sa.Float),
        sa.Column("last_copy_at", sa.Float),
        sa.Column("etag", sa.Text),
        sa.Column("last_modified", sa.Text),
        sa.Column("signature", sa.String(128)),
        sa.Column("delta_hat", sa.Float),
        sa.Column("n_obs", sa.Integer, nullable=False, server_default="0"),
        sa.Column("rate", sa.Float, nullable=False, server_default="0"),
        sa.Column("next_due", sa.Float, nullable=False),
        sa.Column("n_errors", sa.Integer, nullable=False, server_default="0"),
        sa.Column("n_errors_total", sa.Integer, nullable=False, server_default="0"),
        sa.Column("last_error", sa.String(64)),
    )
    op.create_index("ix_pages_host_id", "pages", ["host_id"])
    op.create_table(
        "observations",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("page_id", sa.Integer, sa.ForeignKey("pages.id"), nullable=False),
        sa.Column("time", sa.Float, nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("tau_days", sa.Float),
        sa.Column("rate", sa.Float),
        sa.Column("status", sa.Integer),
        sa.Column("n_bytes", sa.Integer, nullable=False, server_default="0"),
        sa.Column("elapsed_s", sa.Float, nullable=False, server_default="0"),
        sa.Column("why", sa.String(64), nullable=False),
        sa.Column("error", sa.String(16)),
        sa.Column("source", sa.String(64), nullable=False, server_default="fetcher"),
    )
    op.create_index("ix_observations_page_id", "observations", ["page_id", "time"])


def downgrade() -> None:
    op.drop_table("observations")
    op.drop_table("pages")
    op.drop_table("hosts")
    op.drop_table("crawl")
