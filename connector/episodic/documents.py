"""Document numbers in case text and queries (``INV-004821``, ``SO-000123``, ``CM#311``).

Recall matches these lexically because embeddings treat ``INV-004821`` and ``INV-004812`` as almost
the same text. Keys are normalised (upper case, ``PREFIX-DIGITS``) so ``inv004821`` finds ``INV-004821``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from connector.episodic.models import InvalidCaseError

_DOC_NUMBER = re.compile(r"(?<![A-Za-z0-9])([A-Za-z]{2,5})[-#]?(\d{3,12})(?![A-Za-z0-9])")
_PLAIN_NUMBER = re.compile(r"(?<![A-Za-z0-9.,])(\d{5,12})(?![A-Za-z0-9])")


def doc_key(prefix: str, digits: str) -> str:
    return f"{prefix.upper()}-{digits}"


def extract_doc_keys(*texts: str | None) -> set[str]:
    """Normalised document keys named in the texts."""
    keys: set[str] = set()
    for text in texts:
        if text:
            keys.update(doc_key(m.group(1), m.group(2)) for m in _DOC_NUMBER.finditer(text))
    return keys


def normalise_documents(documents: Iterable[str]) -> tuple[str, ...]:
    """Caller-given document numbers, stripped, de-duplicated, in first-seen order."""
    seen: dict[str, None] = {}
    for raw in documents:
        if not isinstance(raw, str):
            raise InvalidCaseError(f"document numbers must be strings, got {type(raw).__name__}")
        value = raw.strip()
        if value:
            seen.setdefault(value, None)
    return tuple(seen)


def keys_for_documents(documents: Iterable[str]) -> set[str]:
    """Keys of explicit document numbers; a bare number (``000123``) keys as itself."""
    keys: set[str] = set()
    for document in documents:
        found = extract_doc_keys(document)
        keys.update(found or {document.strip().upper()})
    return keys


def query_doc_keys(query: str) -> set[str]:
    """Keys a query names: prefixed numbers, plus long bare numbers (``4500012345``)."""
    keys = extract_doc_keys(query)
    keys.update(m.group(1) for m in _PLAIN_NUMBER.finditer(query))
    return keys
