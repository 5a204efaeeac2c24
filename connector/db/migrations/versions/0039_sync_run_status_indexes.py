"""sync: indexes for ``sync status`` (and the console's Sync page)

Each stream's latest run, its latest successful runs and its failures since become short ranges
of ``(tenant, stream, id)`` and ``(tenant, stream, status, id)``, read backwards, instead of
grouped and windowed reads that scanned every run several times per call.

Revision ID: 0039
Revises: 0032
"""

from __future__ import annotations

from alembic import op

revision = "0039"
down_revision = "0032"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_sync_run_latest", "sync_run", ["tenant", "stream", "id"])
    op.create_index("ix_sync_run_outcome", "sync_run", ["tenant", "stream", "status", "id"])


def downgrade() -> None:
    op.drop_index("ix_sync_run_outcome", table_name="sync_run")
    op.drop_index("ix_sync_run_latest", table_name="sync_run")
