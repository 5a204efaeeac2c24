"""MCP over stdio, with an answer for every line: a malformed one gets a JSON-RPC error.

The SDK's stdio transport turns a line that is not JSON, or not a JSON-RPC message, into an
exception that its dispatcher only logs at DEBUG: the client waits for a reply that never comes.
JSON-RPC 2.0 says such a line is answered with ``-32700`` (parse error) or ``-32600`` (invalid
request) and a null id, as the HTTP transport already does; the relay below does that and passes
every well-formed message on unchanged.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError


def malformed_reply(problem: Exception) -> JSONRPCError:
    """The error response to a line the transport could not read as a JSON-RPC message."""
    not_json = isinstance(problem, ValidationError) and any(
        e["type"] == "json_invalid" for e in problem.errors(include_url=False, include_input=False)
    )
    if not_json or not isinstance(problem, ValidationError):
        error = ErrorData(code=PARSE_ERROR, message="Parse error: the line is not JSON")
    else:
        error = ErrorData(code=INVALID_REQUEST, message="Invalid Request: not a JSON-RPC 2.0 message")
    return JSONRPCError(jsonrpc="2.0", id=None, error=error)


async def serve_stdio(server: MCPServer[Any]) -> None:
    """Serve ``server`` on stdin/stdout until stdin closes (the SDK's ``run("stdio")`` plus replies
    to malformed lines)."""
    lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async serves, too
    async with stdio_server() as (read_stream, write_stream):
        relay_send, relay_receive = create_context_streams[SessionMessage | Exception](0)

        async def relay() -> None:
            async with relay_send:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        await write_stream.send(SessionMessage(malformed_reply(item)))
                    else:
                        await relay_send.send(item)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(relay)
            await lowlevel.run(relay_receive, write_stream, lowlevel.create_initialization_options())
            tasks.cancel_scope.cancel()
