"""``connector mcp`` as the MCP specification and JSON-RPC 2.0 have it, checked on the wire of a
real server process: the version it reports, the capabilities it has (no prompts), the error
codes of a missing resource and of malformed lines, output schemas, and logs that do not echo
what a refused call carried."""

from __future__ import annotations

import json
import selectors
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp_servers import run, server_env, stdio_client, synced
from ports import free_port
from sqlalchemy.engine import Engine
from sync_rigs import Rig, rig_factory, rigs_on

from connector.cli import main

__all__ = ["rig_factory"]

READ_TOOLS = {"get_context", "recall_cases", "recall_conversations", "lookup_document", "erp_history"}


@pytest.fixture
def sqlite_rigs(sqlite_engine: Engine) -> Iterator[Callable[..., Rig]]:
    yield from rigs_on(sqlite_engine)


class RawStdio:
    """``connector mcp`` over stdio spoken to line by line, as a client of any language would."""

    def __init__(self, tmp_path: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "connector.cli", "mcp"],
            env=env,
            cwd=tmp_path,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def request(self, request_id: int, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(json.dumps(message))

    def reply(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        deadline = time.monotonic() + 60
        # selectors (epoll), not select(): a long test session holds descriptors beyond select's 1024.
        with selectors.DefaultSelector() as waiting:
            waiting.register(self.process.stdout, selectors.EVENT_READ)
            return self._read_reply(waiting, deadline)

    def _read_reply(self, waiting: selectors.BaseSelector, deadline: float) -> dict[str, Any]:
        assert self.process.stdout is not None
        while time.monotonic() < deadline:
            if waiting.select(timeout=1):
                line = self.process.stdout.readline()
                assert line, "the server closed stdout"
                message: dict[str, Any] = json.loads(line)
                if "id" in message:  # not a notification
                    return message
        raise AssertionError("no reply within a minute")

    def initialize(self, protocol_version: str) -> dict[str, Any]:
        client = {"name": "raw-test", "version": "1"}
        params = {"protocolVersion": protocol_version, "capabilities": {}, "clientInfo": client}
        self.request(0, "initialize", params)
        result: dict[str, Any] = self.reply()["result"]
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        return result

    def close(self) -> str:
        _, err = self.process.communicate(timeout=60)  # closes stdin: the server ends
        return err


@pytest.fixture
def raw(sqlite_rigs: Callable[..., Rig], tmp_path: Path) -> Iterator[RawStdio]:
    rig = synced(sqlite_rigs)
    server = RawStdio(tmp_path, server_env(tmp_path, rig))
    yield server
    if server.process.poll() is None:
        server.process.kill()
        server.process.communicate()


def test_the_server_reports_its_version_and_only_the_capabilities_it_has(raw: RawStdio) -> None:
    result = raw.initialize("2025-06-18")
    assert result["protocolVersion"] == "2025-06-18"
    assert result["serverInfo"] == result["serverInfo"] | {
        "name": "erp-memory-connector",
        "version": version("erp-memory-connector"),
    }
    assert "prompts" not in result["capabilities"]
    assert {"tools", "resources"} <= result["capabilities"].keys()
    raw.request(1, "prompts/list")
    assert raw.reply()["error"]["code"] == -32601  # method not found: no prompts, none advertised


def test_a_missing_resource_is_32002_before_protocol_2026_07_28(raw: RawStdio) -> None:
    raw.initialize("2025-06-18")
    missing = ("customer://acme/NOSUCH", "customer://nosuchtenant/X", "nosuch://x")
    for request_id, uri in enumerate(missing, 1):
        raw.request(request_id, "resources/read", {"uri": uri})
        error = raw.reply()["error"]
        assert error["code"] == -32002, (uri, error)
        assert "Traceback" not in error["message"]


def test_a_missing_resource_is_the_code_of_the_negotiated_version(
    sqlite_rigs: Callable[..., Rig], tmp_path: Path
) -> None:
    """The SDK's client negotiates the newest version it knows: from 2026-07-28 the spec answers
    a missing resource with -32602 (invalid params), before it -32002."""
    rig = synced(sqlite_rigs)
    codes: list[tuple[str | None, int]] = []

    async def session() -> None:
        async with stdio_client(tmp_path, server_env(tmp_path, rig)) as client:
            with pytest.raises(MCPError) as missing:
                await client.read_resource("customer://acme/NOSUCH")
            codes.append((client.protocol_version, missing.value.error.code))

    run(session)
    ((negotiated, code),) = codes
    assert negotiated is not None
    assert code == (-32602 if negotiated >= "2026-07-28" else -32002)


def test_malformed_lines_get_a_json_rpc_error_and_the_session_goes_on(raw: RawStdio) -> None:
    raw.initialize("2025-06-18")
    raw.send("this is not json")
    parse = raw.reply()
    assert parse["id"] is None and parse["error"]["code"] == -32700
    raw.send(json.dumps({"jsonrpc": "2.0", "no": "method"}))
    invalid = raw.reply()
    assert invalid["id"] is None and invalid["error"]["code"] == -32600
    raw.send("[1, 2")
    assert raw.reply()["error"]["code"] == -32700
    raw.request(7, "tools/list")
    listed = raw.reply()
    assert listed["id"] == 7 and len(listed["result"]["tools"]) == 9


def test_every_tool_has_an_output_schema_and_tool_results_are_json_structures(raw: RawStdio) -> None:
    raw.initialize("2025-06-18")
    raw.request(1, "tools/list")
    tools = {tool["name"]: tool for tool in raw.reply()["result"]["tools"]}
    for name in READ_TOOLS:
        schema = tools[name]["outputSchema"]
        assert schema["type"] == "object" and schema["properties"], name
    assert {"text", "sections", "token_count"} <= set(tools["get_context"]["outputSchema"]["required"])
    assert "cases" in tools["recall_cases"]["outputSchema"]["required"]
    assert "$ref" not in json.dumps([tool["outputSchema"] for tool in tools.values()])  # self-contained
    assert all("outputSchema" in tool for tool in tools.values())
    result_schema = tools["record_turn"]["inputSchema"]["properties"]["tool_result"]
    assert {branch.get("type") for branch in result_schema["anyOf"]} == {"object", "array", "null"}


def test_structured_results_match_their_schema_and_bad_tool_results_are_refused(
    sqlite_rigs: Callable[..., Rig], tmp_path: Path
) -> None:
    rig = synced(sqlite_rigs)
    customer = sorted(rig.fake.keys("Customer"))[0]
    env = server_env(tmp_path, rig)

    async def session() -> None:
        async with stdio_client(tmp_path, env) as client:
            context = await client.call_tool("get_context", {"customer_id": customer, "query": "balance"})
            assert not context.is_error
            data = context.structured_content or {}
            assert data["customer_id"] == customer and data["sections"] and data["text"]
            asked = {"customer_id": customer, "query": "late delivery"}
            recalled = await client.call_tool("recall_cases", asked)
            assert not recalled.is_error and isinstance((recalled.structured_content or {})["cases"], list)
            turn = {"session_id": "p-1", "customer_id": customer, "role": "tool", "content": ""}
            turn["tool_name"] = "erp_invoice"
            for bad in ("a plain string", 42, True):
                refused = await client.call_tool("record_turn", turn | {"tool_result": bad})
                assert refused.is_error and "tool_result" in refused.content[0].text  # type: ignore[union-attr]
            huge = await client.call_tool("record_turn", turn | {"tool_result": {"rows": ["x" * 1000] * 150}})
            assert huge.is_error and "tool_result" in huge.content[0].text  # type: ignore[union-attr]
            result = {"invoice": "AR-1", "total": 5}
            kept = await client.call_tool("record_turn", turn | {"tool_result": result})
            assert not kept.is_error
            assert (kept.structured_content or {})["seq"] == 1

    run(session)


def test_a_refused_call_leaves_no_trace_of_what_it_carried_in_the_log(raw: RawStdio) -> None:
    raw.initialize("2025-06-18")
    args = {"customer_id": "NOSUCH-CUSTOMER", "number": "INV-SECRET-4711"}
    raw.request(1, "tools/call", {"name": "lookup_document", "arguments": args})
    assert raw.reply()["result"]["isError"] is True
    err = raw.close()
    assert "SECRET-4711" not in err and "NOSUCH-CUSTOMER" not in err
    assert "lookup_document refused: UnknownDocumentError" in err  # the server's own line: the type only


def test_http_prints_serving_only_once_it_listens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CONNECTOR_DATA_DIR", str(tmp_path / "data"))
    assert main(["mcp", "--http", "--port", str(free_port())]) == 2  # no token
    assert "serving" not in capsys.readouterr().err
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        assert main(["mcp", "--http", "--no-auth", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert "serving" not in err
    assert f"cannot listen on 127.0.0.1:{port}" in err and len(err.strip().splitlines()) == 1
