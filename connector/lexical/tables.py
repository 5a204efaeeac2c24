"""The scoped lexical index: postings and document lengths, in the relational store.

``lexical_posting`` holds one row per (scope, source, term, document) with the term's frequency;
its primary key starts with the scope, so a query reads only the postings of its own terms within
one customer (an index range per term), never another customer's rows, and its cost follows that
customer's history. ``lexical_doc`` holds each document's length (in terms), from which BM25 takes
the scope's document count and average length. ``source`` names what a document is (``case`` for
an episodic entry, keyed by the entry id), so other kinds of text can share the index.
Imports only sqlmodel/sqlalchemy (no cycles with ``connector.db.models``).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

CASE_SOURCE = "case"
TURN_SOURCE = "turn"  # a turn of a past conversation, keyed by its ``conv_turn.id``


class LexicalPosting(SQLModel, table=True):
    """One term of one document: how often it occurs there."""

    __tablename__ = "lexical_posting"
    __table_args__ = (
        sa.Index("ix_lexical_posting_doc", "source", "doc_id"),
        {"sqlite_with_rowid": False},
    )

    tenant: str = Field(primary_key=True, max_length=64)
    customer_id: str = Field(primary_key=True, max_length=128)
    source: str = Field(primary_key=True, max_length=16)
    term: str = Field(primary_key=True, max_length=64)
    doc_id: str = Field(primary_key=True, max_length=64)
    tf: int


class LexicalDoc(SQLModel, table=True):
    """One indexed document of a scope and its length in terms."""

    __tablename__ = "lexical_doc"
    __table_args__ = (sa.Index("ix_lexical_doc_scope", "tenant", "customer_id", "source"),)

    source: str = Field(primary_key=True, max_length=16)
    doc_id: str = Field(primary_key=True, max_length=64)
    tenant: str = Field(max_length=64)
    customer_id: str = Field(max_length=128)
    length: int


POSTINGS: sa.Table = SQLModel.metadata.tables["lexical_posting"]
DOCS: sa.Table = SQLModel.metadata.tables["lexical_doc"]
