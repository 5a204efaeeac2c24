"""`connector context` and `connector.build_context` on the embedded defaults with the real stores
(SQLite, embedded Chroma with the offline MiniLM embedder, learned facts, working memory)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from context_fixtures import seed_erp

import connector
from connector.cli import main
from connector.memory import Memory
from connector.settings import load_settings


@pytest.fixture
def seeded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Memory:
    # An absolute data dir: chromadb caches embedded clients by path string across tests.
    monkeypatch.setenv("CONNECTOR_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(connector, "_default_memory", None)
    memory = Memory(load_settings(), llm=None)
    seed_erp(memory, synced_at=datetime.now(UTC))
    memory.record_case(
        "ABARTENDE",
        "Customer was invoiced twice for order SO-000123 (INV-004821 and INV-004822, 1,250.00 USD each).",
        "Voided INV-004822 and issued credit memo CM-000311 for 1,250.00 USD.",
        case_id="C-1",
        occurred_at=datetime.now(UTC) - timedelta(days=10),  # inside the retention window
    )
    memory.learn("ABARTENDE", "Prefers to be contacted by email.", importance=0.7)
    memory.record_turn("s-1", "ABARTENDE", "user", "Why was I billed two times?")
    memory.record_turn("s-1", "ABARTENDE", "tool", "", tool_name="get_invoice",
                       tool_result={"ReferenceNbr": "INV-004821", "Amount": "1250.00"})  # fmt: skip
    return memory


def test_context_command_prints_the_rendered_context(
    seeded: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["context", "ABARTENDE", "Why was I billed two times?", "--session", "s-1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Context for customer ABARTENDE (tenant default)\n")
    assert "case C-1, similarity" in out and "> Request: Customer was invoiced twice" in out
    assert "> Prefers to be contacted by email." in out
    assert "- INV-004821: Amount 1250.00 (tool get_invoice, turn 2)" in out


def test_context_command_json(seeded: Memory, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["context", "ABARTENDE", "billed twice", "--session", "s-1", "--json", "--budget", "800"]) == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["token_budget"] == 800 and data["token_count"] <= 800
    assert [s["name"] for s in data["sections"]][:3] == ["today", "erp_facts", "open_documents"]
    past_cases = next(s for s in data["sections"] if s["name"] == "past_cases")
    assert past_cases["items"][0]["source"] == "case:C-1"
    assert "timings_ms" not in data


def test_unknown_customer_exits_non_zero_with_suggestions(
    seeded: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["context", "ABARTEND", "q"]) == 1
    assert "Did you mean: ABARTENDE" in capsys.readouterr().err


def test_bad_as_of_is_a_config_error(seeded: Memory, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["context", "ABARTENDE", "q", "--as-of", "yesterday"]) == 2
    assert "--as-of" in capsys.readouterr().err


def test_package_level_build_context_uses_the_configured_defaults(seeded: Memory) -> None:
    result = connector.build_context("ABARTENDE", "Why was I billed two times?", session_id="s-1")
    assert result.section("past_cases").items[0].source == "case:C-1"
    assert "build_context" in connector.__all__ and "abuild_context" in connector.__all__
