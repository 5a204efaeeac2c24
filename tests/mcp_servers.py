"""``connector mcp`` as a child process on the sync rig's store: over stdio (the MCP SDK's client starts it)
or over streamable HTTP on a free loopback port; shared by the MCP and telemetry tests."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from ports import free_port
from sync_rigs import Rig, sync_env

TOKEN = "test-token-0123456789abcdef"


def synced(rig_factory: Callable[..., Rig]) -> Rig:
    rig = rig_factory(customers=8, invoices=20, sales_orders=6, vendors=2, bills=2)
    rig.run()
    return rig


def server_env(tmp_path: Path, rig: Rig, **extra: str) -> dict[str, str]:
    db_url = rig.engine.url.render_as_string(hide_password=False)
    return sync_env(tmp_path, rig, db_url) | extra


def stdio_client(tmp_path: Path, env: dict[str, str]) -> Client:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "connector.cli", "mcp"], env=env, cwd=str(tmp_path)
    )
    return Client(params, read_timeout_seconds=60)


def run(session: Callable[[], Awaitable[None]]) -> None:
    anyio.run(session)


def http_server(tmp_path: Path, env: dict[str, str], *args: str) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "connector.cli", "mcp", "--http", "--port", str(port), *args],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1]
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise AssertionError("connector mcp --http did not start listening")


def http_client(url: str, token: str) -> Client:
    headers = {"Authorization": f"Bearer {token}"}
    transport = streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=60))
    return Client(transport, read_timeout_seconds=60)
