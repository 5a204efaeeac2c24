"""Past conversations at scale: a long turn is recallable by any of its parts, a recall reaches every
turn of a long history (not only the newest ones), another process's writes and erasures reach a
process that already holds the customer's turns, and each recall takes its own options (k,
neighbours, dates, fusion profile). SQLite and PostgreSQL, embedded Chroma, the offline model."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.conversations import InvalidRecallError
from connector.conversations.parts import MAX_PARTS, PART_WORDS, part_texts
from connector.conversations.recall import RecallOptions
from connector.conversations.tables import PARTS
from connector.memory import Memory
from connector.scope import Scope
from connector.settings import ChromaSettings, ConversationSettings, Settings

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
FLUSH_S = 60.0
FILLER = [
    "The weather in the harbour was grey all week and the ferries ran late.",
    "Our team spent the morning reviewing the layout of the new showroom floor.",
    "Someone left a stack of brochures about garden furniture at the front desk.",
    "The quarterly newsletter went out with a piece on the company picnic.",
    "Parking near the office is hard on Mondays because of the street market.",
]


def _settings(tmp_path: Path, chroma: ChromaSettings, **conversations: int) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        chroma=chroma,
        conversations=ConversationSettings(enabled=True, **conversations),
    )


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(NOW)


@pytest.fixture
def memory(
    engine: Engine, tmp_path: Path, chroma_settings: ChromaSettings, clock: FrozenClock
) -> Iterator[Memory]:
    m = Memory(_settings(tmp_path, chroma_settings), clock=clock, llm=None, engine=engine)
    yield m
    m.close()


def long_answer(tail: str) -> str:
    """An assistant answer of ~400 words whose last sentences say ``tail``."""
    body = " ".join(FILLER[i % len(FILLER)] for i in range(30))
    return f"{body} {tail}"


def test_a_long_turn_is_found_by_what_its_end_says(memory: Memory, clock: FrozenClock) -> None:
    tail = "Finally, the replacement espresso grinder ships from the Rotterdam depot on Thursday."
    memory.record_turn("s-long", "ALONG", "user", "Can you summarise everything from this week?")
    memory.record_turn("s-long", "ALONG", "assistant", long_answer(tail))
    for i, line in enumerate(FILLER * 2):
        clock.sleep(60)
        memory.record_turn(f"s-other-{i}", "ALONG", "user", line)
    memory.conversations.flush(FLUSH_S)

    hits = memory.recall_conversations(
        "ALONG", "when does the espresso grinder replacement ship", k=1,
        options=RecallOptions(profile="dense", before=0, after=0),
    )  # fmt: skip

    assert [(h.session_id, h.seq) for h in hits] == [("s-long", 2)]
    with memory.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(PARTS)).scalar_one() >= 2


def test_a_long_turn_is_split_into_overlapping_windows_up_to_a_cap() -> None:
    words = [f"w{i}" for i in range(PART_WORDS * 40)]
    parts = part_texts(" ".join(words))
    assert len(parts) == MAX_PARTS - 1
    assert all(len(p.split()) == PART_WORDS for p in parts)
    assert parts[0].split()[0] == "w120" and parts[1].split()[0] == "w240"  # 30 words of overlap
    assert part_texts(" ".join(words[:PART_WORDS])) == []


def test_a_recall_reaches_turns_older_than_its_candidate_lists(
    engine: Engine, tmp_path: Path, chroma_settings: ChromaSettings, clock: FrozenClock
) -> None:
    memory = Memory(
        _settings(tmp_path, chroma_settings, candidates_per_signal=10, max_candidates=10),
        clock=clock, llm=None, engine=engine,
    )  # fmt: skip
    try:
        memory.record_turn("s-old", "AHIST", "user", "Please ship pallet PAL-77341 to the Tacoma warehouse.")
        for i in range(60):
            clock.sleep(3600)
            memory.record_turn(f"s-{i}", "AHIST", "user", f"{FILLER[i % len(FILLER)]} Note {i}.")
        memory.conversations.flush(FLUSH_S)

        hits = memory.recall_conversations("AHIST", "where did pallet PAL-77341 go", k=1)

        assert [h.session_id for h in hits] == ["s-old"]
    finally:
        memory.close()


def test_another_processes_writes_and_erasure_reach_a_process_holding_the_customer(
    engine: Engine, tmp_path: Path, chroma_settings: ChromaSettings, clock: FrozenClock
) -> None:
    reader = Memory(_settings(tmp_path, chroma_settings), clock=clock, llm=None, engine=engine)
    writer = Memory(_settings(tmp_path, chroma_settings), clock=clock, llm=None, engine=engine)
    try:
        writer.record_turn("s-1", "ASHARED", "user", "Invoices go to ap@shared.example from now on.")
        writer.conversations.flush(FLUSH_S)
        assert reader.recall_conversations("ASHARED", "where do invoices go", k=3)
        assert reader.conversations.scope_vectors.held(reader_scope(reader))

        clock.sleep(60)
        writer.record_turn("s-2", "ASHARED", "user", "The forklift order FL-2231 was cancelled.")
        writer.conversations.flush(FLUSH_S)
        hits = reader.recall_conversations("ASHARED", "forklift order FL-2231", k=1)
        assert [h.session_id for h in hits] == ["s-2"]

        writer.forget("ASHARED")
        assert reader.recall_conversations("ASHARED", "forklift order FL-2231", k=3) == []
    finally:
        writer.close()
        reader.close()


def reader_scope(memory: Memory) -> Scope:
    return Scope.of(memory.conversations.default_tenant, "ASHARED")


def test_a_plain_ranking_returns_neighbouring_turns_as_hits_of_their_own(
    memory: Memory, clock: FrozenClock
) -> None:
    lines = [
        "The Tacoma warehouse receives pallets on weekdays.",
        "Pallets for the Tacoma warehouse need a booking number.",
        "Tacoma warehouse pallets over 500 kg need a forklift slot.",
    ]
    for line in lines:
        memory.record_turn("s-1", "APLAIN", "user", line)
        clock.sleep(60)
    memory.conversations.flush(FLUSH_S)

    windowed = memory.recall_conversations("APLAIN", "Tacoma warehouse pallets", k=3)
    plain = memory.recall_conversations(
        "APLAIN", "Tacoma warehouse pallets", k=3, options=RecallOptions(before=0, after=0)
    )

    assert len(windowed) == 1 and len(windowed[0].window) == 3
    assert sorted(h.seq for h in plain) == [1, 2, 3]
    assert all(h.window == (h.turn,) for h in plain)


def test_dates_and_profiles_are_per_call(memory: Memory, clock: FrozenClock) -> None:
    memory.record_turn("s-jan", "ADATES", "user", "The credit limit was raised to 20,000.")
    clock.sleep(30 * 86_400)
    memory.record_turn("s-feb", "ADATES", "user", "The credit limit was lowered to 15,000.")
    memory.conversations.flush(FLUSH_S)
    query = "what happened to the credit limit"

    early = memory.recall_conversations(
        "ADATES", query, k=5, options=RecallOptions(until=NOW + timedelta(days=1))
    )
    late = memory.recall_conversations(
        "ADATES", query, k=5, options=RecallOptions(since=NOW + timedelta(days=1))
    )
    lexical = memory.recall_conversations(
        "ADATES", "forklift booking", k=5, options=RecallOptions(profile="lexical")
    )

    assert [h.session_id for h in early] == ["s-jan"]
    assert [h.session_id for h in late] == ["s-feb"]
    assert lexical == []  # no turn holds either word


def test_per_call_options_are_checked(memory: Memory) -> None:
    memory.record_turn("s-1", "ACHECK", "user", "hello")
    memory.conversations.flush(FLUSH_S)
    assert memory.recall_conversations("ACHECK", "hello", k=200) is not None
    for bad in (
        {"k": 201},
        {"options": RecallOptions(before=-1)},
        {"options": RecallOptions(after=21)},
        {"options": RecallOptions(profile="nope")},
        {"options": RecallOptions(since=datetime(2026, 1, 1))},  # naive
    ):
        with pytest.raises(InvalidRecallError):
            memory.recall_conversations("ACHECK", "hello", **{"k": 3, **bad})  # type: ignore[arg-type]


def test_time_in_the_question_narrows_to_the_turns_of_that_time(memory: Memory, clock: FrozenClock) -> None:
    memory.record_turn("s-old", "AWHEN", "user", "We agreed to ship the forklift parts by sea freight.")
    clock.sleep(60 * 86_400)
    memory.record_turn("s-new", "AWHEN", "user", "We agreed the forklift parts go by air instead.")
    clock.sleep(3 * 86_400)
    memory.conversations.flush(FLUSH_S)
    query = "what did we agree about the forklift parts"

    last_week = memory.recall_conversations("AWHEN", f"{query} last week", k=3)
    two_months = memory.recall_conversations("AWHEN", f"{query} two months ago", k=3)
    unread = memory.recall_conversations(
        "AWHEN", f"{query} last week", k=3, options=RecallOptions(dates_in_query=False)
    )
    nothing_then = memory.recall_conversations("AWHEN", f"{query} in 2019-05-01", k=3)

    assert [h.session_id for h in last_week] == ["s-new"]
    assert [h.session_id for h in two_months] == ["s-old"]
    assert {h.session_id for h in unread} == {"s-old", "s-new"}
    assert {h.session_id for h in nothing_then} == {"s-old", "s-new"}  # an empty span narrows nothing
