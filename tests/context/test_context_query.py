"""A huge query or one with control characters: trimmed for embedding, with a warning."""

from __future__ import annotations

import pytest
from context_fixtures import NOW, StubEpisodic, seed_erp, stub_context
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.context.query import clean_query
from connector.memory import Memory
from connector.settings import Settings


@pytest.fixture
def memory(sqlite_engine: Engine, settings: Settings) -> Memory:
    memory = Memory(settings, clock=FrozenClock(NOW), llm=None, engine=sqlite_engine)
    seed_erp(memory)
    return memory


def test_a_100_kb_query_is_trimmed_for_recall_with_a_warning(memory: Memory) -> None:
    stub = StubEpisodic()
    query = "Why was INV-004821 charged twice? " + "blah " * 20_480  # ~100 KB
    result = stub_context(memory, stub).build("ABARTENDE", query)
    assert len(stub.queries[0]) <= 2000 and stub.queries[0].startswith("Why was INV-004821 charged twice?")
    assert result.warnings[0].startswith(f"query trimmed from {len(query.strip())} to ")
    assert result.token_count <= result.token_budget


def test_control_characters_are_removed_with_a_warning(memory: Memory) -> None:
    stub = StubEpisodic()
    result = stub_context(memory, stub).build("ABARTENDE", "status\x00 of\x1b[31m SO-000123\u200b\x07?")
    assert stub.queries == ["status of[31m SO-000123?"]
    assert result.warnings == ("4 control characters were removed from the query",)


def test_an_empty_query_skips_recall(memory: Memory) -> None:
    stub = StubEpisodic()
    result = stub_context(memory, stub).build("ABARTENDE", " \x00\n ")
    assert stub.queries == []
    assert "query is empty: similar past cases were not searched" in result.warnings


def test_clean_query_keeps_an_ordinary_query_untouched() -> None:
    cleaned = clean_query("Where is order SO-000123?", 2000)
    assert (cleaned.text, cleaned.warnings) == ("Where is order SO-000123?", ())
