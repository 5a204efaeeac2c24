#!/usr/bin/env python3
"""build_context benchmark (run through ``scripts/bench_context``), offline (non-LLM) mode.

Store: N customers with contacts and attributes, M documents (invoices, orders, credit memos;
about 40% open) bulk-upserted through the sync's own upsert, K episodic entries over all customers
(relational rows with their vector hash + the random unit vectors in embedded Chroma; the
query is embedded for real by the offline MiniLM, so recall runs its real code path), two learned
facts for every tenth customer, fresh sync state, and sessions of 10 to 500 turns appended through
``record_turns`` (tool calls with invoice totals every few turns, deterministic folds). Each customer
with a measured session also gets ``--earlier-sessions`` earlier sessions of ``--earlier-turns`` turns
(indexed by the past-conversation indexer, flushed before measuring), so the "From earlier
conversations" section is on; ``--conversations both`` (default) measures the builds with the section
off, then on, in the same run (``off`` / ``on`` measure one).

Measures ``build_context`` end to end on SQLite (``--database postgres``: a scratch PostgreSQL
database) with the default 3,000-token budget: p50/p95 and a
per-section breakdown (ERP reads, working memory, learned facts, past cases incl. query embedding,
budget+render), the context's tokens beside the tokens of the full history it replaces (every
turn of the session verbatim, tool payloads included), whether each context stayed in budget and
held its pinned values: ``pinned_present_ratio`` counts contexts that show every value pinned in
the session's state, explicit and extracted (working memory keeps the extracted values of the
latest tool results, up to ``working.max_extracted_pins``). ``--erp-changes N`` records N ERP
changes per customer and measures the "Recent ERP changes" section's cost: ``--erp-changes-rounds``
pairs of passes with it on and off, the order swapped every round, compared pair by pair (p95 on
minus off), so a machine whose load drifts moves both sides alike. Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


from connector.clock import FrozenClock  # noqa: E402
from connector.context import ContextBuilder  # noqa: E402
from connector.db.engine import create_db_engine  # noqa: E402
from connector.db.migrate import upgrade_to_head  # noqa: E402
from connector.db.models import SyncState  # noqa: E402
from connector.episodic.documents import keys_for_documents  # noqa: E402
from connector.episodic.tables import ENTRIES  # noqa: E402
from connector.episodic.writer import chroma_metadata  # noqa: E402
from connector.erp.records import Contact, DocType, DocumentRecord, PartyRecord  # noqa: E402
from connector.facts.scope import FactScope  # noqa: E402
from connector.facts.store import EXPLICIT_CATEGORY, FactInput, store_fact  # noqa: E402
from connector.memory import Memory  # noqa: E402
from connector.recall.vector_index import vector_hash  # noqa: E402
from connector.semantic.upsert import upsert_records  # noqa: E402
from connector.settings import ChromaSettings, ConversationSettings, Settings  # noqa: E402
from connector.testing.scratch_db import DEFAULT_PG_ADMIN, ScratchDatabases, admin_url  # noqa: E402
from connector.tokens import count_tokens  # noqa: E402
from connector.working import NewTurn  # noqa: E402

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
TENANT = "default"
QUERIES = [
    "Why was I charged twice for my last invoice?",
    "Where is my order and when will it ship?",
    "Can you confirm the credit memo for the disputed amount?",
    "What are my payment terms and what is overdue?",
    "The unit price on the invoice is wrong, please fix it.",
]
WORDS = [
    "the", "customer", "asked", "about", "delivery", "schedule", "agent", "checked", "order", "status",
    "confirmed", "shipping", "address", "promised", "update", "by", "email", "before", "end", "of", "week",
]  # fmt: skip
BIG = "BIG-CUSTOMER"  # a customer with 1,000 open invoices; every fifth build names one of them
BIG_OPEN = 1000
SPELLINGS = ("INV-{n:06d}", "inv {n}", "#{n:06d}", "invoice {n}", "{n:06d}")
SECTIONS = (
    "erp", "erp_changes", "working", "learned_facts", "candidates", "past_cases", "earlier_conversations",
    "budget_render",
)  # fmt: skip
EARLIER_LINES = [
    "I was charged twice for invoice {doc} last month, {amount} USD both times.",
    "The order {so} has not shipped yet; when will it arrive?",
    "Please confirm the credit memo for the disputed {amount} USD.",
    "Our payment terms are 30 days; why is {doc} shown as overdue?",
    "The unit price on {doc} should be {amount}, not what you billed.",
    "Deliveries now go to our new warehouse in Tacoma.",
]


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def cid(i: int) -> str:
    return f"C{i:05d}"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# Loading -------------------------------------------------------------------------------------------------
def load_erp(memory: Memory, customers: int, documents: int, rng: random.Random) -> None:
    parties = [
        PartyRecord(
            tenant=TENANT,
            kind="customer",
            external_id=cid(i),
            name=f"Customer {i} Supplies",
            status="Active",
            currency="USD",
            credit_limit=Decimal(rng.randrange(5, 500) * 1000),
            terms=rng.choice(["30D", "60D", "COD"]),
            contacts=(Contact(role="main", name=f"Contact {i}", email=f"ap{i}@example.com"),),
            attributes={"PO_REQUIRED": rng.choice(["Y", "N"])},
        )
        for i in range(customers)
    ]
    mix: dict[DocType, int] = {"ar_invoice": 6, "sales_order": 3, "credit_memo": 1}
    kinds = [kind for kind, weight in mix.items() for _ in range(weight)]
    docs = []
    for n in range(documents):
        kind = kinds[n % len(kinds)]
        prefix = {"ar_invoice": "AR", "sales_order": "SO-", "credit_memo": "CM-"}[kind]
        amount = Decimal(rng.randrange(1000, 5_000_000)) / 100
        is_open = rng.random() < 0.4
        docs.append(
            DocumentRecord(
                tenant=TENANT,
                doc_type=kind,
                external_id=f"{kind}/{n:07d}",
                number=f"{prefix}{n:06d}",
                party_kind="customer",
                party_external_id=cid(n % customers),
                status="Open" if is_open else "Closed",
                currency="USD",
                amount=amount,
                balance=amount if is_open else Decimal(0),
                doc_date=date(2026, 1, 1) + timedelta(days=n % 60),
                due_date=date(2026, 1, 31) + timedelta(days=n % 60),
                description=f"{rng.choice(['Bar stools', 'Copper fittings', 'Glassware', 'Kegs'])} order {n}",
                customer_ref=f"PO-{rng.randrange(10**6):06d}",
                is_open=is_open,
            )
        )
    parties.append(
        PartyRecord(
            tenant=TENANT, kind="customer", external_id=BIG, name="Big Open Items Ltd", currency="EUR"
        )
    )
    for k in range(BIG_OPEN + 200):  # 200 closed ones beside the open ones
        amount = Decimal(rng.randrange(1000, 5_000_000)) / 100
        is_open = k < BIG_OPEN
        docs.append(
            DocumentRecord(
                tenant=TENANT, doc_type="ar_invoice", external_id=f"big/{k:07d}", number=f"INV-{k:06d}",
                party_kind="customer", party_external_id=BIG, status="Open" if is_open else "Closed",
                currency="EUR", amount=amount, balance=amount if is_open else Decimal(0),
                doc_date=date(2025, 1, 1) + timedelta(days=k % 300),
                due_date=date(2025, 6, 1) + timedelta(days=k % 400), is_open=is_open,
            )
        )  # fmt: skip
    synced = NOW - timedelta(minutes=10)
    records: list[Any] = [*parties, *docs]
    for start in range(0, len(records), 5000):
        with memory.engine.begin() as conn:
            upsert_records(conn, records[start : start + 5000], synced)
    with memory.engine.begin() as conn:
        for stream in ("customers", "invoices", "sales_orders"):
            sync_state: sa.Table = SyncState.__table__  # type: ignore[attr-defined]
            conn.execute(sa.insert(sync_state), {"tenant": TENANT, "stream": stream, "updated_at": synced})


def load_cases(memory: Memory, customers: int, cases: int, seed: int) -> None:
    """Episodic entries as the writer stores them: rows with their vector hash, the vectors in Chroma."""
    index = memory.episodic.index
    dim, model = memory.episodic.embedder.dimension, memory.episodic.embedder.model_id
    np_rng = np.random.default_rng(seed)
    for start in range(0, cases, 5000):
        rows: list[dict[str, Any]] = []
        for i in range(start, min(cases, start + 5000)):
            occurred = NOW - timedelta(days=1 + i % 150)
            docs = [f"AR{i % 999_999:06d}", f"CM-{i % 999_999:06d}"]
            rows.append(
                {
                    "id": f"e{i:08d}",
                    "tenant": TENANT,
                    "customer_id": cid(i % customers),
                    "case_id": f"CASE-{i:07d}",
                    "case_type": ("dispute", "delivery", "pricing", "tax")[i % 4],
                    "summary": f"Request: customer disputed {docs[0]} for {100 + i % 900}.00 USD. "
                    f"Resolution: credit memo {docs[1]} issued on {occurred.date().isoformat()}.",
                    "summary_mode": "non-llm",
                    "documents": docs,
                    "doc_keys": sorted(keys_for_documents(docs)),
                    "occurred_at": occurred,
                    "retain_from": occurred,
                    "recorded_at": NOW,
                    "updated_at": NOW,
                    "archived_at": None,
                    "pii": False,
                    "status": "live",
                    "embedding_model": model,
                    "merged_count": 1,
                }
            )
        vectors = np_rng.standard_normal((len(rows), dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        for row in rows:
            row["vector_hash"] = vector_hash(model, row["summary"])
        with memory.engine.begin() as conn:
            conn.execute(sa.insert(ENTRIES), rows)
        index.upsert([r["id"] for r in rows], vectors, [chroma_metadata(r) for r in rows])
        log(f"  cases {min(cases, start + 5000):,}/{cases:,}")


def load_facts(memory: Memory, customers: int) -> None:
    with memory.engine.begin() as conn:
        for i in range(0, customers, 10):
            scope = FactScope.of(TENANT, cid(i))
            for text, importance in (
                ("Prefers contact by email after 3pm.", 0.7),
                ("Pays by wire only.", 0.5),
            ):
                store_fact(conn, scope, FactInput(text, importance, EXPLICIT_CATEGORY), ["bench"], NOW)


def session_turns(length: int, rng: random.Random, invoice: str) -> list[NewTurn]:
    invoice_result = {
        "ReferenceNbr": invoice,
        "Amount": "18250.40",
        "Balance": "18250.40",
        "DueDate": "2026-02-04",
    }
    turns = [
        NewTurn("user", f"Why was I charged twice for {invoice}?"),
        NewTurn(
            "tool",
            "",
            tool_name="get_invoice",
            tool_args={"nbr": invoice},
            tool_result=invoice_result,
        ),
    ]
    while len(turns) < length:
        n = len(turns)
        if n % 9 == 0:
            order = f"SO-{rng.randrange(10**6):06d}"
            turns.append(
                NewTurn(
                    "tool",
                    "",
                    tool_name="get_order",
                    tool_args={"nbr": order},
                    tool_result={
                        "OrderNbr": order,
                        "OrderTotal": f"{rng.randrange(10**5)}.{n % 100:02d}",
                        "Status": "Open",
                        "RequestedOn": "2026-03-04",
                    },
                )
            )
        else:
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(20, 70)))
            turns.append(
                NewTurn(
                    "user" if n % 2 == 0 else "assistant", f"{words} (ref {n}, {rng.randrange(1000)}.00 USD)"
                )
            )
    return turns[:length]


def load_sessions(
    memory: Memory, customers: int, lengths: list[int], per_length: int, rng: random.Random
) -> list[dict[str, Any]]:
    sessions = []
    for length in lengths:
        for k in range(per_length):
            customer = cid(rng.randrange(customers))
            sid = f"s-{length}-{k}"
            turns = session_turns(length, rng, f"AR{rng.randrange(10**6):06d}")
            for start in range(0, length, 10):  # as an agent would: a few turns per step
                memory.working.record_turns(sid, customer, turns[start : start + 10], tenant=TENANT)
                if start == 0:
                    memory.pin(sid, "disputed_total", "18250.40", source="agent")
            history = memory.working.transcript(sid)
            sessions.append(
                {"id": sid, "customer": customer, "length": length, "history_tokens": count_tokens(history)}
            )
        log(f"  sessions of {length} turns: {per_length}")
    return sessions


def load_earlier_sessions(
    memory: Memory, customers: list[str], per_customer: int, turns: int, rng: random.Random
) -> int:
    """Earlier sessions of each customer (the hook other benchmarks reuse): user lines that resemble
    the queries, assistant replies of filler words, days before NOW; then the index is flushed so
    every build sees them. Returns the number of turns."""
    clock = memory.clock
    assert isinstance(clock, FrozenClock)
    now = clock.now()
    total = 0
    for customer in sorted(set(customers)):
        for k in range(per_customer):
            clock.advance(now - timedelta(days=1 + 7 * k) - clock.now())
            sid = f"earlier-{customer}-{k}"
            batch = []
            for n in range(turns):
                if n % 2 == 0:
                    text = rng.choice(EARLIER_LINES).format(
                        doc=f"AR{rng.randrange(10**6):06d}", so=f"SO-{rng.randrange(10**6):06d}",
                        amount=f"{rng.randrange(100, 20000)}.{rng.randrange(100):02d}",
                    )  # fmt: skip
                    batch.append(NewTurn("user", text))
                else:
                    batch.append(NewTurn("assistant", " ".join(rng.choice(WORDS) for _ in range(25))))
            memory.working.record_turns(sid, customer, batch, tenant=TENANT)
            total += turns
    clock.advance(now - clock.now())
    return total


def seed_turn_index(memory: Memory, seed: int) -> int:
    """Index every recorded turn as the indexer would, without embedding: ``conv_turn`` rows with the
    hash of their text, their postings, random unit vectors in Chroma's turns collection, and each
    session's progress (the query is still embedded for real, so recall runs its real code path)."""
    from connector.conversations import generations
    from connector.conversations.indexer import indexed_text, turn_id
    from connector.conversations.tables import SESSIONS, TURNS
    from connector.lexical import index as lexical
    from connector.lexical.index import LexicalDocument
    from connector.lexical.tables import TURN_SOURCE
    from connector.scope import Scope
    from connector.working.store import session_t, turn_t

    index = memory.conversations.index
    model, dim = memory.conversations.embedder.model_id, memory.conversations.embedder.dimension
    np_rng = np.random.default_rng(seed)
    statement = sa.select(
        turn_t.c.session_id, turn_t.c.seq, turn_t.c.role, turn_t.c.content, turn_t.c.created_at,
        session_t.c.tenant, session_t.c.customer_id,
    ).join(session_t, session_t.c.session_id == turn_t.c.session_id)  # fmt: skip
    with memory.engine.connect() as conn:
        turns = [(t, text) for t in conn.execute(statement) if (text := indexed_text(t.role, t.content))]
    for start in range(0, len(turns), 2000):
        chunk = turns[start : start + 2000]
        rows = [
            {"id": turn_id(t.tenant, t.session_id, t.seq), "tenant": t.tenant, "customer_id": t.customer_id,
             "session_id": t.session_id, "seq": t.seq, "occurred_at": t.created_at,
             "vector_hash": vector_hash(model, text)}
            for t, text in chunk
        ]  # fmt: skip
        vectors = np_rng.standard_normal((len(rows), dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        with memory.engine.begin() as conn:
            # Each customer's generation moves with its rows, as the indexer's writes move it: a
            # recall reads the rows stamped above the generation it holds.
            gens = {
                key: generations.bump(conn, Scope(*key))
                for key in {(r["tenant"], r["customer_id"]) for r in rows}
            }
            for r in rows:
                r["gen"] = gens[r["tenant"], r["customer_id"]]
            conn.execute(sa.insert(TURNS), rows)
            docs = [
                LexicalDocument(Scope(r["tenant"], r["customer_id"]), r["id"], text)
                for r, (_, text) in zip(rows, chunk, strict=True)
            ]
            lexical.write(conn, TURN_SOURCE, docs)
        meta = [
            {"tenant": r["tenant"], "customer_id": r["customer_id"], "vector_hash": r["vector_hash"]}
            for r in rows
        ]
        index.upsert([r["id"] for r in rows], vectors, meta)
    with memory.engine.begin() as conn:
        conn.execute(
            sa.insert(SESSIONS).from_select(
                ["session_id", "tenant", "customer_id", "indexed_upto_seq"],
                sa.select(
                    session_t.c.session_id, session_t.c.tenant, session_t.c.customer_id, session_t.c.last_seq
                ),
            )
        )
    return len(turns)


def analyze(engine: sa.Engine) -> None:
    """Planner statistics for the loaded store: a production server's autovacuum gathers them
    after a bulk load; without them PostgreSQL guesses one row per scope and reads a customer's
    lexical postings and documents by the scope alone."""
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("ANALYZE")


def without_conversations(memory: Memory) -> ContextBuilder:
    """The same context builder with the earlier-conversations section off (the "off" pass)."""
    c = memory.context
    return ContextBuilder(
        c.engine, clock=c.clock, settings=c.settings, expected_sync_lag=c.expected_sync_lag,
        default_tenant=c.default_tenant, erp_kinds=c.erp_kinds, cases=c.cases, facts=c.facts,
        sessions=c.sessions, history=c.history,
    )  # fmt: skip


def without_erp_changes(memory: Memory) -> ContextBuilder:
    """The same context builder with the "Recent ERP changes" section off (the history pass's baseline)."""
    c = memory.context
    return ContextBuilder(
        c.engine, clock=c.clock, settings=c.settings, expected_sync_lag=c.expected_sync_lag,
        default_tenant=c.default_tenant, erp_kinds=c.erp_kinds, cases=c.cases, facts=c.facts,
        sessions=c.sessions, conversations=c.conversations, conversation_hits=c.conversation_hits,
    )  # fmt: skip


def without_both(memory: Memory) -> ContextBuilder:
    """Neither earlier conversations nor Recent ERP changes (the history pass's baseline with
    ``--conversations off``)."""
    c = memory.context
    return ContextBuilder(
        c.engine, clock=c.clock, settings=c.settings, expected_sync_lag=c.expected_sync_lag,
        default_tenant=c.default_tenant, erp_kinds=c.erp_kinds, cases=c.cases, facts=c.facts,
        sessions=c.sessions,
    )  # fmt: skip


def erp_changes_rounds(
    passes: Callable[[ContextBuilder], dict[str, Any]], on: ContextBuilder, off: ContextBuilder, rounds: int
) -> dict[str, Any]:
    """The section's cost on a loaded machine: ``rounds`` pairs of passes with it on and off, the
    order swapped every round (ABBA...), compared pair by pair (p95 on minus p95 off)."""
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    loads: list[float] = []
    for r in range(rounds):
        order = (True, False) if r % 2 == 0 else (False, True)
        got: dict[bool, dict[str, Any]] = {}
        for side in order:
            loads.append(os.getloadavg()[0])
            got[side] = passes(on if side else off)
        pairs.append((got[True], got[False]))
    delta = [a["p95_ms"] - b["p95_ms"] for a, b in pairs]
    cpu_delta = [a["cpu_p95_ms"] - b["cpu_p95_ms"] for a, b in pairs]
    cpu_p50_delta = [a["cpu_p50_ms"] - b["cpu_p50_ms"] for a, b in pairs]
    return {
        "rounds": rounds,
        "p95_delta_ms": [round(d, 2) for d in delta],
        "p95_delta_ms_median": round(statistics.median(delta), 2),
        "cpu_p95_delta_ms_median": round(statistics.median(cpu_delta), 2),
        "cpu_p50_delta_ms_median": round(statistics.median(cpu_p50_delta), 2),
        "on_p95_ms_median": round(statistics.median(a["p95_ms"] for a, _ in pairs), 2),
        "off_p95_ms_median": round(statistics.median(b["p95_ms"] for _, b in pairs), 2),
        "load_1m": [round(min(loads), 1), round(max(loads), 1)],
    }


def load_erp_changes(memory: Memory, customers: int, per_customer: int, rng: random.Random) -> int:
    """``per_customer`` recorded ERP changes for every customer (credit limits, statuses, terms),
    spread over the last 400 days, inserted as the sync writes them."""
    from connector.semantic.tracking import change_t

    fields = [("credit_limit", "money"), ("status", "text"), ("terms", "text")]
    rows = []
    for i in range(customers):
        for n in range(per_customer):
            field, kind = fields[n % len(fields)]
            old, new = (
                (str(1000 * (n + 1)), str(1000 * (n + 2))) if kind == "money" else (f"V{n}", f"V{n + 1}")
            )
            stamp = NOW - timedelta(days=rng.randrange(400), minutes=n)
            rows.append(
                {
                    "tenant": TENANT,
                    "entity": "party",
                    "kind": "customer",
                    "external_id": cid(i),
                    "number": None,
                    "party_kind": "customer",
                    "party_external_id": cid(i),
                    "field": field,
                    "value_type": kind,
                    "old_value": old,
                    "new_value": new,
                    "currency": "USD" if kind == "money" else None,
                    "erp_changed_at": stamp,
                    "seen_at": stamp,
                    "run_id": None,
                }
            )
    with memory.engine.begin() as conn:
        for start in range(0, len(rows), 10_000):
            conn.execute(change_t.insert(), rows[start : start + 10_000])
    return len(rows)


def existing_sessions(memory: Memory) -> list[dict[str, Any]]:
    """The sessions of a store loaded by an earlier run (``--reuse``)."""
    from connector.working.store import session_t

    with memory.engine.connect() as conn:
        rows = conn.execute(
            sa.select(session_t.c.session_id, session_t.c.customer_id, session_t.c.last_seq)
        ).all()
    return [
        {"id": sid, "customer": customer, "length": length,
         "history_tokens": count_tokens(memory.working.transcript(sid))}
        for sid, customer, length in sorted(rows, key=lambda r: (r[2], r[0]))
    ]  # fmt: skip


# Measuring ------------------------------------------------------------------------------------------------
def measure(
    memory: Memory, sessions: list[dict[str, Any]], builds: int, budget: int, context: ContextBuilder
) -> dict[str, Any]:
    pins = {s["id"]: memory.working.state(s["id"]).pinned for s in sessions}
    build = context.build
    for s in sessions[:10]:  # warm-up: tokenizer, embedder, Chroma segments, statement caches
        build(s["customer"], QUERIES[0], session_id=s["id"], tenant=TENANT, token_budget=budget)
    totals: list[float] = []
    cpu: list[float] = []
    sections: dict[str, list[float]] = defaultdict(list)
    by_length: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    over = pinned_ok = named_builds = named_found = with_earlier = 0
    pinned_counts: list[int] = []
    has_big = _has_party(memory, BIG)
    pick = random.Random(11)
    for i in range(builds):
        if has_big and i % 5 == 4:
            n = pick.randrange(BIG_OPEN)
            query = f"Why is {SPELLINGS[i % len(SPELLINGS)].format(n=n)} still open?"
            t0, c0 = time.perf_counter(), time.process_time()
            result = build(BIG, query, tenant=TENANT, token_budget=budget)
            totals.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
            for name in SECTIONS:
                sections[name].append(result.timings_ms.get(name, 0.0))
            named_builds += 1
            named_found += any(
                item.source.endswith(f"/big/{n:07d}") for item in result.section("open_documents").items
            )
            over += result.token_count > budget
            continue
        s = sessions[i % len(sessions)]
        t0, c0 = time.perf_counter(), time.process_time()
        result = build(
            s["customer"], QUERIES[i % len(QUERIES)], session_id=s["id"], tenant=TENANT, token_budget=budget
        )
        totals.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
        for name in SECTIONS:
            sections[name].append(result.timings_ms.get(name, 0.0))
        over += result.token_count > budget
        with_earlier += bool(result.section("earlier_conversations").items)
        # Every value pinned in the session's state (explicit and extracted) must be in the context.
        shown = {item.source for item in result.section("pinned").items}
        pinned_ok += all(p.value in result.text for p in pins[s["id"]]) and all(
            f"pin:{s['id']}/{p.name}" in shown for p in pins[s["id"]] if p.explicit
        )
        pinned_counts.append(len(pins[s["id"]]))
        by_length[s["length"]]["context"].append(result.token_count)
        by_length[s["length"]]["history"].append(s["history_tokens"])
    context_tokens = [t for v in by_length.values() for t in v["context"]]
    history_tokens = [t for v in by_length.values() for t in v["history"]]
    return {
        "p50_ms": round(pct(totals, 50), 2),
        "p95_ms": round(pct(totals, 95), 2),
        "max_ms": round(max(totals), 2),
        "cpu_p50_ms": round(pct(cpu, 50), 2),
        "cpu_p95_ms": round(pct(cpu, 95), 2),
        "over_budget_contexts": over,
        "earlier_conversations_ratio": round(with_earlier / max(1, builds - named_builds), 4),
        "pinned_present_ratio": round(pinned_ok / max(1, builds - named_builds), 4),
        "named_document_builds": named_builds,
        "named_document_found_ratio": round(named_found / named_builds, 4) if named_builds else None,
        "pinned_values_p50": int(statistics.median(pinned_counts)),
        "pinned_values_max": max(pinned_counts),
        "context_tokens_p50": int(statistics.median(context_tokens)),
        "full_history_tokens_p50": int(statistics.median(history_tokens)),
        "sections_ms": {
            n: {"p50": round(pct(v, 50), 2), "p95": round(pct(v, 95), 2)} for n, v in sections.items()
        },
        "by_session_length": {
            str(length): {
                "context_tokens_p50": int(statistics.median(v["context"])),
                "context_tokens_max": max(v["context"]),
                "full_history_tokens_p50": int(statistics.median(v["history"])),
            }
            for length, v in sorted(by_length.items())
        },
    }


def _has_party(memory: Memory, party_id: str) -> bool:
    from connector.semantic.tables import Party

    with memory.engine.connect() as conn:
        table = Party.__table__  # type: ignore[attr-defined]
        return conn.execute(sa.select(table.c.id).where(table.c.external_id == party_id)).first() is not None


def without_ort_spinning(memory: Memory) -> None:
    """Reload the embedder with onnxruntime's spin-waiting off: on a 2-core machine the spinning
    intra-op threads compete with the caller for ~20 ms after every query embedding."""
    import onnxruntime

    original = onnxruntime.SessionOptions

    class NoSpin(original):  # type: ignore[misc,valid-type]
        def __init__(self) -> None:
            super().__init__()
            self.add_session_config_entry("session.intra_op.allow_spinning", "0")

    onnxruntime.SessionOptions = NoSpin
    try:
        memory.episodic.embedder.embed(["warm up"])
    finally:
        onnxruntime.SessionOptions = original


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--customers", type=int, default=10_000)
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--session-lengths", default="10,20,50,100,200,500")
    parser.add_argument("--sessions-per-length", type=int, default=5)
    parser.add_argument("--builds", type=int, default=600)
    parser.add_argument("--budget", type=int, default=3000)
    parser.add_argument("--earlier-sessions", type=int, default=5, help="per customer with a session")
    parser.add_argument("--earlier-turns", type=int, default=20, help="turns of each earlier session")
    parser.add_argument("--conversations", choices=("both", "on", "off"), default="both")
    parser.add_argument(
        "--erp-changes",
        type=int,
        default=0,
        help="recorded ERP changes per customer; measures the builds again with that section off",
    )
    parser.add_argument(
        "--erp-changes-rounds",
        type=int,
        default=4,
        help="with --erp-changes: alternated pairs of passes (section on, off) of --builds builds each",
    )
    parser.add_argument("--workdir", type=Path, help="keep the store here (default: a temp dir, removed)")
    parser.add_argument("--reuse", action="store_true", help="measure the store already in --workdir")
    parser.add_argument(
        "--database",
        default="sqlite",
        help=f"sqlite (default, in --workdir), or a PostgreSQL admin URL (`postgres`: {DEFAULT_PG_ADMIN}): "
        "the store is then a scratch database there, dropped at the end (Chroma stays embedded)",
    )
    parser.add_argument(
        "--no-analyze",
        action="store_true",
        help="PostgreSQL: measure without planner statistics (by default the loaded store is ANALYZEd, "
        "as autovacuum would have done on a production server; this server may run with it off)",
    )
    parser.add_argument(
        "--no-spin-compare",
        action="store_true",
        help="skip the second pass with onnxruntime spin-waiting off",
    )
    args = parser.parse_args()
    admin = admin_url(args.database)
    if admin is not None and args.reuse:
        parser.error("--reuse measures a kept SQLite store; a PostgreSQL store is a scratch database")
    scratch = ScratchDatabases(admin, "bench_context") if admin is not None else None
    try:
        return run(args, scratch)
    finally:
        if scratch is not None:
            scratch.drop_all()


def run(args: argparse.Namespace, scratch: ScratchDatabases | None) -> int:
    lengths = [int(x) for x in args.session_lengths.split(",")]
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="bench_context_") as tmp:
        workdir = args.workdir or Path(tmp)
        settings = Settings(
            data_dir=workdir / "data",
            chroma=ChromaSettings(path=workdir / "chroma"),
            conversations=ConversationSettings(enabled=True),  # the off pass builds without them
        )
        url = scratch.create() if scratch is not None else f"sqlite:///{workdir / 'bench.sqlite3'}"
        engine = create_db_engine(url)
        upgrade_to_head(engine)
        started = time.perf_counter()
        if not args.reuse:
            # Loaded with indexing off (no background embedding of ~8,000 turns); the turn index is
            # then seeded directly, as the cases are: rows, postings and random unit vectors.
            quiet = settings.model_copy(update={"conversations": ConversationSettings(enabled=False)})
            loader = Memory(quiet, clock=FrozenClock(NOW), llm=None, engine=engine)
            log(f"loading {args.customers:,} customers and {args.documents:,} documents ...")
            load_erp(loader, args.customers, args.documents, rng)
            log(f"loading {args.cases:,} episodic cases ...")
            load_cases(loader, args.customers, args.cases, seed=7)
            load_facts(loader, args.customers)
            log("recording sessions ...")
            loaded = load_sessions(loader, args.customers, lengths, args.sessions_per_length, rng)
            if args.earlier_sessions and args.earlier_turns:
                log("recording earlier sessions ...")
                owners = [s["customer"] for s in loaded] + [BIG]
                load_earlier_sessions(loader, owners, args.earlier_sessions, args.earlier_turns, rng)
            log(f"  turn index: {seed_turn_index(loader, seed=7):,} turns")
            if args.erp_changes:
                recorded = load_erp_changes(loader, args.customers, args.erp_changes, rng)
                log(f"  ERP history: {recorded:,} changes")
            if scratch is not None and not args.no_analyze:
                analyze(engine)
        memory = Memory(settings, clock=FrozenClock(NOW), llm=None, engine=engine)
        sessions = [s for s in existing_sessions(memory) if not s["id"].startswith("earlier-")]
        load_s = time.perf_counter() - started
        log(f"measuring {args.builds} builds ...")
        off = None
        if args.conversations in ("both", "off"):
            log("  with earlier conversations off ...")
            off = measure(memory, sessions, args.builds, args.budget, without_conversations(memory))
        figures = off
        if args.conversations in ("both", "on"):
            log("  with earlier conversations on ...")
            figures = measure(memory, sessions, args.builds, args.budget, memory.context)
        assert figures is not None
        on_context = memory.context if args.conversations != "off" else without_conversations(memory)
        changes = None
        if args.erp_changes:
            log(f"  Recent ERP changes on and off, {args.erp_changes_rounds} alternated rounds ...")
            changes = erp_changes_rounds(
                lambda c: measure(memory, sessions, args.builds, args.budget, c),
                on_context,
                without_erp_changes(memory) if args.conversations != "off" else without_both(memory),
                args.erp_changes_rounds,
            )
        no_spin = None
        if not args.no_spin_compare:
            log("measuring again with onnxruntime spin-waiting off ...")
            without_ort_spinning(memory)
            no_spin = measure(memory, sessions, args.builds, args.budget, on_context)
        memory.close()
        engine.dispose()
    database = "SQLite" if scratch is None else "PostgreSQL"
    print(f"build_context, offline mode, {database} + embedded Chroma, budget {args.budget} tokens")
    print(
        f"store: {args.customers:,} customers, {args.documents:,} documents, {args.cases:,} cases, "
        f"{len(sessions)} sessions of {lengths} turns (loaded in {load_s:.0f} s)"
    )
    print(
        f"latency: p50 {figures['p50_ms']} ms, p95 {figures['p95_ms']} ms, max {figures['max_ms']} ms "
        f"over {args.builds} builds (CPU time p50 {figures['cpu_p50_ms']} ms, p95 {figures['cpu_p95_ms']} ms)"
    )
    for name, v in figures["sections_ms"].items():
        print(f"  {name:<14} p50 {v['p50']:>7} ms   p95 {v['p95']:>7} ms")
    print("tokens: context vs the full history it replaces (p50 per session length)")
    for length, v in figures["by_session_length"].items():
        print(
            f"  {length:>4} turns: context {v['context_tokens_p50']:>5} (max {v['context_tokens_max']}), "
            f"full history {v['full_history_tokens_p50']:>7}"
        )
    print(f"over budget: {figures['over_budget_contexts']}; pinned: {figures['pinned_present_ratio']:.2%}")
    shown = figures["earlier_conversations_ratio"]
    print(
        f"earlier conversations ({args.conversations}): shown in {shown:.2%} of session builds "
        f"({args.earlier_sessions} earlier sessions of {args.earlier_turns} turns per customer)"
    )
    if off is not None and off is not figures:
        print(
            f"with earlier conversations off: p50 {off['p50_ms']} ms, p95 {off['p95_ms']} ms "
            f"(CPU p50 {off['cpu_p50_ms']} ms); on/off p95 {figures['p95_ms'] / off['p95_ms']:.2f}x"
        )
    if figures["named_document_builds"]:
        print(
            f"named document of a {BIG_OPEN:,}-open-document customer found in "
            f"{figures['named_document_found_ratio']:.2%} of {figures['named_document_builds']} builds"
        )
    summary = {
        **{
            k: figures[k]
            for k in (
                "p50_ms",
                "p95_ms",
                "over_budget_contexts",
                "pinned_present_ratio",
                "context_tokens_p50",
                "full_history_tokens_p50",
                "named_document_builds",
                "named_document_found_ratio",
            )
        },
        "pinned_values_p50": figures["pinned_values_p50"],
        "pinned_values_max": figures["pinned_values_max"],
        "cpu_p50_ms": figures["cpu_p50_ms"],
        "cpu_p95_ms": figures["cpu_p95_ms"],
        "sections_p95_ms": {k: v["p95"] for k, v in figures["sections_ms"].items()},
        "builds": args.builds,
        "database": database.lower(),
        "scratch_databases": list(scratch.names) if scratch is not None else [],  # dropped on exit
        "analyzed": None if scratch is None else not args.no_analyze,
        "budget": args.budget,
        "customers": args.customers,
        "documents": args.documents,
        "cases": args.cases,
        "session_lengths": lengths,
        "recall": "real (MiniLM query embedding, the scope's vectors read from Chroma by id)",
        "load_average_1m": round(os.getloadavg()[0], 2),
        "conversations": args.conversations,
        "earlier_conversations_ratio": figures["earlier_conversations_ratio"],
        "earlier_sessions_per_customer": args.earlier_sessions,
        "earlier_turns_per_session": args.earlier_turns,
        "goal_p95_ms": 15,
    }
    if no_spin is not None:
        print(
            f"with onnxruntime spin-waiting off: p50 {no_spin['p50_ms']} ms, p95 {no_spin['p95_ms']} ms "
            f"(CPU p50 {no_spin['cpu_p50_ms']} ms, p95 {no_spin['cpu_p95_ms']} ms)"
        )
        for name, v in no_spin["sections_ms"].items():
            print(f"  {name:<14} p50 {v['p50']:>7} ms   p95 {v['p95']:>7} ms")
        summary["ort_no_spin"] = {
            k: no_spin[k] for k in ("p50_ms", "p95_ms", "cpu_p50_ms", "cpu_p95_ms", "over_budget_contexts")
        }
    if changes is not None:
        print(
            f"Recent ERP changes on / off ({changes['rounds']} alternated rounds of {args.builds} builds, "
            f"load {changes['load_1m']}): p95 {changes['on_p95_ms_median']} / "
            f"{changes['off_p95_ms_median']} ms, "
            f"on - off p95 median {changes['p95_delta_ms_median']:+.2f} ms "
            f"(CPU p95 {changes['cpu_p95_delta_ms_median']:+.2f} ms; {args.erp_changes} changes per customer)"
        )
        summary["erp_changes_alternated"] = changes
        summary["erp_changes_per_customer"] = args.erp_changes
    if off is not None and off is not figures:
        summary["conversations_off"] = {k: off[k] for k in ("p50_ms", "p95_ms", "cpu_p50_ms", "cpu_p95_ms")}
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
