"""Candidate items of each context section, with their value rank and provenance.

A candidate has a trusted ``head`` written by us and an optional untrusted ``body`` that is
always rendered as a quoted block. ``rank`` orders value within a section (0 = keep longest);
``order`` is where the item is shown. ``fixed`` items (today, the ERP header, pinned values) are
never dropped by the budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from connector.context.quote import one_line, quote
from connector.context.sources import PAYABLE_TYPES, CustomerFacts, OpenDocument
from connector.working.models import PinnedValue, SessionState, Turn
from connector.working.text import compact_json

DOC_LABELS = {
    "ar_invoice": "AR invoice",
    "credit_memo": "credit memo",
    "sales_order": "sales order",
    "ap_bill": "AP bill",
}


@dataclass(frozen=True, slots=True)
class Candidate:
    section: str
    source: str
    head: str
    body: str | None = None
    rank: int = 0
    order: int = 0
    score: float | None = None
    fixed: bool = False

    def render(self, body: str | None = None) -> str:
        text = self.body if body is None else body
        if text is None:
            return self.head
        quoted = quote(text) if text.strip() else "> (empty)"
        return f"{self.head}\n{quoted}" if self.head else quoted


def money(value: Decimal | None) -> str:
    """Exact decimal text, at least two decimals, the same from SQLite and PostgreSQL."""
    if value is None:
        return "?"
    value = value.normalize()
    exponent = value.as_tuple().exponent
    if isinstance(exponent, int) and exponent > -2:
        value = value.quantize(Decimal("0.01"))
    return format(value, "f")


def age(delta_seconds: float) -> str:
    minutes = int(delta_seconds // 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min"
    return f"{hours // 24} days"


def today_item(today: datetime) -> Candidate:
    return Candidate("today", "clock", f"{today:%Y-%m-%d} ({today:%A}), {today:%H:%M} UTC", fixed=True)


def erp_items(
    facts: CustomerFacts, tenant: str, kind: str, docs: Sequence[OpenDocument], today: date
) -> list[Candidate]:
    p = facts.party
    source = f"party:{tenant}/{kind}/{p.external_id}"
    parts = [f"{kind.capitalize()} {one_line(p.external_id, 128)}"]
    if p.name:
        parts[0] += f" — {one_line(p.name, 120)}"
    for label, value in (
        ("status", p.status),
        ("class", p.party_class),
        ("currency", p.currency),
        ("credit limit", money(p.credit_limit) if p.credit_limit is not None else None),
        ("terms", p.terms),
        ("tax zone", p.tax_zone),
        ("tax id", p.tax_id),
    ):
        if value not in (None, ""):
            parts.append(f"{label} {one_line(value, 80)}")
    items = [Candidate("erp_facts", source, "; ".join(parts), fixed=True)]
    items.append(_balance_item(source, kind, docs, today))
    extra_rows: list[tuple[str, str]] = []
    contacts = [(c.role, (c.name, c.email, c.phone)) for c in facts.contacts]
    if (p.email or p.phone) and not any(p.email and p.email in fields for _, fields in contacts):
        contacts.insert(0, ("account", (None, p.email, p.phone)))
    addresses = [
        (a.role, (a.line1, a.line2, a.city, a.region, a.postal_code, a.country)) for a in facts.addresses
    ]
    for label, rows in (("contact", contacts), ("address", addresses)):
        roles: dict[str, list[str]] = {}  # identical entries under several roles become one line
        for role, values in rows:
            text = ", ".join(one_line(v, 120) for v in values if v)
            if text:
                roles.setdefault(text, []).append(one_line(role, 32))
        for text, names in roles.items():
            extra_rows.append((f"{label} ({', '.join(dict.fromkeys(names))})", text))
    for name, value in facts.attributes:
        extra_rows.append(
            (f"attribute {one_line(name, 64)}", one_line(value if value is not None else "", 160))
        )
    extra = p.extra if isinstance(p.extra, dict) else {}
    for key in sorted(extra):
        value = extra[key]
        if isinstance(value, (str, int, float, Decimal)) and not isinstance(value, bool):
            extra_rows.append((one_line(key, 64), one_line(value, 160)))
    for index, (label, value) in enumerate(extra_rows, start=1):
        items.append(
            Candidate("erp_facts", f"{source}#{index}", f"- {label}: {value}", rank=index, order=index)
        )
    return items


def _balance_item(source: str, kind: str, docs: Sequence[OpenDocument], today: date) -> Candidate:
    """Open receivables of a customer (invoices less credit memos) or payables of a vendor (bills)."""
    what, types = (
        ("payables", ("ap_bill",)) if kind == "vendor" else ("receivables", ("ar_invoice", "credit_memo"))
    )
    receivable = [d for d in docs if d.doc_type in types and d.balance is not None]
    by_currency: dict[str, list[Decimal]] = {}
    overdue: dict[str, list[Decimal]] = {}
    for d in receivable:
        sign = Decimal(-1) if d.doc_type == "credit_memo" else Decimal(1)
        assert d.balance is not None
        by_currency.setdefault(d.currency or "", []).append(sign * d.balance)
        if d.overdue_days(today):
            overdue.setdefault(d.currency or "", []).append(d.balance)
    if not receivable:
        text = f"- open {what}: none"
    else:
        totals = ", ".join(
            f"{money(sum(v, Decimal(0)))} {c}".rstrip() for c, v in sorted(by_currency.items())
        )
        late = ", ".join(f"{money(sum(v, Decimal(0)))} {c}".rstrip() for c, v in sorted(overdue.items()))
        n_late = sum(len(v) for v in overdue.values())
        text = f"- open {what}: {totals} across {len(receivable)} documents"
        text += (
            f"; overdue: {late} across {n_late} {'bills' if kind == 'vendor' else 'invoices'}"
            if n_late
            else "; none overdue"
        )
    return Candidate("erp_facts", f"{source}#balance", text, rank=0, order=0)


def document_items(tenant: str, docs: Sequence[OpenDocument], today: date, limit: int) -> list[Candidate]:
    """Overdue first (most overdue first), then by due date; at most ``limit`` candidates."""
    ordered = sorted(
        docs,
        key=lambda d: (
            0 if d.overdue_days(today) else 1,
            -d.overdue_days(today),
            d.due_date or date.max,
            d.number,
            d.doc_type,
            d.external_id,
        ),
    )
    items = []
    for rank, d in enumerate(ordered[:limit]):
        parts = [f"- {one_line(d.number, 64)} ({DOC_LABELS.get(d.doc_type, d.doc_type)})"]
        if d.doc_date:
            parts.append(f"dated {d.doc_date.isoformat()}")
        if d.due_date:
            late = d.overdue_days(today)
            word = "due" if d.doc_type in PAYABLE_TYPES else "requested"
            parts.append(f"{word} {d.due_date.isoformat()}" + (f", {late} days overdue" if late else ""))
        currency = f" {d.currency}" if d.currency else ""
        if d.balance is not None:
            parts.append(f"balance {money(d.balance)} of {money(d.amount)}{currency}")
        elif d.amount is not None:
            parts.append(f"amount {money(d.amount)}{currency}")
        if d.status:
            parts.append(f"status {one_line(d.status, 32)}")
        if d.customer_ref:
            ref = "vendor ref" if d.doc_type == "ap_bill" else "customer ref"
            parts.append(f"{ref} {one_line(d.customer_ref, 64)}")
        if d.description:
            parts.append(f'"{one_line(d.description, 120)}"')
        source = f"document:{tenant}/{d.doc_type}/{d.external_id}"
        items.append(Candidate("open_documents", source, "; ".join(parts), rank=rank, order=rank))
    return items


def pinned_items(session_id: str, pins: Sequence[PinnedValue], query: str) -> list[Candidate]:
    """Every pinned value is fixed: shown in every context, never dropped for budget. Explicit pins
    come first; values extracted from tool results follow, grouped per document and tool call, one
    line each: documents the query names first, then by turn. (Working memory bounds how many
    extracted values a session keeps pinned, ``working.max_extracted_pins``.)"""
    items = []
    groups: dict[tuple[int, str], list[PinnedValue]] = {}
    for order, p in enumerate(pins):
        if p.explicit:
            origin = one_line(p.source, 80) if p.source else "pinned by the workflow"
            text = f"- {one_line(p.name, 120)} = {one_line(p.value, 200)} ({p.kind}; {origin})"
            items.append(Candidate("pinned", f"pin:{session_id}/{p.name}", text, order=order, fixed=True))
        else:
            head = p.name.split(".", 1)[0] if p.kind != "document" else p.name
            groups.setdefault((p.seq or 0, head), []).append(p)
    wanted = query.upper()
    ranked = sorted(groups.items(), key=lambda g: (g[0][1].upper() not in wanted, g[0][0], g[0][1]))
    for rank, ((seq, head), members) in enumerate(ranked):
        fields = [
            f"{one_line(p.name[len(head) + 1 :], 80)} {one_line(p.value, 120)}"
            for p in sorted(members, key=lambda p: p.name)
            if p.name != head
        ]
        origin = one_line(members[0].source, 80) if members[0].source else f"turn {seq}"
        text = (
            f"- {one_line(head, 120)}: {'; '.join(fields)} ({origin})"
            if fields
            else f"- {one_line(head, 120)} ({origin})"
        )
        source = f"pin:{session_id}/{head}@{seq}"
        items.append(Candidate("pinned", source, text, rank=rank, order=len(pins) + rank, fixed=True))
    return items


def fact_items(facts: Sequence[Any]) -> list[Candidate]:
    items = []
    for rank, f in enumerate(facts):
        head = f"- fact {f.id} (importance {f.importance:.2f}" + (
            f", from {one_line(f.source, 60)})" if f.source else ")"
        )
        items.append(
            Candidate(
                "learned_facts",
                f"fact:{f.id}",
                head + ":",
                f.content,
                rank=rank,
                order=rank,
                score=f.importance,
            )
        )
    return items


def case_items(hits: Sequence[Any]) -> list[Candidate]:
    items = []
    for rank, h in enumerate(hits):
        docs = f", documents {', '.join(one_line(d, 40) for d in h.documents[:6])}" if h.documents else ""
        head = f"{h.occurred_at:%Y-%m-%d} (case {one_line(h.case_id, 64)}, similarity {h.score:.2f}{docs}):"
        items.append(
            Candidate(
                "past_cases", f"case:{h.case_id}", head, h.summary, rank=rank, order=rank, score=h.score
            )
        )
    return items


def summary_items(state: SessionState, max_chars: int) -> tuple[list[Candidate], int]:
    """A non-LLM summary is split into its lines (newest kept longest); an LLM summary is one item.

    Only the newest lines that could fit at all (``max_chars`` in total) become candidates; the
    second value counts the older lines left out.
    """
    if not state.summary:
        return [], 0
    sid = state.info.session_id
    source = f"summary:{sid}@{state.summary_upto_seq}"
    if state.summary_mode != "non-llm":
        return [Candidate("summary", source, "", state.summary)], 0
    lines = [line for line in state.summary.split("\n")[1:] if line.strip()]
    first, total = len(lines), 0
    while first > 0 and total + len(lines[first - 1]) <= max_chars:
        first -= 1
        total += len(lines[first])
    n = len(lines)
    items = [
        Candidate("summary", f"{source}/{i + 1}", "", lines[i], rank=n - 1 - i, order=i)
        for i in range(first, n)
    ]
    return items, first


def _turn_head(turn: Turn) -> str:
    stamp = f"{turn.created_at:%Y-%m-%d %H:%M}"
    if turn.role == "tool" or turn.tool_name:
        args = compact_json(turn.tool_args) if turn.tool_args is not None else ""
        name = one_line(turn.tool_name or "tool", 64)
        return f"[turn {turn.seq}, {stamp}] tool call {name}({one_line(args, 300)}):"
    return f"[turn {turn.seq}, {stamp}] {turn.role}:"


def _turn_body(turn: Turn) -> str:
    if turn.role == "tool" or turn.tool_name:
        result = compact_json(turn.tool_result) if turn.tool_result is not None else "(no result)"
        return f"{result}\n{turn.content}" if turn.content.strip() else result
    return turn.content


def turn_items(state: SessionState) -> list[Candidate]:
    """Unsummarised turns, shown oldest first, dropped oldest first."""
    sid = state.info.session_id
    n = len(state.turns)
    return [
        Candidate(
            "recent_turns", f"turn:{sid}#{t.seq}", _turn_head(t), _turn_body(t), rank=n - 1 - i, order=i
        )
        for i, t in enumerate(state.turns)
    ]
