"""SAP open items: read from the fake over HTTP (v2 and v4), synced incrementally, and the source
of a SAP customer's open and overdue totals in the context (SAP billing documents have none)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.adapters.sap import SAPAdapter
from connector.adapters.sap.mapping import BILLING_BALANCE_UNAVAILABLE
from connector.clock import FrozenClock
from connector.context.money import money
from connector.erp.records import DocumentRecord
from connector.memory import Memory
from connector.semantic.upsert import document_t
from connector.settings import Settings, SyncSettings, TenantSettings
from connector.sync.result import SyncReport
from connector.testing.sap import FakeSAP
from connector.testing.sap_items import item_key
from connector.testing.server import serve

ERP_NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
TENANT = "s4"


@pytest.fixture(params=["v2", "v4"])
def served(request: pytest.FixtureRequest) -> Iterator[FakeSAP]:
    fake = FakeSAP(
        seed=11, customers=12, suppliers=4, both=1, sales_orders=40, billing_documents=30,
        odata_version=request.param, server_page_size=7,
    )  # fmt: skip
    with serve(fake) as server:
        fake.base_url = server.url
        yield fake


def sync(engine: Engine, fake: FakeSAP, clock: FrozenClock, *, full: bool = False) -> SyncReport:
    tenant = fake.tenant_settings(name=TENANT, page_size=10)
    # no key scan on the next day's run: the cleared item must leave through the delta read
    settings = Settings(tenants=[tenant], sync=SyncSettings(lookback_seconds=0, key_scan_interval_hours=72))
    memory = Memory(settings, clock=clock, engine=engine, llm=None)

    def factory(t: TenantSettings) -> SAPAdapter:
        return SAPAdapter(t, sync=settings.sync, clock=clock)

    report = memory.sync_runner(adapter_factory=factory).run(full=full)
    assert report.ok, [r.error for r in report.results]
    return report


def open_totals(engine: Engine, customer: str) -> dict[str, Decimal]:
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(document_t.c.currency, document_t.c.balance).where(
                document_t.c.tenant == TENANT,
                document_t.c.doc_type == "open_item",
                document_t.c.party_external_id == customer,
                document_t.c.is_open.is_(True),
                document_t.c.deleted_at.is_(None),
            )
        ).all()
    totals: dict[str, Decimal] = {}
    for currency, balance in rows:
        totals[currency] = totals.get(currency, Decimal(0)) + balance
    return totals


def expected_totals(fake: FakeSAP, customer: str) -> dict[str, Decimal]:
    totals: dict[str, Decimal] = {}
    for item in fake.open_items_of(customer):
        currency = item["TransactionCurrency"]
        totals[currency] = totals.get(currency, Decimal(0)) + item["AmountInTransactionCurrency"]
    return totals


def customer_with_items(fake: FakeSAP) -> str:
    counts: dict[str, int] = {}
    for item in fake.data.open_items.values():
        if item["FinancialAccountType"] == "D" and not item["IsCleared"]:
            counts[item["Customer"]] = counts.get(item["Customer"], 0) + 1
    return max(sorted(counts), key=lambda c: counts[c])


def receivables_line(engine: Engine, clock: FrozenClock, fake: FakeSAP, customer: str) -> str:
    """The header's open total, e.g. ``- open receivables: 1,250.75 EUR`` (before "across")."""
    settings = Settings(tenants=[fake.tenant_settings(name=TENANT)])
    memory = Memory(settings, clock=clock, engine=engine, llm=None)
    text = memory.build_context(customer, "what is open?", tenant=TENANT).text
    line = next(line for line in text.splitlines() if "open receivables" in line)
    return line.split(" across ")[0]


def test_open_items_make_the_totals_and_a_cleared_item_leaves_them(engine: Engine, served: FakeSAP) -> None:
    clock = FrozenClock(ERP_NOW + timedelta(hours=1))
    sync(engine, served, clock)
    customer = customer_with_items(served)
    before = expected_totals(served, customer)
    assert open_totals(engine, customer) == before and before
    line = receivables_line(engine, clock, served, customer)
    for currency, total in before.items():
        assert money(total, currency) in line

    # The next day the customer pays one invoice: SAP clears its item (LastChangeDate unchanged).
    paid = next(i for i in served.open_items_of(customer) if i["AmountInTransactionCurrency"] > 0)
    clock.advance(timedelta(days=1))
    served.clear_item(item_key(paid), at=clock.now())
    report = sync(engine, served, clock)
    run = next(r for r in report.results if r.stream == "OpenItem")
    assert run.mode == "incremental" and not run.key_scan and run.updated == 1
    after = expected_totals(served, customer)
    currency = paid["TransactionCurrency"]
    left = after.get(currency, Decimal(0))
    assert left == before[currency] - paid["AmountInTransactionCurrency"]
    assert open_totals(engine, customer) == after
    line = receivables_line(engine, clock, served, customer)
    assert money(before[currency], currency) not in line
    if currency in after:
        assert money(left, currency) in line


def test_a_full_read_asks_only_for_open_items_and_a_delta_also_for_cleared_ones() -> None:
    fake = FakeSAP(seed=3, customers=5, suppliers=2, sales_orders=10, billing_documents=8)
    adapter = SAPAdapter(fake.tenant_settings(), sync=SyncSettings(), transport=fake.transport())
    with adapter:
        records = [r for p in adapter.read("OpenItem", None) for r in p.records]
        full_filter = fake.last_request.url.params["$filter"] if fake.last_request else ""
        list(adapter.read("OpenItem", datetime(2026, 1, 10, tzinfo=UTC)))
        delta_filter = fake.last_request.url.params["$filter"] if fake.last_request else ""
    assert "IsCleared eq false" in full_filter and "FinancialAccountType eq 'D'" in full_filter
    assert all(isinstance(r, DocumentRecord) and r.is_open for r in records)
    assert len(records) == sum(1 for i in fake.data.open_items.values() if not i["IsCleared"])
    assert "ClearingDate ge datetime'2026-01-10T00:00:00'" in delta_filter
    assert "IsCleared" not in delta_filter


def test_items_are_signed_from_the_partys_side() -> None:
    fake = FakeSAP(seed=4, customers=3, suppliers=2, both=0, sales_orders=0, billing_documents=0)
    customer, supplier = sorted(fake.data.customers)[0], sorted(fake.data.suppliers)[0]
    fake.data.open_items.clear()
    invoice = fake.add_open_item(customer, Decimal("5142.10"), currency="DKK", due=date(2026, 1, 1))
    payment = fake.add_open_item(customer, Decimal("-142.10"), currency="DKK")
    bill = fake.add_open_item(supplier, Decimal("-900.00"), supplier=True)
    adapter = SAPAdapter(fake.tenant_settings(), sync=SyncSettings(), transport=fake.transport())
    with adapter:
        items = {r.external_id: r for p in adapter.read("OpenItem", None) for r in p.records}
    assert isinstance(items[invoice], DocumentRecord)
    assert (items[invoice].party_kind, items[invoice].balance, items[invoice].currency) == (
        "customer", Decimal("5142.10"), "DKK",
    )  # fmt: skip
    assert items[invoice].due_date == date(2026, 1, 1) and items[invoice].doc_type == "open_item"
    assert items[payment].balance == Decimal("-142.10")
    # a vendor invoice is a credit item in SAP (negative); for us it is 900.00 payable
    assert (items[bill].party_kind, items[bill].balance) == ("vendor", Decimal("900.00"))
    assert items[bill].extra["sap_amount"] == "-900.00"


def test_the_key_scan_drops_an_item_cleared_before_the_watermark(sqlite_engine: Engine) -> None:
    fake = FakeSAP(seed=6, customers=6, suppliers=0, sales_orders=20, billing_documents=15)
    clock = FrozenClock(ERP_NOW + timedelta(hours=1))
    tenant = fake.tenant_settings(name=TENANT, streams=["OpenItem"])
    settings = Settings(tenants=[tenant], sync=SyncSettings(lookback_seconds=0))
    memory = Memory(settings, clock=clock, engine=sqlite_engine, llm=None)

    def factory(t: TenantSettings) -> SAPAdapter:
        return SAPAdapter(t, sync=settings.sync, clock=clock, transport=fake.transport())

    assert memory.sync_runner(adapter_factory=factory).run().ok
    customer = customer_with_items(fake)
    item = fake.open_items_of(customer)[0]
    key = item_key(item)
    fake.clear_item(key, at=ERP_NOW - timedelta(days=30))  # posted late: the delta cannot see it
    clock.advance(timedelta(hours=1))
    assert memory.sync_runner(adapter_factory=factory).run(full=True).ok
    with sqlite_engine.connect() as conn:
        gone = conn.execute(
            sa.select(document_t.c.deleted_at).where(document_t.c.external_id == key)
        ).scalar()
    assert gone is not None
    assert open_totals(sqlite_engine, customer) == expected_totals(fake, customer)


def test_sap_billing_documents_say_why_they_have_no_balance() -> None:
    fake = FakeSAP(seed=2, customers=3, suppliers=0, sales_orders=6, billing_documents=4)
    adapter = SAPAdapter(fake.tenant_settings(), sync=SyncSettings(), transport=fake.transport())
    with adapter:
        invoices = [r for p in adapter.read("BillingDocument", None) for r in p.records]
    assert invoices and all(isinstance(r, DocumentRecord) and r.balance is None for r in invoices)
    assert {r.extra["balance_unavailable"] for r in invoices} == {BILLING_BALANCE_UNAVAILABLE}
