"""Audit: the audit trail (``connector audit``'s events) with its filters, within the principal's scope.

A principal limited to some tenants or customers sees only their events: the scope goes into the
query (not a filter after it), so a page of events is never short of, or padded with, hidden ones.
"""

from __future__ import annotations

from starlette.responses import Response

from connector.audit import list_events
from connector.audit.moments import moment
from connector.console.web import PageError, View
from connector.errors import ConfigError

FILTERS = ("who", "action", "tenant", "customer", "since")
PAGE_EVENTS = 200


def events(view: View) -> Response:
    values = {name: view.value(name) for name in FILTERS}
    try:
        since = moment("since", values["since"])
    except ConfigError as exc:
        raise PageError(str(exc)) from None
    principal = view.principal
    found = list_events(
        view.memory.engine,
        who=values["who"],
        action=values["action"],
        tenant=values["tenant"],
        customer_id=values["customer"],
        since=since,
        tenants=principal.tenants,
        customers=principal.customers,
        limit=PAGE_EVENTS,
    )
    view.audit("audit")
    shown = {name: value or "" for name, value in values.items()}
    return view.render("audit.html", nav="audit", events=found, f=shown, limit=PAGE_EVENTS)
