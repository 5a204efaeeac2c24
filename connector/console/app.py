"""The console's Starlette application: its routes and the state every request shares."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from connector.console.pages import audit, context, customer, erase, login, sync
from connector.console.principals import Keyring
from connector.console.web import Console, View, endpoint, redirect
from connector.memory import Memory

STATIC = Path(__file__).with_name("static")
MAX_BODY = 64 * 1024  # the largest form is a query and a few ids


def _home(view: View) -> Response:
    return redirect("/sync")


def build_app(memory: Memory, *, loopback: bool = True, hosts: Iterable[str] | None = None) -> Starlette:
    """The console over ``memory``. ``loopback``: requests without a token act as the loopback
    principal (only for a console bound to a loopback address); ``hosts``: the Host headers it
    answers (None: any)."""
    routes = [
        Route("/", endpoint(_home)),
        Route("/login", endpoint(login.login, public=True), methods=["GET", "POST"]),
        Route("/logout", endpoint(login.logout), methods=["POST"]),
        Route("/sync", endpoint(sync.streams)),
        Route("/sync/run", endpoint(sync.run)),
        Route("/customers", endpoint(customer.customers)),
        Route("/customer", endpoint(customer.customer)),
        Route("/context", endpoint(context.playground)),
        Route("/erase", endpoint(erase.erase), methods=["GET", "POST"]),
        Route("/audit", endpoint(audit.events)),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes, max_body_size=MAX_BODY)
    app.state.console = Console(
        memory,
        loopback=loopback,
        keyring=Keyring.from_settings(memory.settings),
        hosts=frozenset(hosts) if hosts is not None else None,
    )
    return app
