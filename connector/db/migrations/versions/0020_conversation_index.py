"""past-conversation index: indexed turns (ids, scope, session, turn, text hash) and per-session progress

Revision ID: 0020
Revises: 0003

``conv_turn`` names each indexed turn (its postings are in ``lexical_posting`` under source ``turn``,
its vector in Chroma's turns collection); ``conv_session`` is how far the background indexer has read
each session. Sessions recorded before this revision are indexed by the next catch-up pass
(``memory.conversations.index_pending()``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from connector.db.types import UTCDateTime

revision = "0020"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "conv_turn",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("customer_id", sa.String(length=128), nullable=False),
        sa.Column("session_id", sa.String(length=128), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("occurred_at", UTCDateTime(), nullable=False),
        sa.Column("vector_hash", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("session_id", "seq", name="uq_conv_turn_seq"),
    )
    op.create_index("ix_conv_turn_scope", "conv_turn", ["tenant", "customer_id", "occurred_at"])
    op.create_table(
        "conv_session",
        sa.Column("session_id", sa.String(length=128), nullable=False),
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("customer_id", sa.String(length=128), nullable=False),
        sa.Column("indexed_upto_seq", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("session_id"),
    )
    op.create_index("ix_conv_session_scope", "conv_session", ["tenant", "customer_id"])


def downgrade() -> None:
    op.drop_index("ix_conv_session_scope", table_name="conv_session")
    op.drop_table("conv_session")
    op.drop_index("ix_conv_turn_scope", table_name="conv_turn")
    op.drop_table("conv_turn")
