"""The public API is small and deliberate: these names and no others, each the object its home defines."""

from __future__ import annotations

import importlib
import inspect

import connector

# Each exported name and the module that defines it: ``connector.X`` must be that very object.
ERRORS = (
    "AlreadyRunning", "ConfigError", "ConnectorError", "ERPAuthError", "ERPError", "ERPNotFound",
    "ERPProtocolError", "ERPRateLimited", "ERPRequestError", "ERPServerError", "ERPTransportError",
    "EmbeddingModelMismatch", "ErasedCustomerError", "ErasureIncomplete", "LLMError", "LockLost",
    "ScopeError", "StoreBusy", "StoreError", "StoreTimeout", "SyncError", "UnknownCustomerError",
)  # fmt: skip
# What the calls return, and the errors of bad input each area raises, next to its models.
RESULTS = {
    "ContextResult": "connector.context.models", "ContextSection": "connector.context.models",
    "ContextItem": "connector.context.models", "ContextInputError": "connector.context.query",
    "DocumentDetail": "connector.context.lookup", "UnknownDocumentError": "connector.context.lookup",
    "CaseHit": "connector.episodic.models", "RecordedCase": "connector.episodic.models",
    "InvalidCaseError": "connector.episodic.models", "RebuildReport": "connector.episodic.rebuild",
    "TurnHit": "connector.conversations.models", "InvalidRecallError": "connector.conversations.models",
    "ImportReport": "connector.conversations.importer",
    "InvalidImportError": "connector.conversations.import_lines",
    "Turn": "connector.working.models", "PinnedValue": "connector.working.models",
    "InvalidTurnError": "connector.working.models", "UnknownSessionError": "connector.working.models",
    "LearnedFact": "connector.facts.models", "FactError": "connector.facts.models",
    "ErpChange": "connector.semantic.history_reads",
}  # fmt: skip
FUNCTIONS = ("abuild_context", "build_context", "forget", "recall_cases", "record_case")
HOMES = {
    **dict.fromkeys(ERRORS, "connector.errors"),
    **dict.fromkeys(FUNCTIONS, "connector"),
    **RESULTS,
    "Memory": "connector.memory",
    "Settings": "connector.settings",
    "load_settings": "connector.settings",
}


def test_exported_names_are_the_intended_ones() -> None:
    assert set(connector.__all__) == set(HOMES)


def test_each_exported_name_is_the_object_its_home_defines() -> None:
    for name, home in HOMES.items():
        exported = getattr(connector, name)
        assert exported is getattr(importlib.import_module(home), name), name
        assert exported.__module__ == home, f"{name} is defined in {exported.__module__}, not {home}"


def test_the_module_functions_take_the_same_arguments_as_the_memory_methods() -> None:
    from connector.memory import Memory

    for name in FUNCTIONS:
        function = inspect.signature(getattr(connector, name))
        method = inspect.signature(getattr(Memory, name))
        assert list(function.parameters) == list(method.parameters)[1:], name
