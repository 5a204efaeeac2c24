"""ERP memory connector: memory that LLM agents on ERP workflows can trust.

Semantic memory (the ERP's facts, relational), episodic memory (resolved cases, Chroma) and
working memory (the conversation, pruned), merged by ``build_context`` into one prompt context.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from connector.errors import (
    AlreadyRunning,
    ConfigError,
    ConnectorError,
    EmbeddingModelMismatch,
    ERPAuthError,
    ERPError,
    ERPNotFound,
    ERPProtocolError,
    ERPRateLimited,
    LLMError,
    ScopeError,
    StoreBusy,
    StoreError,
    StoreTimeout,
    SyncError,
    UnknownCustomerError,
)
from connector.settings import Settings, load_settings

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from datetime import datetime

    from connector.context import ContextResult
    from connector.episodic.models import CaseHit, RecordedCase
    from connector.memory import Memory

__all__ = [
    "AlreadyRunning",
    "ConfigError",
    "ConnectorError",
    "ERPAuthError",
    "ERPError",
    "ERPNotFound",
    "ERPProtocolError",
    "ERPRateLimited",
    "EmbeddingModelMismatch",
    "LLMError",
    "Memory",
    "ScopeError",
    "Settings",
    "StoreBusy",
    "StoreError",
    "StoreTimeout",
    "SyncError",
    "UnknownCustomerError",
    "abuild_context",
    "build_context",
    "forget",
    "load_settings",
    "recall_cases",
    "record_case",
]

_default_memory: Memory | None = None
_default_lock = threading.Lock()


def _memory() -> Memory:
    """The process-wide ``Memory()`` behind the module-level functions, created on first use."""
    global _default_memory
    with _default_lock:
        if _default_memory is None:
            from connector.memory import Memory

            _default_memory = Memory()
        return _default_memory


def build_context(
    customer_id: str,
    query: str,
    *,
    session_id: str | None = None,
    tenant: str | None = None,
    token_budget: int | None = None,
    as_of: datetime | None = None,
    party_kind: str = "customer",
) -> ContextResult:
    """The agent's context for one customer and query, from the configured stores (see ContextBuilder)."""
    return _memory().context.build(
        customer_id,
        query,
        session_id=session_id,
        tenant=tenant,
        token_budget=token_budget,
        as_of=as_of,
        party_kind=party_kind,
    )


async def abuild_context(
    customer_id: str,
    query: str,
    *,
    session_id: str | None = None,
    tenant: str | None = None,
    token_budget: int | None = None,
    as_of: datetime | None = None,
    party_kind: str = "customer",
) -> ContextResult:
    """Async :func:`build_context` for async agents."""
    return await _memory().context.abuild(
        customer_id,
        query,
        session_id=session_id,
        tenant=tenant,
        token_budget=token_budget,
        as_of=as_of,
        party_kind=party_kind,
    )


def record_case(
    customer_id: str,
    request: str,
    resolution: str,
    *,
    tenant: str | None = None,
    case_id: str | None = None,
    case_type: str | None = None,
    occurred_at: datetime | None = None,
    documents: Sequence[str] = (),
    pii: bool = False,
    transcript: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> RecordedCase:
    """Record a resolved case's factual outcome in episodic memory (see ``Memory.record_case``)."""
    return _memory().record_case(
        customer_id, request, resolution, tenant=tenant, case_id=case_id, case_type=case_type,
        occurred_at=occurred_at, documents=documents, pii=pii, transcript=transcript, metadata=metadata,
    )  # fmt: skip


def recall_cases(
    customer_id: str,
    query: str,
    k: int = 3,
    *,
    tenant: str | None = None,
    case_type: str | None = None,
    as_of: datetime | None = None,
    include_archived: bool = False,
) -> list[CaseHit]:
    """This customer's past cases most similar to ``query``: scope first, similarity second."""
    return _memory().recall_cases(
        customer_id, query, k, tenant=tenant, case_type=case_type, as_of=as_of,
        include_archived=include_archived,
    )  # fmt: skip


def forget(customer_id: str, *, tenant: str | None = None) -> dict[str, int]:
    """Erase a customer's cases, working memory and learned facts from every store."""
    return _memory().forget(customer_id, tenant=tenant)


def __getattr__(name: str) -> Any:
    # ``Memory`` is imported lazily so ``import connector`` stays cheap (no SQLAlchemy engine, no ONNX).
    if name == "Memory":
        from connector.memory import Memory

        return Memory
    raise AttributeError(f"module 'connector' has no attribute {name!r}")
