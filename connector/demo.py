"""The main job on embedded defaults, end to end, with no API key and no network.

``connector demo`` (``scripts/demo`` in a checkout) runs this: it serves a fake Acumatica and a fake
SAP on loopback (generated, seeded data), syncs both into SQLite under ``.data/demo`` with progress
shown, records resolved cases, a learned fact and a short conversation with a tool call, and prints
the agent context for an invoice dispute, an order status, a vendor's terms and a SAP customer's
open balance (from SAP's open items: SAP billing documents carry none). Re-running it is safe: the
second sync is incremental and finds nothing new, recorded cases and turns are idempotent.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from rich.console import Console
from rich.rule import Rule
from rich.table import Table

from connector.demo_options import add_arguments
from connector.mcp_client import client_config
from connector.memory import Memory
from connector.semantic.upsert import document_t, party_t
from connector.settings import Settings, load_settings
from connector.sync.progress import RichReporter, reporter_for
from connector.sync.result import SyncReport
from connector.testing.acumatica import FakeAcumatica
from connector.testing.sap import FakeSAP
from connector.testing.server import ServedFake, serve
from connector.working.models import UnknownSessionError

# The fakes' data is generated relative to this date, so every run (and every machine) sees the
# same ERP; the memories are stamped with the real clock.
ERP_AS_OF = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
ACUMATICA = "acme-acumatica"
SAP = "acme-s4"


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="connector demo", description=__doc__)
    add_arguments(parser)
    return parser.parse_args(argv)


def start_fakes(args: argparse.Namespace) -> tuple[list[ServedFake], list[Any]]:
    """Both fake ERPs served on free loopback ports; returns the servers and tenant settings."""
    n = args.customers
    acumatica = FakeAcumatica(
        seed=args.seed, customers=n, vendors=n // 5, invoices=n * 3, sales_orders=n * 2, bills=n, cases=n,
        as_of=ERP_AS_OF,
    )  # fmt: skip
    sap = FakeSAP(
        seed=args.seed, customers=n, suppliers=n // 5, sales_orders=n * 2, billing_documents=n * 3,
        now=ERP_AS_OF,
    )  # fmt: skip
    if getattr(args, "hostile_names", False):
        from connector.testing.hostile import add_hostile_names

        add_hostile_names(acumatica, sap, ERP_AS_OF)
    servers = [serve(acumatica), serve(sap)]
    tenants = [
        acumatica.tenant_settings(name=ACUMATICA, base_url=servers[0].url),
        sap.tenant_settings(name=SAP, base_url=servers[1].url),
    ]
    return servers, tenants


def run_sync(memory: Memory, console: Console) -> SyncReport:
    reporter = reporter_for("auto")
    runner = memory.sync_runner(reporter=reporter)
    if isinstance(reporter, RichReporter):
        with reporter:
            report = runner.run()
    else:
        report = runner.run()
    table = Table(title="Sync (ERP -> semantic memory)", show_lines=False)
    for column in (
        "tenant",
        "stream",
        "status",
        "pages",
        "read",
        "inserted",
        "updated",
        "unchanged",
        "requests",
        "s",
    ):
        table.add_column(column, justify="right" if column not in ("tenant", "stream", "status") else "left")
    for r in report.results:
        table.add_row(
            r.tenant, r.stream, r.status, str(r.pages), f"{r.records_read:,}", f"{r.inserted:,}",
            f"{r.updated:,}", f"{r.unchanged:,}", str(r.requests), f"{r.duration_s:.2f}",
        )  # fmt: skip
    console.print(table)
    return report


def pick_customer(memory: Memory) -> tuple[str, dict[str, Any]]:
    """An Acumatica customer with an open, overdue AR invoice and an open sales order."""
    today = ERP_AS_OF.date()
    with memory.engine.connect() as conn:
        has_order = (
            sa.select(document_t.c.party_external_id)
            .where(
                document_t.c.tenant == ACUMATICA, document_t.c.doc_type == "sales_order", document_t.c.is_open
            )
            .scalar_subquery()
        )
        row = conn.execute(
            sa.select(document_t)
            .where(
                document_t.c.tenant == ACUMATICA,
                document_t.c.doc_type == "ar_invoice",
                document_t.c.is_open,
                document_t.c.due_date < today,
                document_t.c.party_external_id.in_(has_order),
            )
            .order_by(document_t.c.due_date.desc(), document_t.c.number)
            .limit(1)
        ).first()
        if row is None:
            row = conn.execute(
                sa.select(document_t)
                .where(document_t.c.tenant == ACUMATICA, document_t.c.doc_type == "ar_invoice")
                .order_by(document_t.c.number)
                .limit(1)
            ).one()
    return row.party_external_id, dict(row._mapping)


def pick_sap_customer(memory: Memory) -> str | None:
    """The SAP customer with the most open items (its balance comes from SAP's open items)."""
    with memory.engine.connect() as conn:
        return conn.execute(
            sa.select(document_t.c.party_external_id)
            .where(
                document_t.c.tenant == SAP,
                document_t.c.doc_type == "open_item",
                document_t.c.party_kind == "customer",
                document_t.c.is_open,
                document_t.c.deleted_at.is_(None),
            )
            .group_by(document_t.c.party_external_id)
            .order_by(sa.func.count().desc(), document_t.c.party_external_id)
            .limit(1)
        ).scalar()


def pick_other_customer(memory: Memory, not_this: str) -> str:
    with memory.engine.connect() as conn:
        return str(
            conn.execute(
                sa.select(party_t.c.external_id)
                .where(
                    party_t.c.tenant == ACUMATICA,
                    party_t.c.kind == "customer",
                    party_t.c.external_id != not_this,
                )
                .order_by(party_t.c.external_id)
                .limit(1)
            ).scalar_one()
        )


def pick_vendor(memory: Memory) -> str | None:
    with memory.engine.connect() as conn:
        return conn.execute(
            sa.select(party_t.c.external_id)
            .where(party_t.c.tenant == ACUMATICA, party_t.c.kind == "vendor", party_t.c.terms.is_not(None))
            .order_by(party_t.c.external_id)
            .limit(1)
        ).scalar()


def record_memories(memory: Memory, customer: str, invoice: dict[str, Any], other: str) -> str:
    """Resolved cases, a learned fact and a conversation with a tool call. Idempotent."""
    number = invoice["number"]
    amount = invoice["amount"]
    today = memory.clock.now()
    memory.record_case(
        customer,
        f"Customer disputed invoice {number} for {amount} {invoice['currency'] or 'USD'}: "
        "they were billed twice for the same delivery.",
        f"Duplicate line confirmed. Credit memo CM-{number[-6:]} issued for {amount};"
        " invoice balance set to 0.",
        tenant=ACUMATICA, case_id=f"demo-dispute-{number}", case_type="invoice_dispute",
        occurred_at=today - timedelta(days=41), documents=(number,),
    )  # fmt: skip
    memory.record_case(
        customer,
        "Order arrived 9 days late; customer asked for expedited shipping on the next order.",
        "Carrier delay at the regional hub. Next order shipped express at no charge;"
        " freight of 85.00 USD waived.",
        tenant=ACUMATICA, case_id="demo-late-delivery", case_type="late_delivery",
        occurred_at=today - timedelta(days=95),
    )  # fmt: skip
    memory.record_case(
        other,
        f"Customer disputed invoice {number[:-1]}9 over a duplicate charge.",
        "Rejected: the two charges were for two separate deliveries; proof of delivery sent.",
        tenant=ACUMATICA, case_id="demo-other-customer", case_type="invoice_dispute",
        occurred_at=today - timedelta(days=12),
    )  # fmt: skip
    memory.learn(
        customer, "Prefers dispute updates by e-mail to the AP clerk, not by phone.",
        tenant=ACUMATICA, importance=0.8, source="demo",
    )  # fmt: skip
    session = f"demo-{customer}"
    if not _session_has_turns(memory, session):
        memory.record_turn(
            session, customer, "user", f"Why was I charged twice on {number}?", tenant=ACUMATICA
        )
        memory.record_turn(
            session, customer, "tool", "", tenant=ACUMATICA, tool_name="get_invoice",
            tool_args={"reference_nbr": number},
            tool_result={
                "ReferenceNbr": number, "Amount": str(amount), "Balance": str(invoice["balance"]),
                "DueDate": invoice["due_date"].isoformat() if isinstance(invoice["due_date"], date) else None,
                "Status": invoice["status"],
            },
        )  # fmt: skip
        memory.record_turn(
            session, customer, "assistant",
            f"I can see {number} for {amount}. Let me check it against your deliveries.", tenant=ACUMATICA,
        )  # fmt: skip
    return session


def _session_has_turns(memory: Memory, session: str) -> bool:
    try:
        return bool(memory.working.state(session).turns)
    except UnknownSessionError:
        return False


def show_context(console: Console, title: str, result: Any) -> None:
    console.print(Rule(f"[bold]{title}"))
    console.print(result.text, markup=False, highlight=False)
    sections = ", ".join(f"{s.name}={s.tokens}" for s in result.sections if s.tokens)
    console.print(
        f"[dim]{result.token_count} of {result.token_budget} tokens ({result.tokenizer}); {sections}[/dim]"
    )


def main(argv: Sequence[str] | None = None) -> int:
    return run(_parse(argv))


def run(args: argparse.Namespace) -> int:
    """The demo with parsed options (``connector demo`` parses them with the other commands)."""
    console = Console() if sys.stdout.isatty() else Console(width=120)
    started = time.perf_counter()
    console.print(Rule("[bold]ERP memory connector demo (embedded defaults, no API key, no network)"))
    servers, tenants = start_fakes(args)
    try:
        for tenant, server in zip(tenants, servers, strict=True):
            console.print(
                f"fake {tenant.kind} ERP serving at {server.url} as tenant [bold]{tenant.name}[/bold]"
            )
        settings: Settings = load_settings(data_dir=args.data_dir, tenants=tenants, default_tenant=ACUMATICA)
        memory = Memory(settings)
        mode = f"LLM {settings.llm.model}" if memory.llm else "non-LLM mode (deterministic summaries)"
        console.print(f"stores: SQLite + embedded Chroma under {args.data_dir}; {mode}")
        report = run_sync(memory, console)
        if not report.ok:
            problem = report.first_problem()
            console.print(f"[red]sync failed: {problem.error if problem else report.interrupted_by}")
            return 1
        customer, invoice = pick_customer(memory)
        other = pick_other_customer(memory, customer)
        session = record_memories(memory, customer, invoice, other)
        console.print(f"recorded cases, a learned fact and session {session!r} for customer {customer}")

        queries: list[tuple[str, str, str, str | None, dict[str, Any]]] = [
            ("Invoice dispute", customer, f"I was charged twice on invoice {invoice['number']}", session, {}),
            ("Order status", customer, "Where is my open sales order and when will it ship?", None, {}),
        ]
        vendor = pick_vendor(memory)
        if vendor is not None:
            question = "What payment terms do we have with this vendor?"
            queries.append(("A vendor's terms", vendor, question, None, {"party_kind": "vendor"}))
        sap_customer = pick_sap_customer(memory)
        if sap_customer is not None:
            queries.append(
                (
                    "A SAP customer's balance",
                    sap_customer,
                    "How much is open and what is overdue?",
                    None,
                    {"tenant": SAP},
                )
            )
        for title, party, query, sid, extra in queries:
            try:
                result = memory.build_context(
                    party, query, session_id=sid, token_budget=args.budget, **{"tenant": ACUMATICA, **extra}
                )
            except TypeError:
                console.print(f"[yellow]{title}: this build has no vendor contexts yet[/yellow]")
                continue
            show_context(console, f"{title} — {party}: {query!r}", result)
    finally:
        for server in servers:
            server.stop()
    console.print(
        Rule(
            f"done in {time.perf_counter() - started:.1f} s; "
            "run `connector demo` again for an incremental sync"
        )
    )
    console.print(
        f"Try: CONNECTOR_DATA_DIR={args.data_dir} connector context {customer} "
        f'"What do I owe?" --tenant {ACUMATICA} --session {session}',
        markup=False,
        highlight=False,
    )
    server_settings = write_server_settings(settings)
    console.print(
        f"Web console over these stores: CONNECTOR_CONFIG_FILE={server_settings} connector console",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    console.print("MCP client config (stdio) for an agent, IDE or desktop assistant (mcpServers):")
    config = json.dumps(mcp_client_config(server_settings), indent=2)
    console.print(config, markup=False, highlight=False, soft_wrap=True)
    return 0


def write_server_settings(settings: Settings) -> Path:
    """A settings file naming the demo's stores and tenants (no secrets: the server never calls
    the ERPs, and the fakes are gone once the demo ends), for ``connector mcp``."""
    lines = [
        f"data_dir = {json.dumps(str(settings.data_dir.resolve()))}",
        f"default_tenant = {json.dumps(ACUMATICA)}",
    ]
    for tenant in settings.tenants:
        lines += ["", "[[tenants]]"]
        lines += [f"{key} = {json.dumps(getattr(tenant, key))}" for key in ("name", "kind", "base_url")]
    path = settings.data_dir / "mcp-server.toml"
    path.write_text("\n".join(lines) + "\n")
    return path.resolve()


def mcp_client_config(settings_file: Path) -> dict[str, Any]:
    """``connector mcp`` over this demo's stores, as an MCP client's ``mcpServers`` entry."""
    env = {"CONNECTOR_CONFIG_FILE": str(settings_file)}
    return client_config(command=[sys.executable, "-m", "connector.cli"], env=env)


if __name__ == "__main__":
    sys.exit(main())
