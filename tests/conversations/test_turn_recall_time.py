"""A question that is only a date or only a relative time finds the turns of that time."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.conversations.recall import RecallOptions
from connector.memory import Memory
from connector.settings import ChromaSettings, ConversationSettings, Settings

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def memory(sqlite_engine: Engine, tmp_path: Path) -> Iterator[Memory]:
    settings = Settings(
        data_dir=tmp_path / "data",
        chroma=ChromaSettings(path=tmp_path / "chroma"),
        conversations=ConversationSettings(enabled=True),
    )
    m = Memory(settings, clock=FrozenClock(NOW), llm=None, engine=sqlite_engine)
    yield m
    m.close()


def seed(memory: Memory) -> None:
    said = [
        ("s-jan", datetime(2026, 1, 20, 9, tzinfo=UTC), "Please ship the copper fittings by sea freight."),
        ("s-feb", datetime(2026, 2, 10, 9, tzinfo=UTC), "The credit hold is lifted, release order 42."),
        ("s-feb", datetime(2026, 2, 10, 9, 1, tzinfo=UTC), "Thanks, I will release it this afternoon."),
        ("s-mar", datetime(2026, 2, 28, 16, tzinfo=UTC), "Can you move the delivery to Thursday?"),
    ]
    memory.import_conversations(
        [
            {
                "customer": "AWHEN",
                "session": s,
                "role": "user",
                "content": text,
                "occurred_at": at.isoformat(),
            }
            for s, at, text in said
        ],
        allow_unknown_customers=True,
    )


@pytest.mark.parametrize(
    ("query", "sessions"),
    [
        ("2026-02-10", {"s-feb"}),
        ("yesterday", {"s-mar"}),
        ("in January", {"s-jan"}),
    ],
)
def test_a_question_that_is_only_a_time_returns_the_turns_of_that_time(
    memory: Memory, query: str, sessions: set[str]
) -> None:
    seed(memory)
    hits = memory.recall_conversations("AWHEN", query, k=5, options=RecallOptions(before=0, after=0))
    assert hits and {h.session_id for h in hits} == sessions


def test_the_time_narrows_a_question_with_words_too(memory: Memory) -> None:
    seed(memory)
    hits = memory.recall_conversations("AWHEN", "what did we say about the order in January", k=5)
    assert {h.session_id for h in hits} == {"s-jan"}  # not the order released in February
