#!/usr/bin/env python3
"""What the MCP server adds to a context build (run through ``scripts/bench_mcp``).

The demo's fake Acumatica and SAP are served on loopback and synced into SQLite + embedded Chroma
in a temporary directory, with the demo's cases, learned fact and session. Then the same
``build_context`` is timed in-process and as ``get_context`` over stdio against ``connector mcp``
as a subprocess (the SDK's client; JSON-RPC, the tool's schema validation, the structured result),
alternating call by call so load that comes and goes hits both alike. Three queries rotate (an
invoice dispute with the session, an order status, a vague one). Reports p50/p95 of each, the
added p95 (MCP p95 minus in-process p95) and the p95 of the per-call difference. Ends with one
JSON line; the machine's load average is in it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp import Client, StdioServerParameters  # noqa: E402
from rich.console import Console  # noqa: E402

from connector import demo  # noqa: E402
from connector.memory import Memory  # noqa: E402
from connector.settings import Settings  # noqa: E402

GOAL_ADDED_P95_MS = 5.0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _without_clock(text: str) -> str:
    """The text without its minute-precision times (a call can straddle a minute)."""
    return re.sub(r"\d\d:\d\d UTC", "hh:mm UTC", text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=300, help="timed calls of each kind")
    parser.add_argument("--customers", type=int, default=200, help="customers per fake ERP")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        data_dir = Path(tmp) / "data"
        servers, tenants = demo.start_fakes(argparse.Namespace(customers=args.customers, seed=7))
        try:
            settings = Settings(data_dir=data_dir, tenants=tenants, default_tenant=demo.ACUMATICA)
            memory = Memory(settings, llm=None)
            demo.run_sync(memory, Console(stderr=True))
            customer, invoice = demo.pick_customer(memory)
            session = demo.record_memories(
                memory, customer, invoice, demo.pick_other_customer(memory, customer)
            )
        finally:
            for server in servers:
                server.stop()
        queries = [
            (f"I was charged twice on invoice {invoice['number']}", session),
            ("Where is my open sales order and when will it ship?", None),
            ("Anything I should know before calling them?", None),
        ]
        entry = demo.mcp_client_config(demo.write_server_settings(settings))["mcpServers"]["erp-memory"]
        env = entry["env"] | {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "")}
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env)
        local: list[float] = []
        remote: list[float] = []

        async def measure() -> None:
            async with Client(params, read_timeout_seconds=60) as client:
                for i in range(args.calls + 20):  # the first 20 of each warm up caches and the embedder
                    query, sid = queries[i % len(queries)]
                    arguments: dict[str, Any] = {
                        "customer_id": customer,
                        "query": query,
                        "tenant": demo.ACUMATICA,
                    }
                    if sid is not None:
                        arguments["session_id"] = sid
                    started = time.perf_counter()
                    expected = memory.build_context(customer, query, session_id=sid, tenant=demo.ACUMATICA)
                    middle = time.perf_counter()
                    result = await client.call_tool("get_context", arguments)
                    ended = time.perf_counter()
                    got = result.content[0].text  # type: ignore[union-attr]
                    if result.is_error or _without_clock(got) != _without_clock(expected.text):
                        Path(tmp, "mcp.txt").write_text(got)
                        Path(tmp, "local.txt").write_text(expected.text)
                        diff = os.popen(f"diff {tmp}/local.txt {tmp}/mcp.txt").read()
                        raise SystemExit(f"get_context over MCP differs from build_context:\n{diff}")
                    if i >= 20:
                        local.append((middle - started) * 1000)
                        remote.append((ended - middle) * 1000)

        load_before = os.getloadavg()[0]
        anyio.run(measure)
        load_after = os.getloadavg()[0]
    differences = [r - loc for r, loc in zip(remote, local, strict=True)]
    report = {
        "calls": args.calls,
        "customers_per_erp": args.customers,
        "in_process_p50_ms": round(statistics.median(local), 2),
        "in_process_p95_ms": round(pct(local, 0.95), 2),
        "mcp_stdio_p50_ms": round(statistics.median(remote), 2),
        "mcp_stdio_p95_ms": round(pct(remote, 0.95), 2),
        "added_p50_ms": round(statistics.median(remote) - statistics.median(local), 2),
        "added_p95_ms": round(pct(remote, 0.95) - pct(local, 0.95), 2),
        "per_call_difference_p95_ms": round(pct(differences, 0.95), 2),
        "goal_added_p95_ms": GOAL_ADDED_P95_MS,
        "load_average_1m": [round(load_before, 2), round(load_after, 2)],
    }
    print(
        f"build_context in-process p50 {report['in_process_p50_ms']} / p95 {report['in_process_p95_ms']} ms;"
        f" get_context over MCP stdio p50 {report['mcp_stdio_p50_ms']} / p95 {report['mcp_stdio_p95_ms']} ms;"
        f" added p95 {report['added_p95_ms']} ms (goal <= {GOAL_ADDED_P95_MS} ms); per-call difference"
        f" p95 {report['per_call_difference_p95_ms']} ms; load {load_before:.2f}-{load_after:.2f}"
    )
    print(json.dumps(report, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
