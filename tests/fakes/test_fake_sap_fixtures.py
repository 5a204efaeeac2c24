"""The SAP pytest fixtures users enable with ``pytest_plugins = ["connector.testing.sap_fixtures"]``."""

from __future__ import annotations

import httpx

from connector.adapters.sap import SAPAdapter
from connector.testing.sap import FakeSAP
from connector.testing.server import ServedFake

pytest_plugins = ["connector.testing.sap_fixtures"]


def test_the_adapter_fixture_reads_the_fake(sap_adapter: SAPAdapter) -> None:
    assert sum(len(page.records) for page in sap_adapter.read("SalesOrder", None)) == 300


def test_the_server_fixture_serves_over_loopback(fake_sap: FakeSAP, fake_sap_server: ServedFake) -> None:
    assert fake_sap.base_url == fake_sap_server.url
    response = httpx.get(
        fake_sap.url("A_BusinessPartner") + "/$count",
        params={"sap-client": "100"},
        auth=(fake_sap.gate.username, fake_sap.gate.password),
        headers={"Accept": "application/json"},
    )
    assert response.text == str(len(fake_sap.data.partners))
