"""The ERP-field rule: a learned fact never restates or contradicts a value the ERP holds.

Credit limit, payment terms, currency, tax status/zone/id, account status and e-mail addresses
live in the ERP and reach the agent from semantic memory with their as-of time. A "fact" about
them in memory would go stale or compete with the ERP, so it is dropped. Two independent checks,
either one suffices: the category the LLM declared, and a pattern check on the text (which also
catches facts the LLM mislabelled and facts given to ``learn`` directly).
"""

from __future__ import annotations

import re

ERP_CATEGORY = "erp_field"

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        ("credit limit", r"\bcredit[\s-]*(?:limit|line)\b"),
        ("payment terms", r"\b(?:payment|credit|invoice|billing)\s+terms?\b"),
        ("payment terms", r"\bnet[\s-]?\d{1,3}\b|\b\d{1,2}/\d{1,2}\s*net\s*\d{1,3}\b"),
        ("payment terms", r"\b(?:due|payable)\s+(?:with)?in\s+\d{1,3}\s+days\b"),
        ("currency", r"\bcurrenc(?:y|ies)\b"),
        (
            "currency",
            r"\b(?:bill(?:ed|s)?|invoic(?:e|es|ed)|pa(?:y|ys|id)|pric(?:e|ed))\b[^.;]{0,30}?"
            r"\b(?:in\s+)?(?:USD|EUR|GBP|CHF|JPY|CAD|AUD|CNY|INR|dollars?|euros?|pounds?\s+sterling)\b",
        ),
        ("tax status", r"\btax[\s-]*(?:exempt\w*|status|zone|id|number|registration|category|free|able)\b"),
        ("tax status", r"\b(?:vat|gst|sales\s+tax|resale\s+certificate|exemption\s+certificate)\b"),
        ("account status", r"\b(?:on\s+(?:credit\s+)?hold|credit\s+hold|hold\s+status)\b"),
        (
            "account status",
            r"\b(?:customer|account)\s+(?:status|is\s+(?:in)?active|is\s+blocked|is\s+suspended)\b",
        ),
        ("e-mail address", r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
    )
)


def erp_field_in(content: str) -> str | None:
    """The ERP field ``content`` talks about, or None when it has no home in the ERP."""
    for name, pattern in _PATTERNS:
        if pattern.search(content):
            return name
    return None


def erp_field_reason(content: str, category: str | None, declared_field: str | None = None) -> str | None:
    """Why a fact must be dropped under the ERP-field rule, or None to keep it."""
    if category is not None and category.strip().lower() == ERP_CATEGORY:
        return f"declared an ERP field ({declared_field or 'unspecified'}); the ERP is the source of truth"
    matched = erp_field_in(content)
    if matched is not None:
        return f"mentions the ERP field {matched!r}; the ERP is the source of truth"
    return None
