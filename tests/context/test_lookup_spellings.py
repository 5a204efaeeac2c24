"""``lookup_document`` finds a document however an agent or a user writes its number: the letters
apart from the digits (``AR 493``), joined (``AR493``), a kind word (``invoice 493``), short
numbers included; a spelling that fits two documents names both and picks neither."""

from __future__ import annotations

from decimal import Decimal

import pytest
from context_fixtures import NOW, seed_erp
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.context import UnknownDocumentError
from connector.context.references import NumberRef, document_number
from connector.erp.records import DocumentRecord
from connector.memory import Memory
from connector.semantic.upsert import upsert_records
from connector.settings import Settings


def document(number: str, doc_type: str = "ar_invoice", customer: str = "ABARTENDE") -> DocumentRecord:
    return DocumentRecord(
        tenant="default", doc_type=doc_type, external_id=f"{doc_type}/{number}", number=number,
        party_kind="customer", party_external_id=customer, status="Open", currency="USD",
        amount=Decimal("493.00"), balance=Decimal("493.00"),
    )  # fmt: skip


@pytest.fixture
def memory(engine: Engine, settings: Settings) -> Memory:
    memory = Memory(settings, clock=FrozenClock(NOW), llm=None, engine=engine)
    seed_erp(memory, documents=0)
    records = [
        document("AR493"),
        document("SO000077", "sales_order"),
        document("CM000077", "credit_memo"),
        document("AR000888", customer="COFFEESHOP"),
    ]
    with memory.engine.begin() as conn:
        upsert_records(conn, records, NOW)
    return memory


SPELLINGS = ["AR493", "AR 493", "ar 493", "AR-493", "AR  493", " AR 493 ", "inv 493", "invoice 493", "#493"]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_every_common_spelling_finds_the_invoice(memory: Memory, spelling: str) -> None:
    assert memory.lookup_document("ABARTENDE", spelling).number == "AR493"


def test_a_kind_word_or_prefix_apart_from_the_digits_picks_among_documents_sharing_them(
    memory: Memory,
) -> None:
    assert memory.lookup_document("ABARTENDE", "SO 77").number == "SO000077"
    assert memory.lookup_document("ABARTENDE", "order 77").number == "SO000077"
    assert memory.lookup_document("ABARTENDE", "CM 77").number == "CM000077"
    assert memory.lookup_document("ABARTENDE", "credit memo 77").number == "CM000077"
    with pytest.raises(UnknownDocumentError) as both:
        memory.lookup_document("ABARTENDE", "77")
    assert both.value.candidates == ["CM000077", "SO000077"]
    assert memory.lookup_document("ABARTENDE", "493").number == "AR493"  # short digits alone, one fits


def test_another_customers_document_stays_not_found_in_any_spelling(memory: Memory) -> None:
    for spelling in ("AR000888", "AR 888", "888"):
        with pytest.raises(UnknownDocumentError):
            memory.lookup_document("ABARTENDE", spelling)
    assert memory.lookup_document("COFFEESHOP", "AR 888").number == "AR000888"


def test_one_number_is_read_with_its_prefix_and_free_text_is_left_to_the_query_parser() -> None:
    assert document_number("AR 493").numbers == (NumberRef("493", "ar_invoice", "AR"),)
    assert document_number("invoice no. 7").numbers == (NumberRef("7", "ar_invoice", None),)
    assert document_number("doc 12").numbers == (NumberRef("12"),)
    assert document_number("wibble 493").numbers == ()  # a word that is no kind and no prefix
    assert document_number("AR-493 and INV-7").numbers == (
        NumberRef("493", "ar_invoice", "AR"),
        NumberRef("7", "ar_invoice", "INV"),
    )
