"""sync: the record kinds each stream delivers (scopes the deletion key scan)

Revision ID: 0005
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sync_stream_kind",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("stream", sa.String(length=64), nullable=False),
        sa.Column("record_type", sa.String(length=16), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tenant", "stream", "kind", name="uq_sync_stream_kind"),
    )


def downgrade() -> None:
    op.drop_table("sync_stream_kind")
