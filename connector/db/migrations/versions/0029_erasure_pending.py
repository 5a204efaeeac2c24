"""erasure: erasures whose Chroma part is not known to have finished

Every tombstone from before this revision gets a row: its forget may have been incomplete, so the
next forget of that customer searches Chroma by metadata once.

Revision ID: 0029
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from connector.db.types import UTCDateTime

revision = "0029"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "erasure_pending",
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("customer_digest", sa.String(length=64), nullable=False),
        sa.Column("since", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("tenant", "customer_digest"),
    )
    op.execute(
        "INSERT INTO erasure_pending (tenant, customer_digest, since) "
        "SELECT tenant, customer_digest, erased_at FROM erased_customer"
    )


def downgrade() -> None:
    op.drop_table("erasure_pending")
