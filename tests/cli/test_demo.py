"""`scripts/demo` (connector.demo) end to end on small data: fakes over HTTP, sync, memories, context."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from paths import ROOT

from connector.demo import main


@pytest.mark.slow
def test_demo_runs_twice_and_prints_contexts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--customers", "20", "--data-dir", str(tmp_path / "demo")]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert "Invoice dispute" in first and "Order status" in first
    for header in (
        "## Today",
        "## ERP facts",
        "## Open documents",
        "## Pinned values",
        "## Similar past cases",
    ):
        assert header in first
    assert "Prefers dispute updates by e-mail" in first
    # The SAP customer's header has its open balance from SAP's open items, not "none".
    sap = first[first.index("A SAP customer's balance") :]
    receivables = next(line for line in sap.splitlines() if "open receivables" in line)
    assert "none" not in receivables and any(c in receivables for c in ("EUR", "USD"))
    # A re-run syncs incrementally and records nothing twice.
    assert main(args) == 0
    second = capsys.readouterr().out
    assert second.count("demo-dispute-") == first.count("demo-dispute-")
    assert_the_printed_mcp_config_serves_the_demo(second)
    # the console line names the settings file of the demo's stores (the browser test serves it)
    line = next(t for t in second.splitlines() if t.startswith("Web console over these stores:"))
    settings_file = Path(line.split("CONNECTOR_CONFIG_FILE=", 1)[1].split()[0])
    assert settings_file.is_file() and "[[tenants]]" in settings_file.read_text()


def assert_the_printed_mcp_config_serves_the_demo(out: str) -> None:
    """The config block the demo prints starts a working MCP server over the demo's stores."""
    config = json.loads(out[out.index('{\n  "mcpServers"') : out.rindex("}") + 1])
    entry = config["mcpServers"]["erp-memory"]
    customer = re.search(r"for customer (\S+)", out).group(1)  # type: ignore[union-attr]
    env = entry["env"] | {"PYTHONPATH": str(ROOT)}

    async def session() -> None:
        async with Client(
            StdioServerParameters(command=entry["command"], args=entry["args"], env=env)
        ) as client:
            result = await client.call_tool(
                "get_context", {"customer_id": customer, "query": "What do I owe?"}
            )
            assert not result.is_error and "## ERP facts" in str(result.content[0])

    anyio.run(session)
