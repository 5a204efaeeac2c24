"""Context playground: the context an agent gets for a customer and a query, exactly as built by
``Memory.build_context``, with each section's tokens, what the budget dropped, timings, each recall
hit's dense and lexical parts, and the ``connector context`` command that reproduces it."""

from __future__ import annotations

import shlex
from datetime import datetime

from starlette.responses import Response

from connector.console.principals import tenant_visible
from connector.console.web import PageError, View, not_found
from connector.context.models import ContextResult
from connector.errors import ConnectorError, UnknownCustomerError
from connector.scope import Scope


def playground(view: View) -> Response:
    tenant = view.value("tenant") or view.memory.default_tenant
    customer = view.value("customer")
    query = view.value("query")
    session = view.value("session")
    as_of_text = view.value("as_of")
    budget_text = view.value("budget")
    values = {
        "tenant": tenant, "customer": customer or "", "query": query or "", "session": session or "",
        "as_of": as_of_text or "", "budget": budget_text or "",
    }  # fmt: skip
    tenants = [t for t in tenant_names(view) if tenant_visible(view.principal, t)]
    if customer is None or query is None:
        return view.render("context.html", nav="context", form=values, tenants=tenants, result=None, cli="")
    try:
        scope = Scope.of(tenant, customer)
    except ConnectorError as exc:
        raise PageError(str(exc)) from None
    if not tenant_visible(view.principal, scope.tenant):
        raise not_found(f"no customer {scope.customer_id!r} in tenant {scope.tenant!r}")
    view.require_customer(scope.tenant, scope.customer_id)
    as_of = parse_as_of(as_of_text)
    budget = parse_budget(budget_text)
    try:
        result = view.memory.build_context(
            scope.customer_id,
            query,
            session_id=session,
            tenant=scope.tenant,
            token_budget=budget,
            as_of=as_of,
        )
    except UnknownCustomerError:
        raise not_found(f"no customer {scope.customer_id!r} in tenant {scope.tenant!r}") from None
    except ConnectorError as exc:
        raise PageError(" ".join(str(exc).split())) from None
    view.audit("context", scope.tenant, scope.customer_id)
    return view.render(
        "context.html", nav="context", form=values, tenants=tenants, result=result,
        cli=cli_line(result, query, as_of_text, budget), timings=sorted(result.timings_ms.items()),
    )  # fmt: skip


def tenant_names(view: View) -> list[str]:
    names = [t.name for t in view.memory.settings.tenants]
    return names or [view.memory.default_tenant]


def parse_as_of(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise PageError(
            f"as of: expected an ISO date-time like 2026-01-15T12:00:00+00:00, got {text!r}"
        ) from None
    if parsed.tzinfo is None:
        raise PageError("as of: give a UTC offset (e.g. +00:00) so the date is unambiguous")
    return parsed


def parse_budget(text: str | None) -> int | None:
    if text is None:
        return None
    if not text.isdigit() or not 1 <= int(text) <= 1_000_000:
        raise PageError(f"budget: a whole number of tokens, got {text!r}")
    return int(text)


def cli_line(result: ContextResult, query: str, as_of: str | None, budget: int | None) -> str:
    """The ``connector context`` command that builds the same context (``--json`` for the structure)."""
    words = ["connector", "context", result.customer_id, query, "--tenant", result.tenant]
    if result.session_id:
        words += ["--session", result.session_id]
    if budget is not None:
        words += ["--budget", str(budget)]
    if as_of is not None:
        words += ["--as-of", as_of]
    return shlex.join(words)
