"""audit: the audit trail (audit_event): who wrote, erased or read what, never the content

Revision ID: 0038
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from connector.db.types import UTCDateTime

revision = "0038"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_event",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("who", sa.String(length=64), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("tenant", sa.String(length=64), nullable=True),
        sa.Column("customer_id", sa.String(length=128), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_audit_event_at", "audit_event", ["at"])
    op.create_index("ix_audit_event_scope", "audit_event", ["tenant", "customer_id", "at"])
    op.create_index("ix_audit_event_who", "audit_event", ["who", "at"])


def downgrade() -> None:
    op.drop_table("audit_event")
