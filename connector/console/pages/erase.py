"""Erase: ``Memory.forget`` for one customer after the operator types its id, then the report.

Needs the ``erase`` role; the customer must be in the principal's scope (else it reads as unknown).
"""

from __future__ import annotations

from starlette.responses import Response

from connector.console.pages.customer import requested_scope
from connector.console.web import View
from connector.errors import ErasureIncomplete


def erase(view: View) -> Response:
    view.require_role("erase")
    if view.value("id") is None and view.value("customer") is None:
        return view.render("erase.html", nav="erase", scope=None, report=None, incomplete=None, refusal=None)
    scope = requested_scope(view, id_field="customer")
    if view.form is None or view.value("confirm") != scope.customer_id:
        refusal = (
            None if view.form is None else f"Not erased: type the customer id {scope.customer_id!r} exactly."
        )
        return view.render(
            "erase.html", nav="erase", scope=scope, report=None, incomplete=None, refusal=refusal
        )
    incomplete: list[str] | None = None
    try:
        removed = view.memory.forget(scope.customer_id, tenant=scope.tenant)
    except ErasureIncomplete as exc:
        removed, incomplete = exc.removed, list(exc.unreached)
    view.audit("erase", scope.tenant, scope.customer_id)
    report = sorted(removed.items())
    return view.render(
        "erase.html",
        refusal=None,
        nav="erase",
        scope=scope,
        report=report,
        total=sum(removed.values()),
        incomplete=incomplete,
    )
