"""Done-when: the adapter reads every stream from the fake SAP over real loopback HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from connector.adapters.sap import SAPAdapter
from connector.clock import FrozenClock
from connector.erp.records import DocumentRecord, PartyRecord
from connector.settings import SyncSettings
from connector.testing.sap import FakeSAP
from connector.testing.server import serve

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)


@pytest.fixture(params=["v2", "v4"])
def served(request: pytest.FixtureRequest) -> Iterator[FakeSAP]:
    clock = FrozenClock(NOW)
    fake = FakeSAP(
        seed=5,
        customers=30,
        suppliers=10,
        sales_orders=40,
        odata_version=request.param,
        auth="oauth",
        server_page_size=25,
        clock=clock,
    )
    with serve(fake) as server:
        fake.base_url = server.url
        yield fake


def open_adapter(fake: FakeSAP, **overrides: Any) -> SAPAdapter:
    tenant = fake.tenant_settings(page_size=50, max_retries=2, **overrides)
    assert isinstance(fake.clock, FrozenClock)
    return SAPAdapter(tenant, sync=SyncSettings(), clock=fake.clock)


def test_every_stream_is_read_over_real_http(served: FakeSAP) -> None:
    with open_adapter(served) as adapter:
        parties = [r for p in adapter.read("BusinessPartner", None) for r in p.records]
        orders = [r for p in adapter.read("SalesOrder", None) for r in p.records]
        invoices = [r for p in adapter.read("BillingDocument", None) for r in p.records]
        keys = set(adapter.scan_keys("BusinessPartner"))
    assert len(parties) == 40 and all(isinstance(p, PartyRecord) for p in parties)
    assert {o.external_id for o in orders} == set(served.data.sales_orders)
    assert all(isinstance(i, DocumentRecord) and i.doc_type == "ar_invoice" for i in invoices)
    with_role = {bp for bp, row in served.data.partners.items() if row["Customer"] or row["Supplier"]}
    assert len(invoices) == 20 and keys == with_role  # partners without a role are not listed
    assert served.gate.requests_without_client == 0


def test_a_dropped_connection_is_retried_over_real_http(served: FakeSAP) -> None:
    served.inject("timeout")
    with open_adapter(served) as adapter:
        orders = [r for p in adapter.read("SalesOrder", None) for r in p.records]
        assert adapter.retry_count == 1
    assert len(orders) == 40
