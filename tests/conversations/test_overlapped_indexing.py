"""An import's indexing embeds one group while it writes the one before: a session handed in again
while its earlier pass is still embedding is indexed once, and what was not written when the
indexing closed (a failed import) is left for the catch-up, not lost. SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.conversations.tables import TURNS
from connector.memory import Memory
from connector.settings import ChromaSettings, ConversationSettings, Settings
from connector.working.models import NewTurn

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def memory(engine: Engine, tmp_path: Path) -> Iterator[Memory]:
    settings = Settings(
        data_dir=tmp_path / "data", chroma=ChromaSettings(path=tmp_path / "chroma"),
        conversations=ConversationSettings(enabled=True),
    )  # fmt: skip
    m = Memory(settings, clock=FrozenClock(NOW), llm=None, engine=engine)
    yield m
    m.close()


def _write(memory: Memory, session: str, first: int, count: int) -> None:
    """Turns in working memory that nothing has indexed yet (as an import writes them)."""
    when = NOW - timedelta(days=2)
    turns = [
        NewTurn(
            "user", f"Pallet P{n:04d} of {session} is at dock {n}.", occurred_at=when + timedelta(minutes=n)
        )
        for n in range(first, first + count)
    ]
    memory.working.append(session, "OVL1", turns)


def _rows(memory: Memory, session: str) -> int:
    with memory.engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).where(TURNS.c.session_id == session)).scalar_one())


def test_a_session_added_again_while_its_pass_embeds_is_indexed_once(memory: Memory) -> None:
    _write(memory, "ovl-a", 0, 3)
    indexing = memory.conversations.overlapped_indexing()
    try:
        indexed = indexing.add(["ovl-a"])  # embedding on its thread
        _write(memory, "ovl-a", 3, 2)
        _write(memory, "ovl-b", 0, 2)
        indexed += indexing.add(["ovl-a", "ovl-b"])
        indexed += indexing.drain()
    finally:
        indexing.close()

    assert indexed == 7
    assert (_rows(memory, "ovl-a"), _rows(memory, "ovl-b")) == (5, 2)
    assert memory.conversations.index_pending().turns == 0


def test_what_was_not_written_when_the_indexing_closed_is_left_for_the_catch_up(memory: Memory) -> None:
    _write(memory, "ovl-c", 0, 4)
    indexing = memory.conversations.overlapped_indexing()
    indexing.add(["ovl-c"])
    indexing.close()  # an import that failed before draining

    assert _rows(memory, "ovl-c") == 0
    assert memory.conversations.index_pending().turns == 4
    hits = memory.recall_conversations("OVL1", "pallet P0003 dock", k=1)
    assert [h.turn.content for h in hits] == ["Pallet P0003 of ovl-c is at dock 3."]
