"""Agent writes with text no store can hold (a NUL, a lone surrogate) are stored cleaned, or refused
with a ConnectorError, never a raw driver error; on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.episodic.tables import CASES, ENTRIES
from connector.errors import ScopeError
from connector.facts.tables import fact_t
from connector.memory import Memory
from connector.settings import ChromaSettings, EpisodicSettings, Settings

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
BAD = ["nul \x00 here", "lone \ud800 surrogate"]


@pytest.fixture
def memory(engine: Engine, tmp_path: Path) -> Memory:
    settings = Settings(
        data_dir=tmp_path / "data",
        chroma=ChromaSettings(path=tmp_path / "chroma"),
        episodic=EpisodicSettings(allow_unknown_customers=True),  # cases for customers not synced
    )
    return Memory(settings, clock=FrozenClock(NOW), llm=None, engine=engine)


def clean(text: str) -> bool:
    return "\x00" not in text and all(not 0xD800 <= ord(ch) <= 0xDFFF for ch in text)


@pytest.mark.parametrize("bad", BAD, ids=["nul", "surrogate"])
def test_record_case_stores_the_text_cleaned(memory: Memory, bad: str) -> None:
    memory.record_case("C1", f"Asked about INV-000001: {bad}", f"Resolved: {bad}", case_id="k1",
                       transcript=bad, metadata={"note": bad}, documents=["INV-000001"])  # fmt: skip
    with memory.engine.connect() as conn:
        [entry] = conn.execute(sa.select(ENTRIES.c.summary)).all()
        [case] = conn.execute(sa.select(CASES.c.request, CASES.c.resolution, CASES.c.transcript)).all()
    assert all(clean(text) for text in (entry.summary, *case)) and "\ufffd" in case.request
    assert memory.recall_cases("C1", "INV-000001")[0].case_id == "k1"


@pytest.mark.parametrize("bad", BAD, ids=["nul", "surrogate"])
def test_record_turn_and_learn_store_the_text_cleaned(memory: Memory, bad: str) -> None:
    memory.record_turn("s-1", "C1", "tool", bad, tool_name="lookup", tool_result={"memo": bad, bad: 1})
    memory.learn("C1", f"Likes {bad} invoices")

    [turn] = memory.working.state("s-1").turns
    assert clean(turn.content) and clean(str(turn.tool_result))
    with memory.engine.connect() as conn:
        assert clean(conn.execute(sa.select(fact_t.c.content)).scalar_one())


def test_an_id_with_a_lone_surrogate_is_a_scope_error(memory: Memory) -> None:
    with pytest.raises(ScopeError):
        memory.record_case("C\ud8001", "Asked.", "Answered.")
