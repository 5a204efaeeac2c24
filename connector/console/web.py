"""The request plumbing every page shares: who is asking, scope checks, forms, errors, headers.

A page is a plain function ``handler(view) -> Response`` run in a worker thread (the stores are
synchronous). :func:`endpoint` wraps it: it finds the principal (a bearer token, the login
cookie, or loopback without a token), refuses a POST without the page's CSRF token, turns
:class:`PageError` into an error page, and adds the security headers and ``Server-Timing``.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from connector.access import acting_as
from connector.console import principals
from connector.console.principals import LOOPBACK, Keyring, Principal
from connector.console.render import page
from connector.errors import ConnectorError
from connector.memory import Memory
from connector.settings import Role

log = logging.getLogger(__name__)

COOKIE = "connector_console_token"
MAX_FORM_FIELD = 10_000  # characters: a query or an id, never a document
CSP = (
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",  # "no-referrer" would make a form's Origin "null"
    "cache-control": "no-store",
    "x-frame-options": "DENY",
}


class PageError(ConnectorError):
    """A request the page refuses: its HTTP status and one line for the operator."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def not_found(message: str) -> PageError:
    return PageError(message, 404)


def forbidden(message: str) -> PageError:
    return PageError(message, 403)


@dataclass
class Console:
    """What every request shares: the Memory, whether the console is on loopback, the Host
    headers it answers (DNS rebinding), and the secret its CSRF tokens are made from."""

    memory: Memory
    loopback: bool
    keyring: Keyring
    hosts: frozenset[str] | None = None  # None: any Host header (tests, benchmarks)
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))

    def csrf(self, principal: Principal) -> str:
        return hmac.new(self.secret, principal.name.encode(), hashlib.sha256).hexdigest()[:32]


@dataclass
class View:
    """One request as a page sees it."""

    console: Console
    request: Request
    principal: Principal
    params: Mapping[str, str]
    form: Mapping[str, str] | None

    @property
    def memory(self) -> Memory:
        return self.console.memory

    def value(self, name: str) -> str | None:
        """A form field (POST), else the query parameter, stripped; None when empty."""
        raw = self.form.get(name) if self.form is not None else None
        if raw is None:
            raw = self.params.get(name)
        if raw is None:
            return None
        text = str(raw).strip()
        if len(text) > MAX_FORM_FIELD:
            raise PageError(f"{name} is longer than {MAX_FORM_FIELD:,} characters")
        return text or None

    def require_customer(self, tenant: str, customer_id: str) -> None:
        """Out of the principal's scope reads exactly like a customer that does not exist."""
        if not self.principal.allows(tenant, customer_id):
            raise not_found(f"no customer {customer_id!r} in tenant {tenant!r}")

    def require_role(self, role: Role) -> None:
        if not self.principal.can(role):
            raise forbidden(f"the {self.principal.role!r} role of {self.principal.name!r} cannot {role}")

    def audit(self, action: str, tenant: str | None = None, customer_id: str | None = None) -> None:
        principals.audit(self.memory, self.principal, f"console.{action}", tenant, customer_id)

    def render(self, template: str, status: int = 200, **values: Any) -> HTMLResponse:
        values.setdefault("nav", "")
        return HTMLResponse(
            page(
                template, {**values, "principal": self.principal, "csrf": self.console.csrf(self.principal)}
            ),
            status_code=status,
        )


Handler = Callable[[View], Response]


def presented_token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if header[:7].lower() == "bearer ":
        return header[7:].strip() or None
    return request.cookies.get(COOKIE) or None


def principal_of(console: Console, request: Request) -> Principal | None:
    token = presented_token(request)
    if token is not None:
        return console.keyring.authenticate(token)
    return LOOPBACK if console.loopback else None


def host_refusal(console: Console, request: Request) -> Response | None:
    if console.hosts is not None and request.headers.get("host", "") not in console.hosts:
        return finish(Response("unexpected Host header\n", status_code=400, media_type="text/plain"))
    return None


def cross_origin(request: Request) -> bool:
    """A POST sent by another site's page (the browser names the origin it came from)."""
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin == "null"
    return urlsplit(origin).netloc != request.headers.get("host", "")


def endpoint(handler: Handler, *, public: bool = False) -> Callable[[Request], Awaitable[Response]]:
    """The Starlette endpoint of a page handler (``public``: served without a principal: login)."""

    async def serve(request: Request) -> Response:
        started = time.perf_counter()
        console: Console = request.app.state.console
        refused = host_refusal(console, request)
        if refused is not None:
            return refused
        principal = principal_of(console, request)
        if principal is None and not public:
            return finish(login_page(request, status=401))
        form: dict[str, str] | None = None
        if request.method == "POST":
            if cross_origin(request):
                return finish(
                    Response("cross-origin form refused\n", status_code=403, media_type="text/plain")
                )
            data = await request.form()
            form = {k: v for k, v in data.items() if isinstance(v, str)}
            if (
                not public
                and principal is not None
                and not hmac.compare_digest(form.get("csrf", ""), console.csrf(principal))
            ):
                return finish(Response("stale or missing form token; reload the page\n", status_code=403))
        view = View(console, request, principal or LOOPBACK, request.query_params, form)
        try:
            response = await run_in_threadpool(_acting, handler, view)
        except PageError as exc:
            if exc.status in (403, 404):  # a refusal or an out-of-scope try is recorded too
                action = "console" + request.url.path.replace("/", ".")
                customer = view.value("id") or view.value("customer")
                await run_in_threadpool(
                    principals.audit,
                    view.memory,
                    view.principal,
                    action,
                    view.value("tenant"),
                    customer,
                    "refused",
                )
            response = view.render("error.html", status=exc.status, message=exc.message)
        return finish(response, started)

    return serve


def _acting(handler: Handler, view: View) -> Response:
    """The handler, with what it writes (an erasure) recorded under the request's principal; its
    CPU time goes into ``Server-Timing`` beside the wall time (which a loaded machine stretches)."""
    cpu = time.thread_time()
    with acting_as(view.principal):
        response = handler(view)
    response.headers["server-timing"] = f"cpu;dur={(time.thread_time() - cpu) * 1000:.1f}"
    return response


def login_page(request: Request, *, status: int = 200, message: str | None = None) -> Response:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return HTMLResponse(
        page("login.html", {"next": safe_next(target), "message": message, "nav": "", "principal": None}),
        status_code=status,
    )


def safe_next(target: str | None) -> str:
    """A redirect target on this console only (no scheme, no other host)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def redirect(target: str) -> Response:
    return RedirectResponse(safe_next(target), status_code=303)


def finish(response: Response, started: float | None = None) -> Response:
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)
    if started is not None:
        wall = f"app;dur={(time.perf_counter() - started) * 1000:.1f}"
        cpu = response.headers.get("server-timing")
        response.headers["server-timing"] = f"{wall}, {cpu}" if cpu else wall
    return response
