"""A tenant's custom fields that its endpoint does not serve: ``connector doctor`` names each one
with the endpoint version, and a sync reads the rest of the stream instead of failing."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

import httpx
import pytest

from connector.adapters.acumatica import AcumaticaAdapter
from connector.clock import FrozenClock
from connector.doctor import check_tenant
from connector.erp.records import PartyRecord
from connector.settings import Settings, SyncSettings
from connector.testing import FakeAcumatica
from connector.testing.server import FakeERP, ServedFake

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
CUSTOM = {"Customer": ["Document.AttrPOREQ", "Document.UsrNotThere"]}


def _fake() -> FakeAcumatica:
    return FakeAcumatica(
        seed=2, clock=FrozenClock(NOW), customers=6, vendors=2, invoices=3, sales_orders=2, bills=2, cases=2
    )


def test_doctor_shows_the_endpoint_version_and_each_undefined_custom_field(
    settings: Settings, serve_fake: Callable[[FakeERP], ServedFake]
) -> None:
    fake = _fake()
    url = serve_fake(fake).url
    tenant = fake.tenant_settings("acme", base_url=url, custom_fields=CUSTOM, version="24.200.001")
    result = check_tenant(settings, tenant)
    assert result.verdict == "warn"
    assert "endpoint Default/24.200.001 (configured)" in result.detail
    assert "custom field Document.UsrNotThere of Customer: the endpoint Default/24.200.001 refused it" in (
        result.detail
    )
    assert "Document.AttrPOREQ of" not in result.detail  # served: not named

    served = fake.tenant_settings("acme", base_url=url, custom_fields={"Customer": ["Document.AttrPOREQ"]})
    result = check_tenant(settings, served)
    assert result.verdict == "ok", result.detail
    assert "endpoint Default/25.200.001 (the newest the server offers that this project supports)" in (
        result.detail
    )


def test_a_sync_reads_the_rest_without_the_undefined_custom_field(caplog: pytest.LogCaptureFixture) -> None:
    fake = _fake()
    tenant = fake.tenant_settings(custom_fields=CUSTOM, version="25.200.001")
    transport = httpx.MockTransport(fake.handle)
    with (
        caplog.at_level(logging.WARNING),
        AcumaticaAdapter(tenant, sync=SyncSettings(), clock=FrozenClock(NOW), transport=transport) as adapter,
    ):
        records = [record for page in adapter.read("Customer", None) for record in page.records]
    assert len(records) == 6
    custom = {row.values["CustomerID"]: row.custom or {} for row in fake.tables["Customer"].ordered()}
    for record in records:
        assert isinstance(record, PartyRecord)
        assert record.attributes["Document.AttrPOREQ"] == custom[record.external_id]["Document.AttrPOREQ"]
    assert "Document.UsrNotThere are not served by the endpoint Default/25.200.001" in caplog.text
