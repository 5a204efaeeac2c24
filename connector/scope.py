"""Memory scope: which tenant and customer a read or write belongs to.

Checked at every store boundary and fails closed: a blank, whitespace-only or non-string customer
id raises :class:`~connector.errors.ScopeError` before any store is touched. Scope is always built
from the caller's explicit arguments, never from caller-supplied metadata.
"""

from __future__ import annotations

from dataclasses import dataclass

from connector.errors import ScopeError
from connector.ids import MAX_ID_LENGTH, canonical_id, id_problem


def require_id(value: object, what: str = "customer_id") -> str:
    """``value`` in the one id form (stripped, NFC; see :mod:`connector.ids`), or ScopeError when it
    is missing, not a string, blank, too long or holds a control character."""
    if value is None:
        raise ScopeError(f"{what} is required: memory is always scoped to one {what.removesuffix('_id')}")
    if not isinstance(value, str):
        raise ScopeError(f"{what} must be a string, got {type(value).__name__}")
    canonical = canonical_id(value)
    if not canonical:
        raise ScopeError(f"{what} is blank: memory is always scoped to one {what.removesuffix('_id')}")
    problem = id_problem(canonical)
    if problem is not None:
        raise ScopeError(f"{what} {problem}: ids are at most {MAX_ID_LENGTH} printable characters")
    return canonical


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
