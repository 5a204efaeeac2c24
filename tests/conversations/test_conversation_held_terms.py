"""A process keeps each customer's turns and lexical postings in memory between recalls
(connector.conversations.scope_vectors / scope_terms, read in the background; the store answers
meanwhile: stored_terms, with the same statistics): a word said in a new turn is found at once,
an erased customer's words are gone from that memory too, another customer's words are never
found, and a new process finds the same turns from the store. SQLite and PostgreSQL, embedded
Chroma, the offline model."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.conversations import generations
from connector.conversations.recall import RecallOptions
from connector.conversations.scope_terms import TermsSnapshot
from connector.conversations.stored_terms import StoredTerms
from connector.memory import Memory
from connector.scope import Scope
from connector.settings import ChromaSettings, ConversationSettings, Settings

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
FLUSH_S = 60.0
LEXICAL = RecallOptions(profile="lexical", before=0, after=0)


def _memory(engine: Engine, tmp_path: Path, chroma: ChromaSettings, clock: FrozenClock) -> Memory:
    settings = Settings(
        data_dir=tmp_path / "data", chroma=chroma, conversations=ConversationSettings(enabled=True)
    )
    return Memory(settings, clock=clock, llm=None, engine=engine)


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(NOW)


@pytest.fixture
def memory(
    engine: Engine, tmp_path: Path, chroma_settings: ChromaSettings, clock: FrozenClock
) -> Iterator[Memory]:
    m = _memory(engine, tmp_path, chroma_settings, clock)
    yield m
    m.close()


def _said(memory: Memory, customer: str, session: str, *lines: str) -> None:
    for line in lines:
        memory.record_turn(session, customer, "user", line)
    memory.conversations.flush(FLUSH_S)


def _found(memory: Memory, customer: str, query: str) -> list[str]:
    return [h.turn.content for h in memory.recall_conversations(customer, query, k=5, options=LEXICAL)]


def test_a_word_of_a_new_turn_is_found_by_a_process_already_holding_the_customer(
    memory: Memory, clock: FrozenClock
) -> None:
    _said(memory, "HNEW", "s-1", "The pallets leave the Tacoma dock on Monday.")
    assert _found(memory, "HNEW", "Tacoma pallets")
    _wait_held(memory, "HNEW")

    clock.sleep(60)
    _said(memory, "HNEW", "s-2", "Invoice INV-88231 was paid by zebrawood credit.")

    assert _found(memory, "HNEW", "zebrawood") == ["Invoice INV-88231 was paid by zebrawood credit."]
    assert _found(memory, "HNEW", "INV-88231") == ["Invoice INV-88231 was paid by zebrawood credit."]


def test_an_erased_customers_words_leave_the_held_postings(memory: Memory) -> None:
    _said(memory, "HGONE", "s-1", "Ship the quokka figurines to Perth.")
    scope = Scope.of(memory.conversations.default_tenant, "HGONE")
    assert _found(memory, "HGONE", "quokka figurines")
    _wait_held(memory, "HGONE")

    memory.forget("HGONE")

    assert not memory.conversations.scope_vectors.held(scope)
    assert _found(memory, "HGONE", "quokka figurines") == []
    assert not memory.conversations.scope_vectors.held(scope)


def test_another_processes_erasure_reaches_the_held_postings(
    engine: Engine, tmp_path: Path, chroma_settings: ChromaSettings, clock: FrozenClock
) -> None:
    reader = _memory(engine, tmp_path, chroma_settings, clock)
    writer = _memory(engine, tmp_path, chroma_settings, clock)
    try:
        _said(writer, "HPROC", "s-1", "The wombat crates are late.")
        assert _found(reader, "HPROC", "wombat crates")
        _wait_held(reader, "HPROC")
        writer.forget("HPROC")
        assert _found(reader, "HPROC", "wombat crates") == []
    finally:
        writer.close()
        reader.close()


def test_a_customer_never_finds_another_customers_words(memory: Memory) -> None:
    _said(memory, "HA", "s-a", "Our pangolin order PO-ZX-99124 ships Friday.", "Thanks, all clear.")
    _said(memory, "HB", "s-b", "The pangolin order PO-ZX-55555 is on hold.", "Please check the invoice.")
    assert _found(memory, "HA", "pangolin order") == ["Our pangolin order PO-ZX-99124 ships Friday."]  # warm
    assert _found(memory, "HB", "pangolin order") == ["The pangolin order PO-ZX-55555 is on hold."]
    _wait_held(memory, "HA")
    _wait_held(memory, "HB")

    hits = memory.recall_conversations("HB", "pangolin PO-ZX-99124", k=5, options=LEXICAL)

    assert [h.turn.content for h in hits] == ["The pangolin order PO-ZX-55555 is on hold."]
    assert all("99124" not in term for h in hits for term in h.matched_terms)
    assert _found(memory, "HB", "ships Friday") == []


def test_a_new_process_finds_the_same_turns_from_the_store(
    engine: Engine, tmp_path: Path, chroma_settings: ChromaSettings, clock: FrozenClock
) -> None:
    first = _memory(engine, tmp_path, chroma_settings, clock)
    try:
        _said(first, "HRESTART", "s-1", "Ship the tapir statues by rail.", "The ocelot lamps wait.")
        before = _found(first, "HRESTART", "tapir statues ocelot lamps")
        _wait_held(first, "HRESTART")
        assert _found(first, "HRESTART", "tapir statues ocelot lamps") == before
    finally:
        first.close()
    second = _memory(engine, tmp_path, chroma_settings, clock)
    try:
        assert not second.conversations.scope_vectors.held(
            Scope.of(second.conversations.default_tenant, "HRESTART")
        )
        assert _found(second, "HRESTART", "tapir statues ocelot lamps") == before
        _wait_held(second, "HRESTART")
        assert _found(second, "HRESTART", "tapir statues ocelot lamps") == before
        assert len(before) == 2
    finally:
        second.close()


def _wait_held(memory: Memory, customer: str) -> None:
    scope = Scope.of(memory.conversations.default_tenant, customer)
    deadline = time.monotonic() + 60
    while not memory.conversations.scope_vectors.terms_held(scope):
        assert time.monotonic() < deadline, "the customer's postings never reached memory"
        time.sleep(0.02)


def test_the_store_and_the_held_postings_give_the_same_lexical_statistics(memory: Memory) -> None:
    lines = [f"Pallet P{i % 7} to dock {i % 3}: invoice INV-{i:04d} for the walrus order." for i in range(40)]
    _said(memory, "HSAME", "s-1", *lines)
    before = _found(memory, "HSAME", "walrus pallet P3 dock 2 INV-0017")  # postings still loading, maybe
    _wait_held(memory, "HSAME")
    conv = memory.conversations
    scope = Scope.of(conv.default_tenant, "HSAME")
    query = ["walrus", "p3", "dock", "inv0017", "0017", "absent"]
    with conv.engine.connect() as conn:
        state = generations.state(conn, scope)
        assert state is not None
        snap = conv.scope_vectors.snapshot(conn, scope, conv.index, state)
        assert isinstance(snap.terms, TermsSnapshot)
        stored = StoredTerms(conn, scope, snap.index_of, snap.turns)
        assert stored.frequencies(query, 1_000) == snap.terms.frequencies(query, 1_000)
        assert stored.frequencies(query, 5) == snap.terms.frequencies(query, 5)  # capped alike
        for (a_at, a_tf), (b_at, b_tf) in zip(
            stored.postings_of(query), snap.terms.postings_of(query), strict=True
        ):
            assert _pairs(a_at, a_tf) == _pairs(b_at, b_tf)
    assert _found(memory, "HSAME", "walrus pallet P3 dock 2 INV-0017") == before


def _pairs(positions: Any, tfs: Any) -> list[tuple[int, float]]:
    return sorted(zip(positions.tolist(), tfs.tolist(), strict=True))


def test_a_recall_of_a_held_customer_is_one_round_trip(
    memory: Memory, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The customer's generation is read with the hits' turns and neighbours, and a pooled connection
    used a moment ago is not pinged: PostgreSQL's recall cost 1.5 times SQLite's for 3 round trips."""
    _said(memory, "HTRIP", "s-1", "The kiwi crates left Auckland.", "Customs cleared them.", "Good.")
    _said(memory, "HTRIP", "s-2", "Invoice INV-7 for the kiwi crates is due.", "Paid by card.")
    assert _found(memory, "HTRIP", "kiwi crates")
    _wait_held(memory, "HTRIP")
    assert _found(memory, "HTRIP", "kiwi crates")
    queries = ["kiwi crates Auckland", "invoice paid", "customs"]
    with _statements_sent(engine, monkeypatch) as sent:
        for query in queries:
            assert memory.recall_conversations("HTRIP", query, k=2)  # the default neighbours
    assert len(sent) == len(queries), sent


@contextmanager
def _statements_sent(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every statement the driver sends the database meanwhile (on PostgreSQL the pool's pings too)."""
    sent: list[str] = []
    if engine.dialect.name != "postgresql":

        def listened(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
            sent.append(statement)

        sa.event.listen(engine, "before_cursor_execute", listened)
        try:
            yield sent
        finally:
            sa.event.remove(engine, "before_cursor_execute", listened)
        return
    import psycopg

    execute = psycopg.Cursor.execute

    def counted(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(str(query))
        return execute(self, query, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(psycopg.Cursor, "execute", counted)
        yield sent
