"""Pytest fixtures for testing code that talks to SAP S/4HANA, without an SAP system.

Enable in your ``conftest.py``::

    pytest_plugins = ["connector.testing.sap_fixtures"]

Fixtures: ``fake_sap_clock`` (a ``FrozenClock``: retries and token expiry never sleep),
``fake_sap`` (a seeded :class:`FakeSAP` on that clock: 200 customers, 50 suppliers and their
documents), ``sap_tenant`` (``TenantSettings`` for it), ``sap_adapter`` (an opened
``SAPAdapter`` on the in-process fake) and ``fake_sap_server`` (the fake on a loopback port; its
``url`` is the base URL). Override ``fake_sap`` in your own conftest for other data or options.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from connector.adapters.sap import SAPAdapter
from connector.clock import FrozenClock
from connector.settings import SyncSettings, TenantSettings
from connector.testing.sap import FakeSAP
from connector.testing.server import ServedFake, serve


@pytest.fixture
def fake_sap_clock() -> FrozenClock:
    return FrozenClock()


@pytest.fixture
def fake_sap(fake_sap_clock: FrozenClock) -> FakeSAP:
    return FakeSAP(seed=0, customers=200, suppliers=50, sales_orders=300, clock=fake_sap_clock)


@pytest.fixture
def sap_tenant(fake_sap: FakeSAP) -> TenantSettings:
    return fake_sap.tenant_settings()


@pytest.fixture
def sap_adapter(
    fake_sap: FakeSAP, sap_tenant: TenantSettings, fake_sap_clock: FrozenClock
) -> Iterator[SAPAdapter]:
    with SAPAdapter(
        sap_tenant, sync=SyncSettings(), clock=fake_sap_clock, transport=fake_sap.transport()
    ) as adapter:
        yield adapter


@pytest.fixture
def fake_sap_server(fake_sap: FakeSAP) -> Iterator[ServedFake]:
    """``fake_sap`` served on loopback; ``fake_sap.base_url`` points at it meanwhile."""
    original = fake_sap.base_url
    with serve(fake_sap) as served:
        fake_sap.base_url = served.url
        try:
            yield served
        finally:
            fake_sap.base_url = original
