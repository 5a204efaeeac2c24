"""An Acumatica endpoint upgrade is not a change of the ERP's facts (SQLite and PostgreSQL).

From 26.200.001 a customer's ``Status`` arrives as a select value (``{"value": {"ID": "H",
"Description": "On Hold"}}``) where 25.200.001 sends the text. A store synced on 25 and re-read on
26 sees every customer in its new shape: the history records only what really changed in between.
Invoices and bills, whose ``Type`` key becomes a select value on 26, keep their ids (the type's
description, as 25 sends it): the re-read meets the same keys in other shapes, deletes nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import httpx
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.adapters.acumatica import AcumaticaAdapter
from connector.clock import FrozenClock
from connector.memory import Memory
from connector.semantic.tracking import change_t
from connector.semantic.upsert import document_t, party_t
from connector.settings import Settings, SyncSettings
from connector.testing import FakeAcumatica
from connector.testing.acumatica import ALL_VERSIONS

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)


def _sync(
    engine: Engine,
    fake: FakeAcumatica,
    version: str,
    clock: FrozenClock,
    *,
    full: bool,
    streams: tuple[str, ...] = ("Customer",),
) -> None:
    tenant = fake.tenant_settings(name="erp", version=version, page_size=25, streams=list(streams))
    transport = httpx.MockTransport(fake.handle)
    memory = Memory(Settings(tenants=[tenant]), clock=clock, engine=engine, llm=None)
    report = memory.sync_runner(
        adapter_factory=lambda t: AcumaticaAdapter(t, sync=SyncSettings(), clock=clock, transport=transport)
    ).run(full=full)
    assert report.ok, [r.error for r in report.results]


def _changes(engine: Engine) -> list[tuple[str, str, str, str | None, str | None]]:
    c = change_t.c
    query = sa.select(c.entity, c.external_id, c.field, c.old_value, c.new_value).order_by(c.id)
    with engine.connect() as conn:
        return [(row[0], row[1], row[2], row[3], row[4]) for row in conn.execute(query)]


def test_a_re_read_on_26_with_select_values_records_only_the_real_change(engine: Engine) -> None:
    clock = FrozenClock(NOW)
    fake = FakeAcumatica(
        seed=5, clock=clock, customers=30, vendors=0, invoices=0, sales_orders=0, bills=0, cases=0,
        versions=ALL_VERSIONS,
    )  # fmt: skip
    _sync(engine, fake, "25.200.001", clock, full=True)
    customer = fake.keys("Customer")[3]
    limit = Decimal(str(fake.record("Customer", customer)["CreditLimit"] or 0)) + 5000
    clock.advance(timedelta(hours=1))
    fake.modify("Customer", customer, {"CreditLimit": float(limit)})

    clock.advance(timedelta(hours=1))
    _sync(engine, fake, "26.200.001", clock, full=True)

    with engine.connect() as conn:
        codes = conn.execute(sa.select(party_t.c.extra["status_code"].as_string())).scalars().all()
    assert codes and all(codes), "the re-read did not see the select values: nothing was compared"
    assert [(entity, key, field) for entity, key, field, _, _ in _changes(engine)] == [
        ("party", customer, "credit_limit")
    ]
    assert Decimal(_changes(engine)[0][4] or "") == limit


def test_invoices_and_bills_keep_their_ids_when_the_server_moves_to_26(engine: Engine) -> None:
    clock = FrozenClock(NOW)
    fake = FakeAcumatica(
        seed=7, clock=clock, customers=10, vendors=6, invoices=30, sales_orders=0, bills=20, cases=0,
        versions=ALL_VERSIONS,
    )  # fmt: skip
    streams = ("Customer", "Vendor", "Invoice", "Bill")
    _sync(engine, fake, "25.200.001", clock, full=True, streams=streams)
    with engine.connect() as conn:
        before = set(conn.execute(sa.select(document_t.c.doc_type, document_t.c.external_id)).all())
    invoice = fake.keys("Invoice")[2]
    balance = Decimal(str(fake.record("Invoice", invoice)["Balance"] or 0)) + 17
    clock.advance(timedelta(hours=1))
    fake.modify("Invoice", invoice, {"Balance": float(balance)})

    clock.advance(timedelta(hours=1))
    _sync(engine, fake, "26.200.001", clock, full=True, streams=streams)

    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(document_t.c.doc_type, document_t.c.external_id, document_t.c.deleted_at)
        ).all()
        codes = conn.execute(sa.select(document_t.c.extra["type_code"].as_string())).scalars().all()
    assert codes and all(codes), "the re-read did not see the select values: nothing was compared"
    assert {(r[0], r[1]) for r in rows} == before and len(before) == 50
    assert all(r[2] is None for r in rows), "an upgrade deleted documents"
    changes = _changes(engine)
    assert [(entity, field) for entity, _, field, _, _ in changes] == [("document", "balance")]
    assert Decimal(changes[0][4] or "") == balance
