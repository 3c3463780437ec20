"""Metadata a URLFrontier client keeps with a URL.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "url_metadata",
        sa.Column("page_id", sa.Integer, sa.ForeignKey("pages.id"), primary_key=True),
        sa.Column("metadata", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("url_metadata")
