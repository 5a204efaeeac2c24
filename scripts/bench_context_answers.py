#!/usr/bin/env python3
"""Does build_context's text hold the answer? (run through ``scripts/bench_context_answers``).

The project's own labelled ERP question set: both fake ERPs (FakeAcumatica with one customer given
300 extra open invoices, FakeSAP) are served on loopback ports and synced through the real adapters
and sync runner into SQLite; questions are then generated deterministically from the store's rows
(its ground truth), each with the gold string(s) exactly as the context renders them. For every
question the context is built and we record: every gold string present in ``text``, any other
party's id or document number present (a leak), and tokens over the budget. A naive baseline is
built in the same run for the same party and session with an unrelated query, which shows what the
overdue-first ranking and the header alone give. Prints a table per question kind and one JSON line.

A second set (``ref:<shape>`` kinds, issue 26.5): for each of 16 shapes of reference a customer may
state (its own purchase-order numbers with letter prefixes, dashes, slashes or dots, ticket and case
ids, tracking numbers, e-mail addresses...), long sessions where it is said once, early, and asked
for at the end; ``reference_shapes`` is the share kept.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import sqlalchemy as sa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from connector.clock import FrozenClock  # noqa: E402
from connector.context.money import money  # noqa: E402
from connector.db.engine import create_db_engine  # noqa: E402
from connector.db.migrate import upgrade_to_head  # noqa: E402
from connector.memory import Memory  # noqa: E402
from connector.semantic.upsert import case_t, document_t, party_t  # noqa: E402
from connector.settings import ChromaSettings, Settings, SyncSettings  # noqa: E402
from connector.testing.acumatica import FakeAcumatica  # noqa: E402
from connector.testing.sap import FakeSAP  # noqa: E402
from connector.testing.server import serve  # noqa: E402

AS_OF = datetime(2026, 1, 15, 13, 0, tzinfo=UTC)
ACUMATICA, SAP = "acme", "s4"
BIG = "BIGOPEN300"  # the Acumatica customer given 300 open invoices
BIG_OPEN = 300
BASELINE_QUERY = "Hello, thanks for your help."
TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-]{4,}[A-Za-z0-9]")


@dataclass(frozen=True)
class Question:
    """One labelled question: who asks, what, and the strings the context must contain."""

    kind: str
    tenant: str
    party: str
    party_kind: str
    text: str
    gold: tuple[str, ...]
    session_id: str | None = None


@dataclass
class Outcome:
    question: Question
    present: bool
    leaks: tuple[str, ...]
    over_budget: bool
    tokens: int
    missing: tuple[str, ...] = ()


@dataclass
class Tally:
    total: int = 0
    present: int = 0
    baseline_present: int = 0
    leaks: int = 0
    over_budget: int = 0
    misses: list[Outcome] = field(default_factory=list)
    leaked: list[tuple[Outcome, str]] = field(default_factory=list)


# Store ------------------------------------------------------------------------------------------
def add_big_customer(fake: FakeAcumatica) -> None:
    """One customer with ``BIG_OPEN`` open invoices of distinct amounts (the cut-documents case)."""
    template = fake.record("Invoice", fake.keys("Invoice")[0])
    customer = fake.record("Customer", fake.keys("Customer")[0])
    fake.add("Customer", {**customer, "CustomerID": BIG, "CustomerName": "Big Open Ltd"}, modified_at=AS_OF)
    for i in range(BIG_OPEN):
        amount = float(Decimal(1000 + i * 37) + Decimal(i % 100) / 100)
        values = {**template, "ReferenceNbr": f"AR9{i:05d}", "Customer": BIG, "Amount": amount}
        values |= {"Balance": amount, "Status": "Open", "Hold": False, "CurrencyID": "USD"}
        values |= {
            "Date": (AS_OF - timedelta(days=400 - i)).date(),
            "DueDate": (AS_OF - timedelta(days=370 - i)).date(),
        }
        fake.add("Invoice", values, modified_at=AS_OF)


@contextmanager
def synced_store(workdir: Path, scale: int, seed: int) -> Iterator[Memory]:
    """Both fakes served over loopback HTTP and synced with the real sync into a fresh SQLite store."""
    clock = FrozenClock(AS_OF)
    acumatica = FakeAcumatica(
        seed=seed, clock=clock, as_of=AS_OF, customers=scale, vendors=max(2, scale // 4), invoices=scale * 4,
        sales_orders=scale * 2, bills=scale * 2, cases=max(2, scale // 4),
    )  # fmt: skip
    add_big_customer(acumatica)
    sap = FakeSAP(
        seed=seed + 1, customers=scale, suppliers=max(2, scale // 4), sales_orders=scale * 2,
        billing_documents=scale * 4, now=AS_OF,
    )  # fmt: skip
    with ExitStack() as stack:
        servers = [stack.enter_context(serve(acumatica)), stack.enter_context(serve(sap))]
        tenants = [
            acumatica.tenant_settings(name=ACUMATICA, base_url=servers[0].url),
            sap.tenant_settings(name=SAP, base_url=servers[1].url, page_size=200),
        ]
        settings = Settings(
            tenants=tenants, sync=SyncSettings(lookback_seconds=0), data_dir=workdir / "data",
            chroma=ChromaSettings(path=workdir / "chroma"),
        )  # fmt: skip
        engine = create_db_engine(f"sqlite:///{workdir / 'answers.sqlite3'}")
        upgrade_to_head(engine)
        memory = Memory(settings, clock=clock, llm=None, engine=engine)
        stack.callback(memory.close)
        stack.callback(engine.dispose)
        report = memory.sync_runner().run()
        if not report.ok:
            raise SystemExit(f"sync failed: {[r.error for r in report.results if r.error]}")
        yield memory


# Ground truth -----------------------------------------------------------------------------------
def rows(memory: Memory, table: sa.Table, *where: Any) -> list[Any]:
    with memory.engine.connect() as conn:
        return list(conn.execute(sa.select(table).where(*where)).all())


def open_docs(memory: Memory, tenant: str, kind: str, doc_type: str) -> list[Any]:
    docs = rows(
        memory, document_t, document_t.c.tenant == tenant, document_t.c.party_kind == kind,
        document_t.c.doc_type == doc_type, document_t.c.is_open.is_(True), document_t.c.deleted_at.is_(None),
    )  # fmt: skip
    return sorted(docs, key=lambda d: (d.party_external_id, d.number))


def by_party(docs: list[Any]) -> dict[str, list[Any]]:
    grouped: dict[str, list[Any]] = defaultdict(list)
    for doc in docs:
        grouped[doc.party_external_id].append(doc)
    return dict(grouped)


def spellings(number: str) -> list[str]:
    """Common ways a person writes ``AR900042``: as is, lower case, dashed, spaced, bare digits."""
    match = re.fullmatch(r"([A-Za-z]*)(\d+)", number)
    prefix, digits = match.groups() if match else ("", number)
    forms = [
        number,
        number.lower(),
        f"{prefix}-{digits}" if prefix else f"#{digits}",
        f"{prefix.lower()} {digits}",
    ]
    forms.append(f"#{number}")
    return list(dict.fromkeys(f.strip() for f in forms))


def questions(memory: Memory, rng: random.Random, per_kind: int) -> list[Question]:
    out: list[Question] = []
    inv = by_party(open_docs(memory, ACUMATICA, "customer", "ar_invoice"))
    big = inv.get(BIG, [])
    for doc in rng.sample(big, min(len(big), max(1, per_kind // 5))):
        for form in spellings(doc.number):
            text = f"Can you check invoice {form}? What is still due on it?"
            gold: tuple[str, ...] = (doc.number, money(doc.balance, doc.currency))
            out.append(Question("invoice_by_number", ACUMATICA, BIG, "customer", text, gold))
    live = (party_t.c.kind == "customer", party_t.c.deleted_at.is_(None))
    parties = {
        t: sorted(rows(memory, party_t, party_t.c.tenant == t, *live), key=lambda p: p.external_id)
        for t in (ACUMATICA, SAP)
    }
    everyone = [(t, p) for t in (ACUMATICA, SAP) for p in parties[t]]
    for tenant, p in rng.sample(everyone, min(len(everyone), per_kind)):
        if p.credit_limit is not None:
            gold = (money(p.credit_limit, p.currency),)
            out.append(
                Question("credit_limit", tenant, p.external_id, "customer", "What is my credit limit?", gold)
            )
    for tenant, p in rng.sample(everyone, min(len(everyone), per_kind)):
        if p.terms:
            out.append(
                Question(
                    "payment_terms",
                    tenant,
                    p.external_id,
                    "customer",
                    "What are my payment terms?",
                    (p.terms,),
                )
            )
    for tenant, p in rng.sample(everyone, min(len(everyone), per_kind)):
        if p.status:
            text = "Is my account on hold? What is its status?"
            out.append(Question("status", tenant, p.external_id, "customer", text, (p.status,)))
    for tenant, p in rng.sample(everyone, min(len(everyone), per_kind)):
        if p.currency:
            out.append(
                Question(
                    "currency",
                    tenant,
                    p.external_id,
                    "customer",
                    "Which currency am I billed in?",
                    (p.currency,),
                )
            )
    orders = [d for t in (ACUMATICA, SAP) for d in open_docs(memory, t, "customer", "sales_order")]
    for d in rng.sample(orders, min(len(orders), per_kind)):
        text = f"What is the status of my order {d.number} and its amount?"
        gold = (d.number, money(d.amount, d.currency))
        out.append(Question("sales_order", d.tenant, d.party_external_id, "customer", text, gold))
    bills = [d for t in (ACUMATICA, SAP) for d in open_docs(memory, t, "vendor", "ap_bill")]
    for d in rng.sample(bills, min(len(bills), per_kind)):
        text = f"Is bill {d.number} still open, how much do we owe?"
        gold = (d.number, money(d.balance, d.currency))
        out.append(Question("vendor_bill", d.tenant, d.party_external_id, "vendor", text, gold))
    items = by_party(open_docs(memory, SAP, "customer", "open_item"))
    for party in rng.sample(sorted(items), min(len(items), per_kind)):
        gold = tuple(money(v, c) for c, v in sorted(per_currency(items[party]).items()))
        out.append(
            Question("sap_open_balance", SAP, party, "customer", "How much do I owe you in total?", gold)
        )
    credit = {d.party_external_id for d in open_docs(memory, ACUMATICA, "customer", "credit_memo")}
    plain = [p for p in sorted(inv) if p not in credit and p != BIG]
    for party in rng.sample(plain, min(len(plain), per_kind)):
        gold = tuple(money(v, c) for c, v in sorted(per_currency(inv[party]).items()))
        out.append(
            Question(
                "open_total", ACUMATICA, party, "customer", "What is the total of my open invoices?", gold
            )
        )
    several = [p for p in sorted(inv) if len(inv[p]) >= 2]
    for party in rng.sample(several, min(len(several), per_kind)):
        doc = rng.choice(inv[party])
        text = f"I paid the invoice of {doc.balance:,.2f} last week, which one was it?"
        out.append(Question("invoice_by_amount", ACUMATICA, party, "customer", text, (doc.number,)))
    return out


def per_currency(docs: list[Any]) -> dict[str, Decimal]:
    sums: dict[str, Decimal] = defaultdict(Decimal)
    for d in docs:
        sums[d.currency] += Decimal(d.balance or 0)
    return dict(sums)


def session_questions(memory: Memory, rng: random.Random, count: int, max_turns: int) -> list[Question]:
    """Long sessions (non-LLM): a reference said at turn 2, never pinned; and a pinned value."""
    out: list[Question] = []
    acme = sorted(
        p.external_id
        for p in rows(memory, party_t, party_t.c.tenant == ACUMATICA, party_t.c.kind == "customer")
    )
    filler = (
        "Let me check that for you.",
        "The customer asked about the delivery schedule again.",
        "Noted, thanks.",
    )
    for i in range(count):
        party = acme[i % len(acme)]
        session = f"answers-{i:03d}"
        ref = f"PO-{rng.randint(100000, 999999)}"
        turns = rng.randint(min(80, max_turns), max_turns)
        memory.record_turn(
            session, party, "user", "Hi, I have a question about a delivery.", tenant=ACUMATICA
        )
        memory.record_turn(session, party, "user", f"My purchase order reference is {ref}.", tenant=ACUMATICA)
        for t in range(turns - 2):
            memory.record_turn(
                session, party, "assistant" if t % 2 else "user", filler[t % 3], tenant=ACUMATICA
            )
        asked = "What was the purchase order reference I gave you earlier?"
        out.append(Question("session_reference", ACUMATICA, party, "customer", asked, (ref,), session))
        code = f"APR-{rng.randint(1000, 9999)}"
        memory.pin(session, "approval_code", code)
        out.append(
            Question(
                "pinned_value", ACUMATICA, party, "customer", "Which approval code applies?", (code,), session
            )
        )
    return out


def _letters(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(n))


def _digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789") for _ in range(n))


# Reference shapes a customer states once, early in a long session (issue 26.5): (what it is, a maker).
REFERENCE_SHAPES: dict[str, tuple[str, Callable[[random.Random], str]]] = {
    "po_letter_prefix": ("purchase order number", lambda r: f"PO-{_letters(r, 2)}-{_digits(r, 5)}"),
    "po_digits_first": (
        "purchase order number",
        lambda r: f"{_digits(r, 4)}-{_letters(r, 2)}-{_digits(r, 3)}",
    ),
    "po_slashes": ("purchase order number", lambda r: f"{_letters(r, 4)}/PO/{_digits(r, 4)}"),
    "po_dots": ("purchase order number", lambda r: f"PO.{r.randint(2019, 2026)}.{_digits(r, 3)}"),
    "po_lower_case": ("purchase order number", lambda r: f"po-{_letters(r, 2).lower()}-{_digits(r, 4)}"),
    "po_labelled_short": ("purchase order number", lambda r: str(r.randint(1000, 9999))),
    "so_hash_inside": ("order number", lambda r: f"SO#{_digits(r, 6)}"),
    "ticket_year": ("ticket id", lambda r: f"TCK-{r.randint(2019, 2026)}-{_digits(r, 5)}"),
    "incident_id": ("ticket id", lambda r: f"INC{_digits(r, 7)}"),
    "hash_ticket": ("ticket id", lambda r: f"#{_digits(r, 5)}"),
    "case_underscore": ("case id", lambda r: f"CS_{_digits(r, 4)}-{_letters(r, 1)}"),
    "rma_slash_year": ("return authorisation", lambda r: f"RMA-{_digits(r, 2)}/{r.randint(2019, 2026)}"),
    "ups_tracking": ("tracking number", lambda r: f"1Z{_digits(r, 3)}{_letters(r, 2)}{_digits(r, 10)}"),
    "fedex_tracking": ("tracking number", lambda r: _digits(r, 12)),
    "email": (
        "e-mail address",
        lambda r: f"ap.{_letters(r, 3).lower()}@{_letters(r, 5).lower()}-supplies.example",
    ),
    "invoice_slashes": ("invoice number", lambda r: f"INV/{r.randint(2019, 2026)}/{_digits(r, 5)}"),
}


def reference_shape_questions(
    memory: Memory, rng: random.Random, per_shape: int, min_turns: int, max_turns: int
) -> list[Question]:
    """Per shape, ``per_shape`` sessions of ``min_turns``-``max_turns`` turns (non-LLM summary)
    where the customer states one reference once, at turn 2-4, among ERP chatter that names other
    documents and amounts; the question at the end asks for it (kind ``ref:<shape>``)."""
    out: list[Question] = []
    acme = sorted(
        p.external_id
        for p in rows(memory, party_t, party_t.c.tenant == ACUMATICA, party_t.c.kind == "customer")
    )
    for shape, (what, make) in REFERENCE_SHAPES.items():
        for i in range(per_shape):
            party = acme[(i + len(out)) % len(acme)]
            session = f"shape-{shape}-{i}"
            ref = make(rng)
            said = f"Our PO {ref} covers it." if shape == "po_labelled_short" else f"The {what} is {ref}."
            turns = rng.randint(min_turns, max_turns)
            at = rng.randint(2, 4)
            for t in range(1, turns + 1):
                if t == at:
                    text, role = said, "user"
                elif t % 23 == 0:
                    amount = f"{rng.randint(100, 9999)}.{_digits(rng, 2)} USD"
                    text = f"Invoice AR{_digits(rng, 6)} shows {amount} open."
                    role = "assistant"
                else:
                    text = ("Let me check that for you.", "Thanks, any update?", "Noted.")[t % 3]
                    role = "assistant" if t % 2 else "user"
                memory.record_turn(session, party, role, text, tenant=ACUMATICA)
            asked = f"What was the {what} I gave you at the start?"
            out.append(Question(f"ref:{shape}", ACUMATICA, party, "customer", asked, (ref,), session))
    return out


# Measuring --------------------------------------------------------------------------------------
def foreign_tokens(memory: Memory) -> dict[tuple[str, str], set[str]]:
    """For each (tenant, party): ids and document numbers of OTHER parties only, less anything the
    party itself owns under the same string (leak markers)."""
    owned: dict[tuple[str, str], set[str]] = defaultdict(set)
    for p in rows(memory, party_t):
        owned[(p.tenant, p.external_id)].add(p.external_id)
    for d in rows(memory, document_t):
        owned[(d.tenant, d.party_external_id)].add(d.number)
    for c in rows(memory, case_t):  # its own case ids may equal another party's document number
        owned[(c.tenant, c.customer_external_id)].add(c.external_id)
    every = set().union(*owned.values())
    return {key: {t for t in every - mine if len(t) >= 6} for key, mine in owned.items()}


def measure(
    memory: Memory, q: Question, foreign: set[str], budget: int | None, query: str | None = None
) -> Outcome:
    result = memory.build_context(
        q.party, q.text if query is None else query, session_id=q.session_id, tenant=q.tenant,
        token_budget=budget, as_of=AS_OF, party_kind=q.party_kind,
    )  # fmt: skip
    missing = tuple(g for g in q.gold if g not in result.text)
    leaks = tuple(sorted(foreign & set(TOKEN.findall(result.text))))
    over = result.token_count > result.token_budget
    return Outcome(q, not missing, leaks, over, result.token_count, missing)


def run(memory: Memory, qs: list[Question], budget: int | None) -> dict[str, Tally]:
    foreign = foreign_tokens(memory)
    tallies: dict[str, Tally] = defaultdict(Tally)
    for q in qs:
        marks = foreign.get((q.tenant, q.party), set())
        got, base = measure(memory, q, marks, budget), measure(memory, q, marks, budget, BASELINE_QUERY)
        for tally in (tallies[q.kind], tallies["overall"]):
            tally.total += 1
            tally.present += got.present
            tally.baseline_present += base.present
            tally.leaks += bool(got.leaks) + bool(base.leaks)
            tally.over_budget += got.over_budget + base.over_budget
            if tally is tallies[q.kind]:
                tally.misses += [got] if not got.present else []
                tally.leaked += [(o, name) for o, name in ((got, "query"), (base, "baseline")) if o.leaks]
    overall = tallies.pop("overall", Tally())
    return {**dict(sorted(tallies.items())), "overall": overall}


def report(tallies: dict[str, Tally]) -> dict[str, Any]:
    return {
        kind: {
            "questions": t.total,
            "present_ratio": round(t.present / t.total, 4) if t.total else None,
            "baseline_present_ratio": round(t.baseline_present / t.total, 4) if t.total else None,
            "leaks": t.leaks,
            "over_budget": t.over_budget,
        }
        for kind, t in tallies.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--customers", type=int, default=40, help="customers per fake ERP")
    parser.add_argument("--per-kind", type=int, default=25, help="questions per kind (about)")
    parser.add_argument("--sessions", type=int, default=14, help="long sessions")
    parser.add_argument("--max-turns", type=int, default=500)
    parser.add_argument(
        "--per-shape", type=int, default=2, help="long sessions per reference shape (0: none)"
    )
    parser.add_argument("--shape-min-turns", type=int, default=50)
    parser.add_argument(
        "--only-shapes", action="store_true", help="only the reference-shape sessions (no ERP questions)"
    )
    parser.add_argument("--budget", type=int, default=None, help="token budget (default: the setting)")
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rng = random.Random(args.seed)
    with (
        tempfile.TemporaryDirectory(prefix="bench-answers-") as tmp,
        synced_store(Path(tmp), args.customers, args.seed) as memory,
    ):
        qs = (
            []
            if args.only_shapes
            else questions(memory, rng, args.per_kind)
            + session_questions(memory, rng, args.sessions, args.max_turns)
        )
        qs += reference_shape_questions(memory, rng, args.per_shape, args.shape_min_turns, args.max_turns)
        tallies = run(memory, qs, args.budget)
    figures = report(tallies)
    shaped = [t for kind, t in tallies.items() if kind.startswith("ref:")]
    if shaped:
        kept, asked = sum(t.present for t in shaped), sum(t.total for t in shaped)
        figures["reference_shapes"] = {
            "shapes": len(shaped), "questions": asked, "present_ratio": round(kept / asked, 4),
            "shapes_all_kept": sum(t.present == t.total for t in shaped),
        }  # fmt: skip
    print(f"{'kind':<20} {'n':>4} {'present':>8} {'baseline':>9} {'leaks':>6} {'over':>5}")
    for kind, f in figures.items():
        if kind == "reference_shapes":
            print(
                f"reference shapes: {f['present_ratio']:.1%} of {f['questions']} kept, {f['shapes']} shapes"
            )
            continue
        print(
            f"{kind:<20} {f['questions']:>4} {f['present_ratio']:>8.1%} {f['baseline_present_ratio']:>9.1%}"
            f" {f['leaks']:>6} {f['over_budget']:>5}"
        )
    for kind, t in tallies.items():
        if kind == "overall":
            continue
        for miss in t.misses:
            q = miss.question
            print(
                f"MISS {kind}: {q.tenant}/{q.party} {q.text!r} gold={list(q.gold)}"
                f" missing={list(miss.missing)}"
            )
    for kind, t in tallies.items():
        for leak, which in t.leaked if kind != "overall" else ():
            q = leak.question
            print(f"LEAK {kind} ({which}): {q.tenant}/{q.party} {q.text!r} shows {list(leak.leaks)}")
    print(
        json.dumps(
            {"bench": "context_answers", "seconds": round(time.perf_counter() - started, 1), **figures}
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
