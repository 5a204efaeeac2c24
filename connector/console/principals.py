"""Who a console request acts as (``connector.access``), and its audit record (``connector.audit``)."""

from __future__ import annotations

from connector.access import LOOPBACK, Keyring, Principal
from connector.audit import record_quietly
from connector.memory import Memory

__all__ = ["LOOPBACK", "Keyring", "Principal", "audit", "tenant_visible"]


def tenant_visible(principal: Principal, tenant: str) -> bool:
    return principal.allows_tenant(tenant)


def audit(
    memory: Memory,
    principal: Principal,
    action: str,
    tenant: str | None,
    customer_id: str | None,
    outcome: str = "ok",
) -> None:
    """Record a console access in the audit trail: who, which page, which scope; never content.

    A page that was served stays served when its record cannot be written (a warning says so)."""
    if memory.settings.audit.enabled:
        now = memory.clock.now()
        record_quietly(memory.engine, principal.name, action, tenant, customer_id, outcome=outcome, at=now)
