"""``connector mcp``: serve the memories to MCP clients (stdio by default, ``--http`` for streamable HTTP)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from connector.commands._common import memory_from_settings
from connector.mcp_client import client_config


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "mcp",
        help="serve get_context, recall_cases, record_turn, pin, record_case and learn over MCP",
        description="A Model Context Protocol server over the memories: stdio (default) or streamable "
        "HTTP. It serves the tenants in mcp.tenants (default: all) and, if set, only the customers in "
        "mcp.customers. Over HTTP clients send 'Authorization: Bearer $CONNECTOR_MCP_TOKEN' "
        "(mcp.token_env names the variable).",
    )
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    parser.add_argument("--host", help="HTTP bind address (default: mcp.host, 127.0.0.1)")
    parser.add_argument("--port", type=int, help="HTTP port (default: mcp.port, 8765)")
    parser.add_argument(
        "--no-auth", action="store_true", help="HTTP without a bearer token (loopback addresses only)"
    )
    parser.add_argument(
        "--print-config", action="store_true", help="print an MCP client's JSON config block and exit"
    )
    parser.set_defaults(handler=_mcp)


def _mcp(args: argparse.Namespace) -> int:
    memory = memory_from_settings(check_database=not args.print_config)
    cfg = memory.settings.mcp
    host = args.host or cfg.host
    port = args.port or cfg.port
    if args.print_config:
        url = f"http://{host}:{port}/mcp" if args.http else None
        print(json.dumps(client_config(http_url=url, token_env=cfg.token_env), indent=2))
        return 0
    from connector.mcp_server.server import run_http, run_stdio

    with memory:  # on shutdown: stop the background worker and pools, close Chroma and the engine
        if args.http:
            run_http(memory, host=host, port=port, no_auth=args.no_auth)
        else:
            run_stdio(memory)
    return 0
