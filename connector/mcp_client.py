"""The ``mcpServers`` block MCP clients read, shared by ``connector mcp --print-config`` and the demo."""

from __future__ import annotations

from typing import Any


def client_config(
    *,
    http_url: str | None = None,
    token_env: str = "CONNECTOR_MCP_TOKEN",
    command: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The ``mcpServers`` block an MCP client (desktop assistant, IDE, agent platform) reads:
    the command that starts ``connector mcp`` over stdio, or the URL and header for HTTP."""
    if http_url is None:
        program, *args = command or ["connector"]
        entry: dict[str, Any] = {"command": program, "args": [*args, "mcp"]}
        if env:
            entry["env"] = env
    else:
        entry = {"type": "http", "url": http_url, "headers": {"Authorization": f"Bearer ${{{token_env}}}"}}
    return {"mcpServers": {"erp-memory": entry}}
