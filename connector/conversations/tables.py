"""Relational rows of the past-conversation index: which turns are indexed, and how far each session is.

``conv_turn`` holds one row per indexed turn: its id (the lexical ``doc_id`` and the Chroma id), scope,
session, turn number, date and the hash of the text its vector was made from. No text and no vector:
the text stays in ``work_turn`` and the vector in Chroma, the one vector store of record (#16.3).
``conv_session`` keeps, per session, the last turn the indexer has taken (``indexed_upto_seq``), so
the background indexer reads only new turns and a lost race is a compare-and-set that changes
nothing. Imports only sqlmodel/sqlalchemy and db types.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from connector.db.types import UTCDateTime


class ConvTurn(SQLModel, table=True):
    """One indexed turn of a customer's conversation."""

    __tablename__ = "conv_turn"
    __table_args__ = (
        sa.UniqueConstraint("session_id", "seq", name="uq_conv_turn_seq"),
        sa.Index("ix_conv_turn_scope", "tenant", "customer_id", "occurred_at"),
        sa.Index("ix_conv_turn_gen", "tenant", "customer_id", "gen"),
    )

    id: str = Field(primary_key=True, max_length=32)
    tenant: str = Field(max_length=64)
    customer_id: str = Field(max_length=128)
    session_id: str = Field(max_length=128)
    seq: int
    occurred_at: datetime = Field(sa_column=sa.Column(UTCDateTime(), nullable=False))
    vector_hash: str = Field(max_length=32)
    gen: int = Field(
        default=0, sa_column_kwargs={"server_default": "0"}
    )  # the scope generation that wrote it


class ConvTurnPart(SQLModel, table=True):
    """The second or a later part of a turn longer than the embedder's window (its own vector)."""

    __tablename__ = "conv_turn_part"
    __table_args__ = (
        sa.Index("ix_conv_turn_part_turn", "turn_id"),
        sa.Index("ix_conv_turn_part_gen", "tenant", "customer_id", "gen"),
    )

    id: str = Field(primary_key=True, max_length=32)
    turn_id: str = Field(max_length=32)
    tenant: str = Field(max_length=64)
    customer_id: str = Field(max_length=128)
    part: int
    occurred_at: datetime = Field(sa_column=sa.Column(UTCDateTime(), nullable=False))
    vector_hash: str = Field(max_length=32)
    gen: int = Field(default=0, sa_column_kwargs={"server_default": "0"})


class ConvScope(SQLModel, table=True):
    """Per customer: ``generation`` grows with every write of indexed turns, ``epoch`` with every
    removal, so a process holding the customer's vectors knows what to read again."""

    __tablename__ = "conv_scope"

    tenant: str = Field(primary_key=True, max_length=64)
    customer_id: str = Field(primary_key=True, max_length=128)
    generation: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    epoch: int = Field(default=0, sa_column_kwargs={"server_default": "0"})


class ConvSession(SQLModel, table=True):
    """How far the indexer has read one session (turns up to ``indexed_upto_seq`` are taken)."""

    __tablename__ = "conv_session"
    __table_args__ = (sa.Index("ix_conv_session_scope", "tenant", "customer_id"),)

    session_id: str = Field(primary_key=True, max_length=128)
    tenant: str = Field(max_length=64)
    customer_id: str = Field(max_length=128)
    indexed_upto_seq: int = 0


TURNS: sa.Table = SQLModel.metadata.tables["conv_turn"]
SESSIONS: sa.Table = SQLModel.metadata.tables["conv_session"]
PARTS: sa.Table = SQLModel.metadata.tables["conv_turn_part"]
SCOPES: sa.Table = SQLModel.metadata.tables["conv_scope"]
