"""What the context builder calls on its sibling stores: small protocols, so a test hands in a stub.

``EpisodicMemory`` satisfies :class:`CaseRecall` and ``FactStore`` satisfies :class:`FactReader`;
the builder never sees the rest of either store.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from connector.episodic.models import CaseHit
from connector.facts.models import LearnedFact


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
    ) -> Sequence[CaseHit]: ...


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
