"""Who a console request acts as (``connector.access``), and the console's audit records.

The audit trail (``connector.audit``) lands separately: until it is installed beside the console,
no access is recorded.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from connector.access import LOOPBACK, Keyring, Principal

__all__ = ["LOOPBACK", "Keyring", "Principal", "audit", "tenant_visible"]


def tenant_visible(principal: Principal, tenant: str) -> bool:
    return principal.allows_tenant(tenant)


def _trail() -> ModuleType | None:
    try:
        return importlib.import_module("connector.audit")
    except ModuleNotFoundError as exc:
        if exc.name != "connector.audit":  # the package is there but broken: say so
            raise
        return None


def audit(
    engine: Any, principal: Principal, action: str, tenant: str | None, customer_id: str | None
) -> None:
    """Record a console access in the audit trail (who, what, scope; never content), when there is one."""
    trail = _trail()
    if trail is not None:
        trail.record(engine, principal.name, action, tenant, customer_id)
