"""MCP over HTTP with several named tokens: each call runs with its token's role and scope, a
request outside the scope reads as not existing, revoked and unknown tokens get a one-line 401,
and every call is in the audit trail under the token's name.

The server is the real ASGI app (token guard + the SDK's streamable HTTP) under uvicorn in a
thread of this process, driven by the SDK's own client.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import httpx
import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent
from ports import free_port
from sqlalchemy.engine import Engine
from sync_stub import StubAdapter, customer

from connector.access import Keyring, Principal
from connector.audit import list_events
from connector.clock import FrozenClock
from connector.mcp_server.server import BearerAuth, MemoryServer, build_server
from connector.memory import Memory
from connector.settings import AccessSettings, ContextSettings, Settings, TenantSettings, TokenSettings

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
SECRETS = {
    "READER_SECRET": "reader-secret-0123456789",
    "AGENT_SECRET": "agent-secret-0123456789",
    "SOUTH_SECRET": "south-secret-0123456789",
    "RETIRED_SECRET": "retired-secret-0123456789",
}
TOKENS = [
    TokenSettings(name="dashboard", secret_env="READER_SECRET", role="read", tenants=["north"]),
    TokenSettings(
        name="agent", secret_env="AGENT_SECRET", role="write", tenants=["north"], customers=["C001"]
    ),
    TokenSettings(name="south-agent", secret_env="SOUTH_SECRET", role="erase", tenants=["south"]),
    TokenSettings(name="retired", secret_env="RETIRED_SECRET", role="erase", revoked=True),
]


@pytest.fixture
def memory(sqlite_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> Iterator[Memory]:
    for name, secret in SECRETS.items():
        monkeypatch.setenv(name, secret)
    monkeypatch.delenv("CONNECTOR_MCP_TOKEN", raising=False)
    settings = Settings(
        tenants=[
            TenantSettings(name=n, kind="acumatica", base_url="http://127.0.0.1:9")
            for n in ("north", "south")
        ],
        default_tenant="north",
        access=AccessSettings(tokens=TOKENS),
        context=ContextSettings(max_cases=0),  # no past-case recall: no embedding model here
    )
    clock = FrozenClock(T0)
    memory = Memory(settings, clock=clock, engine=sqlite_engine, llm=None)
    for tenant in ("north", "south"):
        erp = StubAdapter(tenant, page_size=10)
        erp.add_stream("Customer", "party")
        erp.put(
            "Customer",
            *[replace(customer(c, T0 - timedelta(days=1)), tenant=tenant) for c in ("C001", "C002")],
        )
        result = memory.sync_runner(adapter_factory=lambda _t, erp=erp: erp).run(tenant)  # type: ignore[misc]
        assert all(r.error is None for r in result.results), [r.error for r in result.results]
    yield memory
    memory.close()


@pytest.fixture
def served(memory: Memory) -> MemoryServer:
    return build_server(memory, default_principal=None)


@pytest.fixture
def url(memory: Memory, served: MemoryServer) -> Iterator[str]:
    app = BearerAuth(served.streamable_http_app(host="127.0.0.1"), Keyring.from_settings(memory.settings))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}/mcp"
    server.should_exit = True
    thread.join(timeout=30)


def call(url: str, secret: str, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    async def session() -> CallToolResult:
        headers = {"Authorization": f"Bearer {secret}"}
        transport = streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=30))
        async with Client(transport, read_timeout_seconds=30) as client:
            return await client.call_tool(tool, arguments)

    return anyio.run(session)


def text(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def test_a_read_token_reads_its_tenant_and_may_not_write(
    url: str, memory: Memory, served: MemoryServer
) -> None:
    reader = SECRETS["READER_SECRET"]
    got = call(url, reader, "get_context", {"customer_id": "C002", "query": "status?"})
    assert not got.is_error and "C002" in text(got)
    refused = call(
        url, reader, "record_turn", {"session_id": "s", "customer_id": "C002", "role": "user", "content": "x"}
    )
    assert refused.is_error and text(refused).endswith("record_turn needs a token with the write role")
    assert "\n" not in text(refused)
    served.recorder.flush()  # reads and refusals are written off the call's path
    events = list_events(memory.engine, who="dashboard")
    assert [(e.action, e.tenant, e.customer_id, e.outcome) for e in events] == [
        ("mcp.record_turn", "north", "C002", "refused"),
        ("mcp.get_context", "north", "C002", "ok"),
    ]


def test_outside_its_scope_a_customer_or_tenant_reads_as_not_served(
    url: str, memory: Memory, served: MemoryServer
) -> None:
    agent = SECRETS["AGENT_SECRET"]
    turn = {"session_id": "s-1", "customer_id": "C001", "role": "user", "content": "card 4111"}
    assert not call(url, agent, "record_turn", turn).is_error
    other = call(url, agent, "get_context", {"customer_id": "C002", "query": "q"})  # exists, not its own
    missing = call(url, agent, "get_context", {"customer_id": "C999", "query": "q"})  # does not exist
    assert text(other) == text(missing).replace("C999", "C002")  # the same answer: nothing confirms C002
    assert "not served" in text(other)
    south = call(url, agent, "get_context", {"customer_id": "C001", "query": "q", "tenant": "south"})
    nowhere = call(url, agent, "get_context", {"customer_id": "C001", "query": "q", "tenant": "nowhere"})
    assert text(south) == text(nowhere).replace("nowhere", "south")
    hostile = call(url, agent, "get_context", {"customer_id": "<script>alert(1)</script>", "query": "q"})
    assert hostile.is_error and "\n" not in text(hostile) and "C001" not in text(hostile)
    served.recorder.flush()
    events = list_events(memory.engine, who="agent")
    assert ("turn.record", "C001", "ok") in {(e.action, e.customer_id, e.outcome) for e in events}
    assert {e.outcome for e in events if e.action == "mcp.get_context"} == {"refused"}
    assert "4111" not in repr(events)


def test_another_tenants_token_sees_only_its_tenant(url: str) -> None:
    south = SECRETS["SOUTH_SECRET"]
    own = call(url, south, "get_context", {"customer_id": "C001", "query": "q"})  # default: its tenant
    assert not own.is_error
    north = call(url, south, "get_context", {"customer_id": "C001", "query": "q", "tenant": "north"})
    assert north.is_error and text(north).endswith("tenant 'north' is not served by this MCP server")
    turn = {"session_id": "north-1", "customer_id": "C001", "role": "user", "content": "hi"}
    session = call(url, SECRETS["AGENT_SECRET"], "record_turn", turn)
    assert not session.is_error
    pin = call(url, south, "pin", {"session_id": "north-1", "name": "n", "value": 1})  # a north session
    assert pin.is_error and "does not exist" in text(pin)


@pytest.mark.parametrize("secret", [SECRETS["RETIRED_SECRET"], "unknown-secret-0123456789", None])
def test_revoked_unknown_and_missing_tokens_get_a_one_line_401(url: str, secret: str | None) -> None:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    headers = {"Authorization": f"Bearer {secret}"} if secret is not None else {}
    refused = httpx.post(url, json=initialize, headers=headers, timeout=10)
    assert refused.status_code == 401 and refused.text == "missing or wrong bearer token\n"


READ_TOOLS = {"get_context", "recall_cases", "recall_conversations", "lookup_document", "erp_history"}
WRITE_TOOLS = {"record_turn", "pin", "record_case", "learn"}


def listed_tools(client: Client) -> set[str]:
    async def session() -> set[str]:
        async with client:
            return {tool.name for tool in (await client.list_tools()).tools}

    return anyio.run(session)


def over_http(url: str, secret: str) -> Client:
    headers = {"Authorization": f"Bearer {secret}"}
    transport = streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=30))
    return Client(transport, read_timeout_seconds=30)


def test_tools_list_shows_each_token_only_the_tools_its_role_covers(url: str) -> None:
    assert listed_tools(over_http(url, SECRETS["READER_SECRET"])) == READ_TOOLS
    assert listed_tools(over_http(url, SECRETS["AGENT_SECRET"])) == READ_TOOLS | WRITE_TOOLS


def test_tools_list_without_a_token_follows_the_servers_own_caller(memory: Memory) -> None:
    """Over stdio (no HTTP request) the list follows the principal the server runs as."""
    reader = Principal(name="stdio-reader", role="read", tenants=None, customers=None)
    assert listed_tools(Client(build_server(memory, default_principal=reader))) == READ_TOOLS
    assert listed_tools(Client(build_server(memory))) == READ_TOOLS | WRITE_TOOLS  # cli: every right
