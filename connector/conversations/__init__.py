"""Past conversations: the turns of a customer's earlier sessions, indexed off the agent's path and
recalled with their neighbouring turns by the same hybrid (BM25 + dense) ranking as past cases."""

from __future__ import annotations

from typing import TYPE_CHECKING

from connector.lazy import lazy_attributes

if TYPE_CHECKING:
    from connector.conversations.memory import ConversationMemory
    from connector.conversations.models import ConversationRetention, IndexReport, InvalidRecallError, TurnHit
    from connector.conversations.recall import MAX_K, PROFILES, RecallOptions

__all__ = [
    "MAX_K",
    "PROFILES",
    "ConversationMemory",
    "ConversationRetention",
    "IndexReport",
    "InvalidRecallError",
    "RecallOptions",
    "TurnHit",
]

# Each name's module, imported on first access: importing the package (or one light submodule of it,
# such as its models) stays cheap, so type hints can name its types at run time.
_HOMES = {
    "ConversationMemory": "connector.conversations.memory",
    "ConversationRetention": "connector.conversations.models",
    "IndexReport": "connector.conversations.models",
    "InvalidRecallError": "connector.conversations.models",
    "TurnHit": "connector.conversations.models",
    "MAX_K": "connector.conversations.recall",
    "PROFILES": "connector.conversations.recall",
    "RecallOptions": "connector.conversations.recall",
}


__getattr__ = lazy_attributes(__name__, _HOMES)
