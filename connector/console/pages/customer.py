"""Customers: search by id or name across the tenants, then one customer's whole memory."""

from __future__ import annotations

from starlette.responses import Response

from connector.console.principals import tenant_visible
from connector.console.queries.customer import customer_memory, search
from connector.console.web import PageError, View, not_found
from connector.errors import ScopeError
from connector.scope import Scope


def customers(view: View) -> Response:
    text = view.value("q")
    found = []
    if text is not None:
        principal = view.principal
        found = [
            f
            for f in search(view.memory.engine, text, principal.tenants, principal.customers)
            if principal.allows(f.tenant, f.external_id)
        ]
        view.audit("customer_search")
    return view.render("customers.html", nav="customers", q=text or "", found=found, kinds=erp_kinds(view))


def customer(view: View) -> Response:
    scope = requested_scope(view)
    memory = view.memory
    shown = customer_memory(memory.engine, scope, memory.settings.facts)
    if not shown.exists:
        raise not_found(f"no customer {scope.customer_id!r} in tenant {scope.tenant!r}")
    view.audit("customer", scope.tenant, scope.customer_id)
    return view.render(
        "customer.html", nav="customers", c=shown, erp_kind=erp_kinds(view).get(scope.tenant, "ERP")
    )


def requested_scope(view: View, id_field: str = "id") -> Scope:
    """The (tenant, customer) of ``?tenant=&id=``; out of the principal's scope reads as unknown."""
    tenant = view.value("tenant") or view.memory.default_tenant
    raw = view.value(id_field)
    if raw is None:
        raise PageError(f"name a customer: ?tenant=T&{id_field}=CUSTOMER")
    try:
        scope = Scope.of(tenant, raw)
    except ScopeError as exc:
        raise PageError(str(exc)) from None
    if not tenant_visible(view.principal, scope.tenant):
        raise not_found(f"no customer {scope.customer_id!r} in tenant {scope.tenant!r}")
    view.require_customer(scope.tenant, scope.customer_id)
    return scope


def erp_kinds(view: View) -> dict[str, str]:
    names = {"acumatica": "Acumatica", "sap": "SAP S/4HANA"}
    return {t.name: names.get(t.kind, t.kind) for t in view.memory.settings.tenants}
