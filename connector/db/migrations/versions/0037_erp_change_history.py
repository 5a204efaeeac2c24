"""semantic: the ERP facts' change history (erp_change)

Revision ID: 0037
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from connector.db.types import UTCDateTime

revision = "0037"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "erp_change",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("entity", sa.String(length=16), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("external_id", sa.String(length=160), nullable=False),
        sa.Column("number", sa.String(length=128), nullable=True),
        sa.Column("party_kind", sa.String(length=16), nullable=False),
        sa.Column("party_external_id", sa.String(length=128), nullable=False),
        sa.Column("field", sa.String(length=64), nullable=False),
        sa.Column("value_type", sa.String(length=16), nullable=False),
        sa.Column("old_value", sa.Text(), nullable=True),
        sa.Column("new_value", sa.Text(), nullable=True),
        sa.Column("currency", sa.String(length=8), nullable=True),
        sa.Column("erp_changed_at", UTCDateTime(), nullable=False),
        sa.Column("seen_at", UTCDateTime(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_erp_change_party", "erp_change", ["tenant", "party_kind", "party_external_id", "erp_changed_at"]
    )
    op.create_index("ix_erp_change_record", "erp_change", ["tenant", "entity", "kind", "external_id", "field"])
    op.create_index("ix_erp_change_seen", "erp_change", ["seen_at"])


def downgrade() -> None:
    op.drop_table("erp_change")
