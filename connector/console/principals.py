"""Who a console request acts as, and what it may see.

The named, scoped tokens live in ``connector.access`` (shared with the MCP server); this module
is the console's one door to them and to ``connector.audit``. Until those packages are installed
beside the console (they land separately), the console serves loopback only, as one full-access
principal, and records no audit events.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

log = logging.getLogger(__name__)

ROLES = ("read", "write", "erase")


class Principal(Protocol):
    """The part of ``connector.access.Principal`` the console uses."""

    @property
    def name(self) -> str: ...

    @property
    def role(self) -> str: ...

    @property
    def tenants(self) -> frozenset[str] | None: ...

    @property
    def customers(self) -> frozenset[str] | None: ...

    def allows(self, tenant: str, customer_id: str) -> bool: ...

    def can(self, role: Any) -> bool: ...


@dataclass(frozen=True, slots=True)
class _Local:
    """Loopback without ``connector.access``: everything, as ``loopback``."""

    name: str = "loopback"
    role: str = "erase"
    tenants: frozenset[str] | None = None
    customers: frozenset[str] | None = None

    def allows(self, tenant: str, customer_id: str) -> bool:
        return True

    def can(self, role: Any) -> bool:
        return role in ROLES


def _optional(module: str) -> ModuleType | None:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:  # the package is there but broken: say so
            raise
        return None


def has_tokens() -> bool:
    """Whether named tokens can be checked (``connector.access`` is installed)."""
    return _optional("connector.access") is not None


def loopback() -> Principal:
    """The principal of a loopback request that presents no token."""
    access = _optional("connector.access")
    if access is None:
        return _Local()
    principal: Principal = access.LOOPBACK
    return principal


def authenticate(settings: Any, presented: str) -> Principal | None:
    """The principal a presented token names, or None (unknown, revoked, or no tokens at all)."""
    access = _optional("connector.access")
    if access is None:
        return None
    found: Principal | None = access.authenticate(settings, presented)
    return found


def tenant_visible(principal: Principal, tenant: str) -> bool:
    return principal.tenants is None or tenant in principal.tenants


def audit(
    engine: Any, principal: Principal, action: str, tenant: str | None, customer_id: str | None
) -> None:
    """Record a console access in the audit trail (who, what, scope; never content), when there is one."""
    trail = _optional("connector.audit")
    if trail is not None:
        trail.record(engine, principal.name, action, tenant, customer_id)
