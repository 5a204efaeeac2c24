"""What one MCP server may touch, and how a refusal reads to the agent.

The server is a tool surface for agents that may be driven by anyone's prompt, so it narrows the
library's scope further: only the tenants ``mcp.tenants`` names (default: every configured one) and,
when ``mcp.customers`` is set, only those customer ids; each caller's token narrows it again
(:meth:`ServedScope.narrowed`), with the same refusal as for a tenant or customer not served at
all, so nothing confirms that something outside a token's scope exists. Refusals and library errors become one
line of text that names nothing the caller did not send (no other customer's id, no traceback).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

from connector.access import Principal
from connector.errors import ConnectorError, ScopeError, UnknownCustomerError
from connector.ids import canonical_id
from connector.redact import redact
from connector.scope import Scope, require_id
from connector.settings import Settings


class NotServedError(ScopeError):
    """A tenant or customer this MCP server is not configured to serve."""


@dataclass(frozen=True, slots=True)
class ServedScope:
    """The tenants and (optionally) customers a server serves; ``default_tenant`` answers calls
    that name no tenant."""

    tenants: frozenset[str]
    customers: frozenset[str] | None
    default_tenant: str

    @classmethod
    def from_settings(cls, settings: Settings) -> ServedScope:
        configured = [t.name for t in settings.tenants] or [settings.default_tenant_name()]
        served = settings.mcp.tenants or configured
        default = settings.default_tenant_name()
        allowed = settings.mcp.customers
        return cls(
            tenants=frozenset(served),
            # the allow-list in the one id form the calls are checked in (connector.ids)
            customers=frozenset(canonical_id(c) for c in allowed) if allowed is not None else None,
            default_tenant=default if default in served else sorted(served)[0],
        )

    def narrowed(self, principal: Principal) -> ServedScope:
        """What this server serves to ``principal``: its tenants and customers within the server's.
        A call naming no tenant gets the server's default when the caller may use it, else the
        caller's first tenant."""
        if principal.tenants is None and principal.customers is None:
            return self
        tenants = self.tenants if principal.tenants is None else self.tenants & principal.tenants
        if principal.customers is None:
            customers = self.customers
        elif self.customers is None:
            customers = principal.customers
        else:
            customers = self.customers & principal.customers
        default = self.default_tenant
        if tenants and default not in tenants:
            default = sorted(tenants)[0]
        return ServedScope(tenants=tenants, customers=customers, default_tenant=default)

    def tenant(self, tenant: str | None) -> str:
        name = self.default_tenant if tenant is None else require_id(tenant, "tenant")
        if name not in self.tenants:
            raise NotServedError(f"tenant {name!r} is not served by this MCP server")
        return name

    def scope(self, customer_id: object, tenant: str | None = None) -> Scope:
        """The (tenant, customer) of a call, or NotServedError / ScopeError before any store is read."""
        scope = Scope.of(self.tenant(tenant), customer_id)
        self.check_customer(scope.customer_id)
        return scope

    def check_customer(self, customer_id: str) -> None:
        if self.customers is not None and customer_id not in self.customers:
            raise NotServedError(f"customer {customer_id!r} is not served by this MCP server")

    def allows(self, tenant: str, customer_id: str) -> bool:
        return tenant in self.tenants and (self.customers is None or customer_id in self.customers)


def agent_message(exc: BaseException) -> str:
    """The one-line text an agent gets for a failed call.

    Library errors keep their message, on one line; an unknown customer's "did you mean" list is
    dropped (those are other customers' ids). Anything unexpected is named by its type only.
    """
    if isinstance(exc, UnknownCustomerError):
        return f"unknown customer {exc.customer_id!r}: not in semantic memory (is it synced?)"
    if isinstance(exc, ConnectorError):
        return redact(" ".join(str(exc).split())) or type(exc).__name__
    return f"internal error ({type(exc).__name__}); the server's log has the details"


def invalid_arguments(error: ValidationError) -> str:
    """Arguments that fail a tool's schema, on one line: each field and what it needs (never the
    rejected value, which may be long customer text)."""
    problems = []
    for problem in error.errors(include_url=False, include_input=False, include_context=False):
        field = ".".join(str(part) for part in problem["loc"]) or "arguments"
        problems.append(f"{field}: {' '.join(str(problem['msg']).split())}")
    return "invalid arguments: " + "; ".join(problems)
