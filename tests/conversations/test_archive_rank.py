"""The archive's lexical ranking: word forms, numbers and the time the question names, read from
working memory (no model: archived turns keep no vector)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.conversations.archive import ArchiveQuery, rank
from connector.lexical.tokens import query_terms
from connector.memory import Memory
from connector.scope import Scope
from connector.settings import ChromaSettings, ConversationSettings, Settings

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
WINDOW = datetime(2025, 9, 2, tzinfo=UTC)
SAID = [
    ("s-may", datetime(2025, 5, 12, 9, tzinfo=UTC), "Both companies share one billing address."),
    ("s-may", datetime(2025, 5, 12, 9, 1, tzinfo=UTC), "Invoice INV-000901 was charged twice."),
    ("s-jul", datetime(2025, 7, 3, 9, tzinfo=UTC), "The billing address moved to Boise."),
    ("s-jul", datetime(2025, 7, 3, 9, 1, tzinfo=UTC), "Noted."),
]


@pytest.fixture
def working(sqlite_engine: Engine, tmp_path: Path) -> Iterator[Memory]:
    settings = Settings(
        data_dir=tmp_path / "data", chroma=ChromaSettings(path=tmp_path / "chroma"),
        conversations=ConversationSettings(enabled=False),
    )  # fmt: skip
    m = Memory(settings, clock=FrozenClock(NOW), llm=None, engine=sqlite_engine)
    for session, at, text in SAID:
        m.record_turn(session, "AOLD", "user", text, occurred_at=at)
    yield m
    m.close()


def found(memory: Memory, query: str, named: tuple[datetime, datetime] | None = None) -> list[str]:
    scope = Scope.of(memory.tenant_name(None), "AOLD")
    with memory.engine.connect() as conn:
        ranked = rank(conn, scope, query_terms(query), ArchiveQuery(WINDOW, None, None, None, named), k=5)
    return [row[3] for row, _ in ranked]


def test_a_word_form_the_text_spells_otherwise_is_found(working: Memory) -> None:
    assert found(working, "which company") == ["Both companies share one billing address."]


def test_a_document_number_is_found(working: Memory) -> None:
    assert found(working, "INV-000901") == ["Invoice INV-000901 was charged twice."]


def test_the_time_the_question_names_narrows_the_archive_unless_nothing_is_in_it(working: Memory) -> None:
    july = (datetime(2025, 7, 1, tzinfo=UTC), datetime(2025, 8, 1, tzinfo=UTC))
    assert found(working, "billing address", july) == ["The billing address moved to Boise."]
    march = (datetime(2025, 3, 1, tzinfo=UTC), datetime(2025, 4, 1, tzinfo=UTC))
    assert len(found(working, "billing address", march)) == 2
