"""Body sizes up to 2^53 bytes: ``observations.n_bytes`` becomes a 64-bit integer.

SQLite's INTEGER is already 64-bit; PostgreSQL's ``integer`` is 32-bit and becomes ``bigint``.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        op.alter_column("observations", "n_bytes", type_=sa.BigInteger, existing_nullable=False)


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        op.alter_column("observations", "n_bytes", type_=sa.Integer, existing_nullable=False)
