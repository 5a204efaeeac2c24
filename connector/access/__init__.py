"""Access tokens with roles and scopes, shared by the MCP HTTP server and the web console.

Several named tokens are configured under ``access.tokens``; each secret comes from the
environment (or .env), each token has a role (``read`` < ``write`` < ``erase``) and may be limited
to tenants and customers. :func:`authenticate` turns a presented secret into a :class:`Principal`
(None: refused); the caller then asks ``principal.allows(tenant, customer_id)`` (a "no" reads as
not found) and ``principal.can(role)``. See docs/guides/access-and-audit.md.
"""

from __future__ import annotations

from connector.access.acting import acting_as, current_principal
from connector.access.keyring import Keyring, authenticate, bearer_secret
from connector.access.principal import CLI, LOOPBACK, ROLES, Principal
from connector.settings import Role

__all__ = [
    "CLI",
    "LOOPBACK",
    "ROLES",
    "Keyring",
    "Principal",
    "Role",
    "acting_as",
    "authenticate",
    "bearer_secret",
    "current_principal",
]
