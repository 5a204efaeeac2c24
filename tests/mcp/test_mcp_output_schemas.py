"""The output schemas ``tools/list`` publishes: what a client checks every result against.

A client validates each structured result against the published schema (the Python SDK with
``jsonschema``, node by node, on every call), so the schema is published self-contained and a
context's items by their required names; the server checks their types with the models."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema.validators import validator_for
from pydantic import ValidationError

from connector.mcp_server.schemas import CasesOut, ContextOut, ErpHistoryOut, TurnsOut, published

ITEM = {"source": "erp:acme/Customer/C1", "text": "Credit limit 50,000.00 USD", "tokens": 9, "score": 0.5}
CONTEXT: dict[str, Any] = {
    "customer_id": "C1", "party_kind": "customer", "tenant": "acme", "session_id": None,
    "today": "2026-12-03", "text": "...", "warnings": [], "token_count": 9, "token_budget": 3000,
    "over_budget": False, "erp_as_of": None,
    "sections": [{"name": "erp", "title": "ERP facts", "tokens": 9, "items": [ITEM], "dropped": 0}],
}  # fmt: skip


def _errors(schema: dict[str, Any], instance: Any) -> list[str]:
    validator = validator_for(schema)(schema)
    return [error.message for error in validator.iter_errors(instance)]


def test_published_schemas_hold_no_reference_to_look_up() -> None:
    for model in (ContextOut, CasesOut, TurnsOut, ErpHistoryOut):
        schema = published(model.model_json_schema())
        text = json.dumps(schema)
        assert "$ref" not in text and "$defs" not in text, model.__name__


def test_a_context_result_passes_and_an_item_without_its_text_or_a_field_of_the_wrong_type_fails() -> None:
    schema = published(ContextOut.model_json_schema())
    assert _errors(schema, CONTEXT) == []
    item_schema = schema["properties"]["sections"]["items"]["properties"]["items"]["items"]
    assert set(item_schema["required"]) == {"source", "text", "tokens"}
    assert "source (string), text (string), tokens (integer)" in item_schema["description"]
    without_text = json.loads(json.dumps(CONTEXT))
    del without_text["sections"][0]["items"][0]["text"]
    assert any("'text' is a required property" in message for message in _errors(schema, without_text))
    wrong_type = json.loads(json.dumps(CONTEXT))
    wrong_type["sections"][0]["tokens"] = "nine"
    assert _errors(schema, wrong_type)


def test_the_server_still_checks_an_items_types_before_it_sends() -> None:
    bad = json.loads(json.dumps(CONTEXT))
    bad["sections"][0]["items"][0]["tokens"] = "nine"
    with pytest.raises(ValidationError, match="tokens"):
        ContextOut.model_validate(bad)
