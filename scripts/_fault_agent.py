"""The fault trial's agent-side probes: one customer id in other Unicode forms, cases and widths
through every entry point (Python API and MCP), malformed JSON-RPC over MCP stdio, ``connector mcp
--http`` stopped by SIGTERM with an OTLP receiver listening, PostgreSQL without its schema."""

from __future__ import annotations

import signal
import time
import unicodedata
from typing import Any

import sqlalchemy as sa
from _fault_rigs import Outcome, RawStdio, Trial, cli, connector_env, otlp_receiver, tenant_json
from _fault_stores import QUESTION, _erp, _settings, _tenant, timed
from mcp_servers import TOKEN, http_client, http_server, run  # type: ignore[import-not-found]

from connector.memory import Memory
from connector.settings import ConversationSettings

CANONICAL = "T3CAFÉ"
VARIANTS = {
    "NFC": CANONICAL,
    "NFD": unicodedata.normalize("NFD", CANONICAL),
    "lower case": CANONICAL.lower(),
    "fullwidth": "Ｔ３ＣＡＦÉ",
}


def id_rule(trial: Trial) -> Outcome:
    """Each variant of one ERP id through learn, record_turn, build_context, record_case and MCP."""
    directory = trial.directory("id-rule")
    url = trial.database("sqlite", directory)
    fake, erp = _erp(customers=5, invoices=10, cases=0)
    template = fake.record("Customer", fake.keys("Customer")[0])
    fake.add("Customer", {**template, "CustomerID": CANONICAL, "CustomerName": "Café Trois"})
    verdicts: dict[str, dict[str, str]] = {}
    try:
        tenant = _tenant(fake, erp, ["Customer", "Invoice"])
        env = connector_env(
            directory / "data",
            url,
            [tenant_json(tenant, fake.password)],
            CONNECTOR_CONVERSATIONS__ENABLED="true",
        )
        if (synced := cli(env, "sync")).code != 0:
            return Outcome("one id rule", False, f"sync exit {synced.code}", synced.err[-300:])
        settings = _settings(
            directory / "data", url, tenant, conversations=ConversationSettings(enabled=True)
        )
        memory = Memory(settings, llm=None)
        mcp = RawStdio(env, directory)
        mcp.initialize()
        try:
            for label, variant in VARIANTS.items():
                calls: dict[str, Any] = {
                    "learn": lambda v=variant: memory.learn(v, "Prefers e-mail"),
                    "record_turn": lambda v=variant, s=label: memory.record_turn(
                        f"s-{s}", v, "user", "Hello"
                    ),
                    "build_context": lambda v=variant: memory.build_context(v, QUESTION),
                    "record_case": lambda v=variant: memory.record_case(
                        v, "Asked for a copy", "Sent the copy"
                    ),
                }
                verdicts[label] = {}
                for entry, call in calls.items():
                    _, exc, _ = timed(call)
                    verdicts[label][entry] = "ok" if exc is None else type(exc).__name__
                turn = {
                    "session_id": f"m-{label}",
                    "customer_id": variant,
                    "role": "user",
                    "content": "Hello",
                }
                for tool, args in (
                    ("record_turn", turn),
                    ("get_context", {"customer_id": variant, "query": QUESTION}),
                ):
                    result = mcp.tool(tool, args)
                    verdicts[label][f"MCP {tool}"] = "ok" if "error" not in result else "refused"
        finally:
            mcp.close()
            memory.close()
    finally:
        erp.stop()
    stored = _stored_ids(url)
    agree = {label: len({v == "ok" for v in calls.values()}) == 1 for label, calls in verdicts.items()}
    accepted = {label: all(v == "ok" for v in calls.values()) for label, calls in verdicts.items()}
    ok = all(agree.values()) and accepted["NFC"] and accepted["NFD"] and stored <= {CANONICAL}
    summary = ", ".join(
        f"{label}: {'all accept' if accepted[label] else 'all refuse' if agree[label] else 'DISAGREE'}"
        for label in verdicts
    )
    return Outcome(
        "one id rule (learn, record_turn, build_context, record_case, MCP)",
        ok,
        f"{summary}; ids stored {sorted(stored)}",
        str(verdicts),
    )


def _stored_ids(url: str) -> set[str]:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    tables = ("learned_fact", "work_session", "episodic_entry")
    try:
        with engine.connect() as conn:
            return {
                row[0]
                for table in tables
                for row in conn.execute(sa.text(f"SELECT DISTINCT customer_id FROM {table}"))
                if row[0] not in ("",) and ("CAF" in row[0].upper() or "ＣＡＦ" in row[0])
            }
    finally:
        engine.dispose()


def mcp_malformed(trial: Trial) -> Outcome:
    """Malformed JSON-RPC lines over MCP stdio get -32700 / -32600 and the session goes on."""
    directory = trial.directory("mcp-stdio")
    url = trial.database("sqlite", directory)
    server = RawStdio(connector_env(directory / "data", url), directory)
    try:
        server.initialize()
        codes: list[Any] = []
        started = time.monotonic()
        for line in ("this is not json", '{"jsonrpc": "2.0", "no": "method"}', "[1, 2"):
            server.send(line)
            reply = server.reply(timeout=10)
            codes.append(None if reply is None else reply.get("error", {}).get("code"))
        seconds = time.monotonic() - started
        listed = server.call("tools/list") or {}
    finally:
        server.close()
    tools = len(listed.get("result", {}).get("tools", []))
    ok = codes == [-32700, -32600, -32700] and tools > 0
    return Outcome(
        "MCP stdio malformed JSON-RPC",
        ok,
        f"codes {codes} in {seconds:.1f} s; then tools/list answered ({tools} tools)",
    )


def mcp_sigterm(trial: Trial) -> Outcome:
    """``connector mcp --http`` serving a call, then SIGTERM: spans and metrics reach the OTLP receiver."""
    directory = trial.directory("mcp-sigterm")
    url = trial.database("sqlite", directory)
    fake, erp = _erp(customers=5, invoices=10, cases=0)
    try:
        tenant = _tenant(fake, erp, ["Customer", "Invoice"])
        base = connector_env(directory / "data", url, [tenant_json(tenant, fake.password)])
        if (synced := cli(base, "sync")).code != 0:
            return Outcome(
                "MCP --http SIGTERM flushes spans", False, f"sync exit {synced.code}", synced.err[-300:]
            )
        customer = fake.keys("Customer")[0]
        with otlp_receiver() as (received, otlp):
            process, endpoint = http_server(directory, base | otlp | {"CONNECTOR_MCP_TOKEN": TOKEN})
            try:

                async def session() -> None:
                    async with http_client(endpoint, TOKEN) as client:
                        await client.call_tool("get_context", {"customer_id": customer, "query": QUESTION})
                        turn = {"session_id": "t-1", "customer_id": customer, "role": "user", "content": "hi"}
                        await client.call_tool("record_turn", turn)

                run(session)
            finally:
                started = time.monotonic()
                process.send_signal(signal.SIGTERM)
                _, err = process.communicate(timeout=60)
                seconds = time.monotonic() - started
            time.sleep(0.5)
            spans, metrics = list(received.spans), list(received.metrics)
    finally:
        erp.stop()
    wanted = {"connector.build_context", "create_memory"}
    ok = process.returncode == 143 and wanted <= set(spans) and bool(metrics)
    return Outcome(
        "MCP --http SIGTERM flushes spans (OTLP receiver)",
        ok,
        f"exit {process.returncode} in {seconds:.1f} s; {len(spans)} spans "
        f"({', '.join(sorted(set(spans))[:4])}), {len(metrics)} metrics received",
        err[-300:],
    )


def unmigrated_postgres(trial: Trial) -> Outcome:
    """A fresh PostgreSQL database nobody upgraded: the first command names the cause in one line."""
    directory = trial.directory("unmigrated")
    url = trial.database("postgres", directory, migrated=False)
    fake, erp = _erp(customers=3, invoices=0, cases=0)
    try:
        tenant = _tenant(fake, erp, ["Customer"])
        ran = cli(connector_env(directory / "data", url, [tenant_json(tenant, fake.password)]), "sync")
    finally:
        erp.stop()
    lines = [line for line in ran.error_lines() if "Error" in line or "error" in line]
    named = any("db upgrade" in line for line in lines)
    ok = ran.code != 0 and named and len(lines) == 1
    return Outcome(
        "PostgreSQL without `db upgrade`: connector sync",
        ok,
        f"exit {ran.code}: {(lines[-1] if lines else '')[-160:]!r}",
    )
