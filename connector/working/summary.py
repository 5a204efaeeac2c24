"""Summaries of folded turns that keep the facts: document numbers, amounts, dates, decisions.

The non-LLM summary is extractive and merged per document: one line per reference (a document
number, a purchase-order, ticket or tracking number, an e-mail address: any identifier, kept exactly
as the turn wrote it; :mod:`connector.working.references`) with
every amount (with its currency when the turn gave one), date and decision said about it, and the
turns it came from; values said about no document and decisions about none get a line each. A
fold parses the previous summary back and merges the new turns into it, so the summary grows with
the number of documents discussed, not with the number of turns, and a reference from turn 2 of a
500-turn session is still one short line.

After an LLM summary, :func:`restore_facts` re-adds every document number and amount of the
folded turns (and of the previous summary) that the LLM left out.

Kept apart from the store so that the fold can run wherever it is scheduled.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from connector.working.models import Turn
from connector.working.references import references_of
from connector.working.text import turn_text

CURRENCIES = (
    "USD", "EUR", "GBP", "CHF", "JPY", "DKK", "SEK", "NOK", "PLN", "CZK", "HUF", "CAD", "AUD", "NZD",
    "CNY", "INR", "MXN", "BRL", "ZAR", "SGD", "HKD", "KWD", "BHD",
)  # fmt: skip
_CUR = "|".join(CURRENCIES)
_SYMBOLS = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY"}
_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d+"
_AMOUNT = re.compile(
    rf"(?P<sym>[$€£¥])\s?(?P<a>{_NUMBER})"
    rf"|\b(?P<cur1>{_CUR})\s?(?P<b>{_NUMBER})\b"
    rf"|(?<![\w.,-])(?P<c>{_NUMBER})\s?(?P<cur2>{_CUR})\b"
    rf"|(?<![\w.,-])(?P<d>\d{{1,3}}(?:,\d{{3}})+\.\d{{2}}|\d+\.\d{{2}})(?![\w]|[.,]\d)"
)
_DATE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}\b"
    r"|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?,? \d{4}\b"
    r"|\b\d{1,2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.? \d{4}\b",
    re.IGNORECASE,
)
# In a tool result's fields: INV-004821, SO000123, CM-000311, PO-778812, AR004821; SAP's 8-10 digit
# document numbers. Whole tokens only (never ZX-99124 out of PO-ZX-99124). Turn text is read for
# every reference instead (connector.working.references).
_DOCUMENT = re.compile(r"(?<![\w/.-])(?:[A-Z]{1,6}-?\d{3,}(?:-\d+)?|\d{8,10})(?![\w/-])")
_DECISION = re.compile(
    r"\b(?:agree[sd]?|approv\w*|promis\w*|decid\w*|decision|confirm\w*|will|won't|we'll|i'll|refund\w*|"
    r"waiv\w*|cancel\w*|escalat\w*|reject\w*|declin\w*|on hold|put on hold|disput\w*|issue[sd]?|"
    r"credit(?:ed)? memo|write[- ]off|pay(?:s|ing)? by|paid|extend\w*)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_AMOUNT_KEYS = re.compile(r"amount|total|balance|price|sum|paid|due|credit|tax|net|gross", re.IGNORECASE)
_CURRENCY_KEYS = ("Currency", "CurrencyID", "currency", "TransactionCurrency", "DocumentCurrency")
DECISION_CHARS = 160
OTHER = "Other values"
DECISIONS = "Decisions"
_PLAIN_AMOUNT = re.compile(rf"-?[\d,]+(?:\.\d+)?(?: (?:{_CUR}))?")
_LINE = re.compile(r"^(?P<key>.+?) \(turns? (?P<first>\d+)(?: to (?P<last>\d+))?\): (?P<facts>.*)$")


@dataclass(slots=True)
class Facts:
    """What was said about one document (or about none): values in order, and where."""

    first: int
    last: int
    values: list[str] = field(default_factory=list)

    def add(self, seq: int, values: Iterable[str]) -> None:
        self.first, self.last = min(self.first, seq), max(self.last, seq)
        for value in values:
            if not value or value in self.values:
                continue
            if _PLAIN_AMOUNT.fullmatch(value) and _normalised(value.split()[0]) in _normalised(
                " ".join(self.values)
            ):
                continue  # the same amount, already kept with its field name or another spelling
            self.values.append(value)


@dataclass(slots=True)
class Digest:
    """The merged facts of folded turns, keyed by document number (plus OTHER and DECISIONS)."""

    upto: int = 0
    entries: dict[str, Facts] = field(default_factory=dict)

    def add(self, key: str, seq: int, values: Iterable[str]) -> None:
        values = list(values)
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = Facts(seq, seq)
        entry.add(seq, values)

    def lines(self) -> list[str]:
        """Document lines in order of first mention, then other values, then decisions about none."""
        docs = [(k, e) for k, e in self.entries.items() if k not in (OTHER, DECISIONS)]
        docs.sort(key=lambda item: (item[1].first, item[0]))
        tail = [(k, self.entries[k]) for k in (OTHER, DECISIONS) if k in self.entries]
        return [_line(k, e) for k, e in [*docs, *tail]]


def _line(key: str, entry: Facts) -> str:
    turns = f"turn {entry.first}" if entry.first == entry.last else f"turns {entry.first} to {entry.last}"
    return f"{key} ({turns}): {'; '.join(entry.values) if entry.values else 'mentioned'}"


def header(upto: int) -> str:
    return (
        f"[non-LLM summary of turns 1-{upto}: every document number, amount, date and decision, per document]"
    )


def parse(summary: str | None) -> Digest:
    """A summary written by :func:`extractive_fold`, read back (lines of any other form are kept
    under OTHER, so nothing of an older summary is lost)."""
    digest = Digest()
    if not summary:
        return digest
    for raw in summary.split("\n"):
        line = raw.strip()
        if not line:
            continue
        head = re.match(r"^\[non-LLM summary of turns 1-(\d+)", line)
        if head:
            digest.upto = int(head.group(1))
            continue
        if line.startswith("["):
            continue  # the header of an older summary format
        match = _LINE.match(line)
        if match is None:
            digest.add(OTHER, 0, [line])
            continue
        first, last = int(match.group("first")), int(match.group("last") or match.group("first"))
        facts = [] if match.group("facts") == "mentioned" else match.group("facts").split("; ")
        digest.add(match.group("key"), first, facts)
        digest.entries[match.group("key")].last = max(digest.entries[match.group("key")].last, last)
    return digest


def _amount(match: re.Match[str], currency: str | None) -> str:
    if match.group("sym"):
        return f"{match.group('a')} {_SYMBOLS[match.group('sym')]}"
    if match.group("cur1"):
        return f"{match.group('b')} {match.group('cur1')}"
    if match.group("cur2"):
        return f"{match.group('c')} {match.group('cur2')}"
    return f"{match.group('d')} {currency}" if currency else match.group("d")


def _flat(text: str) -> str:
    return " ".join(text.replace(";", ",").split())


def facts_of(text: str, currency: str | None = None) -> list[str]:
    """Amounts (with a currency when one is written or given) and dates in ``text``, in order."""
    found: list[tuple[int, str]] = []
    for m in _DATE.finditer(text):
        found.append((m.start(), m.group(0)))
    dates = [(m.start(), m.end()) for m in _DATE.finditer(text)]
    written = re.search(rf"\b(?:{_CUR})\b", text)
    for m in _AMOUNT.finditer(text):
        if any(a <= m.start() < b for a, b in dates):
            continue
        found.append((m.start(), _amount(m, currency or (written.group(0) if written else None))))
    found.sort()
    return list(dict.fromkeys(v for _, v in found))


def documents_of(text: str) -> list[str]:
    """Every reference ``text`` states, verbatim (document numbers, order and ticket ids, e-mails...)."""
    return references_of(text)


def _erp_documents(text: str) -> list[str]:
    """ERP document numbers in a tool result's field (not its contacts' phones or e-mails)."""
    return list(dict.fromkeys(m.group(0) for m in _DOCUMENT.finditer(text)))


def _decision(sentence: str) -> str | None:
    """The sentence, or the part of a long one around its first decision word."""
    flat = _flat(sentence)
    match = _DECISION.search(flat)
    if match is None:
        return None
    if len(flat) <= DECISION_CHARS:
        return flat
    start = max(0, match.start() - DECISION_CHARS // 3)
    piece = flat[start : start + DECISION_CHARS - 2].strip()
    return ("…" if start else "") + piece + ("…" if start + DECISION_CHARS - 2 < len(flat) else "")


def _walk(value: Any, seq: int, digest: Digest, currency: str | None) -> bool:
    """Structured tool results: each object naming a document gives that document its values."""
    if isinstance(value, list):
        return any([_walk(v, seq, digest, currency) for v in value])
    if not isinstance(value, dict):
        return False
    own = next((str(value[k]) for k in _CURRENCY_KEYS if isinstance(value.get(k), str)), currency)
    scalars = {k: v for k, v in value.items() if isinstance(v, (str, int, float)) and not isinstance(v, bool)}
    docs = [d for v in scalars.values() for d in _erp_documents(str(v))]
    nested = any([_walk(v, seq, digest, own) for v in value.values() if isinstance(v, (dict, list))])
    if not docs:
        return nested
    values: list[str] = []
    for key, v in scalars.items():
        text = str(v)
        if _DATE.fullmatch(text.strip()[:10]) and len(text.strip()) <= 25:
            values.append(f"{key} {text.strip()[:10]}")
        elif re.fullmatch(r"-?\d+(?:\.\d+)?", text.strip()) and _AMOUNT_KEYS.search(key):
            values.append(f"{key} {text.strip()}" + (f" {own}" if own else ""))
        elif isinstance(v, str) and _DECISION.search(key + " " + text) and key.lower() in ("status", "note"):
            values.append(f"{key} {_flat(text)[:60]}")
    for doc in docs:
        digest.add(doc, seq, values)
    return True


def fold_turn(digest: Digest, turn: Turn) -> None:
    """Merge one turn's facts into ``digest``: by sentence, each fact to the documents beside it
    (or to the turn's only document), the rest to OTHER / DECISIONS."""
    seq = turn.seq
    if turn.tool_result is not None and _walk(turn.tool_result, seq, digest, None):
        text = turn.content
    else:
        text = turn_text(turn)
    if not text.strip():
        return
    turn_docs = documents_of(text)
    for sentence in _SENTENCE.split(text):
        if not sentence.strip():
            continue
        docs = documents_of(sentence) or (turn_docs if len(turn_docs) == 1 else [])
        values = [v for v in facts_of(sentence) if v not in docs]
        decision = _decision(sentence)
        if decision:
            values.append(f"{turn.role}: {decision}")
        if docs:
            for doc in docs:
                digest.add(doc, seq, values)
        elif decision:
            digest.add(DECISIONS, seq, [f"{turn.role}: {decision}"])
            other = [v for v in values if not v.startswith(f"{turn.role}: ")]
            if other:
                digest.add(OTHER, seq, other)
        elif values:
            digest.add(OTHER, seq, values)


def extractive_fold(previous: str | None, turns: Sequence[Turn]) -> str:
    """The previous non-LLM summary with ``turns`` merged in, as text (header line first)."""
    digest = parse(previous)
    for turn in turns:
        fold_turn(digest, turn)
        digest.upto = max(digest.upto, turn.seq)
    return "\n".join([header(digest.upto), *digest.lines()])


def _normalised(text: str) -> str:
    return re.sub(r"(?<=\d),(?=\d{3})", "", text).upper()


def _has_number(text: str, number: str) -> bool:
    wanted = re.escape(_normalised(number))
    return re.search(rf"(?<![\d.]){wanted}(?![\d])", _normalised(text)) is not None


def _amounts_in(text: str) -> list[str]:
    return [
        _normalised(m.group("a") or m.group("b") or m.group("c") or m.group("d"))
        for m in _AMOUNT.finditer(text)
    ]


KEPT = "Kept from the turns (the summary had left them out): "


def _missing(piece: str, have: str) -> bool:
    """True when a document number or amount of ``piece`` is not in the (normalised) summary."""
    return any(_normalised(d) not in have for d in documents_of(piece)) or any(
        a not in have for a in _amounts_in(piece)
    )


def restore_facts(summary: str, previous: str | None, turns: Sequence[Turn]) -> str:
    """``summary`` (an LLM's) plus a line with every document number and amount of the folded
    turns and of ``previous`` that it left out, merged per document like the non-LLM summary."""
    wanted = Digest()
    for turn in turns:
        fold_turn(wanted, turn)
    have = _normalised(summary)
    lost: list[str] = []
    for key, entry in wanted.entries.items():
        amounts = [
            v
            for v in entry.values
            if not re.match(r"^\w+: ", v) and any(a not in have for a in _amounts_in(v))
        ]
        if key not in (OTHER, DECISIONS) and (amounts or _normalised(key) not in have):
            lost.append(f"{key}: {', '.join(amounts)}" if amounts else key)
        elif amounts:
            lost.extend(amounts)
    # What the previous summary held: its own restored pieces as they were, then bare tokens.
    prose, _, kept = (previous or "").partition(KEPT)
    earlier = [p for p in kept.split("; ") if p.strip()]
    earlier += [*documents_of(prose), *(m.group(0).strip() for m in _AMOUNT.finditer(prose))]
    for piece in earlier:
        if _missing(piece, have) and not any(not _missing(piece, _normalised(p)) for p in lost):
            lost.append(piece)
    if not lost:
        return summary
    return f"{summary.rstrip()}\n{KEPT}{'; '.join(lost)}"
