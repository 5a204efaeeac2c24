"""``connector mcp`` as a real process, driven by the MCP SDK's own client over stdio and streamable
HTTP, after a sync from the fake Acumatica served on loopback."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from mcp.types import CallToolResult, TextContent
from mcp_servers import TOKEN, http_client, http_server, run, server_env, stdio_client, synced
from ports import free_port
from sqlalchemy.engine import Engine
from sync_rigs import Rig, rig_factory, rigs_on

from connector.cli import main
from connector.memory import Memory
from connector.semantic.upsert import document_t
from connector.settings import Settings

__all__ = ["rig_factory"]  # the fixture, from tests/sync_rigs.py

TOOLS = {
    "get_context",
    "recall_cases",
    "recall_conversations",
    "lookup_document",
    "erp_history",
    "record_turn",
    "pin",
    "record_case",
    "learn",
}


def local_memory(tmp_path: Path, rig: Rig) -> Memory:
    """The same stores the server process uses, in this process (real clock, like the server)."""
    return Memory(Settings(tenants=[rig.tenant], data_dir=tmp_path / "data"), engine=rig.engine, llm=None)


def a_customer_document(rig: Rig) -> tuple[str, str]:
    with rig.engine.connect() as conn:
        row = conn.execute(
            sa.select(document_t.c.party_external_id, document_t.c.number)
            .where(document_t.c.party_kind == "customer")
            .order_by(document_t.c.number)
            .limit(1)
        ).one()
    return str(row.party_external_id), str(row.number)


def text(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def timeless(context_text: str) -> str:
    """The context without its clock minute: the server and this process read the real clock apart."""
    return re.sub(r"\b\d{2}:\d{2} UTC\b", "HH:MM UTC", context_text)


@pytest.fixture
def sqlite_rigs(sqlite_engine: Engine) -> Iterator[Callable[..., Rig]]:
    yield from rigs_on(sqlite_engine)


def test_stdio_tools_match_the_library_and_see_recorded_turns(
    rig_factory: Callable[..., Rig], tmp_path: Path
) -> None:
    rig = synced(rig_factory)
    customer, number = a_customer_document(rig)
    other = next(c for c in sorted(rig.fake.keys("Customer")) if c != customer)
    local = local_memory(tmp_path, rig)

    async def session() -> None:
        async with stdio_client(tmp_path, server_env(tmp_path, rig)) as client:
            listed = await client.list_tools()
            assert {tool.name for tool in listed.tools} == TOOLS
            for tool in listed.tools:
                assert tool.description and len(tool.description) > 80
                assert tool.input_schema["type"] == "object"

            got = await client.call_tool("get_context", {"customer_id": customer, "query": "open invoices?"})
            assert not got.is_error, text(got)
            expected = local.build_context(customer, "open invoices?")
            assert timeless(text(got)) == timeless(expected.text)
            assert got.structured_content is not None
            assert got.structured_content["customer_id"] == customer
            names = [section["name"] for section in got.structured_content["sections"]]
            assert names == [section.name for section in expected.sections]

            turn = {"session_id": "s-1", "customer_id": customer, "role": "user"}
            recorded = await client.call_tool("record_turn", turn | {"content": "Where is order SO-77?"})
            assert not recorded.is_error, text(recorded)
            pin = {"session_id": "s-1", "name": "promised", "value": "1250.00"}
            pinned = await client.call_tool("pin", pin)
            assert not pinned.is_error, text(pinned)
            got = await client.call_tool(
                "get_context", {"customer_id": customer, "query": "order status", "session_id": "s-1"}
            )
            assert "Where is order SO-77?" in text(got) and "1250.00" in text(got)
            assert timeless(text(got)) == timeless(
                local.build_context(customer, "order status", session_id="s-1").text
            )

            case = {"customer_id": customer, "request": "Billed twice for INV-9", "resolution": "Credit memo"}
            recorded = await client.call_tool("record_case", case | {"documents": ["INV-9"]})
            assert not recorded.is_error, text(recorded)
            typo = await client.call_tool("record_case", case | {"customer_id": customer.lower()})
            assert typo.is_error and f"unknown customer {customer.lower()!r}" in text(typo)
            assert customer not in text(typo)  # ids are case-sensitive; no other customer is named
            recalled = await client.call_tool("recall_cases", {"customer_id": customer, "query": "INV-9"})
            assert "Billed twice for INV-9" in text(recalled)
            learned = await client.call_tool("learn", {"customer_id": customer, "content": "Prefers e-mail"})
            assert not learned.is_error, text(learned)

            found = await client.call_tool("lookup_document", {"customer_id": customer, "number": number})
            assert not found.is_error and found.structured_content is not None, text(found)
            assert found.structured_content["number"] == number and number in text(found)
            missing = await client.call_tool("lookup_document", {"customer_id": other, "number": number})
            assert missing.is_error and "no single document" in text(missing)

    run(session)


def test_bad_input_scope_violations_and_the_allow_list_give_one_line_tool_errors(
    sqlite_rigs: Callable[..., Rig], tmp_path: Path
) -> None:
    rig = synced(sqlite_rigs)
    first, second, refused = sorted(rig.fake.keys("Customer"))[:3]
    lookalike = first[:-1] + ("X" if first[-1] != "X" else "Y")
    env = server_env(tmp_path, rig, CONNECTOR_MCP__CUSTOMERS=json.dumps([first, second, lookalike]))
    local = local_memory(tmp_path, rig)
    local.record_turn("s-refused", refused, "user", "secret of the refused customer")

    async def session() -> None:
        async with stdio_client(tmp_path, env) as client:
            blank = await client.call_tool("get_context", {"customer_id": "  ", "query": "q"})
            assert blank.is_error and "customer_id is blank" in text(blank)
            unknown = await client.call_tool("get_context", {"customer_id": lookalike, "query": "q"})
            assert unknown.is_error and "unknown customer" in text(unknown)
            assert first not in text(unknown)  # no "did you mean" with other customers' ids
            wrong_type = await client.call_tool(
                "recall_cases", {"customer_id": first, "query": "q", "k": "?"}
            )
            assert wrong_type.is_error and "invalid arguments: k: Input should be" in text(wrong_type)
            turn = {"session_id": "s-a", "role": "user", "content": "hello"}
            assert not (await client.call_tool("record_turn", turn | {"customer_id": first})).is_error
            other = await client.call_tool("record_turn", turn | {"customer_id": second})
            assert other.is_error and "does not exist" in text(other)  # as every tool says it
            for result in (blank, unknown, wrong_type, other):
                assert "Traceback" not in text(result)
            assert "\n" not in text(blank) + text(unknown) + text(wrong_type) + text(other)
            assert "'?'" not in text(wrong_type) and "pydantic" not in text(wrong_type)  # no echo, no link

            for tool, args in [
                ("get_context", {"customer_id": refused, "query": "q"}),
                ("recall_cases", {"customer_id": refused, "query": "q"}),
                ("learn", {"customer_id": refused, "content": "likes tea"}),
                ("record_turn", {"session_id": "s-x", "customer_id": refused, "role": "user", "content": ""}),
                ("pin", {"session_id": "s-refused", "name": "n", "value": "v"}),
                ("get_context", {"customer_id": first, "query": "q", "session_id": "s-refused"}),
            ]:
                result = await client.call_tool(tool, args)
                assert result.is_error, (tool, text(result))
                assert "secret of the refused customer" not in text(result)
            resource = await client.read_resource(f"customer://acme/{first}")
            assert first in str(resource.contents[0])

    run(session)
    assert local.working.state("s-refused").pinned == ()
    with pytest.raises(Exception, match="does not exist"):
        local.working.state("s-x")


def test_streamable_http_needs_the_bearer_token(sqlite_rigs: Callable[..., Rig], tmp_path: Path) -> None:
    rig = synced(sqlite_rigs)
    customer = sorted(rig.fake.keys("Customer"))[0]
    process, url = http_server(tmp_path, server_env(tmp_path, rig, CONNECTOR_MCP_TOKEN=TOKEN))
    try:
        initialize: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        for sent in ({}, {"Authorization": "Bearer wrong-token-0123456789"}):
            refused = httpx.post(url, json=initialize, headers=sent, timeout=10)
            assert refused.status_code == 401
        huge = httpx.post(
            url,
            content=b"x" * 2_000_000,
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
            timeout=10,
        )
        assert huge.status_code == 413

        async def session() -> None:
            async with http_client(url, TOKEN) as client:
                assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS
                got = await client.call_tool("get_context", {"customer_id": customer, "query": "balance"})
                assert timeless(text(got)) == timeless(
                    local_memory(tmp_path, rig).build_context(customer, "balance").text
                )
                turn = {"session_id": "h-1", "customer_id": customer, "role": "user", "content": "Call Fri"}
                assert not (await client.call_tool("record_turn", turn)).is_error
                args = {"customer_id": customer, "query": "callback", "session_id": "h-1"}
                assert "Call Fri" in text(await client.call_tool("get_context", args))
                small = await client.call_tool(
                    "get_context", {"customer_id": customer, "query": "q", "token_budget": 5}
                )
                assert small.is_error and "token_budget: Input should be greater than" in text(small)
                assert "\n" not in text(small)
                blank = await client.call_tool("learn", {"customer_id": "", "content": "x"})
                assert blank.is_error

        run(session)
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_http_without_a_token_refuses_to_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CONNECTOR_DATA_DIR", str(tmp_path / "data"))
    assert main(["mcp", "--http", "--port", str(free_port())]) == 2
    assert "CONNECTOR_MCP_TOKEN" in capsys.readouterr().err
    assert main(["mcp", "--http", "--no-auth", "--host", "0.0.0.0"]) == 2
    assert "loopback" in capsys.readouterr().err
    monkeypatch.setenv("CONNECTOR_MCP_TOKEN", "short")
    assert main(["mcp", "--http"]) == 2
    assert "short" not in capsys.readouterr().err
