"""ERP memory connector: memory that LLM agents on ERP workflows can trust.

Semantic memory (the ERP's facts, relational), episodic memory (resolved cases, Chroma) and
working memory (the conversation, pruned), merged by ``build_context`` into one prompt context.
"""

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
    "load_settings",
]
