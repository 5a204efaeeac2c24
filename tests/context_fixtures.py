"""Small seeded stores for the context tests: one customer, its documents, a stub case recall."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from connector.context import ContextBuilder
from connector.embeddings.shared_query import SharedQuery
from connector.episodic.models import CaseHit
from connector.erp.records import Address, Contact, DocumentRecord, PartyRecord
from connector.memory import Memory
from connector.semantic.upsert import upsert_records

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
SYNCED = datetime(2026, 1, 15, 11, 40, tzinfo=UTC)


def seed_erp(
    memory: Memory, *, synced_at: datetime = SYNCED, documents: int = 3, attributes: int = 0
) -> None:
    parties = [
        PartyRecord(
            tenant="default", kind="customer", external_id="ABARTENDE", name="Bartender Supplies",
            status="Active", currency="USD", credit_limit=Decimal("900000"), terms="30D",
            contacts=(Contact(role="main", name="Ann Lee", email="ann@example.com"),),
            addresses=(Address(role="main", city="Seattle", country="US"),),
            attributes={"PO_REQUIRED": "Y"} | {f"ATTR{i:03d}": f"value {i}" for i in range(attributes)},
        ),
        PartyRecord(tenant="default", kind="customer", external_id="ABARTENDER2", name="Bar Tender Two"),
        PartyRecord(tenant="default", kind="customer", external_id="COFFEESHOP", name="Abartende Coffee"),
        PartyRecord(tenant="other", kind="customer", external_id="ABARTENDX", name="Other tenant"),
    ]  # fmt: skip
    docs = [
        DocumentRecord(
            tenant="default", doc_type="ar_invoice", external_id=f"INV/AR00482{i}", number=f"AR00482{i}",
            party_kind="customer", party_external_id="ABARTENDE", status="Open", currency="USD",
            amount=Decimal("1250.75"), balance=Decimal("1250.75"), doc_date=date(2025, 12, 1),
            due_date=date(2026, 1, 20) - timedelta(days=10 * i), description=f"Bar stools lot {i}",
        )
        for i in range(documents)
    ]  # fmt: skip
    with memory.engine.begin() as conn:
        upsert_records(conn, [*parties, *docs], synced_at)


def hit(case_id: str, summary: str, score: float, day: int = 3) -> CaseHit:
    return CaseHit(
        case_id=case_id,
        entry_id=f"e-{case_id}",
        occurred_at=datetime(2025, 11, day, tzinfo=UTC),
        summary=summary,
        score=score,
        documents=("INV-004821",),
    )


@dataclass
class StubEpisodic:
    """Stands in for EpisodicMemory.recall (the CaseRecall protocol); records the queries it was asked."""

    hits: list[CaseHit] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)

    def recall(
        self,
        customer_id: str,
        query: str,
        *,
        k: int = 3,
        tenant: str | None = None,
        case_type: str | None = None,
        as_of: datetime | None = None,
        shared_query: SharedQuery | None = None,
    ) -> Sequence[CaseHit]:
        self.queries.append(query)
        return list(self.hits[:k])

    def start_query(self, query: str, shared_query: SharedQuery) -> None:
        """Nothing to embed: the stub's hits are fixed."""


def stub_context(memory: Memory, recall: StubEpisodic | list[CaseHit] | None = None) -> ContextBuilder:
    """A ContextBuilder over ``memory``'s stores, built from its constructor with a stub case recall."""
    stub = recall if isinstance(recall, StubEpisodic) else StubEpisodic(recall or [])
    settings = memory.settings
    return ContextBuilder(
        memory.engine,
        clock=memory.clock,
        settings=settings.context,
        expected_sync_lag=timedelta(minutes=settings.sync.expected_lag_minutes),
        default_tenant=memory.default_tenant,
        erp_kinds={t.name: t.kind for t in settings.tenants},
        cases=stub,
        facts=memory.facts,
        sessions=memory.working,
    )
