"""Pull the values a workflow depends on out of structured tool results.

Amounts, dates and document numbers in a tool result become pinned values: state that is stored
apart from the conversation, so no summary (LLM or not) can round, drop or rewrite them. Names
are stable: ``<document>.<field>`` when the value sits in an object that carries a document
number (``INV-004821.Amount``), otherwise ``<tool>.<json path>``. Values are exact text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

# INV-004821, SO-000123, AR004821, CM-000311, PO-4500012345, PO#778, BILL-12, CASE-000042 ...
DOC_NUMBER = re.compile(
    r"(?<![A-Za-z0-9])(?:INV|SO|AR|AP|CM|DM|PO|BILL|PMT|CASE|CS)(?:-|#|/)?\d{3,}(?![A-Za-z0-9])"
)
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ][0-9:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$")
_SAP_DATE = re.compile(r"^/Date\((-?\d+)(?:[+-]\d{4})?\)/$")
_NUMERIC = re.compile(r"^-?\d+(?:\.\d+)?$")

_DOC_KEYS = {
    "referencenbr", "refnbr", "ordernbr", "number", "documentnumber", "docnumber", "invoice",
    "invoicenumber", "invoiceno", "invoicenbr", "salesorder", "billingdocument", "caseid",
    "ponumber", "purchaseorder", "purchaseorderbycustomer", "customerref", "customerorder",
    "vendorref", "creditmemo", "creditmemonumber", "paymentref", "origrefnbr",
}  # fmt: skip
_AMOUNT_WORDS = (
    "amount", "total", "balance", "price", "creditlimit", "subtotal", "tax", "paid",
    "outstanding", "openordersbalance", "remaining", "due", "discount", "credit", "debit",
)  # fmt: skip
_COUNT_WORDS = ("qty", "quantity", "dayspastdue", "days", "count")


@dataclass(frozen=True, slots=True)
class ExtractedValue:
    name: str
    value: str
    kind: str


def _norm_key(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower())


def _unwrap(value: Any) -> Any:
    """Acumatica wraps every field as {"value": x}; an empty field is {}."""
    if isinstance(value, dict) and "value" in value and set(value) <= {"value", "error"}:
        return value["value"]
    return value


def as_decimal_text(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, Decimal)):
        return format(Decimal(value), "f")
    if isinstance(value, float):
        return format(Decimal(repr(value)), "f") if value == value else None
    if isinstance(value, str) and _NUMERIC.match(value.strip()):
        try:
            return format(Decimal(value.strip()), "f")
        except InvalidOperation:
            return None
    return None


def as_date_text(value: Any) -> str | None:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat() if value.tzinfo else value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if not isinstance(value, str):
        return None
    text = value.strip()
    if _ISO_DATE.match(text):
        return text
    sap = _SAP_DATE.match(text)
    if sap:
        return datetime.fromtimestamp(int(sap.group(1)) / 1000, tz=UTC).date().isoformat()
    return None


def _document_of(obj: dict[str, Any]) -> str | None:
    """The document number an object describes: a document key's value, else a pattern match."""
    for key, raw in obj.items():
        value = _unwrap(raw)
        if isinstance(value, str) and value.strip() and _norm_key(str(key)) in _DOC_KEYS:
            return value.strip()
    return None


def _is_amount_key(norm: str) -> bool:
    return "date" not in norm and any(word in norm for word in _AMOUNT_WORDS)


def extract_values(tool_name: str | None, result: Any, *, limit: int = 24) -> list[ExtractedValue]:
    """Amounts, dates, counts and document numbers in ``result``, in document order, at most ``limit``."""
    found: dict[str, ExtractedValue] = {}
    prefix = tool_name or "tool"

    def add(name: str, value: str, kind: str) -> None:
        if len(found) < limit and name not in found:
            found[name] = ExtractedValue(name=name[:200], value=value, kind=kind)

    def scan_text(text: str) -> None:
        for match in DOC_NUMBER.finditer(text):
            number = match.group(0)
            add(number, number, "document")

    def walk(node: Any, path: str, doc: str | None, rel: str) -> None:
        node = _unwrap(node)
        if isinstance(node, dict):
            own = _document_of(node)
            if own is not None:
                add(own, own, "document")
                rel = ""
            context = own or doc
            for key, raw in node.items():
                key_text = str(key)
                value = _unwrap(raw)
                child = f"{path}.{key_text}" if path else key_text
                label = child if child.startswith("[") else f".{child}"
                child_rel = f"{rel}.{key_text}" if rel else key_text
                name = f"{context}.{child_rel}" if context else f"{prefix}{label}"
                norm = _norm_key(key_text)
                if isinstance(value, (dict, list)):
                    walk(value, child, context, child_rel)
                    continue
                if norm in _DOC_KEYS and isinstance(value, str):
                    if value.strip():
                        add(value.strip(), value.strip(), "document")
                    continue
                date_text = as_date_text(value)
                if date_text is not None and ("date" in norm or norm.endswith(("at", "time"))):
                    add(name, date_text, "date")
                elif _is_amount_key(norm) and (amount := as_decimal_text(value)) is not None:
                    add(name, amount, "amount")
                elif any(w in norm for w in _COUNT_WORDS) and (count := as_decimal_text(value)) is not None:
                    add(name, count, "number")
                elif date_text is not None:
                    add(name, date_text, "date")
                if isinstance(value, str):
                    scan_text(value)
        elif isinstance(node, list):
            for index, item in enumerate(node):
                walk(item, f"{path}[{index}]", doc, f"{rel}[{index}]")
        elif isinstance(node, str):
            scan_text(node)

    walk(result, "", None, "")
    return list(found.values())


def pin_kind(value: Any) -> str:
    """The kind of an explicitly pinned scalar."""
    if isinstance(value, str) and DOC_NUMBER.fullmatch(value.strip()):
        return "document"
    if as_date_text(value) is not None:
        return "date"
    number = as_decimal_text(value)
    if number is not None:
        return "amount" if "." in number else "number"
    return "text"
