"""Relational tables of working memory: sessions, turns and pinned values.

A session row carries the append counter (``last_seq``) and the running summary together with
the turn it covers (``summary_upto_seq``), so appends serialise on that row and a fold is applied
with a compare-and-set on ``summary_upto_seq``. Imports only sqlmodel/sqlalchemy and db types.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from connector.db.types import JSONType, UTCDateTime


class WorkSession(SQLModel, table=True):
    """One conversation of one (tenant, customer)."""

    __tablename__ = "work_session"
    __table_args__ = (
        sa.UniqueConstraint("session_id", name="uq_work_session_id"),
        sa.Index("ix_work_session_scope", "tenant", "customer_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    session_id: str = Field(max_length=128)
    tenant: str = Field(max_length=64)
    customer_id: str = Field(max_length=128)
    agent_id: str | None = Field(default=None, max_length=128)
    workflow_id: str | None = Field(default=None, max_length=128)
    last_seq: int = 0
    summary: str | None = Field(default=None, sa_column=sa.Column(sa.Text()))
    summary_mode: str | None = Field(default=None, max_length=16)
    summary_upto_seq: int = 0
    folds: int = 0
    consolidated_upto_seq: int = 0
    created_at: datetime = Field(sa_column=sa.Column(UTCDateTime(), nullable=False))
    updated_at: datetime = Field(sa_column=sa.Column(UTCDateTime(), nullable=False))


class WorkTurn(SQLModel, table=True):
    """One user/assistant message or tool call; ``seq`` is dense and ordered per session."""

    __tablename__ = "work_turn"
    __table_args__ = (
        sa.UniqueConstraint("session_id", "seq", name="uq_work_turn_seq"),
        # An imported message is stored once per session: a re-import finds it by its id.
        sa.Index("uq_work_turn_external", "session_id", "external_id", unique=True),
    )

    id: int | None = Field(default=None, primary_key=True)
    session_id: str = Field(max_length=128)
    seq: int
    role: str = Field(max_length=16)
    content: str = Field(sa_column=sa.Column(sa.Text(), nullable=False))
    tool_name: str | None = Field(default=None, max_length=128)
    tool_args: Any = Field(default=None, sa_column=sa.Column(JSONType, nullable=True))
    tool_result: Any = Field(default=None, sa_column=sa.Column(JSONType, nullable=True))
    created_at: datetime = Field(sa_column=sa.Column(UTCDateTime(), nullable=False))
    external_id: str | None = Field(default=None, max_length=255)


class WorkPin(SQLModel, table=True):
    """A value the workflow depends on; summaries never touch this table."""

    __tablename__ = "work_pin"
    __table_args__ = (sa.UniqueConstraint("session_id", "name", name="uq_work_pin_name"),)

    id: int | None = Field(default=None, primary_key=True)
    session_id: str = Field(max_length=128)
    name: str = Field(max_length=200)
    value: str = Field(sa_column=sa.Column(sa.Text(), nullable=False))
    kind: str = Field(max_length=16)
    source: str | None = Field(default=None, max_length=255)
    seq: int | None = None
    explicit: bool = False
    updated_at: datetime = Field(sa_column=sa.Column(UTCDateTime(), nullable=False))
