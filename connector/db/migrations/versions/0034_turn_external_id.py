"""working memory: the caller's message id on a turn (``work_turn.external_id``)

Revision ID: 0034
Revises: 0020

Imported turns carry the id the source system gave the message, so a re-import adds nothing and
a recall hit can be mapped back to the source. Unique per session; NULL (turns recorded live) is
never a duplicate.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0034"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("work_turn", sa.Column("external_id", sa.String(length=255), nullable=True))
    op.create_index("uq_work_turn_external", "work_turn", ["session_id", "external_id"], unique=True)


def downgrade() -> None:
    op.drop_index("uq_work_turn_external", table_name="work_turn")
    with op.batch_alter_table("work_turn") as batch:
        batch.drop_column("external_id")
