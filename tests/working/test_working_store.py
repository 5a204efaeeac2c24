"""Working memory: turns, tool calls, pinned values and scope, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.errors import ScopeError
from connector.memory import Memory
from connector.settings import Settings, WorkingMemorySettings
from connector.working import InvalidTurnError, UnknownSessionError

INVOICE = {
    "ReferenceNbr": {"value": "INV-004821"},
    "Amount": {"value": 1250.75},
    "Balance": {"value": "1250.75"},
    "DueDate": {"value": "2026-02-04T00:00:00+00:00"},
    "CustomerOrder": {"value": "PO-778812"},
    "Description": {"value": "Duplicate of AR004821, credited by CM-000311"},
}


@pytest.fixture
def memory(engine: Engine, settings: Settings) -> Memory:
    return Memory(settings, clock=FrozenClock(), llm=None, engine=engine)


def test_turns_get_consecutive_seqs_and_tool_payloads_round_trip(memory: Memory) -> None:
    memory.record_turn("s-1", "ABARTENDE", "user", "Why was I charged twice?")
    tool = memory.working.record_turn(
        "s-1", "ABARTENDE", "tool", "", tool_name="get_invoice", tool_args={"nbr": "INV-004821"},
        tool_result={"total": Decimal("1250.75"), "date": datetime(2026, 1, 5, tzinfo=UTC)},
    )  # fmt: skip
    assert tool.seq == 2
    state = memory.working.state("s-1")
    assert [t.seq for t in state.turns] == [1, 2]
    assert state.turns[1].tool_args == {"nbr": "INV-004821"}
    assert state.turns[1].tool_result == {"total": "1250.75", "date": "2026-01-05T00:00:00+00:00"}
    assert state.info.customer_id == "ABARTENDE" and state.info.tenant == "default"


def test_tool_result_values_are_pinned_exactly(memory: Memory) -> None:
    memory.record_turn("s-1", "C1", "tool", "", tool_name="get_invoice", tool_result=INVOICE)
    pins = {p.name: p for p in memory.working.state("s-1").pinned}
    assert pins["INV-004821.Amount"].value == "1250.75"
    assert pins["INV-004821.Amount"].kind == "amount"
    assert pins["INV-004821.DueDate"].value == "2026-02-04T00:00:00+00:00"
    assert {"INV-004821", "PO-778812", "AR004821", "CM-000311"} <= set(pins)
    assert pins["INV-004821"].source == "tool get_invoice, turn 1"


def test_explicit_pin_is_not_overwritten_by_a_later_tool_result(memory: Memory) -> None:
    memory.record_turn("s-1", "C1", "user", "hello")
    memory.pin("s-1", "INV-004821.Amount", Decimal("1200.00"), source="agent")
    memory.record_turn("s-1", "C1", "tool", "", tool_name="get_invoice", tool_result=INVOICE)
    pins = {p.name: p for p in memory.working.state("s-1").pinned}
    assert pins["INV-004821.Amount"].value == "1200.00"
    assert pins["INV-004821.Amount"].explicit
    assert pins["INV-004821.Balance"].value == "1250.75"


def test_a_session_belongs_to_one_customer(memory: Memory) -> None:
    memory.record_turn("s-1", "C1", "user", "hi")
    with pytest.raises(ScopeError, match="another customer"):
        memory.record_turn("s-1", "C2", "user", "I am someone else")
    with pytest.raises(ScopeError):
        memory.record_turn("s-1", "C1", "user", "other tenant", tenant="other")
    assert [t.content for t in memory.working.state("s-1").turns] == ["hi"]


@pytest.mark.parametrize("customer", ["", "   ", None])
def test_blank_scope_fails_closed(memory: Memory, customer: object) -> None:
    with pytest.raises(ScopeError):
        memory.record_turn("s-1", customer, "user", "x")  # type: ignore[arg-type]


def test_bad_role_and_unknown_session_are_clear_errors(memory: Memory) -> None:
    with pytest.raises(InvalidTurnError, match="role must be one of"):
        memory.record_turn("s-1", "C1", "system", "x")
    with pytest.raises(UnknownSessionError):
        memory.pin("nope", "x", 1)
    with pytest.raises(UnknownSessionError):
        memory.working.state("nope")


def test_nul_characters_are_stored_not_rejected(memory: Memory) -> None:
    memory.record_turn("s-1", "C1", "user", "a\x00b", tool_result=None)
    assert memory.working.state("s-1").turns[0].content == "a\ufffdb"


def test_another_process_continues_the_session(engine: Engine, settings: Settings) -> None:
    first = Memory(settings, clock=FrozenClock(), llm=None, engine=engine)
    first.record_turn("s-1", "C1", "user", "one")
    second = Memory(settings, clock=FrozenClock(), llm=None, engine=engine)
    assert second.record_turn("s-1", "C1", "assistant", "two").seq == 2
    assert [t.content for t in first.working.state("s-1").turns] == ["one", "two"]


def test_consolidation_interface(memory: Memory) -> None:
    memory.record_turn("s-1", "C1", "user", "PO numbers are required", agent_id="ar-bot")
    memory.record_turn("s-1", "C1", "tool", "", tool_name="t", tool_result={"OrderTotal": 10})
    infos = memory.working.sessions_to_consolidate()
    assert [(i.session_id, i.customer_id, i.agent_id, i.last_seq) for i in infos] == [
        ("s-1", "C1", "ar-bot", 2)
    ]
    text = memory.working.transcript("s-1", upto_seq=2)
    assert '[2] tool: t() -> {"OrderTotal":10}' in text
    assert "t.OrderTotal = 10 (amount)" in text
    memory.working.mark_consolidated("s-1", 2)
    memory.working.mark_consolidated("s-1", 1)  # never moves backwards
    assert memory.working.sessions_to_consolidate() == []


def test_forget_removes_only_that_customer(memory: Memory) -> None:
    memory.record_turn("s-1", "C1", "tool", "", tool_name="t", tool_result=INVOICE)
    memory.record_turn("s-2", "C2", "user", "keep me")
    removed = memory.working.forget("C1", tenant="default")
    assert removed == {"working_sessions": 1, "working_turns": 1, "working_pins": 7}
    with pytest.raises(UnknownSessionError):
        memory.working.state("s-1")
    assert memory.working.state("s-2").turns[0].content == "keep me"


def test_bulk_append_gives_the_same_state_as_one_by_one(engine: Engine, settings: Settings) -> None:
    from connector.working import NewTurn

    settings = settings.model_copy(update={"working": WorkingMemorySettings(verbatim_turns=3, fold_batch=2)})
    memory = Memory(settings, clock=FrozenClock(), llm=None, engine=engine)
    turns = [NewTurn("user", f"message {i} about SO-{i:06d}") for i in range(12)]
    turns.insert(4, NewTurn("tool", "", tool_name="get_invoice", tool_result=INVOICE))
    stored = memory.working.record_turns("bulk", "C1", turns)
    for t in turns:
        memory.record_turn(
            "single", "C1", t.role, t.content, tool_name=t.tool_name, tool_result=t.tool_result
        )
    assert [t.seq for t in stored] == list(range(1, 14))
    bulk, single = memory.working.state("bulk"), memory.working.state("single")
    assert bulk.summary == single.summary and bulk.summary_upto_seq == single.summary_upto_seq == 10
    assert [(p.name, p.value, p.seq) for p in bulk.pinned] == [
        (p.name, p.value, p.seq) for p in single.pinned
    ]
