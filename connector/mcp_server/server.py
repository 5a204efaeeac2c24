"""``connector mcp``: the memories as a Model Context Protocol server (stdio or streamable HTTP).

Built on the official ``mcp`` SDK's ``MCPServer``. Over HTTP every request must carry
``Authorization: Bearer <secret>`` of a configured token (``access.tokens``, or the single
``mcp.token_env`` one; see :mod:`connector.access`), unless the server is bound to loopback and
started with ``--no-auth``; request bodies above ``mcp.max_request_bytes`` get a 413 from the SDK.
Each tool call runs as the token's principal: its role must cover the tool (``TOOL_ROLES``, and
``tools/list`` shows only those), its scope narrows the served one, and the call is in the audit
trail (reads and refusals written by a worker thread, off the call's path; see
:mod:`connector.audit.deferred`). Over stdio the caller is the local user (``cli``), as for the
command line. A refused request (401) is recorded as ``unknown`` with its client address,
coalesced per address and minute (:mod:`connector.audit.refusals`).
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import sys
from collections.abc import Callable, Iterable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, InputRequiredResult, ListToolsResult, PaginatedRequestParams
from pydantic import AnyUrl, ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from connector.access import CLI, LOOPBACK, Keyring, Principal, acting_as, bearer_secret
from connector.audit.deferred import DeferredRecorder
from connector.audit.refusals import UNKNOWN, Refusals, RefusedSignIns
from connector.errors import ConfigError, ConnectorError
from connector.ids import canonical_id
from connector.mcp_server.guard import ServedScope, invalid_arguments
from connector.mcp_server.schemas import published
from connector.mcp_server.tools import TOOL_ROLES, MemoryTools
from connector.memory import Memory

#: Where the HTTP guard leaves the request's principal, in the ASGI scope the SDK's request keeps.
PRINCIPAL_KEY = "connector.principal"

INSTRUCTIONS = (
    "Memory for agents on ERP workflows (Acumatica, SAP). Call get_context before answering about a "
    "customer; record_turn after each turn; pin values the workflow depends on; record_case when a case "
    "is resolved; learn preferences that have no home in the ERP. The ERP is the source of truth for "
    "its own facts."
)


# A missing resource: -32002 up to protocol 2025-11-25; -32602 (invalid params) from 2026-07-28
# (SEP-2164), which is what the SDK answers.
RESOURCE_NOT_FOUND = -32002
RESOURCE_NOT_FOUND_INVALID_PARAMS_SINCE = "2026-07-28"


def package_version() -> str:
    """The installed connector's version, reported as the server's ``serverInfo.version``."""
    try:
        return version("erp-memory-connector")
    except PackageNotFoundError:  # a checkout on sys.path without an install
        return "0+unknown"


def principal_of(context: Context[Any, Any] | None, default: Principal | None) -> Principal | None:
    """The caller of a request: what the HTTP guard found for its token, else ``default`` (stdio:
    ``cli``; HTTP with --no-auth: ``loopback``; HTTP with tokens: None, refused)."""
    try:
        request = context.request_context.request if context is not None else None
    except ValueError:  # no request (a call from inside the process)
        request = None
    return principal_of_request(request, default)


def principal_of_request(request: object, default: Principal | None) -> Principal | None:
    """:func:`principal_of` given the transport's request (an HTTP request, or None over stdio)."""
    scope = getattr(request, "scope", None)
    found = scope.get(PRINCIPAL_KEY) if isinstance(scope, dict) else None
    return found if isinstance(found, Principal) else default


class MemoryServer(MCPServer[Any]):
    """The SDK's server, with each call run as its caller (role checked, scope narrowed, audited),
    arguments that fail a tool's schema refused in one line, and a missing resource answered
    with the code of the protocol version the client negotiated.

    The SDK returns pydantic's report: several lines, the rejected values and a documentation
    link. An agent gets the fields and what each needs instead, like the library's own errors.
    """

    def __init__(self, *args: Any, memory: Memory, default_principal: Principal | None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.memory = memory
        self.served = ServedScope.from_settings(memory.settings)
        self.default_principal = default_principal
        self.recorder = DeferredRecorder()  # close() it when the server stops
        self.refusals = RefusedSignIns(self._record_refusals, now=memory.clock.now)

    def refused_sign_in(self, remote: str | None) -> None:
        """A request the HTTP guard refused (401): recorded as ``unknown``, coalesced."""
        if self.memory.settings.audit.enabled:
            self.refusals.refused(remote)

    def close(self) -> None:
        """Write the audit events still waiting (the server stops)."""
        self.refusals.flush()
        self.recorder.close()

    def _record_refusals(self, refusals: Refusals) -> None:
        try:
            engine = self.memory.engine
        except ConnectorError:  # no store: nothing to record in
            return
        self.recorder.submit(
            engine, UNKNOWN, "mcp.sign_in", None, None, outcome="refused", at=refusals.at,
            remote=refusals.remote, repeats=refusals.repeats,
        )  # fmt: skip

    async def _handle_list_tools(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        """``tools/list`` shows the caller only the tools its role covers: a read token's agent is
        not offered ``record_turn`` or ``learn`` (calling one is refused all the same)."""
        principal = principal_of_request(ctx.request, self.default_principal)
        listed = await self.list_tools()
        return ListToolsResult(
            tools=[
                tool.model_copy(update={"output_schema": published(tool.output_schema)})
                if tool.output_schema is not None
                else tool
                for tool in listed
                if _may_call(principal, tool.name)
            ]
        )

    async def read_resource(
        self, uri: AnyUrl | str, context: Context[Any, Any] | None = None
    ) -> Iterable[ReadResourceContents] | InputRequiredResult:
        principal = principal_of(context, self.default_principal)
        if principal is None:
            raise ResourceNotFoundError(f"Unknown resource: {uri}")
        try:
            with acting_as(principal):
                found = await super().read_resource(uri, context)
        except ResourceNotFoundError as exc:
            self._audit(principal, "mcp.resource", None, "refused")
            negotiated = context.protocol_version if context is not None else None
            if negotiated is not None and negotiated < RESOURCE_NOT_FOUND_INVALID_PARAMS_SINCE:
                raise MCPError(code=RESOURCE_NOT_FOUND, message=str(exc), data={"uri": str(uri)}) from None
            raise
        self._audit(principal, "mcp.resource", _resource_scope(str(uri)), "ok")
        return found

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        needed = TOOL_ROLES.get(name)
        principal = principal_of(context, self.default_principal)
        if needed is None:  # not one of ours: the SDK's "unknown tool"
            return await super().call_tool(name, arguments, context)
        action = f"mcp.{name}"
        if principal is None:
            raise ToolError(f"Error executing tool {name}: missing or wrong bearer token")
        scope = self._call_scope(principal, arguments)
        if not principal.can(needed):
            self._audit(principal, action, scope, "refused")
            raise ToolError(f"Error executing tool {name}: {name} needs a token with the {needed} role")
        try:
            with acting_as(principal):
                result = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            refused = scope is not None and not self.served.narrowed(principal).allows(
                scope[0], canonical_id(scope[1])
            )
            self._audit(principal, action, scope, "refused" if refused else "error")
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            raise ToolError(f"Error executing tool {name}: {invalid_arguments(cause)}") from cause
        if needed == "read":  # a write is recorded by the write itself (as the same caller)
            self._audit(principal, action, scope, "ok")
        return result

    def _call_scope(self, principal: Principal, arguments: dict[str, Any]) -> tuple[str, str] | None:
        """The (tenant, customer) a call names, as the audit trail keeps it, or None."""
        customer = arguments.get("customer_id")
        tenant = arguments.get("tenant")
        if not isinstance(customer, str) or not isinstance(tenant, str | None):
            return None
        if tenant is None:
            tenant = self.served.narrowed(principal).default_tenant
        return tenant, customer

    def _audit(self, principal: Principal, action: str, scope: tuple[str, str] | None, outcome: str) -> None:
        if not self.memory.settings.audit.enabled:
            return
        tenant, customer = scope if scope is not None else (None, None)
        try:
            engine = self.memory.engine
        except ConnectorError:  # no store: the call itself says so
            return
        now = self.memory.clock.now()
        self.recorder.submit(engine, principal.name, action, tenant, customer, outcome=outcome, at=now)


def _may_call(principal: Principal | None, tool: str) -> bool:
    """Whether ``principal`` may call ``tool`` (a tool not of this server's: as the SDK lists it)."""
    needed = TOOL_ROLES.get(tool)
    if needed is None:
        return True
    return principal is not None and principal.can(needed)


def _resource_scope(uri: str) -> tuple[str, str] | None:
    """The (tenant, customer) of a ``customer://{tenant}/{customer_id}`` URI."""
    tenant, _, customer = uri.removeprefix("customer://").partition("/")
    return (tenant, customer) if uri.startswith("customer://") and customer else None


def build_server(memory: Memory, *, default_principal: Principal | None = CLI) -> MemoryServer:
    """An MCP server over ``memory``, serving the tenants and customers its settings allow.

    ``default_principal`` is who a request without a token's principal runs as: ``cli`` (stdio,
    the local user), ``loopback`` (HTTP with --no-auth) or None (HTTP with tokens: refused)."""
    server = MemoryServer(
        "erp-memory-connector",
        version=package_version(),
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        warn_on_duplicate_tools=True,
        memory=memory,
        default_principal=default_principal,
    )
    MemoryTools(memory, server.served).register(server)
    # No prompts: the SDK registers the prompt methods of every server, so it would advertise the
    # capability; without the methods, prompts/list is "method not found", as the spec has it.
    for method in ("prompts/list", "prompts/get"):
        server._lowlevel_server._request_handlers.pop(method, None)
    # The SDK logs a refused call's message at INFO (it can hold a document number or an id the
    # agent sent); the server's own log line names the error type only. Its warnings still show.
    logging.getLogger("mcp").setLevel(logging.WARNING)
    return server


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bearer_tokens(memory: Memory, *, host: str, no_auth: bool) -> Keyring | None:
    """The tokens HTTP clients may send, or None for ``--no-auth`` on loopback; ConfigError when
    no token can sign in or a configured one lacks its secret (naming its variable, not a value)."""
    if no_auth:
        if not is_loopback(host):
            raise ConfigError(f"--no-auth is only allowed on a loopback address, not {host!r}")
        return None
    keyring = Keyring.from_settings(memory.settings)
    keyring.require_usable()
    return keyring


class BearerAuth:
    """ASGI middleware: 401 unless the request carries the secret of a configured, unrevoked
    token; the token's principal is left in the request's scope for the tools. ``refused`` is
    told the client's address of each 401 (never the token)."""

    def __init__(
        self, app: ASGIApp, keyring: Keyring, *, refused: Callable[[str | None], None] | None = None
    ) -> None:
        self.app = app
        self.keyring = keyring
        self.refused = refused  # told the client address of each 401 (the audit trail)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            principal = self.keyring.authenticate(bearer_secret(dict(scope["headers"]).get(b"authorization")))
            scope[PRINCIPAL_KEY] = principal
            if principal is None:
                if self.refused is not None:
                    client = scope.get("client")
                    self.refused(str(client[0]) if client else None)
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token\n"})
                return
        await self.app(scope, receive, send)


def run_stdio(memory: Memory) -> None:
    import anyio

    from connector.mcp_server.stdio import serve_stdio

    server = build_server(memory)
    try:
        anyio.run(serve_stdio, server)
    finally:
        server.close()


def listening_socket(host: str, port: int) -> socket.socket:
    """The bound, listening socket, or ConfigError naming the address and why (port in use...)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=2048)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"mcp cannot listen on {host}:{port}: {reason}") from None


def run_http(memory: Memory, *, host: str, port: int, no_auth: bool) -> None:
    """Serve streamable HTTP; "serving ..." is printed once the socket listens, never before a
    refusal (no token, address in use)."""
    import anyio
    import uvicorn

    keyring = bearer_tokens(memory, host=host, no_auth=no_auth)
    default = LOOPBACK if keyring is None else None
    server = build_server(memory, default_principal=default)
    app: ASGIApp = server.streamable_http_app(
        max_request_body_size=memory.settings.mcp.max_request_bytes, host=host
    )
    if keyring is not None:
        app = BearerAuth(app, keyring, refused=server.refused_sign_in)
    sock = listening_socket(host, port)
    shown = f"[{host}]" if ":" in host else host
    config = uvicorn.Config(app, log_level="warning", access_log=False)

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                print(f"connector mcp: serving streamable HTTP on http://{shown}:{port}/mcp", file=sys.stderr)

    try:
        with sock:
            anyio.run(Server(config).serve, [sock])
    finally:
        server.close()
