"""past conversations at scale: long turns in parts, and a per-customer generation for bounded recall

Revision ID: 0035
Revises: 0020

``conv_turn_part`` holds the second and later parts of a turn longer than the embedder's window
(the turn's own ``conv_turn`` row is its first part), each with its own vector in the turns
collection. ``conv_scope`` keeps one generation per customer, bumped by every write of that
customer's indexed turns (``epoch`` by every removal), and ``conv_turn.gen`` / ``conv_turn_part.gen``
the generation that wrote a row: a recall process keeps each customer's vectors in memory and reads
only the rows written since (``connector.conversations.scope_vectors``). Existing rows get
generation 0 and are read on a customer's first recall.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from connector.db.types import UTCDateTime

revision = "0035"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("conv_turn", sa.Column("gen", sa.Integer(), nullable=False, server_default="0"))
    op.create_index("ix_conv_turn_gen", "conv_turn", ["tenant", "customer_id", "gen"])
    op.create_table(
        "conv_turn_part",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("turn_id", sa.String(length=32), nullable=False),
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("customer_id", sa.String(length=128), nullable=False),
        sa.Column("part", sa.Integer(), nullable=False),
        sa.Column("occurred_at", UTCDateTime(), nullable=False),
        sa.Column("vector_hash", sa.String(length=32), nullable=False),
        sa.Column("gen", sa.Integer(), nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_conv_turn_part_turn", "conv_turn_part", ["turn_id"])
    op.create_index("ix_conv_turn_part_gen", "conv_turn_part", ["tenant", "customer_id", "gen"])
    op.create_table(
        "conv_scope",
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("customer_id", sa.String(length=128), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("epoch", sa.Integer(), nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("tenant", "customer_id"),
    )


def downgrade() -> None:
    op.drop_table("conv_scope")
    op.drop_index("ix_conv_turn_part_gen", table_name="conv_turn_part")
    op.drop_index("ix_conv_turn_part_turn", table_name="conv_turn_part")
    op.drop_table("conv_turn_part")
    op.drop_index("ix_conv_turn_gen", table_name="conv_turn")
    with op.batch_alter_table("conv_turn") as batch:
        batch.drop_column("gen")
