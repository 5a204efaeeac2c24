"""Rows written while the vector store was away are found and mended: ``reindex --check`` finds
turns and cases without their vectors, ``reindex`` embeds only those (nothing already right)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.embeddings.base import Vectors
from connector.errors import StoreError
from connector.memory import Memory
from connector.settings import ConversationSettings, EpisodicSettings, Settings
from connector.vectors import ChromaIndex

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class CountingEmbedder:
    """Deterministic vectors from the text's digest; remembers every text it embedded."""

    model_id = "counting-8"
    dimension = 8

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts.extend(texts)
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8) for t in texts]
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), 8) + 1.0

    def close(self) -> None:
        pass


@pytest.fixture
def memory(engine: Engine, tmp_path: Path) -> Iterator[Memory]:
    settings = Settings(
        data_dir=tmp_path / "data",
        conversations=ConversationSettings(enabled=True),
        episodic=EpisodicSettings(allow_unknown_customers=True),
    )
    memory = Memory(settings, clock=FrozenClock(NOW), llm=None, engine=engine)
    memory.__dict__["embedder"] = CountingEmbedder()
    yield memory
    memory.close()


def record_turns(memory: Memory, session: str, count: int) -> None:
    for i in range(count):
        memory.record_turn(session, "ACME", "user" if i % 2 == 0 else "assistant", f"{session} line {i}")
    memory.conversations.background.wait(30)
    memory.conversations.index_pending()


def test_turns_recorded_while_the_store_was_away_are_found_and_only_they_embedded(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_turns(memory, "s-before", 6)
    with monkeypatch.context() as patch:
        patch.setattr(ChromaIndex, "upsert", _refuse)
        record_turns(memory, "s-away", 20)  # the rows are written, their vectors are not
    check = memory.conversations.check_index()
    assert (check.indexed_turns, check.missing, check.consistent) == (26, 20, False)
    embedder: CountingEmbedder = memory.__dict__["embedder"]
    embedder.texts.clear()
    mended = memory.conversations.check_index(fix=True)
    assert mended.missing == 20
    assert sorted(embedder.texts) == sorted(f"s-away line {i}" for i in range(20))
    assert memory.conversations.check_index().consistent
    hits = memory.recall_conversations("ACME", "s-away line 7", k=1)
    assert hits[0].turn.content == "s-away line 7" and hits[0].score > 0.99  # by its vector


def test_cases_recorded_while_the_store_was_away_are_found_and_mended(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.record_case("ACME", "Disputed INV-000001.", "Credit memo issued.")
    with monkeypatch.context() as patch:
        patch.setattr(ChromaIndex, "upsert", _refuse)
        with pytest.raises(StoreError):
            memory.record_case("ACME", "Asked for a copy of INV-000002.", "Copy sent.")
    check = memory.episodic.check_index()
    assert (check.live_entries, check.missing, check.consistent) == (2, 1, False)
    embedder: CountingEmbedder = memory.__dict__["embedder"]
    embedder.texts.clear()
    memory.episodic.reindex()
    assert len(embedder.texts) == 1
    assert memory.episodic.check_index().consistent


def _refuse(self: ChromaIndex, *args: Any, **kwargs: Any) -> None:
    raise StoreError(f"{self.store.where}: upsert failed: ConnectError")
