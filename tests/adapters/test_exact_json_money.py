"""Money read from ERP JSON is exact: every number keeps the digits and scale it was sent with."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import httpx
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.adapters.acumatica import AcumaticaAdapter
from connector.adapters.http import parse_json_exact
from connector.adapters.sap import SAPAdapter
from connector.clock import FrozenClock
from connector.erp.records import DocumentRecord, PartyRecord
from connector.memory import Memory
from connector.semantic.upsert import party_t
from connector.settings import Settings, SyncSettings, TenantSettings
from connector.testing import FakeAcumatica
from connector.testing.sap import FakeSAP
from connector.testing.server import serve

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
CUSTOMERS_ONLY = {"vendors": 0, "invoices": 0, "sales_orders": 0, "bills": 0, "cases": 0}


def test_json_numbers_become_decimals_with_their_scale() -> None:
    body = b'{"CreditLimit": {"value": 10000.0000}, "OrderedQty": {"value": 1.000000}, "n": 3, "big": 1e400}'
    parsed = parse_json_exact(body)
    assert str(parsed["CreditLimit"]["value"]) == "10000.0000"
    assert str(parsed["OrderedQty"]["value"]) == "1.000000"
    assert parsed["n"] == 3 and type(parsed["n"]) is int
    assert parsed["big"] == Decimal("1e400")


def test_bodies_the_fast_decoder_refuses_parse_the_same_way() -> None:
    utf16 = '{"Amount": 0.10}'.encode("utf-16")
    assert str(parse_json_exact(utf16)["Amount"]) == "0.10"


def test_an_acumatica_credit_limit_keeps_its_four_decimals_over_http() -> None:
    clock = FrozenClock(NOW)
    fake = FakeAcumatica(seed=3, clock=clock, customers=3, **CUSTOMERS_ONLY)
    key = fake.keys("Customer")[0]
    fake.modify("Customer", key, {"CreditLimit": Decimal("12345678901234.5678")})
    with serve(fake) as server:
        tenant = fake.tenant_settings(base_url=server.url)
        with AcumaticaAdapter(tenant, sync=SyncSettings(), clock=clock) as adapter:
            records = [r for p in adapter.read("Customer", None) for r in p.records]
    party = next(r for r in records if isinstance(r, PartyRecord) and r.external_id == key)
    # 18 significant digits: a float would have rounded them away, and dropped the scale
    assert str(party.credit_limit) == "12345678901234.5678"
    assert all(str(r.credit_limit).endswith(".0000") for r in records if r.external_id != key)


def test_sap_v4_decimal_numbers_keep_their_scale() -> None:
    fake = FakeSAP(seed=2, customers=3, suppliers=0, sales_orders=5, odata_version="v4")
    number = sorted(fake.data.sales_orders)[0]
    fake.data.sales_orders[number]["TotalNetAmount"] = Decimal("5142.10")
    fake.index.changed()
    adapter = SAPAdapter(fake.tenant_settings(), sync=SyncSettings(), transport=fake.transport())
    with adapter:
        orders = [r for p in adapter.read("SalesOrder", None) for r in p.records]
    order = next(r for r in orders if isinstance(r, DocumentRecord) and r.external_id == number)
    assert str(order.amount) == "5142.10"


def test_the_stored_raw_record_keeps_the_exact_number(engine: Engine) -> None:
    clock = FrozenClock(NOW + timedelta(hours=1))
    fake = FakeAcumatica(seed=4, clock=clock, customers=2, **CUSTOMERS_ONLY)
    key = fake.keys("Customer")[0]
    fake.modify("Customer", key, {"CreditLimit": 10000.0})
    tenant = fake.tenant_settings(name="acu", streams=["Customer"])
    settings = Settings(tenants=[tenant], sync=SyncSettings(lookback_seconds=0))
    memory = Memory(settings, clock=clock, engine=engine, llm=None)

    def factory(t: TenantSettings) -> AcumaticaAdapter:
        transport = httpx.MockTransport(fake.handle)
        return AcumaticaAdapter(t, sync=settings.sync, clock=clock, transport=transport)

    assert memory.sync_runner(adapter_factory=factory).run().ok
    with engine.connect() as conn:
        row = conn.execute(
            sa.select(party_t.c.credit_limit, party_t.c.raw).where(party_t.c.external_id == key)
        ).one()
        raw_text = conn.execute(
            sa.select(sa.cast(party_t.c.raw, sa.Text)).where(party_t.c.external_id == key)
        ).scalar_one()
    assert row.credit_limit == Decimal("10000")
    assert "10000.0000" in raw_text
