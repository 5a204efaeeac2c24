"""Open the adapter a tenant's settings ask for.

The SAP adapter is imported lazily, so an installation (or a test run) that only talks to
Acumatica never imports SAP code.
"""

from __future__ import annotations

import httpx

from connector.clock import Clock
from connector.erp.protocol import Adapter, AdapterFactory
from connector.errors import ConfigError
from connector.settings import SyncSettings, TenantSettings


def open_adapter(
    tenant: TenantSettings,
    *,
    sync: SyncSettings,
    clock: Clock | None = None,
    transport: httpx.BaseTransport | None = None,
) -> Adapter:
    """The adapter for ``tenant.kind``, not yet entered: use it as ``with open_adapter(...) as a:``."""
    if tenant.kind == "acumatica":
        from connector.adapters.acumatica import AcumaticaAdapter

        return AcumaticaAdapter(tenant, sync=sync, clock=clock, transport=transport)
    if tenant.kind == "sap":
        from connector.adapters.sap import SAPAdapter  # type: ignore[attr-defined,unused-ignore]

        adapter: Adapter = SAPAdapter(tenant, sync=sync, clock=clock, transport=transport)
        return adapter
    raise ConfigError(f"tenant {tenant.name!r}: unknown ERP kind {tenant.kind!r}; expected acumatica or sap")


def adapter_factory(sync: SyncSettings, clock: Clock | None = None) -> AdapterFactory:
    """:func:`open_adapter` bound to the sync settings and clock: what the sync job is handed."""

    def factory(tenant: TenantSettings) -> Adapter:
        return open_adapter(tenant, sync=sync, clock=clock)

    return factory
