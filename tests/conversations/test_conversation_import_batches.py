"""An import indexes every turn of every session before it returns, however the indexer cuts its
passes: sessions longer than one pass (``indexer.BATCH`` turns) and many sessions read together.
SQLite and PostgreSQL, embedded Chroma, the offline model."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.conversations import indexer
from connector.conversations.recall import RecallOptions
from connector.memory import Memory
from connector.settings import ChromaSettings, ConversationSettings, Settings

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


def _session(customer: str, session: str, count: int) -> list[dict[str, Any]]:
    start = NOW - timedelta(days=3)
    return [
        {
            "customer": customer,
            "session": session,
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"Line {i} of {session}: pallet number P{i:05d} noted.",
            "occurred_at": (start + timedelta(seconds=i)).isoformat(),
            "external_id": f"{session}:{i}",
        }
        for i in range(count)
    ]


def test_every_turn_of_long_and_many_sessions_is_indexed_when_the_import_returns(memory: Memory) -> None:
    long = indexer.BATCH * 2 + 7
    records = _session("BLONG", "BLONG/s-long", long)
    for n in range(30):
        records += _session(f"BMANY{n % 3}", f"BMANY/s-{n}", 3)

    report = memory.import_conversations(records, allow_unknown_customers=True)

    assert report.turns == report.indexed == long + 90
    last = memory.recall_conversations(
        "BLONG", f"pallet number P{long - 1:05d}", k=1, options=RecallOptions(profile="lexical")
    )
    assert [h.seq for h in last] == [long]
    assert memory.conversations.index_pending().turns == 0  # nothing left behind
