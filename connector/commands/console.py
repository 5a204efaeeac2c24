"""``connector console``: the web console (sync, customers, context playground, erase)."""

from __future__ import annotations

import argparse
from typing import Any

from connector.commands._common import memory_from_settings


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "console",
        help="serve the web console: sync health, a customer's memory, the context playground, erasure",
        description="A web console over the memories. On a loopback address (the default) it needs no "
        "token; on any other address every request must present one of the named tokens "
        "(Authorization: Bearer, or the sign-in page), and sees only that token's tenants and customers.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8766, help="port (default: 8766; 0: any free port)")
    parser.set_defaults(handler=_console)


def _console(args: argparse.Namespace) -> int:
    from connector.console.server import serve

    memory = memory_from_settings()
    with memory:
        serve(memory, host=args.host, port=args.port)
    return 0
