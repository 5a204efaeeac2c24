"""ERP memory connector: memory that LLM agents on ERP workflows can trust.

Semantic memory (the ERP's facts, relational), episodic memory (resolved cases, Chroma) and
working memory (the conversation, pruned), merged by ``build_context`` into one prompt context.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

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
    StoreError,
    SyncError,
    UnknownCustomerError,
)
from connector.settings import Settings, load_settings

if TYPE_CHECKING:
    from datetime import datetime

    from connector.context import ContextResult
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
    "ScopeError",
    "Settings",
    "StoreError",
    "SyncError",
    "UnknownCustomerError",
    "abuild_context",
    "build_context",
    "load_settings",
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
