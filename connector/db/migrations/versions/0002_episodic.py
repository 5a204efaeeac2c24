"""episodic memory: case entries and raw cases

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import connector.db.types as ct

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "episodic_entry",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("customer_id", sa.String(length=128), nullable=False),
        sa.Column("case_id", sa.String(length=160), nullable=False),
        sa.Column("case_type", sa.String(length=64), nullable=True),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("summary_mode", sa.String(length=16), nullable=False),
        sa.Column("documents", ct.JSONType, nullable=False),
        sa.Column("doc_keys", ct.JSONType, nullable=False),
        sa.Column("occurred_at", ct.UTCDateTime(), nullable=False),
        sa.Column("retain_from", ct.UTCDateTime(), nullable=False),
        sa.Column("recorded_at", ct.UTCDateTime(), nullable=False),
        sa.Column("updated_at", ct.UTCDateTime(), nullable=False),
        sa.Column("archived_at", ct.UTCDateTime(), nullable=True),
        sa.Column("pii", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("embedding_model", sa.String(length=128), nullable=False),
        sa.Column("merged_count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("episodic_entry", schema=None) as batch_op:
        batch_op.create_index("ix_episodic_entry_scope", ["tenant", "customer_id", "status"], unique=False)

    op.create_table(
        "episodic_case",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("customer_id", sa.String(length=128), nullable=False),
        sa.Column("case_key", sa.String(length=160), nullable=False),
        sa.Column("entry_id", sa.String(length=64), nullable=False),
        sa.Column("case_type", sa.String(length=64), nullable=True),
        sa.Column("request", sa.Text(), nullable=False),
        sa.Column("resolution", sa.Text(), nullable=False),
        sa.Column("transcript", sa.Text(), nullable=True),
        sa.Column("documents", ct.JSONType, nullable=False),
        sa.Column("extra", ct.JSONType, nullable=False),
        sa.Column("occurred_at", ct.UTCDateTime(), nullable=False),
        sa.Column("recorded_at", ct.UTCDateTime(), nullable=False),
        sa.Column("pii", sa.Boolean(), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tenant", "customer_id", "case_key", name="uq_episodic_case_key"),
    )
    with op.batch_alter_table("episodic_case", schema=None) as batch_op:
        batch_op.create_index("ix_episodic_case_entry", ["entry_id"], unique=False)
        batch_op.create_index(
            "ix_episodic_case_hash", ["tenant", "customer_id", "content_hash"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("episodic_case", schema=None) as batch_op:
        batch_op.drop_index("ix_episodic_case_hash")
        batch_op.drop_index("ix_episodic_case_entry")
    op.drop_table("episodic_case")
    with op.batch_alter_table("episodic_entry", schema=None) as batch_op:
        batch_op.drop_index("ix_episodic_entry_scope")
    op.drop_table("episodic_entry")
