"""working memory: sessions, turns, pinned values

Revision ID: 0003
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import connector.db.types as ct

revision = "0003"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "work_session",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.String(length=128), nullable=False),
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("customer_id", sa.String(length=128), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=True),
        sa.Column("workflow_id", sa.String(length=128), nullable=True),
        sa.Column("last_seq", sa.Integer(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("summary_mode", sa.String(length=16), nullable=True),
        sa.Column("summary_upto_seq", sa.Integer(), nullable=False),
        sa.Column("folds", sa.Integer(), nullable=False),
        sa.Column("consolidated_upto_seq", sa.Integer(), nullable=False),
        sa.Column("created_at", ct.UTCDateTime(), nullable=False),
        sa.Column("updated_at", ct.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("session_id", name="uq_work_session_id"),
    )
    with op.batch_alter_table("work_session", schema=None) as batch_op:
        batch_op.create_index("ix_work_session_scope", ["tenant", "customer_id"], unique=False)

    op.create_table(
        "work_turn",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.String(length=128), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("tool_name", sa.String(length=128), nullable=True),
        sa.Column("tool_args", ct.JSONType, nullable=True),
        sa.Column("tool_result", ct.JSONType, nullable=True),
        sa.Column("created_at", ct.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("session_id", "seq", name="uq_work_turn_seq"),
    )

    op.create_table(
        "work_pin",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.String(length=128), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("source", sa.String(length=255), nullable=True),
        sa.Column("seq", sa.Integer(), nullable=True),
        sa.Column("explicit", sa.Boolean(), nullable=False),
        sa.Column("updated_at", ct.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("session_id", "name", name="uq_work_pin_name"),
    )


def downgrade() -> None:
    op.drop_table("work_pin")
    op.drop_table("work_turn")
    with op.batch_alter_table("work_session", schema=None) as batch_op:
        batch_op.drop_index("ix_work_session_scope")
    op.drop_table("work_session")
