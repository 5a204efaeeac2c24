"""Both fake ERPs synced into one store through the real adapters and sync runner (for snapshots)."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.adapters.acumatica import AcumaticaAdapter
from connector.adapters.sap import SAPAdapter
from connector.clock import FrozenClock
from connector.memory import Memory
from connector.semantic.upsert import document_t
from connector.settings import Settings, SyncSettings, TenantSettings
from connector.testing.acumatica import FakeAcumatica
from connector.testing.sap import FakeSAP

AS_OF = datetime(2026, 1, 15, 13, 0, tzinfo=UTC)


def synced_memory(engine: Engine) -> Memory:
    """A store holding a small fake Acumatica (tenant ``acme``) and fake SAP (tenant ``s4``)."""
    clock = FrozenClock(AS_OF)
    acumatica = FakeAcumatica(
        seed=7, clock=clock, as_of=AS_OF, customers=12, vendors=4, invoices=60, sales_orders=20, bills=20,
        cases=5,
    )  # fmt: skip
    sap = FakeSAP(seed=8, customers=10, suppliers=3, both=1, sales_orders=20, billing_documents=40)
    tenants = [acumatica.tenant_settings(name="acme"), sap.tenant_settings(name="s4", page_size=50)]
    settings = Settings(tenants=tenants, sync=SyncSettings(lookback_seconds=0))
    memory = Memory(settings, clock=clock, engine=engine, llm=None)

    def factory(t: TenantSettings) -> AcumaticaAdapter | SAPAdapter:
        if t.kind == "sap":
            return SAPAdapter(t, sync=settings.sync, clock=clock, transport=sap.transport())
        transport = httpx.MockTransport(acumatica.handle)
        return AcumaticaAdapter(t, sync=settings.sync, clock=clock, transport=transport)

    report = memory.sync_runner(adapter_factory=factory).run()
    assert report.ok, [r.error for r in report.results]
    return memory


def busiest(memory: Memory, tenant: str, kind: str) -> str:
    """The party of ``tenant`` with the most open documents (ties: the lowest id)."""
    with memory.engine.connect() as conn:
        row = conn.execute(
            sa.select(document_t.c.party_external_id, sa.func.count())
            .where(document_t.c.tenant == tenant, document_t.c.party_kind == kind)
            .where(document_t.c.is_open.is_(True))
            .group_by(document_t.c.party_external_id)
            .order_by(sa.func.count().desc(), document_t.c.party_external_id)
            .limit(1)
        ).one()
    return str(row[0])
