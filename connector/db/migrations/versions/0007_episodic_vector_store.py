"""episodic memory: Chroma is the store of record for vectors; rows say which vector they want

Revision ID: 0007
Revises: 0006

Drops ``episodic_entry.vector`` (the float16 copy recall ranked from; recall now reads the scope's
vectors from Chroma by id) and adds ``vector_hash`` (which model and text made the entry's vector,
also stored beside the vector in Chroma, so the two stores can be compared id by id) and
``vector_pending`` (a write committed the row but Chroma does not have its vector yet). Rows from
before this revision have no hash: recall accepts their stored vector, and
``connector episodic reindex --check --fix`` stamps them. Downgrading restores an empty copy column
(0006 reads Chroma for rows without a copy).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("episodic_entry", schema=None) as batch_op:
        batch_op.drop_column("vector")
        batch_op.add_column(sa.Column("vector_hash", sa.String(length=32), nullable=True))
        batch_op.add_column(
            sa.Column("vector_pending", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("episodic_entry", schema=None) as batch_op:
        batch_op.drop_column("vector_pending")
        batch_op.drop_column("vector_hash")
        batch_op.add_column(sa.Column("vector", sa.LargeBinary(), nullable=True))
