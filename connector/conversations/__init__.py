"""Past conversations: the turns of a customer's earlier sessions, indexed off the agent's path and
recalled with their neighbouring turns by the same hybrid (BM25 + dense) ranking as past cases."""

from __future__ import annotations

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
