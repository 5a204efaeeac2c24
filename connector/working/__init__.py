"""Working memory: the conversation of one session, its running summary and its pinned values."""

from __future__ import annotations

from typing import TYPE_CHECKING

from connector.lazy import lazy_attributes

if TYPE_CHECKING:
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

# Each name's module, imported on first access: importing the package (or one light submodule of it,
# such as its models) stays cheap, so type hints can name its types at run time.
_HOMES = {
    "FoldResult": "connector.working.models",
    "InvalidTurnError": "connector.working.models",
    "NewTurn": "connector.working.models",
    "PinnedValue": "connector.working.models",
    "SessionInfo": "connector.working.models",
    "SessionState": "connector.working.models",
    "Turn": "connector.working.models",
    "UnknownSessionError": "connector.working.models",
    "WorkingMemory": "connector.working.store",
    "read_state": "connector.working.store",
}


__getattr__ = lazy_attributes(__name__, _HOMES)
