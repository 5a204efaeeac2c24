"""episodic memory: a compact copy of each entry's vector in its row

Revision ID: 0006
Revises: 0002

``episodic_entry.vector`` holds the entry's embedding as little-endian float16 bytes (768 bytes for
384 dimensions), written in the same transaction as the row, so recall ranks a customer's entries
from the rows it reads anyway instead of fetching their vectors from Chroma by id. Nullable: rows
written before this revision have no copy and recall falls back to Chroma for them.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("episodic_entry", schema=None) as batch_op:
        batch_op.add_column(sa.Column("vector", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("episodic_entry", schema=None) as batch_op:
        batch_op.drop_column("vector")
