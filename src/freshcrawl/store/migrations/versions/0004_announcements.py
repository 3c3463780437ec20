"""Change announcements: sources (sitemaps, feeds), the announcement log, trust per source and host,
and sitemap hints per page.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sources",
        sa.Column("page_id", sa.Integer, sa.ForeignKey("pages.id"), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("how", sa.String(16), nullable=False),
        sa.Column("added_at", sa.Float, nullable=False),
        sa.Column("read_at", sa.Float),
        sa.Column("n_entries", sa.Integer, nullable=False, server_default="0"),
        sa.Column("truncated", sa.Integer, nullable=False, server_default="0"),
        sa.Column("why", sa.Text),
    )
    op.create_table(
        "announcements",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("page_id", sa.Integer, sa.ForeignKey("pages.id"), nullable=False),
        sa.Column("source", sa.String(600), nullable=False),
        sa.Column("changed_at", sa.Float, nullable=False),
        sa.Column("received_at", sa.Float, nullable=False),
        sa.Column("note", sa.String(16)),
    )
    op.create_index("ix_announcements_page_id", "announcements", ["page_id", "changed_at"])
    op.create_table(
        "trust",
        sa.Column("source", sa.String(600), primary_key=True),
        sa.Column("host_id", sa.Integer, sa.ForeignKey("hosts.id"), primary_key=True),
        sa.Column("n_confirmed", sa.Integer, nullable=False, server_default="0"),
        sa.Column("n_refuted", sa.Integer, nullable=False, server_default="0"),
        sa.Column("n_missed", sa.Integer, nullable=False, server_default="0"),
        sa.Column("n_future", sa.Integer, nullable=False, server_default="0"),
        sa.Column("state", sa.String(16), nullable=False, server_default="learning"),
        sa.Column("reason", sa.Text),
        sa.Column("updated_at", sa.Float),
    )
    op.create_table(
        "page_hints",
        sa.Column("page_id", sa.Integer, sa.ForeignKey("pages.id"), primary_key=True),
        sa.Column("changefreq", sa.String(16)),
        sa.Column("priority", sa.Float),
    )


def downgrade() -> None:
    op.drop_table("page_hints")
    op.drop_table("trust")
    op.drop_index("ix_announcements_page_id", table_name="announcements")
    op.drop_table("announcements")
    op.drop_table("sources")
