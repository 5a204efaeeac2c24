"""``include_archived``: turns past the retention window are reached on purpose only, lexically, never
another customer's, never an erased customer's, never past the PII window (SQLite and PostgreSQL,
embedded Chroma, the offline embedding model)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.mcp_server.guard import ServedScope
from connector.mcp_server.tools import MemoryTools
from connector.memory import Memory
from connector.settings import ChromaSettings, ConversationSettings, Settings

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
OLD = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)  # past the 180-day window
RECENT = datetime(2026, 2, 20, 9, 0, tzinfo=UTC)
QUERY = "where do the copper fittings pallets go?"


def make(engine: Engine, tmp_path: Path, *, pii: bool = False) -> Memory:
    settings = Settings(
        data_dir=tmp_path / "data",
        chroma=ChromaSettings(path=tmp_path / "chroma"),
        conversations=ConversationSettings(enabled=True, pii=pii),
    )
    return Memory(settings, clock=FrozenClock(NOW), llm=None, engine=engine)


def turns(customer: str, session: str, at: datetime, lines: list[str]) -> list[dict[str, Any]]:
    return [
        {"customer": customer, "session": session, "role": "user" if i % 2 == 0 else "assistant",
         "content": text, "occurred_at": at.replace(minute=i).isoformat()}
        for i, text in enumerate(lines)
    ]  # fmt: skip


def seed(memory: Memory) -> None:
    report = memory.import_conversations(
        [
            *turns(
                "AARCH",
                "arch-june",
                OLD,
                ["Copper fittings pallets go to the Tacoma dock.", "Noted, Tacoma."],
            ),
            *turns("AARCH", "arch-feb", RECENT, ["Please resend the February statement.", "Sent again."]),
            *turns(
                "AOTHER",
                "other-june",
                OLD,
                ["Copper fittings pallets go to the Boise yard.", "Noted, Boise."],
            ),
        ],
        allow_unknown_customers=True,
    )
    assert report.archived == 4  # stored in working memory, not indexed


@pytest.fixture
def memory(engine: Engine, tmp_path: Path) -> Iterator[Memory]:
    m = make(engine, tmp_path)
    seed(m)
    yield m
    m.close()


def test_an_archived_turn_is_found_only_with_include_archived(memory: Memory) -> None:
    live = memory.recall_conversations("AARCH", QUERY, k=5)
    assert all(h.session_id != "arch-june" for h in live)
    hits = memory.recall_conversations("AARCH", QUERY, k=5, include_archived=True)
    archived = [h for h in hits if h.archived]
    assert [h.turn.content for h in archived][:1] == ["Copper fittings pallets go to the Tacoma dock."]
    assert archived[0].after[0].content == "Noted, Tacoma."  # with its neighbours, as a live hit
    assert hits[0].archived  # it holds more of the question's words than any live turn
    assert not any(h.archived for h in hits if h.session_id == "arch-feb")


def test_an_archived_turn_is_never_another_customers(memory: Memory) -> None:
    for customer, own in (("AARCH", "arch-june"), ("AOTHER", "other-june")):
        hits = memory.recall_conversations(customer, QUERY, k=10, include_archived=True)
        assert {h.session_id for h in hits if h.archived} == {own}
        assert all(t.session_id.split("-")[0] == own.split("-")[0] for h in hits for t in h.window)


def test_an_erased_customers_archived_turns_never_come_back(memory: Memory) -> None:
    memory.forget("AARCH")
    assert memory.recall_conversations("AARCH", QUERY, k=5, include_archived=True) == []
    others = memory.recall_conversations("AOTHER", QUERY, k=5, include_archived=True)
    assert [h.session_id for h in others if h.archived] == ["other-june"]


def test_no_archived_turn_comes_back_past_the_pii_window(engine: Engine, tmp_path: Path) -> None:
    memory = make(engine, tmp_path, pii=True)  # the index window is the PII window
    try:
        seed(memory)
        hits = memory.recall_conversations("AARCH", QUERY, k=5, include_archived=True)
        assert not any(h.archived for h in hits)
        assert all(t.created_at >= memory.conversations.window_start() for h in hits for t in h.window)
    finally:
        memory.close()


def test_the_mcp_tool_takes_include_archived(memory: Memory) -> None:
    tools = MemoryTools(memory, ServedScope.from_settings(memory.settings))
    plain = tools.recall_conversations("AARCH", QUERY, k=5)
    found = tools.recall_conversations("AARCH", QUERY, k=5, include_archived=True)
    assert "Tacoma dock" not in str(plain.content) and "Tacoma dock" in str(found.content)
    assert "archived, matched by words" in str(found.content)
    assert any(hit["archived"] for hit in (found.structured_content or {})["turns"])
