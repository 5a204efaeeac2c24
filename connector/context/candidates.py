"""Candidate items of each context section, with their value rank and provenance.

A candidate has a trusted ``head`` written by us and an optional untrusted ``body`` that is
always rendered as a quoted block. ``rank`` orders value within a section (0 = keep longest);
``order`` is where the item is shown. ``fixed`` items (today, the ERP header, pinned values) are
never dropped by the budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from connector.context.labels import (
    DOC_DATES,
    attribute_label,
    counted,
    erp_attribute_labels,
    erp_name,
    kind_label,
    party_field,
    status_text,
)
from connector.context.money import amount_text, money, money_text
from connector.context.money import totals as totals_text
from connector.context.quote import one_line, quote
from connector.conversations.models import TurnHit
from connector.semantic.documents import KindTotal, OpenDocument
from connector.semantic.parties import CustomerFacts
from connector.working.models import PinnedValue, SessionState, Turn
from connector.working.summary import DECISIONS, OTHER
from connector.working.text import compact_json


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
    lexical_score: float | None = None  # a recall hit's parts (see ContextItem)
    fused_score: float | None = None
    matched_terms: tuple[str, ...] = ()

    def render(self, body: str | None = None) -> str:
        return rendered(self.head, self.body if body is None else body)


def rendered(head: str, body: str | None) -> str:
    """A candidate's text: its head, then its body (if any) as a quoted block."""
    if body is None:
        return head
    quoted = quote(body) if body.strip() else "> (empty)"
    return f"{head}\n{quoted}" if head else quoted


NOT_SHOWN = "documents:not_shown"
BALANCE_KINDS = frozenset({"ar_invoice", "credit_memo", "ap_bill"})  # kinds that carry an open balance


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
    facts: CustomerFacts, tenant: str, kind: str, totals: Sequence[KindTotal], erp: str | None
) -> list[Candidate]:
    """The party's header (fixed), its balance line, then contacts, addresses and ERP fields.

    The name is ERP free text and is quoted; amounts carry the party's currency; ERP field names
    get readable labels while the provenance id keeps the raw name (``...#field:open_orders_balance``).
    """
    p = facts.party
    source = f"party:{tenant}/{kind}/{p.external_id}"
    parts = [f"{kind.capitalize()} {one_line(p.external_id, 128)}"]
    for label, value in (
        ("status", p.status),
        ("class", p.party_class),
        ("currency", p.currency),
        ("credit limit", money(p.credit_limit, p.currency) if p.credit_limit is not None else None),
        ("terms", p.terms),
        ("tax zone", p.tax_zone),
        ("tax id", p.tax_id),
    ):
        if value not in (None, ""):
            parts.append(f"{label} {one_line(value, 80)}")
    name = one_line(p.name, 200) if p.name else None
    items = [Candidate("erp_facts", source, "; ".join(parts) + ("; name:" if name else ""), name, fixed=True)]
    items.append(_balance_item(source, kind, totals, erp))
    extra_rows: list[tuple[str, str, str]] = []
    contacts = [(c.role, (c.name, c.email, c.phone)) for c in facts.contacts]
    if (p.email or p.phone) and not any((p.email or p.phone) in fields for _, fields in contacts):
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
        for index, (text, names) in enumerate(roles.items(), start=1):
            extra_rows.append((f"{label}:{index}", f"{label} ({', '.join(dict.fromkeys(names))})", text))
    own_labels = erp_attribute_labels(erp, p.raw)
    for raw, value in facts.attributes:
        text = one_line(value if value is not None else "", 160)
        extra_rows.append((f"attribute:{raw}", attribute_label(erp, raw, own_labels), text))
    extra = p.extra if isinstance(p.extra, dict) else {}
    for key in sorted(extra):
        value = extra[key]
        if isinstance(value, (str, int, float, Decimal)) and not isinstance(value, bool):
            field = party_field(erp, key)
            shown = (money_text(value, p.currency) if field.money else None) or one_line(value, 160)
            extra_rows.append((f"field:{key}", field.label, f"{shown} {field.unit}".rstrip()))
    for index, (raw, label, value) in enumerate(extra_rows, start=1):
        items.append(
            Candidate(
                "erp_facts", f"{source}#{raw}", f"- {one_line(label, 64)}: {value}", rank=index, order=index
            )
        )
    return items


def _balance_item(source: str, kind: str, totals: Sequence[KindTotal], erp: str | None) -> Candidate:
    """Open receivables of a customer (invoices less credit memos) or payables of a vendor (bills),
    over every open document; documents the ERP gives no balance for are said to be so. SAP's open
    items (``open_item``) carry their balance signed from the party's side (credits negative), so
    they add up as they are."""
    what, types = (
        ("payables", ("ap_bill", "open_item"))
        if kind == "vendor"
        else ("receivables", ("ar_invoice", "credit_memo", "open_item"))
    )
    late_word = ("bill", "bills") if kind == "vendor" else ("invoice", "invoices")
    relevant = [t for t in totals if t.doc_type in types]
    by_currency: dict[str, Decimal] = {}
    overdue: dict[str, Decimal] = {}
    with_balance = n_late = 0
    unknown: dict[str, list[KindTotal]] = {}
    for t in relevant:
        sign = Decimal(-1) if t.doc_type == "credit_memo" else Decimal(1)
        if t.with_balance:
            by_currency[t.currency] = by_currency.get(t.currency, Decimal(0)) + sign * t.balance
            with_balance += t.with_balance
        if t.overdue:
            overdue[t.currency] = overdue.get(t.currency, Decimal(0)) + t.overdue_balance
            n_late += t.overdue
        if t.count > t.with_balance and not (has_open_items(totals) and t.doc_type != "open_item"):
            unknown.setdefault(t.doc_type, []).append(t)  # (open items, where held, carry the balances)
    if not relevant:
        text = f"- open {what}: none"
    elif with_balance:
        text = f"- open {what}: {totals_text(by_currency)} across {counted(with_balance, 'document')}"
        text += (
            f"; overdue: {totals_text(overdue)} across {counted(n_late, *late_word)}"
            if n_late
            else "; none overdue"
        )
    else:
        text = f"- open {what}: balance not available from {erp_name(erp)}"
    for doc_type, rows in sorted(unknown.items()):
        n = sum(t.count - t.with_balance for t in rows)
        amounts = {t.currency: t.amount_without_balance for t in rows}
        kinds = counted(n, f"open {kind_label(doc_type)}", f"open {kind_label(doc_type, 2)}")
        text += (
            f" ({kinds}, amount {totals_text(amounts)})"
            if not with_balance
            else f"; {kinds} without a balance from {erp_name(erp)} (amount {totals_text(amounts)})"
        )
    return Candidate("erp_facts", f"{source}#balance", text, rank=0, order=0)


def document_items(
    tenant: str,
    named: Sequence[OpenDocument],
    ranked: Sequence[OpenDocument],
    today: date,
    erp: str | None,
    totals: Sequence[KindTotal],
) -> list[Candidate]:
    """The documents the query names first (kept longest), then the ranking (overdue first), and a
    fixed placeholder that reserves room for the "not shown" line (the builder fills it in)."""
    items = []
    seen: set[tuple[str, str]] = set()
    for rank, (d, is_named) in enumerate([*((d, True) for d in named), *((d, False) for d in ranked)]):
        if (d.doc_type, d.external_id) in seen:
            continue
        seen.add((d.doc_type, d.external_id))
        items.append(_document_item(tenant, d, today, erp, is_named, rank, has_open_items(totals)))
    longest = omitted_item(totals, [])
    if longest is not None:
        items.append(replace(longest, fixed=True))
    return items


def has_open_items(totals: Sequence[KindTotal]) -> bool:
    """Whether the party's balances come from ERP open items (SAP) rather than its documents."""
    return any(t.doc_type == "open_item" for t in totals)


def _document_item(
    tenant: str, d: OpenDocument, today: date, erp: str | None, named: bool, rank: int, items: bool
) -> Candidate:
    """One document line; ``items``: the party's balances are held as open items (SAP)."""
    notes = (
        [kind_label(d.doc_type)]
        + (["named in the query"] if named else [])
        + ([] if d.is_open else ["closed"])
    )
    parts = [f"- {one_line(d.number, 64)} ({', '.join(notes)})"]
    dated, due = DOC_DATES.get(d.doc_type, ("dated", "due"))
    if d.doc_date:
        parts.append(f"{dated} {d.doc_date.isoformat()}")
    if d.due_date:
        late = d.overdue_days(today)
        parts.append(
            f"{due} {d.due_date.isoformat()}" + (f", {counted(late, 'day')} overdue" if late else "")
        )
    if d.balance is not None:
        whole = money(d.amount, d.currency)
        parts.append(f"balance {amount_text(d.balance, d.currency)} of {whole}")
    elif d.amount is not None:
        parts.append(f"amount {money(d.amount, d.currency)}")
        if d.doc_type in BALANCE_KINDS and d.is_open:
            parts.append(
                "balance in its open items" if items else f"balance not available from {erp_name(erp)}"
            )
    if d.status:
        parts.append(f"status {one_line(status_text(d.status), 32)}")
    if d.customer_ref:
        ref = "vendor ref" if d.doc_type == "ap_bill" else "customer ref"
        parts.append(f"{ref} {one_line(d.customer_ref, 64)}")
    source = f"document:{tenant}/{d.doc_type}/{d.external_id}"
    description = one_line(d.description, 200) if d.description else None
    head = "; ".join(parts) + ("; description:" if description else "")
    return Candidate("open_documents", source, head, description, rank=rank, order=rank)


@dataclass(slots=True)
class _Left:
    count: int
    with_balance: int
    balance: Decimal
    amount_without_balance: Decimal


def omitted_item(totals: Sequence[KindTotal], shown: Sequence[OpenDocument]) -> Candidate | None:
    """``- 285 more open documents not shown: ...`` per kind and currency, or None if all are shown.

    The counts and sums are the SQL totals less the open documents shown, so they cover every
    open document of the party.
    """
    left = {
        (t.doc_type, t.currency): _Left(t.count, t.with_balance, t.balance, t.amount_without_balance)
        for t in totals
    }
    for d in shown:
        row = left.get((d.doc_type, d.currency or ""))
        if row is None or not d.is_open:
            continue
        row.count -= 1
        if d.balance is not None:
            row.with_balance -= 1
            row.balance -= d.balance
        elif d.amount is not None:
            row.amount_without_balance -= d.amount
    missing = sum(r.count for r in left.values())
    if missing <= 0:
        return None
    per_kind: dict[str, list[tuple[str, _Left]]] = {}
    for (doc_type, currency), row in sorted(left.items()):
        if row.count > 0:
            per_kind.setdefault(doc_type, []).append((currency, row))
    pieces = []
    for doc_type, rows in per_kind.items():
        n = sum(r.count for _, r in rows)
        balances = {c: r.balance for c, r in rows if r.with_balance > 0}
        amounts = {c: r.amount_without_balance for c, r in rows if r.count > r.with_balance}
        sums = [f"balance {totals_text(balances)}"] if balances else []
        if amounts:
            sums.append(f"{'amount without a balance' if balances else 'amount'} {totals_text(amounts)}")
        pieces.append(", ".join([counted(n, kind_label(doc_type), kind_label(doc_type, 2)), *sums]))
    text = f"- {counted(missing, 'more open document')} not shown: {'; '.join(pieces)}"
    text += " (look one up by its number)"
    return Candidate("open_documents", NOT_SHOWN, text, rank=10**6, order=10**6)


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
                "past_cases",
                f"case:{h.case_id}",
                head,
                h.summary,
                rank=rank,
                order=rank,
                score=h.score,
                lexical_score=h.lexical_score,
                fused_score=h.fused_score,
                matched_terms=tuple(h.matched_terms),
            )
        )
    return items


_NEIGHBOUR_CHARS = 600  # a neighbour is context for its hit: long ones are cut so the hit stays in view
_HIT_CHARS = 2_000


def _window_line(turn: Turn, *, hit: bool) -> str:
    limit = _HIT_CHARS if hit else _NEIGHBOUR_CHARS
    text = _turn_body(turn)
    if len(text) > limit:
        text = text[:limit].rstrip() + " …"
    mark = ", matched" if hit else ""
    who = f"tool {turn.tool_name}" if turn.role == "tool" and turn.tool_name else turn.role
    return f"[turn {turn.seq}, {turn.created_at:%Y-%m-%d %H:%M}, {who}{mark}] {text}"


def _repeated(hit: TurnHit) -> str:
    """How often else the same words were said (the repeats are not hits of their own)."""
    if not hit.repeats:
        return ""
    dates = sorted({f"{t.created_at:%Y-%m-%d}" for t in hit.repeats})
    shown = ", ".join(dates[:3]) + (", ..." if len(dates) > 3 else "")
    return f"; the same words {len(hit.repeats)} more time(s): {shown}"


def conversation_items(hits: Sequence[TurnHit]) -> list[Candidate]:
    """One item per hit of an earlier session: a dated head of ours, then the hit with its
    neighbours quoted as data (turn texts are the customer's and the agent's words)."""
    items = []
    for rank, h in enumerate(hits):
        t = h.turn
        head = (
            f"{t.created_at:%Y-%m-%d} (session {one_line(t.session_id, 64)}, turn {t.seq}, "
            f"similarity {h.score:.2f}{_repeated(h)}):"
        )
        body = "\n".join(_window_line(w, hit=w is t) for w in h.window)
        source = f"conversation:{t.session_id}#{t.seq}"
        items.append(
            Candidate(
                "earlier_conversations",
                source,
                head,
                body,
                rank=rank,
                order=rank,
                score=h.score,
                lexical_score=h.lexical_score,
                fused_score=h.fused_score,
                matched_terms=tuple(h.matched_terms),
            )
        )
    return items


def summary_items(state: SessionState, max_chars: int) -> tuple[list[Candidate], int]:
    """A non-LLM summary is split into its lines; an LLM summary is one item.

    Non-LLM lines are one per document (shown and kept in order of first mention), then the
    decisions and the other values, which go first when the budget is short. Only lines that
    could fit at all (``max_chars`` in total) become candidates; the second value counts the rest.
    """
    if not state.summary:
        return [], 0
    sid = state.info.session_id
    source = f"summary:{sid}@{state.summary_upto_seq}"
    if state.summary_mode != "non-llm":
        return [Candidate("summary", source, "", state.summary)], 0
    lines = [line for line in state.summary.split("\n") if line.strip() and not line.startswith("[")]
    general = [i for i, line in enumerate(lines) if line.startswith((DECISIONS, OTHER))]
    by_value = [i for i in range(len(lines)) if i not in general] + general
    items: list[Candidate] = []
    total = 0
    for rank, i in enumerate(by_value):
        total += len(lines[i])
        if total > max_chars and items:
            break
        items.append(Candidate("summary", f"{source}/{i + 1}", "", lines[i], rank=rank, order=i))
    return items, len(lines) - len(items)


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
