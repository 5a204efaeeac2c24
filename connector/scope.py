"""Memory scope: which tenant and customer a read or write belongs to.

Checked at every store boundary and fails closed: a blank, whitespace-only or non-string customer
id raises :class:`~connector.errors.ScopeError` before any store is touched. Scope is always built
from the caller's explicit arguments, never from caller-supplied metadata.
"""

from __future__ import annotations

from dataclasses import dataclass

from connector.errors import ScopeError
from connector.storable import is_storable

_MAX_ID_LENGTH = 128


def require_id(value: object, what: str = "customer_id") -> str:
    """Return ``value`` stripped, or raise ScopeError if it is missing, blank or not a string."""
    if value is None:
        raise ScopeError(f"{what} is required: memory is always scoped to one {what.removesuffix('_id')}")
    if not isinstance(value, str):
        raise ScopeError(f"{what} must be a string, got {type(value).__name__}")
    stripped = value.strip()
    if not stripped:
        raise ScopeError(f"{what} is blank: memory is always scoped to one {what.removesuffix('_id')}")
    if len(stripped) > _MAX_ID_LENGTH or any(ord(ch) < 32 for ch in stripped) or not is_storable(stripped):
        raise ScopeError(f"{what} must be at most {_MAX_ID_LENGTH} printable characters")
    return stripped


def tenant_or_default(tenant: str | None, default_tenant: str) -> str:
    """The tenant a call is scoped to: the caller's, or the deployment's default when none is named."""
    return tenant if tenant is not None else default_tenant


@dataclass(frozen=True, slots=True)
class Scope:
    """(tenant, customer) of a memory operation; both parts validated."""

    tenant: str
    customer_id: str

    @classmethod
    def of(cls, tenant: object, customer_id: object) -> Scope:
        return cls(tenant=require_id(tenant, "tenant"), customer_id=require_id(customer_id))
