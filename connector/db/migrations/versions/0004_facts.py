"""learned facts and consolidation jobs

Revision ID: 0004
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import connector.db.types as ct

revision = "0004"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "learned_fact",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("scope_key", sa.String(length=64), nullable=False),
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("customer_id", sa.String(length=128), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=True),
        sa.Column("workflow_id", sa.String(length=128), nullable=True),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("content_key", sa.String(length=64), nullable=False),
        sa.Column("category", sa.String(length=32), nullable=False),
        sa.Column("importance", sa.Float(), nullable=False),
        sa.Column("peak_importance", sa.Float(), nullable=False),
        sa.Column("confirmations", sa.Integer(), nullable=False),
        sa.Column("sources", ct.JSONType, nullable=False),
        sa.Column("created_at", ct.UTCDateTime(), nullable=False),
        sa.Column("updated_at", ct.UTCDateTime(), nullable=False),
        sa.Column("last_confirmed_at", ct.UTCDateTime(), nullable=False),
        sa.Column("decay_day", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("scope_key", "content_key", name="uq_learned_fact_content"),
    )
    with op.batch_alter_table("learned_fact", schema=None) as batch_op:
        batch_op.create_index(
            "ix_learned_fact_top", ["scope_key", sa.text("importance DESC"), "id"], unique=False
        )
        batch_op.create_index("ix_learned_fact_customer", ["tenant", "customer_id"], unique=False)
        batch_op.create_index("ix_learned_fact_decay_day", ["decay_day"], unique=False)

    op.create_table(
        "consolidation_job",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("scope_key", sa.String(length=64), nullable=False),
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("customer_id", sa.String(length=128), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=True),
        sa.Column("workflow_id", sa.String(length=128), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("checksum", sa.String(length=64), nullable=False),
        sa.Column("sessions", ct.JSONType, nullable=False),
        sa.Column("sessions_processed", sa.Integer(), nullable=False),
        sa.Column("facts_created", sa.Integer(), nullable=False),
        sa.Column("facts_confirmed", sa.Integer(), nullable=False),
        sa.Column("facts_dropped", sa.Integer(), nullable=False),
        sa.Column("dropped", ct.JSONType, nullable=False),
        sa.Column("model", sa.String(length=128), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("started_at", ct.UTCDateTime(), nullable=False),
        sa.Column("finished_at", ct.UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("consolidation_job", schema=None) as batch_op:
        batch_op.create_index("ix_consolidation_job_scope", ["scope_key", "status", "checksum"], unique=False)
        batch_op.create_index("ix_consolidation_job_customer", ["tenant", "customer_id"], unique=False)


def downgrade() -> None:
    op.drop_table("consolidation_job")
    op.drop_table("learned_fact")
