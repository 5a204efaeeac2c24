"""``doctor`` says which OData version each SAP stream is read with: a v4 tenant reads sales orders
and billing documents over v4 and business partners and open items over v2, where SAP publishes no
v4 service."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import SecretStr

from connector.doctor import check_tenant
from connector.settings import Settings
from connector.testing.sap import FakeSAP
from connector.testing.server import FakeERP, ServedFake

Serve = Callable[[FakeERP], ServedFake]


def test_a_v4_tenant_is_told_which_streams_stay_on_v2(serve_fake: Serve, settings: Settings) -> None:
    fake = FakeSAP(seed=0, customers=5, suppliers=2, sales_orders=5, odata_version="v4")
    served = serve_fake(fake)
    fake.base_url = served.url
    tenant = fake.tenant_settings("s4", base_url=served.url, password=SecretStr(fake.gate.password))
    result = check_tenant(settings, tenant)
    assert result.verdict == "ok", result.detail
    assert "OData v4 for SalesOrder, BillingDocument; v2 for BusinessPartner, OpenItem" in result.detail
    assert "SAP publishes no v4 service" in result.detail


def test_a_v2_tenant_reads_every_stream_over_v2(serve_fake: Serve, settings: Settings) -> None:
    fake = FakeSAP(seed=0, customers=5, suppliers=2, sales_orders=5)
    served = serve_fake(fake)
    fake.base_url = served.url
    tenant = fake.tenant_settings("s4", base_url=served.url, password=SecretStr(fake.gate.password))
    assert "OData v2 for every stream" in check_tenant(settings, tenant).detail
