"""sync: the newest ERP stamp each run read and whether it held the watermark back

``sync status`` and ``doctor`` warn of a frozen or lagging watermark and of ERP clocks ahead of the
connector's from these two columns.

Revision ID: 0032
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from connector.db.types import UTCDateTime

revision = "0032"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sync_run") as batch:
        batch.add_column(sa.Column("latest_stamp", UTCDateTime(), nullable=True))
        batch.add_column(sa.Column("watermark_held", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sync_run") as batch:
        batch.drop_column("watermark_held")
        batch.drop_column("latest_stamp")
