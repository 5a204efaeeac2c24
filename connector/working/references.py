"""References a turn states, exactly as written: the identifiers a summary must never rewrite.

A customer's own purchase-order number (``PO-ZX-99124``, ``4500-ZW-118``, ``ACME/PO/7781``), a
ticket or case id (``TCK-2025-00431``, ``INC0012345``, ``#48213``), a tracking number
(``1Z999AA10123456784``), an e-mail address, a URL, and the ERP's own document numbers
(``AR000029``, ``INV-004821``, SAP's ``1800000123``) all have one thing in common: they are runs of
letters and digits joined by ``-``, ``/``, ``.`` or ``_``, with at least one digit. Such a token is a
reference when it mixes letters and digits, or when it is digits only but long enough not to be a
quantity (seven digits or more, separators aside); a token mixing them needs two digits, so a
field name (``Phone1``) is not one. Dates, times, amounts, decimals and ordinals
(``2025-03-01``, ``03/01/2025``, ``312.40``, ``3rd``) are not references. The token is taken whole:
``PO-ZX-99124`` is never cut to ``ZX-99124``. A shorter number is a reference when a label stands
before it (``PO 4471``, ``ticket no. 48213``).
"""

from __future__ import annotations

import re

_EMAIL = r"[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
_URL = r"https?://[^\s<>\"'()\[\]]+[^\s<>\"'()\[\].,;:!?]"
# Alphanumeric runs joined by single separators; a leading '#' is part of it (ticket #48213).
_TOKEN = r"#?[A-Za-z0-9]+(?:[-/._#][A-Za-z0-9]+)*"
_REFERENCE = re.compile(
    rf"(?<![\w@#/.-])(?:(?P<email>{_EMAIL})|(?P<url>{_URL})|(?P<token>{_TOKEN}))(?![\w@])"
)
_DATE_LIKE = re.compile(
    r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}|\d{4}[-/.]\d{1,2}|\d{1,2}[-/.]\d{4}"
)
_DECIMAL = re.compile(r"\d+\.\d+")
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th|s|am|pm|k|m|kg|km|h|x)", re.IGNORECASE)
# A short number is a reference when a label says so: "PO 4471", "ticket no. 48213", "order #: 5521".
_LABELLED = re.compile(
    r"\b(?i:PO|P\.O\.|order|ticket|case|ref|reference|invoice|inv|rma|tracking|claim|contract|quote|"
    r"account|acct)\b\.?\s*(?i:no\.?|nr\.?|number|#)?\s*:?\s*(?P<digits>\d{4,6})(?![\w/.-]?\w)"
)
_YEAR = re.compile(r"(?:19|20)\d\d")
MIN_DIGITS_ONLY = 7  # 1234567: an order or tracking number; 250000 is more likely a quantity
MIN_MIXED = 4  # letters and digits: A123, AR000029 (shorter: 3rd, B2B, 4pm)
MIN_MIXED_DIGITS = 2  # Phone1, Line2 (a JSON key, a field name) are words, not references


def is_reference(token: str) -> bool:
    """Whether a token (no surrounding text) is an identifier to keep verbatim."""
    bare = token.lstrip("#")
    alnum = re.sub(r"[^A-Za-z0-9]", "", bare)
    digits = sum(ch.isdigit() for ch in alnum)
    if not digits:
        return False
    if digits == len(alnum):  # digits and separators only
        if _DATE_LIKE.fullmatch(bare) or _DECIMAL.fullmatch(bare):
            return False
        return digits >= MIN_DIGITS_ONLY or (token.startswith("#") and digits >= 3)
    if _ORDINAL.fullmatch(bare):
        return False
    return len(alnum) >= MIN_MIXED and digits >= MIN_MIXED_DIGITS


def references_of(text: str) -> list[str]:
    """Every reference in ``text``, verbatim, once each, in order of first appearance."""
    found: list[tuple[int, str]] = []
    for match in _REFERENCE.finditer(text):
        token = match.group("token")
        if token is not None and not is_reference(token):
            continue
        found.append((match.start(), match.group(0)))
    for match in _LABELLED.finditer(text):
        if not _YEAR.fullmatch(match.group("digits")):
            found.append((match.start("digits"), match.group("digits")))
    found.sort()
    return list(dict.fromkeys(ref for _, ref in found))
