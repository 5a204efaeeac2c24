"""sync: the problems of each run (records skipped or cleaned) and the ERP sessions a run holds

Revision ID: 0016
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from connector.db.types import UTCDateTime

revision = "0016"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sync_run") as batch:
        batch.add_column(sa.Column("problems", sa.Text(), nullable=True))
    op.create_table(
        "erp_session",
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("opened_at", UTCDateTime(), nullable=False),
        sa.Column("sealed", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("tenant"),
    )


def downgrade() -> None:
    op.drop_table("erp_session")
    with op.batch_alter_table("sync_run") as batch:
        batch.drop_column("problems")
