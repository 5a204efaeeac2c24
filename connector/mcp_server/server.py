"""``connector mcp``: the memories as a Model Context Protocol server (stdio or streamable HTTP).

Built on the official ``mcp`` SDK's ``MCPServer``. Over HTTP every request must carry
``Authorization: Bearer <token>`` (the token is read from the environment variable that
``mcp.token_env`` names, compared in constant time), unless the server is bound to loopback and
started with ``--no-auth``; request bodies above ``mcp.max_request_bytes`` get a 413 from the SDK.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import socket
import sys
from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import AnyUrl, ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from connector.errors import ConfigError
from connector.mcp_server.guard import ServedScope, invalid_arguments
from connector.mcp_server.tools import MemoryTools
from connector.memory import Memory
from connector.settings import environment_value

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


class MemoryServer(MCPServer[Any]):
    """The SDK's server, with arguments that fail a tool's schema refused in one line, and a
    missing resource answered with the code of the protocol version the client negotiated.

    The SDK returns pydantic's report: several lines, the rejected values and a documentation
    link. An agent gets the fields and what each needs instead, like the library's own errors.
    """

    async def read_resource(
        self, uri: AnyUrl | str, context: Context[Any, Any] | None = None
    ) -> Iterable[ReadResourceContents] | InputRequiredResult:
        try:
            return await super().read_resource(uri, context)
        except ResourceNotFoundError as exc:
            negotiated = context.protocol_version if context is not None else None
            if negotiated is not None and negotiated < RESOURCE_NOT_FOUND_INVALID_PARAMS_SINCE:
                raise MCPError(code=RESOURCE_NOT_FOUND, message=str(exc), data={"uri": str(uri)}) from None
            raise

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            raise ToolError(f"Error executing tool {name}: {invalid_arguments(cause)}") from cause


def build_server(memory: Memory) -> MCPServer[Any]:
    """An MCP server over ``memory``, serving the tenants and customers its settings allow."""
    server: MCPServer[Any] = MemoryServer(
        "erp-memory-connector",
        version=package_version(),
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        warn_on_duplicate_tools=True,
    )
    MemoryTools(memory, ServedScope.from_settings(memory.settings)).register(server)
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


def bearer_token(memory: Memory, *, host: str, no_auth: bool) -> str | None:
    """The token HTTP clients must send, or None for ``--no-auth`` on loopback."""
    if no_auth:
        if not is_loopback(host):
            raise ConfigError(f"--no-auth is only allowed on a loopback address, not {host!r}")
        return None
    variable = memory.settings.mcp.token_env
    token = environment_value(variable)
    if not token or len(token) < 16:
        raise ConfigError(
            f"mcp over HTTP needs a bearer token of at least 16 characters in ${variable} "
            "(or --no-auth on a loopback address)"
        )
    return token


class BearerAuth:
    """ASGI middleware: 401 unless the request carries the expected bearer token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            sent = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(sent, self._expected):
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

    anyio.run(serve_stdio, build_server(memory))


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

    token = bearer_token(memory, host=host, no_auth=no_auth)
    app: ASGIApp = build_server(memory).streamable_http_app(
        max_request_body_size=memory.settings.mcp.max_request_bytes, host=host
    )
    if token is not None:
        app = BearerAuth(app, token)
    sock = listening_socket(host, port)
    shown = f"[{host}]" if ":" in host else host
    config = uvicorn.Config(app, log_level="warning", access_log=False)

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                print(f"connector mcp: serving streamable HTTP on http://{shown}:{port}/mcp", file=sys.stderr)

    with sock:
        anyio.run(Server(config).serve, [sock])
