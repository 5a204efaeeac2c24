"""Paging cannot skip a record: records deleted from, inserted before or changed on pages already
read while an incremental window is paged leave no other record unread, for both ERPs (SAP reads
by key, Acumatica's pages overlap and are anchored, starting again when records moved further), and
the next incremental run leaves the store equal to the ERP. The fakes change their data between
two list requests; SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.adapters.acumatica import AcumaticaAdapter
from connector.adapters.sap.adapter import SAPAdapter
from connector.clock import FrozenClock
from connector.memory import Memory
from connector.semantic.upsert import party_t
from connector.settings import Settings, TenantSettings
from connector.testing import FakeAcumatica
from connector.testing.sap import FakeSAP

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
Change = Callable[[], None]


def on_list_request(handle: Callable[[httpx.Request], httpx.Response], path_end: str, number: int,
                    change: Change) -> httpx.MockTransport:  # fmt: skip
    """A transport that runs ``change`` once, just before the ``number``-th list request to the entity."""
    seen = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal seen
        if request.method == "GET" and request.url.path.endswith(path_end) and "$top" in request.url.params:
            seen += 1
            if seen == number:
                change()
        return handle(request)

    return httpx.MockTransport(handler)


def live_customers(engine: Engine) -> dict[str, str | None]:
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(party_t.c.external_id, party_t.c.name).where(
                party_t.c.kind == "customer", party_t.c.deleted_at.is_(None)
            )
        )
        return {r.external_id: r.name for r in rows}


def sync(
    engine: Engine, clock: FrozenClock, tenant: TenantSettings, open_adapter: Callable[..., object]
) -> str:
    memory = Memory(Settings(tenants=[tenant]), clock=clock, engine=engine, llm=None)
    [result] = memory.sync_runner(adapter_factory=open_adapter).run().results  # type: ignore[arg-type]
    assert result.error is None
    return str(result.status)


# Acumatica: overlapping, anchored $skip pages -------------------------------------------------


@pytest.mark.parametrize("deleted", [1, 6], ids=["within-overlap", "beyond-overlap"])
@pytest.mark.parametrize("also", [False, True], ids=["deletes", "deletes-inserts-updates"])
def test_acumatica_changes_during_paging_skip_no_record(engine: Engine, deleted: int, also: bool) -> None:
    clock = FrozenClock(NOW)
    fake = FakeAcumatica(seed=11, clock=clock, customers=80, vendors=0, invoices=0, sales_orders=0,
                         bills=0, cases=0)  # fmt: skip
    tenant = fake.tenant_settings("acme", streams=["Customer"], page_size=20)  # pages overlap by 2
    transport: httpx.BaseTransport = httpx.MockTransport(fake.handle)

    def factory(t: TenantSettings) -> AcumaticaAdapter:
        return AcumaticaAdapter(t, sync=Settings().sync, clock=clock, transport=transport)

    assert sync(engine, clock, tenant, factory) == "ok"
    clock.advance(timedelta(hours=1))
    changed = fake.keys("Customer")[:60]  # an incremental window of 60 changed customers
    for key in changed:
        fake.modify("Customer", key, {"CustomerName": f"New name of {key}"}, modified_at=clock.now())

    def change() -> None:  # between the first and the second page of the window
        for key in changed[2 : 2 + deleted]:
            fake.delete("Customer", key)
        if also:
            fake.modify("Customer", changed[0], {"CustomerName": "Renamed on page one"})
            template = fake.record("Customer", changed[10])
            fake.add("Customer", {**template, "CustomerID": "NEWCOMER"})

    transport = on_list_request(fake.handle, "/Customer", 2, change)
    clock.advance(timedelta(minutes=15))
    assert sync(engine, clock, tenant, factory) == "ok"

    stored = live_customers(engine)
    for key in changed[2 + deleted :]:  # not one changed record was skipped
        assert stored[key] == (
            f"New name of {key}" if not also or key != changed[0] else "Renamed on page one"
        )

    transport = httpx.MockTransport(fake.handle)
    clock.advance(timedelta(days=1, minutes=15))  # the next incremental run (with its daily key scan)
    assert sync(engine, clock, tenant, factory) == "ok"
    stored = live_customers(engine)
    assert set(stored) == set(fake.keys("Customer"))
    if also:
        assert stored[changed[0]] == "Renamed on page one"


# SAP: pages by key -----------------------------------------------------------------------------


@pytest.mark.parametrize("also", [False, True], ids=["deletes", "deletes-inserts-updates"])
def test_sap_changes_during_paging_skip_no_record(engine: Engine, also: bool) -> None:
    clock = FrozenClock(NOW)
    fake = FakeSAP(seed=5, customers=60, suppliers=0, both=0, sales_orders=0, billing_documents=0,
                   clock=clock, now=NOW)  # fmt: skip
    tenant = fake.tenant_settings("s4", page_size=10, streams=["BusinessPartner"])
    transport: httpx.BaseTransport = fake.transport()

    def factory(t: TenantSettings) -> SAPAdapter:
        return SAPAdapter(t, sync=Settings().sync, clock=clock, transport=transport)

    assert sync(engine, clock, tenant, factory) == "ok"
    clock.advance(timedelta(days=2))
    for key in sorted(fake.data.partners):  # every partner changed
        fake.modify("A_BusinessPartner", key, at=clock.now(), BusinessPartnerFullName=f"New name of {key}")
    first_page = sorted(fake.data.partners)[:10]
    renamed = set(fake.data.customers)

    def change() -> None:
        for key in first_page[1:6]:
            fake.delete("A_BusinessPartner", key)
        if also:
            fake.modify("A_BusinessPartner", first_page[0], at=clock.now(), BusinessPartnerFullName="Renamed")
            fake.add_partner(created=clock.now())

    transport = on_list_request(fake.handle, "/A_BusinessPartner", 2, change)
    clock.advance(timedelta(minutes=15))
    assert sync(engine, clock, tenant, factory) == "ok"

    stored = live_customers(engine)
    for key in sorted(renamed - set(first_page)):  # not one later partner was skipped
        assert stored[key] == f"New name of {key}"

    transport = fake.transport()
    clock.advance(timedelta(days=1, minutes=15))
    assert sync(engine, clock, tenant, factory) == "ok"
    stored = live_customers(engine)
    assert set(stored) == set(fake.data.customers)
    if also:
        assert stored[first_page[0]] == "Renamed"
