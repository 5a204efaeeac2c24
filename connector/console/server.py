"""Serve the console with uvicorn on a socket bound before "serving ..." is printed."""

from __future__ import annotations

import socket
import sys

from connector.console.principals import Keyring
from connector.errors import ConfigError
from connector.memory import Memory

DEFAULT_PORT = 8766


def served_hosts(host: str, port: int) -> frozenset[str] | None:
    """The Host headers a loopback console answers (a page of another site that resolves its own
    name to 127.0.0.1 is refused); None off loopback, where every request needs a token anyway."""
    from connector.mcp_server.server import is_loopback

    if not is_loopback(host):
        return None
    shown = f"[{host}]" if ":" in host else host
    return frozenset({f"{shown}:{port}", f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"})


def serve(memory: Memory, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> None:
    """Serve until interrupted. Off loopback every request needs a named token (connector.access)."""
    import anyio
    import uvicorn

    from connector.console.app import build_app
    from connector.mcp_server.server import is_loopback, listening_socket

    loopback = is_loopback(host)
    if not loopback:
        Keyring.from_settings(memory.settings).require_usable()  # off loopback a token is a must
    try:
        sock = listening_socket(host, port)
    except ConfigError as exc:
        raise ConfigError(str(exc).replace("mcp cannot", "console cannot")) from None
    app = build_app(memory, loopback=loopback, hosts=served_hosts(host, sock.getsockname()[1]))
    shown = f"[{host}]" if ":" in host else host
    config = uvicorn.Config(app, log_level="warning", access_log=False)

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                port_shown = sock.getsockname()[1]
                print(f"connector console: serving http://{shown}:{port_shown}/", file=sys.stderr, flush=True)

    with sock:
        anyio.run(Server(config).serve, [sock])
