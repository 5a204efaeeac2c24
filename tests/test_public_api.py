"""The public API is small and deliberate: these names and no others."""

from __future__ import annotations

import connector


def test_exported_names_are_the_intended_ones() -> None:
    assert set(connector.__all__) == {
        "AlreadyRunning", "ConfigError", "ConnectorError", "ERPAuthError", "ERPError", "ERPNotFound",
        "ERPProtocolError", "ERPRateLimited", "EmbeddingModelMismatch", "LLMError", "Memory", "ScopeError",
        "Settings", "StoreError", "SyncError", "UnknownCustomerError", "abuild_context", "build_context",
        "forget", "load_settings", "recall_cases", "record_case",
    }  # fmt: skip
    for name in connector.__all__:
        assert getattr(connector, name) is not None


def test_every_library_error_derives_from_connector_error() -> None:
    from connector.context.lookup import UnknownDocumentError
    from connector.context.query import ContextInputError
    from connector.facts.models import FactError
    from connector.working.models import InvalidTurnError, UnknownSessionError

    for error in (
        ContextInputError,
        UnknownDocumentError,
        FactError,
        InvalidTurnError,
        UnknownSessionError,
        connector.ERPNotFound,
    ):
        assert issubclass(error, connector.ConnectorError)
        assert error.__name__ in (connector.errors.__doc__ or "")
