"""The token budget: every section held to its share, low-value items dropped first, pins never dropped."""

from __future__ import annotations

from decimal import Decimal

import pytest
from context_fixtures import NOW, hit, seed_erp, stub_context
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.context import ContextResult
from connector.erp.records import DocumentRecord
from connector.memory import Memory
from connector.semantic.upsert import upsert_records
from connector.settings import ContextSettings, Settings, WorkingMemorySettings
from connector.tokens import count_tokens
from connector.working import NewTurn

WORDS = "the pallet of copper fittings arrived late and the customer asked for a refund of freight " * 6
CASES = [hit(f"C-{i}", f"case {i}: {WORDS}", 0.9 - i / 100) for i in range(10)]


@pytest.fixture
def full_memory(sqlite_engine: Engine, settings: Settings) -> Memory:
    """Every section has far more material than its share of a 1,200-token budget."""
    settings = settings.model_copy(
        update={
            "context": ContextSettings(token_budget=1200, max_open_documents=40, max_cases=10),
            "working": WorkingMemorySettings(verbatim_turns=30, fold_batch=5),
        }
    )
    memory = Memory(settings, clock=FrozenClock(NOW), llm=None, engine=sqlite_engine)
    seed_erp(memory, documents=40, attributes=60)
    for i in range(8):
        memory.learn(
            "ABARTENDE",
            f"Fact {i}: prefers deliveries on weekday {i} mornings. {WORDS[:400]}",
            importance=0.9 - i / 10,
        )
    memory.record_turn("s-1", "ABARTENDE", "tool", "", tool_name="get_invoice",
                       tool_result={"ReferenceNbr": "INV-004821", "Amount": "18250.40"})  # fmt: skip
    turns = [
        NewTurn("user" if i % 2 == 0 else "assistant", f"turn {i} on SO-{i:06d} for {i}.50 USD: {WORDS}")
        for i in range(80)
    ]
    for start in range(0, 80, 10):
        memory.working.record_turns("s-1", "ABARTENDE", turns[start : start + 10])
    return memory


def build(memory: Memory, **kw: object) -> ContextResult:
    return stub_context(memory, CASES).build("ABARTENDE", "refund of freight", session_id="s-1", **kw)  # type: ignore[arg-type]


def test_the_whole_context_fits_the_budget(full_memory: Memory) -> None:
    result = build(full_memory)
    assert result.token_count == count_tokens(result.text) <= 1200
    assert not result.over_budget


@pytest.mark.parametrize(
    "section", ["erp_facts", "open_documents", "learned_facts", "past_cases", "summary", "recent_turns"]
)
def test_every_section_is_held_to_its_share(full_memory: Memory, section: str) -> None:
    result = build(full_memory)
    part = result.section(section)
    assert part.dropped > 0 or any(i.truncated for i in part.items), "each section had more than fits"
    never_dropped = ("party:default/customer/ABARTENDE", "documents:not_shown")
    fixed = sum(i.tokens for i in part.items if i.source in never_dropped)
    assert part.tokens - fixed <= part.cap + part.borrowed
    assert part.cap <= int(full_memory.settings.context.shares[section] * 1200)


def test_low_value_items_go_first(full_memory: Memory) -> None:
    result = build(full_memory)
    cases = [i.source for i in result.section("past_cases").items]
    assert cases == [f"case:C-{i}" for i in range(len(cases))]  # the best-scoring kept, in order
    turns = [int(i.source.split("#")[1]) for i in result.section("recent_turns").items]
    assert turns == list(range(turns[0], 82))  # the newest turns kept, contiguous up to the last
    docs = result.section("open_documents").items
    assert "days overdue" in docs[0].text  # overdue documents are the last to go


def test_explicit_pins_and_the_erp_header_are_never_dropped(full_memory: Memory) -> None:
    full_memory.pin("s-1", "disputed_amount", "18250.40", source="agent")
    result = build(full_memory, token_budget=300)
    assert "- disputed_amount = 18250.40 (amount; agent)" in result.text
    assert result.section("erp_facts").items[0].source == "party:default/customer/ABARTENDE"
    assert result.token_count <= 300


def test_every_pinned_value_is_shown_query_documents_first(full_memory: Memory) -> None:
    for i in range(20):
        order = {"OrderNbr": f"SO-{i:06d}", "OrderTotal": f"{i}00.00", "RequestedOn": "2026-03-04"}
        full_memory.record_turn("s-1", "ABARTENDE", "tool", "", tool_name="get_order", tool_result=order)
    result = stub_context(full_memory, CASES).build(
        "ABARTENDE", "where is SO-000017?", session_id="s-1", token_budget=1200
    )
    pins = result.section("pinned")
    heads = [item.source.split("/")[1].split("@")[0] for item in pins.items]
    assert heads[:3] == ["SO-000017", "INV-004821", "SO-000000"]
    assert pins.dropped == 0
    state = full_memory.working.state("s-1").pinned
    assert len(state) == 2 + 20 * 3
    assert all(p.value in result.text for p in state)
    assert result.token_count <= 1200


def test_a_long_session_keeps_the_extracted_values_of_its_latest_tool_results(full_memory: Memory) -> None:
    cap = full_memory.settings.working.max_extracted_pins
    for i in range(40):  # 3 values each: 120 extracted values, beyond the cap of 64
        order = {"OrderNbr": f"SO-{i:06d}", "OrderTotal": f"{i}00.00", "RequestedOn": "2026-03-04"}
        full_memory.record_turn("s-1", "ABARTENDE", "tool", "", tool_name="get_order", tool_result=order)
    full_memory.pin("s-1", "disputed_total", "1250.00")
    state = full_memory.working.state("s-1").pinned
    extracted = [p for p in state if not p.explicit]
    assert cap - 3 < len(extracted) <= cap  # whole tool results go, oldest first
    kept = {p.name.split(".")[0] for p in extracted}
    assert kept == {f"SO-{i:06d}" for i in range(40 - len(kept), 40)}
    assert any(p.explicit and p.name == "disputed_total" for p in state)
    result = stub_context(full_memory, CASES).build(
        "ABARTENDE", "order status", session_id="s-1", token_budget=3000
    )
    assert all(p.value in result.text for p in state)
    assert result.section("pinned").dropped == 0
    assert result.token_count <= 3000


def test_a_budget_below_the_fixed_items_says_so(full_memory: Memory) -> None:
    for i in range(60):
        full_memory.pin("s-1", f"value-{i:02d}", f"{i}.00")
    result = build(full_memory, token_budget=150)
    assert result.over_budget
    assert result.warnings[-1].startswith("over budget: the ERP header and pinned values alone need")
    assert "- value-59 = 59.00" in result.text


@pytest.mark.parametrize("budget", [400, 800, 3000, 8000])
def test_any_budget_is_respected(full_memory: Memory, budget: int) -> None:
    assert build(full_memory, token_budget=budget).token_count <= budget


def test_a_huge_turn_is_truncated_not_dropped(full_memory: Memory) -> None:
    full_memory.record_turn("s-1", "ABARTENDE", "user", "x y " * 60_000)
    result = build(full_memory)
    newest = result.section("recent_turns").items[-1]
    assert newest.truncated and newest.text.endswith("…[truncated]")
    assert result.token_count <= 1200


def test_the_estimating_tokenizer_also_keeps_the_real_count_in_budget(full_memory: Memory) -> None:
    full_memory.settings.context.tokenizer = "estimate"
    result = build(full_memory, token_budget=1000)
    assert result.tokenizer == "estimate"
    assert count_tokens(result.text) <= result.token_count <= 1000


def _costs_match_the_text(result: ContextResult, kind: str = "cl100k_base") -> bool:
    """Every item's cost is its shown text's count (plus the joining newline) by ``kind``."""
    return all(item.tokens == count_tokens(item.text, kind) + 1 for s in result.sections for item in s.items)


def test_costs_kept_between_builds_follow_every_change(full_memory: Memory) -> None:
    """Item costs are kept from build to build; a new turn, a pin, a fold and a sync write each
    change what is shown, and every cost is still that of the text shown."""
    first = build(full_memory)
    assert _costs_match_the_text(first)
    full_memory.record_turn("s-1", "ABARTENDE", "user", f"and the freight of SO-000079 too: {WORDS}")
    full_memory.pin("s-1", "refund_total", "312.40")
    full_memory.working.fold("s-1")
    paid = DocumentRecord(
        tenant="default", doc_type="ar_invoice", external_id="INV/AR004820", number="AR004820",
        party_kind="customer", party_external_id="ABARTENDE", status="Open", currency="USD",
        amount=Decimal("1250.75"), balance=Decimal("99.10"), description="Bar stools lot 0, part paid",
    )  # fmt: skip
    with full_memory.engine.begin() as conn:
        upsert_records(conn, [paid], NOW)
    second = build(full_memory)
    assert "99.10 of 1,250.75 USD" in second.text and "refund_total = 312.40" in second.text
    assert _costs_match_the_text(second)
    assert second.token_count == count_tokens(second.text) <= 1200


def test_kept_costs_are_per_tokenizer(full_memory: Memory) -> None:
    exact = build(full_memory)
    full_memory.settings.context.tokenizer = "estimate"
    estimated = build(full_memory)
    assert _costs_match_the_text(exact) and _costs_match_the_text(estimated, "estimate")
