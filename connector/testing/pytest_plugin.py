"""Pytest fixtures for testing code that talks to Acumatica, without an Acumatica.

Enable in your ``conftest.py``::

    pytest_plugins = ["connector.testing.pytest_plugin"]

Fixtures: ``fake_acumatica_clock`` (a ``FrozenClock``: retries and session timeouts never sleep),
``fake_acumatica`` (a seeded :class:`FakeAcumatica` on that clock), ``acumatica_tenant``
(``TenantSettings`` for it), ``acumatica_transport`` (an in-process ``httpx.MockTransport``),
``acumatica_adapter`` (an opened ``AcumaticaAdapter``, logged out after the test),
``fake_acumatica_server`` (the fake on a loopback port) and ``serve_fake`` (serve any fake ERP,
stopped after the test). Override ``fake_acumatica`` in your own conftest for other data sizes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from connector.clock import FrozenClock
from connector.settings import SyncSettings, TenantSettings
from connector.testing.acumatica import FakeAcumatica
from connector.testing.server import FakeERP, ServedFake, serve


@pytest.fixture
def fake_acumatica_clock() -> FrozenClock:
    return FrozenClock()


@pytest.fixture
def fake_acumatica(fake_acumatica_clock: FrozenClock) -> FakeAcumatica:
    """A small seeded tenant: 200 customers, 50 vendors and their documents and cases."""
    return FakeAcumatica(seed=0, clock=fake_acumatica_clock)


@pytest.fixture
def acumatica_tenant(fake_acumatica: FakeAcumatica) -> TenantSettings:
    return fake_acumatica.tenant_settings()


@pytest.fixture
def acumatica_transport(fake_acumatica: FakeAcumatica) -> httpx.MockTransport:
    return httpx.MockTransport(fake_acumatica.handle)


@pytest.fixture
def acumatica_adapter(
    acumatica_tenant: TenantSettings,
    acumatica_transport: httpx.MockTransport,
    fake_acumatica_clock: FrozenClock,
) -> Iterator[object]:
    """An opened Acumatica adapter on the in-process fake (typed loosely: it is ``AcumaticaAdapter``)."""
    from connector.adapters.acumatica import AcumaticaAdapter

    with AcumaticaAdapter(
        acumatica_tenant, sync=SyncSettings(), clock=fake_acumatica_clock, transport=acumatica_transport
    ) as adapter:
        yield adapter


@pytest.fixture
def serve_fake() -> Iterator[Callable[[FakeERP], ServedFake]]:
    """``serve_fake(fake)`` serves any fake ERP on loopback until the test ends."""
    served: list[ServedFake] = []

    def start(fake: FakeERP) -> ServedFake:
        server = serve(fake)
        served.append(server)
        return server

    yield start
    for server in served:
        server.stop()


@pytest.fixture
def fake_acumatica_server(
    fake_acumatica: FakeAcumatica, serve_fake: Callable[[FakeERP], ServedFake]
) -> ServedFake:
    """``fake_acumatica`` on a loopback port; ``.url`` is its base URL."""
    return serve_fake(fake_acumatica)
