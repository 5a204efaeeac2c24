"""The SAP adapter under the real sync runner: full read, day-granular delta, key scan."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.adapters.sap import SAPAdapter
from connector.clock import FrozenClock
from connector.memory import Memory
from connector.semantic.upsert import document_t, party_t
from connector.settings import Settings, SyncSettings, TenantSettings
from connector.sync.state import state_t
from connector.testing.sap import FakeSAP

START = datetime(2026, 1, 15, 13, 0, tzinfo=UTC)


def sync(engine: Engine, fake: FakeSAP, clock: FrozenClock) -> None:
    tenant = fake.tenant_settings(name="s4", page_size=25)
    settings = Settings(tenants=[tenant], sync=SyncSettings(lookback_seconds=0))
    memory = Memory(settings, clock=clock, engine=engine, llm=None)

    def factory(t: TenantSettings) -> SAPAdapter:
        return SAPAdapter(t, sync=settings.sync, clock=clock, transport=fake.transport())

    report = memory.sync_runner(adapter_factory=factory).run()
    assert report.ok, [r.error for r in report.results]


def parties(engine: Engine) -> dict[tuple[str, str], sa.Row[object]]:
    with engine.connect() as conn:
        return {(r.kind, r.external_id): r for r in conn.execute(sa.select(party_t))}


def test_a_full_then_a_delta_sync_of_sap(engine: Engine) -> None:
    clock = FrozenClock(START)
    fake = FakeSAP(seed=8, customers=30, suppliers=10, both=4, sales_orders=40, billing_documents=10)
    sync(engine, fake, clock)

    stored = parties(engine)
    assert len(stored) == 40
    both = next(bp for bp, row in fake.data.partners.items() if row["Customer"] and row["Supplier"])
    assert ("customer", both) in stored and ("vendor", both) in stored
    with engine.connect() as conn:
        documents = (
            sa.select(sa.func.count()).select_from(document_t).where(document_t.c.doc_type != "open_item")
        )
        assert conn.execute(documents).scalar_one() == 50
        marks = {r.stream: r.watermark for r in conn.execute(sa.select(state_t))}
    newest_day = max(row["LastChangeDate"] or row["CreationDate"] for row in fake.data.partners.values())
    assert marks["BusinessPartner"] == datetime.combine(newest_day, datetime.min.time(), UTC)  # floored

    # Next run, same day: an earlier-today change and a never-changed newcomer are both picked up.
    clock.advance(timedelta(hours=2))
    changed = sorted(fake.data.customers)[0]
    fake.modify(
        "A_BusinessPartner", changed, at=marks["BusinessPartner"], BusinessPartnerFullName="Renamed AG"
    )
    newcomer = fake.add_partner(created=START, changed=None)
    sync(engine, fake, clock)

    stored = parties(engine)
    assert stored[("customer", changed)].name == "Renamed AG"
    assert ("customer", newcomer) in stored


def test_the_key_scan_reads_a_partner_without_any_date(engine: Engine) -> None:
    """A real partner can have null CreationDate and LastChangeDate: no delta selects it, the key
    scan lists it, and the store gets it from a read by key."""
    clock = FrozenClock(START)
    fake = FakeSAP(seed=9, customers=8, suppliers=2, both=0, sales_orders=3, billing_documents=2)
    sync(engine, fake, clock)
    undated = fake.add_partner(CreationDate=None, CreationTime=None, LastChangeDate=None, LastChangeTime=None)
    clock.advance(timedelta(hours=1))  # a delta run: the key scan is not due yet
    sync(engine, fake, clock)
    assert ("customer", undated) not in parties(engine)

    clock.advance(timedelta(days=2))  # past sync.key_scan_interval_hours: the scan runs
    sync(engine, fake, clock)
    stored = parties(engine)
    assert ("customer", undated) in stored
    assert stored[("customer", undated)].name == fake.data.partners[undated]["BusinessPartnerFullName"]
    assert stored[("customer", undated)].deleted_at is None
