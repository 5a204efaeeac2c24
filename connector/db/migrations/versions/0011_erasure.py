"""erasure: tombstones of erased customers (keyed by a digest of the id)

Revision ID: 0011
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from connector.db.types import UTCDateTime

revision = "0011"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "erased_customer",
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("customer_digest", sa.String(length=64), nullable=False),
        sa.Column("erased_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("tenant", "customer_digest"),
    )


def downgrade() -> None:
    op.drop_table("erased_customer")
