"""ERP memory connector: memory that LLM agents on ERP workflows can trust.

Semantic memory (the ERP's facts, relational), episodic memory (resolved cases, Chroma) and
working memory (the conversation, pruned), merged by ``build_context`` into one prompt context.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from connector.context.models import ContextItem, ContextResult, ContextSection
from connector.episodic.models import CaseHit, InvalidCaseError, RecordedCase
from connector.errors import (
    AlreadyRunning,
    ConfigError,
    ConnectorError,
    EmbeddingModelMismatch,
    ErasedCustomerError,
    ErasureIncomplete,
    ERPAuthError,
    ERPError,
    ERPNotFound,
    ERPProtocolError,
    ERPRateLimited,
    ERPRequestError,
    ERPServerError,
    ERPTransportError,
    LLMError,
    LockLost,
    ScopeError,
    StoreBusy,
    StoreError,
    StoreTimeout,
    SyncError,
    UnknownCustomerError,
)
from connector.recall.fusion_options import Fusion
from connector.settings import Settings, load_settings

# The names above are what the module functions' hints name (from light modules: dataclasses,
# exceptions, settings), imported for real so typing.get_type_hints resolves them at run time. The
# names below load on first access (``__getattr__``), so ``import connector`` stays cheap: some pull in
# SQLAlchemy, Chroma or the embedder.
_LAZY = {
    "Memory": "connector.memory",
    "DocumentDetail": "connector.context.lookup",
    "UnknownDocumentError": "connector.context.lookup",
    "RebuildReport": "connector.episodic.rebuild",
    "ErpChange": "connector.semantic.history_reads",
    "ContextInputError": "connector.context.query",
    "InvalidRecallError": "connector.conversations.models",
    "TurnHit": "connector.conversations.models",
    "ImportReport": "connector.conversations.importer",
    "InvalidImportError": "connector.conversations.import_lines",
    "FactError": "connector.facts.models",
    "LearnedFact": "connector.facts.models",
    "InvalidTurnError": "connector.working.models",
    "PinnedValue": "connector.working.models",
    "Turn": "connector.working.models",
    "UnknownSessionError": "connector.working.models",
}

if TYPE_CHECKING:
    from connector.context.lookup import DocumentDetail, UnknownDocumentError
    from connector.context.query import ContextInputError
    from connector.conversations.import_lines import InvalidImportError
    from connector.conversations.importer import ImportReport
    from connector.conversations.models import InvalidRecallError, TurnHit
    from connector.episodic.rebuild import RebuildReport
    from connector.facts.models import FactError, LearnedFact
    from connector.memory import Memory
    from connector.semantic.history_reads import ErpChange
    from connector.working.models import InvalidTurnError, PinnedValue, Turn, UnknownSessionError

__all__ = [
    "AlreadyRunning",
    "CaseHit",
    "ConfigError",
    "ConnectorError",
    "ContextInputError",
    "ContextItem",
    "ContextResult",
    "ContextSection",
    "DocumentDetail",
    "ERPAuthError",
    "ERPError",
    "ERPNotFound",
    "ERPProtocolError",
    "ERPRateLimited",
    "ERPRequestError",
    "ERPServerError",
    "ERPTransportError",
    "EmbeddingModelMismatch",
    "ErasedCustomerError",
    "ErasureIncomplete",
    "ErpChange",
    "FactError",
    "ImportReport",
    "InvalidCaseError",
    "InvalidImportError",
    "InvalidRecallError",
    "InvalidTurnError",
    "LLMError",
    "LearnedFact",
    "LockLost",
    "Memory",
    "PinnedValue",
    "RebuildReport",
    "RecordedCase",
    "ScopeError",
    "Settings",
    "StoreBusy",
    "StoreError",
    "StoreTimeout",
    "SyncError",
    "Turn",
    "TurnHit",
    "UnknownCustomerError",
    "UnknownDocumentError",
    "UnknownSessionError",
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
    """The agent's context for one customer and query, from the configured stores (see
    :meth:`Memory.build_context`). A store that fails raises :class:`StoreError`, bad input
    :class:`ScopeError` or :class:`ContextInputError`: never a database driver's own error."""
    return _memory().build_context(
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
    """Async :func:`build_context` for async agents; raises the same errors."""
    return await _memory().abuild_context(
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
    profile: str | Fusion | None = None,
) -> list[CaseHit]:
    """This customer's past cases most similar to ``query``: scope first, similarity second."""
    return _memory().recall_cases(
        customer_id, query, k, tenant=tenant, case_type=case_type, as_of=as_of,
        include_archived=include_archived, profile=profile,
    )  # fmt: skip


def forget(customer_id: str, *, tenant: str | None = None) -> dict[str, int]:
    """Erase a customer's cases, working memory and learned facts from every store."""
    return _memory().forget(customer_id, tenant=tenant)


def __getattr__(name: str) -> Any:
    home = _LAZY.get(name)
    if home is not None:
        return getattr(importlib.import_module(home), name)
    raise AttributeError(f"module 'connector' has no attribute {name!r}")
