"""The output schemas of the MCP tools: what a client may rely on in ``structuredContent``.

Each read tool returns text for the model and the same result as JSON; the SDK publishes these
models as the tools' ``outputSchema`` and validates every result against them before it is sent.
They name the fields a client can build on and allow more (``extra="allow"``), so a field added
to a result later is not a breaking change. Dates are ISO 8601 strings, amounts exact decimal
strings (see :func:`connector.working.text.json_safe`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from typing_extensions import TypedDict


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


def _names_only(schema: dict[str, Any]) -> None:
    """Publish an item's required names, its fields' types in words: clients check every result
    against the published schema (the Python SDK with ``jsonschema``, node by node), and a context's
    items are most of its nodes. The server checks their types with the model before it sends."""
    fields: dict[str, Any] = schema.pop("properties", {})
    schema.pop("additionalProperties", None)
    typed = ", ".join(f"{name} ({spec.get('type', 'any')})" for name, spec in fields.items())
    schema["description"] = f"One item of a section, with its provenance: {typed}, and more."


def published(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's output schema as ``tools/list`` publishes it: every local ``$ref`` replaced by its
    definition, so a client's check of each result looks nothing up (the models here are trees)."""
    definitions: dict[str, Any] = schema.get("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return inline(definitions[ref.removeprefix("#/$defs/")])
            return {key: inline(value) for key, value in node.items() if key != "$defs"}
        if isinstance(node, list):
            return [inline(value) for value in node]
        return node

    return inline(schema)  # type: ignore[no-any-return]


class ContextItemOut(_Open):
    model_config = ConfigDict(extra="allow", json_schema_extra=_names_only)

    source: str
    text: str
    tokens: int


class ContextSectionOut(_Open):
    name: str
    title: str
    items: list[ContextItemOut]
    tokens: int


class ContextOut(_Open):
    """get_context: the context text and the sections it was built from, with provenance."""

    customer_id: str
    party_kind: str
    tenant: str
    session_id: str | None
    today: str
    text: str
    sections: list[ContextSectionOut]
    warnings: list[str]
    token_count: int
    token_budget: int
    over_budget: bool
    erp_as_of: str | None


class CaseOut(_Open):
    case_id: str
    entry_id: str
    occurred_at: str
    summary: str
    score: float
    documents: list[str]
    case_type: str | None = None


class CasesOut(_Open):
    """recall_cases: the customer's most similar past cases, most similar first."""

    cases: list[CaseOut]


class TurnOut(_Open):
    session_id: str
    seq: int
    role: str
    content: str
    created_at: str


class TurnHitOut(_Open):
    turn_id: str
    turn: TurnOut
    score: float
    before: list[TurnOut]
    after: list[TurnOut]
    archived: bool = False  # past the retention window (``include_archived``)


class TurnsOut(_Open):
    """recall_conversations: turns of earlier sessions, most similar first, with their neighbours."""

    turns: list[TurnHitOut]


class DocumentOut(_Open):
    """lookup_document: one document with its lines and the ERP's own fields."""

    tenant: str
    party_kind: str
    party_id: str
    doc_type: str
    number: str
    status: str | None
    is_open: bool
    currency: str | None
    amount: str | None
    balance: str | None
    doc_date: str | None
    due_date: str | None
    lines: list[dict[str, Any]]
    synced_at: str


class ErpChangeOut(_Open):
    """One change of a tracked ERP field (values as text: amounts exact decimals, dates ISO)."""

    entity: str
    kind: str
    external_id: str
    number: str | None
    field: str
    old: Any
    new: Any
    currency: str | None
    changed_at: str
    seen_at: str


class ErpHistoryOut(_Open):
    """erp_history: what changed in the ERP for the customer and its documents, newest first."""

    changes: list[ErpChangeOut]


class TurnRecorded(TypedDict):
    """record_turn: where the turn went."""

    session_id: str
    seq: int
    at: str


class ValuePinned(TypedDict):
    session_id: str
    name: str
    value: str
    kind: str


class FactLearned(TypedDict):
    id: int
    content: str
    importance: float
