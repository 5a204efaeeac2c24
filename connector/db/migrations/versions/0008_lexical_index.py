"""lexical index: scoped postings and document lengths for hybrid recall

Revision ID: 0008
Revises: 0006

``lexical_posting`` (one row per scope, source, term and document, with the term frequency; primary
key led by the scope, without rowid on SQLite) and ``lexical_doc`` (each document's length). Entries
stored before this revision are found by their vectors only until ``connector episodic reindex``
indexes them (the schema change stays free of application code).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lexical_posting",
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("customer_id", sa.String(length=128), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("term", sa.String(length=64), nullable=False),
        sa.Column("doc_id", sa.String(length=64), nullable=False),
        sa.Column("tf", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("tenant", "customer_id", "source", "term", "doc_id"),
        sqlite_with_rowid=False,
    )
    op.create_index("ix_lexical_posting_doc", "lexical_posting", ["source", "doc_id"])
    op.create_table(
        "lexical_doc",
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("doc_id", sa.String(length=64), nullable=False),
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("customer_id", sa.String(length=128), nullable=False),
        sa.Column("length", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("source", "doc_id"),
    )
    op.create_index("ix_lexical_doc_scope", "lexical_doc", ["tenant", "customer_id", "source"])


def downgrade() -> None:
    op.drop_index("ix_lexical_doc_scope", table_name="lexical_doc")
    op.drop_table("lexical_doc")
    op.drop_index("ix_lexical_posting_doc", table_name="lexical_posting")
    op.drop_table("lexical_posting")
