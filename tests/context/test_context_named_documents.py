"""Documents the query names are in the context ahead of the overdue ranking; the rest is counted.

A customer with 1,000 open invoices: whichever one the query names (in any common spelling, by an
amount or a date that identifies it) is shown; the section says how many open documents it leaves
out and what they sum to, over every open document; another customer's numbers never show.
"""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

import pytest
from context_fixtures import NOW, seed_erp, stub_context
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.context import ContextBuilder, ContextResult, UnknownDocumentError
from connector.erp.records import DocumentRecord
from connector.memory import Memory
from connector.semantic.upsert import upsert_records
from connector.settings import Settings

MANY = 1000


def invoice(i: int, customer: str = "ABARTENDE", **kw: object) -> DocumentRecord:
    fields: dict[str, object] = {
        "tenant": "default", "doc_type": "ar_invoice", "external_id": f"INV/INV-{i:06d}",
        "number": f"INV-{i:06d}", "party_kind": "customer", "party_external_id": customer, "status": "Open",
        "currency": "USD", "amount": Decimal(1000 + i) + Decimal("0.25"),
        "balance": Decimal(1000 + i) + Decimal("0.25"), "doc_date": date(2025, 1, 1) + timedelta(i % 300),
        "due_date": date(2026, 1, 10) - timedelta(days=i),  # INV-000999 is the most overdue
    } | kw  # fmt: skip
    return DocumentRecord(**fields)  # type: ignore[arg-type]


@pytest.fixture
def memory(engine: Engine, settings: Settings) -> Memory:
    memory = Memory(settings, clock=FrozenClock(NOW), llm=None, engine=engine)
    seed_erp(memory, documents=0)
    others = [invoice(5000 + i, customer="COFFEESHOP") for i in range(3)]
    with memory.engine.begin() as conn:
        upsert_records(conn, [invoice(i) for i in range(MANY)] + others, NOW)
    return memory


@pytest.fixture
def context(memory: Memory) -> ContextBuilder:
    return stub_context(memory)


def shown_numbers(result: ContextResult) -> list[str]:
    return [
        i.text.split(" ", 2)[1]
        for i in result.section("open_documents").items
        if i.source.startswith("document:")
    ]


def test_a_named_invoice_is_shown_wherever_it_ranks_among_1000(
    memory: Memory, context: ContextBuilder
) -> None:
    # Rank 0 is INV-000999 (most overdue), rank 999 is INV-000000 (due last).
    for rank in (0, 1, 14, 15, 16, 500, 998, 999):
        i = MANY - 1 - rank
        spellings = (f"INV-{i:06d}", f"inv {i}", f"#{i:06d}", f"#INV{i:06d}", f"invoice {i}", f"{i:06d}")
        for spelling in spellings:
            result = context.build("ABARTENDE", f"Why is {spelling} still open?")
            items = result.section("open_documents").items
            assert items[0].source == f"document:default/ar_invoice/INV/INV-{i:06d}", spelling
            assert "named in the query" in items[0].text
            assert not result.over_budget


def test_the_rest_fill_the_section_overdue_first(memory: Memory, context: ContextBuilder) -> None:
    result = context.build("ABARTENDE", "what about INV-000003?")
    numbers = shown_numbers(result)
    assert numbers[0] == "INV-000003"
    assert numbers[1:] == [f"INV-{i:06d}" for i in range(999, 999 - len(numbers) + 1, -1)]


def test_the_section_says_what_it_leaves_out_over_all_open_documents(
    memory: Memory, context: ContextBuilder
) -> None:
    result = context.build("ABARTENDE", "what do I owe?")
    section = result.section("open_documents")
    shown = [i for i in section.items if i.source.startswith("document:")]
    everything = sum((Decimal(1000 + i) + Decimal("0.25") for i in range(MANY)), Decimal(0))
    shown_sum = sum((Decimal(1000 + i) + Decimal("0.25") for i in range(MANY - len(shown), MANY)), Decimal(0))
    left = everything - shown_sum
    assert section.dropped == MANY - len(shown) > 0
    assert section.items[-1].text == (
        f"- {MANY - len(shown)} more open documents not shown: {MANY - len(shown)} AR invoices, "
        f"balance {left:,.2f} USD (look one up by its number)"
    )
    assert (
        f"- open receivables: {everything:,.2f} USD across 1,000 documents; overdue: {everything:,.2f} USD "
        "across 1,000 invoices"  # all fell due by 2026-01-10
    ) in result.text


def test_totals_are_per_currency_and_say_when_the_erp_has_no_balance(
    memory: Memory, context: ContextBuilder
) -> None:
    extra = [
        invoice(2000, currency="EUR", amount=Decimal("412300.00"), balance=Decimal("412300.00")),
        invoice(2001, currency="DKK", amount=Decimal("5142.10"), balance=None),  # no balance from the ERP
    ]
    with memory.engine.begin() as conn:
        upsert_records(conn, extra, NOW)
    memory.settings.tenants  # noqa: B018 - the test tenant is not configured: "the ERP"
    result = context.build("ABARTENDE", "and invoice 2001?")
    header = next(i.text for i in result.section("erp_facts").items if i.source.endswith("#balance"))
    assert header.startswith("- open receivables: 412,300.00 EUR, ")
    assert "; 1 open AR invoice without a balance from the ERP (amount 5,142.10 DKK)" in header
    named = result.section("open_documents").items[0].text
    assert "amount 5,142.10 DKK; balance not available from the ERP" in named
    assert "none" not in header


def test_another_customers_numbers_are_never_shown(memory: Memory, context: ContextBuilder) -> None:
    result = context.build("ABARTENDE", "Tell me about INV-005000 and inv 5001, #005002")
    assert "INV-00500" not in result.text
    assert all("named in the query" not in i.text for i in result.section("open_documents").items)


def test_a_query_naming_500_numbers_is_capped_without_error(memory: Memory, context: ContextBuilder) -> None:
    query = " ".join(f"INV-{i:06d}" for i in range(500))
    result = context.build("ABARTENDE", query)
    named = [i for i in result.section("open_documents").items if "named in the query" in i.text]
    assert 0 < len(named) <= 20
    assert any("only the first 50 were looked up" in w for w in result.warnings)
    assert not result.over_budget


def test_malformed_numbers_name_nothing_and_fail_nothing(memory: Memory, context: ContextBuilder) -> None:
    for query in ("INV-00A821??", "#", "inv -", "0000000000000000000000000000001", "1e400", "INV-" * 300):
        result = context.build("ABARTENDE", query)
        assert not result.over_budget


def test_an_amount_or_date_that_identifies_one_invoice_names_it(
    memory: Memory, context: ContextBuilder
) -> None:
    result = context.build("ABARTENDE", "the 1,042.25 one please")
    assert result.section("open_documents").items[0].source.endswith("INV-000042")
    result = context.build("ABARTENDE", "the invoice due on 2025-12-01")  # Jan 10 less 40 days
    assert result.section("open_documents").items[0].source.endswith("INV-000040")


def test_lookup_document_returns_the_customers_document_with_its_lines(memory: Memory) -> None:
    order = DocumentRecord(
        tenant="default", doc_type="sales_order", external_id="SO/SO000123", number="SO000123",
        party_kind="customer", party_external_id="ABARTENDE", status="Open", currency="EUR",
        amount=Decimal("250.00"),
        extra={"lines": [{"line": "1", "item": "STOOL", "description": "Bar stool", "quantity": "2",
                          "unit_price": "125.00", "amount": "250.00"}]},
    )  # fmt: skip
    with memory.engine.begin() as conn:
        upsert_records(conn, [order], NOW)
    for spelling in ("SO000123", "so 123", "SO-123", "order 000123"):
        found = memory.lookup_document("ABARTENDE", spelling)
        assert (found.number, found.doc_type, found.currency) == ("SO000123", "sales_order", "EUR")
    assert found.lines[0].item == "STOOL"
    assert "- line 1 STOOL 2 at 125.00 = 250.00 EUR:\n> Bar stool" in found.text()
    assert memory.lookup_document("ABARTENDE", "inv 42").number == "INV-000042"
    with pytest.raises(UnknownDocumentError) as both:  # bare digits fit an invoice and the order
        memory.lookup_document("ABARTENDE", "000123")
    assert both.value.candidates == ["INV-000123", "SO000123"]


def test_lookup_of_another_customers_document_is_not_found_like_a_missing_one(memory: Memory) -> None:
    with pytest.raises(UnknownDocumentError) as theirs:
        memory.lookup_document("ABARTENDE", "INV-005000")
    with pytest.raises(UnknownDocumentError) as missing:
        memory.lookup_document("ABARTENDE", "INV-005009")
    assert str(theirs.value).replace("5000", "N") == str(missing.value).replace("5009", "N")
    assert theirs.value.candidates == missing.value.candidates == []
    assert memory.lookup_document("COFFEESHOP", "INV-005000").party_id == "COFFEESHOP"


def test_an_sap_invoice_named_by_number_brings_its_open_item(memory: Memory) -> None:
    billing = invoice(0, external_id="90000123", number="90000123", balance=None, currency="EUR")
    item = invoice(
        0, doc_type="open_item", external_id="1010/2025/90000123/1", number="90000123", currency="EUR",
        amount=Decimal("5142.10"), balance=Decimal("5142.10"),
    )  # fmt: skip
    with memory.engine.begin() as conn:
        upsert_records(conn, [billing, item], NOW)
    for spelling in ("invoice 90000123", "SAP 0090000123"):
        named = [
            i.source for i in memory.build_context("ABARTENDE", spelling).section("open_documents").items[:2]
        ]
        assert sorted(named) == [
            "document:default/ar_invoice/90000123",
            "document:default/open_item/1010/2025/90000123/1",
        ]
