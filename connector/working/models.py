"""Records that working memory returns: turns, pinned values, session state."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from connector.errors import ConnectorError

SummaryMode = Literal["llm", "non-llm"]
ROLES: tuple[str, ...] = ("user", "assistant", "tool")


class InvalidTurnError(ConnectorError, ValueError):
    """A turn or pin that cannot be stored as given (unknown role, non-text content)."""


class UnknownSessionError(ConnectorError, LookupError):
    """No session with this id exists in working memory."""


@dataclass(frozen=True, slots=True)
class Turn:
    session_id: str
    seq: int
    role: str
    content: str
    created_at: datetime
    tool_name: str | None = None
    tool_args: Any = None
    tool_result: Any = None
    external_id: str | None = None  # the caller's id of the message (imports), if it gave one


@dataclass(frozen=True, slots=True)
class NewTurn:
    """A turn to append with :meth:`WorkingMemory.record_turns`.

    ``occurred_at``: when the turn was said (timezone-aware, not in the future; default: now), so an
    imported history keeps its dates and retention counts from them. ``external_id``: the caller's
    id of the message, returned with recall hits; unique within a session."""

    role: str
    content: str
    tool_name: str | None = None
    tool_args: Any = None
    tool_result: Any = None
    occurred_at: datetime | None = None
    external_id: str | None = None


@dataclass(frozen=True, slots=True)
class PinnedValue:
    """A value the workflow depends on. ``value`` is exact text (amounts keep every digit)."""

    name: str
    value: str
    kind: str
    source: str | None
    seq: int | None
    explicit: bool
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class SessionInfo:
    session_id: str
    tenant: str
    customer_id: str
    agent_id: str | None
    workflow_id: str | None
    last_seq: int


@dataclass(frozen=True, slots=True)
class SessionState:
    """What a worker needs to continue a session: summary, unsummarised turns, pinned values.

    ``turns`` are the turns after ``summary_upto_seq`` (oldest first); ``omitted_turns`` counts
    unsummarised turns older than those returned (only when folding lags far behind).
    """

    info: SessionInfo
    summary: str | None
    summary_mode: str | None
    summary_upto_seq: int
    folds: int
    turns: tuple[Turn, ...]
    pinned: tuple[PinnedValue, ...]
    omitted_turns: int = 0

    @property
    def recent_turns(self) -> tuple[Turn, ...]:
        """The turns not yet folded into the summary (same as ``turns``)."""
        return self.turns


@dataclass(frozen=True, slots=True)
class FoldResult:
    """Outcome of one fold: ``applied`` is False when there was nothing to fold or another
    worker folded first (the compare-and-set lost), so no turn was summarised twice."""

    session_id: str
    applied: bool
    from_seq: int
    upto_seq: int
    mode: str | None
