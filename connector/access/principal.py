"""Who is calling, and what that caller may touch: a role and a tenant/customer scope.

A principal is what an authenticated token (or the local user) turns into. The MCP server and the
console ask it two questions: may it touch this (tenant, customer)? and does its role cover this
action? A "no" to the first reads to the caller as "not found" (nothing confirms that another
tenant's customer exists); a "no" to the second is a one-line refusal naming the role needed.
"""

from __future__ import annotations

from dataclasses import dataclass

from connector.ids import canonical_id
from connector.settings import Role

#: Each role includes the ones before it.
ROLES: tuple[Role, ...] = ("read", "write", "erase")
_RANK = {role: rank for rank, role in enumerate(ROLES)}


@dataclass(frozen=True)
class Principal:
    """A caller: the token's name (or ``cli``, ``loopback``), its role and its scope."""

    name: str  # the token's name, or "cli", or "loopback"
    role: Role  # Literal["read", "write", "erase"]
    tenants: frozenset[str] | None  # None = all
    customers: frozenset[str] | None  # None = all, canonical ids (connector.ids)

    def allows(self, tenant: str, customer_id: str) -> bool:
        """Whether this caller may see or touch ``customer_id`` of ``tenant``."""
        if self.tenants is not None and tenant not in self.tenants:
            return False
        return self.customers is None or canonical_id(customer_id) in self.customers

    def allows_tenant(self, tenant: str) -> bool:
        return self.tenants is None or tenant in self.tenants

    def can(self, role: Role) -> bool:
        """Whether this caller's role covers ``role`` (erase > write > read)."""
        return _RANK[self.role] >= _RANK[role]


#: Serving on loopback without a token configured (``--no-auth``): the machine's own user.
LOOPBACK = Principal(name="loopback", role="erase", tenants=None, customers=None)
#: The command line and the Python API: whoever runs the process has its rights already.
CLI = Principal(name="cli", role="erase", tenants=None, customers=None)
