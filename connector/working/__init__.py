"""Working memory: the conversation of one session, its running summary and its pinned values."""

from __future__ import annotations

from connector.working.models import (
    FoldResult,
    InvalidTurnError,
    NewTurn,
    PinnedValue,
    SessionInfo,
    SessionState,
    Turn,
    UnknownSessionError,
)
from connector.working.store import WorkingMemory, read_state

__all__ = [
    "FoldResult",
    "InvalidTurnError",
    "NewTurn",
    "PinnedValue",
    "SessionInfo",
    "SessionState",
    "Turn",
    "UnknownSessionError",
    "WorkingMemory",
    "read_state",
]
