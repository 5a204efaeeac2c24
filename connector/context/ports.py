"""What the context builder calls on its sibling stores: small protocols, so a test hands in a stub.

``EpisodicMemory`` satisfies :class:`CaseRecall`, ``FactStore`` :class:`FactReader` and
``WorkingMemory`` :class:`SessionView` and ``ConversationMemory`` :class:`ConversationRecall`; the
builder never sees the rest of those stores.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from sqlalchemy.engine import Connection

from connector.conversations.models import TurnHit
from connector.embeddings.shared_query import SharedQuery
from connector.episodic.models import CaseHit
from connector.facts.models import LearnedFact
from connector.working.models import SessionState


class CaseRecall(Protocol):
    """Past cases of one customer like a query (``EpisodicMemory.recall``)."""

    def recall(
        self,
        customer_id: str,
        query: str,
        *,
        k: int = 3,
        tenant: str | None = None,
        case_type: str | None = None,
        as_of: datetime | None = None,
        shared_query: SharedQuery | None = None,
    ) -> Sequence[CaseHit]: ...

    def start_query(self, query: str, shared_query: SharedQuery) -> None:
        """Start embedding ``query`` into ``shared_query`` in the background, so that a recall
        given it later (of cases or of turns) finds the vector made or under way."""
        ...


class ConversationRecall(Protocol):
    """Turns of the customer's earlier sessions like a query (``ConversationMemory.recall``)."""

    def recall(
        self,
        customer_id: str,
        query: str,
        *,
        k: int = 3,
        tenant: str | None = None,
        exclude_session: str | None = None,
        as_of: datetime | None = None,
        shared_query: SharedQuery | None = None,
    ) -> Sequence[TurnHit]: ...


class FactReader(Protocol):
    """The most important learned facts of a scope (``FactStore.top``)."""

    def top(
        self,
        customer_id: str,
        *,
        tenant: str | None = None,
        limit: int = 8,
        agent_id: str | None = None,
        workflow_id: str | None = None,
    ) -> Sequence[LearnedFact]: ...


class SessionView(Protocol):
    """A session as the context shows it, read on the builder's connection (``WorkingMemory.view``)."""

    def view(self, conn: Connection, session_id: str) -> SessionState | None: ...
