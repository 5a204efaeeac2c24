"""audit: refused sign-ins (401s) keep the remote address and how many were coalesced

Revision ID: 0044
Revises: 0038
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0044"
down_revision = "0038"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("audit_event") as batch:
        batch.add_column(sa.Column("remote", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("repeats", sa.Integer(), nullable=False, server_default="1"))


def downgrade() -> None:
    with op.batch_alter_table("audit_event") as batch:
        batch.drop_column("repeats")
        batch.drop_column("remote")
