"""build_context: sections in order, ERP facts, open documents, pins, cases, turns, errors, determinism."""

from __future__ import annotations

import asyncio
from datetime import date, timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa
from context_fixtures import NOW, StubEpisodic, hit, seed_erp, stub_context
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.context import SECTION_ORDER, ContextBuilder, ContextInputError, ContextResult
from connector.embeddings.shared_query import SharedQuery
from connector.episodic.models import CaseHit
from connector.errors import ScopeError, StoreError, UnknownCustomerError
from connector.memory import Memory
from connector.settings import Settings

INVOICE = {"ReferenceNbr": "INV-004821", "Amount": "1250.75", "DueDate": "2026-01-05"}


@pytest.fixture
def memory(engine: Engine, settings: Settings) -> Memory:
    memory = Memory(settings, clock=FrozenClock(NOW), llm=None, engine=engine)
    seed_erp(memory)
    return memory


@pytest.fixture
def context(memory: Memory) -> ContextBuilder:
    return stub_context(memory, [hit("C-1", "Credit memo CM-000311 issued for a duplicate invoice.", 0.82)])


def headers(result: ContextResult) -> list[str]:
    return [line for line in result.text.splitlines() if line.startswith("## ")]


def test_sections_come_in_the_fixed_order(memory: Memory, context: ContextBuilder) -> None:
    memory.record_turn("s-1", "ABARTENDE", "user", "Why was I charged twice?")
    result = context.build("ABARTENDE", "Why was I charged twice?", session_id="s-1")
    assert headers(result) == [
        "## Today",
        "## ERP facts (as of 2026-01-15 11:40 UTC)",
        "## Open documents (named in the query first, then overdue first)",
        "## Pinned values (exact; never summarised)",
        "## Learned facts",
        "## Similar past cases",
        "## Conversation summary",
        "## Recent turns (turn 1)",
    ]
    assert [s.name for s in result.sections] == list(SECTION_ORDER)
    assert SECTION_ORDER == ("today", "erp_facts", "open_documents", "erp_changes", "pinned", "learned_facts",
                             "past_cases", "earlier_conversations", "summary", "recent_turns")  # fmt: skip
    # (earlier conversations are rendered only when there are some: tests/conversations/test_conversations.py)
    assert "2026-01-15 (Thursday), 12:00 UTC" in result.text
    assert result.warnings == ()


def test_erp_facts_and_open_documents_overdue_first(memory: Memory, context: ContextBuilder) -> None:
    result = context.build("ABARTENDE", "balance?")
    erp = result.section("erp_facts")
    assert erp.items[0].text.startswith("Customer ABARTENDE; status Active")
    assert erp.items[0].text.endswith("; name:\n> Bartender Supplies")  # ERP free text is quoted data
    assert "credit limit 900,000.00 USD; terms 30D" in erp.items[0].text
    assert erp.items[0].source == "party:default/customer/ABARTENDE"
    assert "- PO required: Y" in result.text
    assert erp.items[-1].source == "party:default/customer/ABARTENDE#attribute:PO_REQUIRED"
    docs = result.section("open_documents").items
    # AR004822 is 15 days overdue, AR004821 5 days, AR004820 not yet due.
    assert [i.source for i in docs] == [
        "document:default/ar_invoice/INV/AR004822",
        "document:default/ar_invoice/INV/AR004821",
        "document:default/ar_invoice/INV/AR004820",
    ]
    assert "due 2025-12-31, 15 days overdue; balance 1,250.75 of 1,250.75 USD" in docs[0].text
    assert (
        "open receivables: 3,752.25 USD across 3 documents; overdue: 2,501.50 USD across 2 invoices"
        in result.text
    )


def test_learned_facts_and_past_cases_as_date_and_summary(memory: Memory, context: ContextBuilder) -> None:
    memory.learn("ABARTENDE", "Prefers to be contacted by email after 3pm.", importance=0.8, source="agent")
    result = context.build("ABARTENDE", "Why was I charged twice?")
    fact = result.section("learned_facts").items[0]
    assert fact.source.startswith("fact:") and fact.score == 0.8
    assert "> Prefers to be contacted by email after 3pm." in fact.text
    case = result.section("past_cases").items[0]
    assert case.source == "case:C-1" and case.score == 0.82
    assert case.text == (
        "2025-11-03 (case C-1, similarity 0.82, documents INV-004821):\n"
        "> Credit memo CM-000311 issued for a duplicate invoice."
    )


def test_pinned_values_and_turns_from_the_session(memory: Memory, context: ContextBuilder) -> None:
    memory.record_turn("s-1", "ABARTENDE", "user", "Why was I charged twice for INV-004821?")
    memory.record_turn("s-1", "ABARTENDE", "tool", "", tool_name="get_invoice", tool_result=INVOICE)
    result = context.build("ABARTENDE", "charged twice", session_id="s-1")
    pins = [i.text for i in result.section("pinned").items]
    assert pins == ["- INV-004821: Amount 1250.75; DueDate 2026-01-05 (tool get_invoice, turn 2)"]
    turns = result.section("recent_turns").items
    assert [t.source for t in turns] == ["turn:s-1#1", "turn:s-1#2"]
    assert turns[1].text.startswith("[turn 2, 2026-01-15 12:00] tool call get_invoice():\n> {")


def test_the_same_inputs_give_byte_identical_output(memory: Memory, context: ContextBuilder) -> None:
    memory.learn("ABARTENDE", "Prefers email.", importance=0.6)
    memory.record_turn("s-1", "ABARTENDE", "tool", "", tool_name="get_invoice", tool_result=INVOICE)
    first = context.build("ABARTENDE", "Why?", session_id="s-1")
    again = Memory(memory.settings, clock=FrozenClock(NOW), llm=None, engine=memory.engine)
    again_context = stub_context(
        again, [hit("C-1", "Credit memo CM-000311 issued for a duplicate invoice.", 0.82)]
    )
    second = again_context.build("ABARTENDE", "Why?", session_id="s-1")
    assert first.text.encode() == second.text.encode()
    assert first.to_dict() == second.to_dict()


def test_as_of_sets_today(memory: Memory, context: ContextBuilder) -> None:
    result = context.build("ABARTENDE", "q", as_of=NOW + timedelta(days=30))
    assert result.section("today").items[0].text.startswith("2026-02-14 (Saturday)")


def test_an_unknown_customer_error_names_no_other_customer(memory: Memory, context: ContextBuilder) -> None:
    """What an agent sees (library, LangGraph, MCP): no other customer's id, and one indexed read."""
    statements: list[str] = []

    def seen(conn: object, cursor: object, statement: str, *args: object) -> None:
        statements.append(statement)

    sa.event.listen(memory.engine, "before_cursor_execute", seen)
    try:
        with pytest.raises(UnknownCustomerError) as err:
            context.build("ABARTEND", "q")
    finally:
        sa.event.remove(memory.engine, "before_cursor_execute", seen)
    assert err.value.suggestions == []
    assert "ABARTENDE" not in str(err.value).replace("'ABARTEND'", "")
    party_reads = [s for s in statements if "FROM party" in s]
    assert party_reads and all("party.external_id = " in s for s in party_reads)  # no scan of the ids


def test_the_operator_gets_close_matches(memory: Memory, context: ContextBuilder) -> None:
    suggestions = context.suggestions("ABARTEND")
    assert suggestions[:2] == ["ABARTENDE", "ABARTENDER2"]
    assert "ABARTENDX" not in suggestions  # another tenant's customer is never suggested


def test_a_session_of_another_customer_is_refused(memory: Memory, context: ContextBuilder) -> None:
    memory.record_turn("s-1", "ABARTENDER2", "user", "private to customer 2")
    with pytest.raises(ScopeError):
        context.build("ABARTENDE", "q", session_id="s-1")


def test_an_unknown_session_is_a_warning(memory: Memory, context: ContextBuilder) -> None:
    result = context.build("ABARTENDE", "q", session_id="new")
    assert result.warnings == ("session new has no turns yet",)
    assert "- session new has no turns yet" in result.text


def test_stale_data_warns_in_result_and_text(engine: Engine, settings: Settings) -> None:
    memory = Memory(settings, clock=FrozenClock(NOW), llm=None, engine=engine)
    seed_erp(memory, synced_at=NOW - timedelta(hours=5))
    result = stub_context(memory).build("ABARTENDE", "q")
    assert len(result.warnings) == 1
    assert result.warnings[0].startswith("ERP data is 5 h 0 min old (last synced 2026-01-15 07:00 UTC;")
    assert f"- {result.warnings[0]}" in result.text


def test_bad_arguments_are_clear_errors(memory: Memory, context: ContextBuilder) -> None:
    with pytest.raises(ContextInputError, match="token_budget"):
        context.build("ABARTENDE", "q", token_budget=5)
    with pytest.raises(ContextInputError, match="query must be text"):
        context.build("ABARTENDE", None)  # type: ignore[arg-type]
    with pytest.raises(ScopeError):
        context.build("  ", "q")


def test_async_variant_gives_the_same_result(memory: Memory, context: ContextBuilder) -> None:
    sync = context.build("ABARTENDE", "q")
    async_result = asyncio.run(context.abuild("ABARTENDE", "q"))
    assert async_result.text == sync.text


def test_a_vendor_context_has_its_bills_and_terms(memory: Memory, context: ContextBuilder) -> None:
    from connector.erp.records import DocumentRecord, PartyRecord
    from connector.semantic.upsert import upsert_records

    bill = DocumentRecord(
        tenant="default", doc_type="ap_bill", external_id="BILL/000777", number="000777", party_kind="vendor",
        party_external_id="V100", status="Open", currency="USD", amount=Decimal("980.00"),
        balance=Decimal("980.00"), due_date=date(2026, 1, 10),
    )  # fmt: skip
    vendor = PartyRecord(tenant="default", kind="vendor", external_id="V100", name="Copper Co", terms="NET45")
    with memory.engine.begin() as conn:
        upsert_records(conn, [vendor, bill], NOW)
    result = context.build("V100", "What payment terms do we have?", party_kind="vendor")
    assert result.text.startswith("# Context for vendor V100 (tenant default)\n")
    assert result.section("erp_facts").items[0].text == "Vendor V100; terms NET45; name:\n> Copper Co"
    assert "- open payables: 980.00 USD across 1 document; overdue: 980.00 USD across 1 bill" in result.text
    assert result.section("open_documents").items[0].source == "document:default/ap_bill/BILL/000777"
    assert result.section("past_cases").items == ()  # customer memories are not read for a vendor
    with pytest.raises(UnknownCustomerError) as err:
        context.build("ABARTENDE", "q", party_kind="vendor")  # a customer is not a vendor
    assert err.value.suggestions == []
    with pytest.raises(ContextInputError, match="party_kind"):
        context.build("V100", "q", party_kind="supplier")


def test_orders_are_never_overdue_and_show_their_amount(memory: Memory, context: ContextBuilder) -> None:
    from connector.erp.records import DocumentRecord
    from connector.semantic.upsert import upsert_records

    order = DocumentRecord(
        tenant="default", doc_type="sales_order", external_id="SO/000123", number="SO-000123",
        party_kind="customer", party_external_id="ABARTENDE", status="Open", currency="USD",
        amount=Decimal("8130.00"), doc_date=date(2025, 3, 1), due_date=date(2025, 3, 3),
    )  # fmt: skip
    with memory.engine.begin() as conn:
        upsert_records(conn, [order], NOW)
    items = context.build("ABARTENDE", "order status?").section("open_documents").items
    line = next(i.text for i in items if "SO-000123" in i.text)
    expected = (
        "- SO-000123 (sales order); ordered 2025-03-01; requested 2025-03-03; amount 8,130.00 USD; "
        "status Open"
    )
    assert line == expected


def test_builds_on_a_one_connection_pool_do_not_wait_on_each_other(
    memory: Memory, settings: Settings
) -> None:
    """The builder's side reads run on connections of their own; it waits for them holding none,
    so even a pool of one connection serves several builds at once instead of timing out."""
    from concurrent.futures import ThreadPoolExecutor

    url = memory.engine.url
    extra = {"connect_args": {"check_same_thread": False}} if url.get_backend_name() == "sqlite" else {}
    small = sa.create_engine(
        url.render_as_string(hide_password=False), pool_size=1, max_overflow=0, pool_timeout=10, **extra
    )
    try:
        tight = Memory(settings, clock=FrozenClock(NOW), llm=None, engine=small)
        context = stub_context(tight)
        expected = context.build("ABARTENDE", "Why is INV-004821 open?").text
        with ThreadPoolExecutor(4) as pool:
            texts = list(
                pool.map(lambda _: context.build("ABARTENDE", "Why is INV-004821 open?").text, range(8))
            )
        assert texts == [expected] * 8
        tight.close()
    finally:
        small.dispose()


class _FailingRecall(StubEpisodic):
    """A case recall whose vector store is down: the early embedding and the recall both fail."""

    def start_query(self, query: str, shared_query: SharedQuery) -> None:
        raise StoreError("Chroma unreachable")

    def recall(self, customer_id: str, query: str, **kwargs: object) -> list[CaseHit]:
        raise StoreError("Chroma unreachable")


def test_a_failing_case_recall_leaves_a_warning_not_a_failed_context(memory: Memory) -> None:
    result = stub_context(memory, _FailingRecall()).build("ABARTENDE", "Why was I charged twice?")
    assert "similar past cases unavailable: StoreError" in result.warnings
    assert result.section("past_cases").items == ()
    assert "Bartender Supplies" in result.text and "AR004820" in result.text  # the ERP facts stay
