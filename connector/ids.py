"""The one rule for ids (customer, tenant, session, agent ids and the ERP's record keys).

An id is taken as given except for two things every entry point does the same way: surrounding
whitespace is removed and the text is put in Unicode NFC, so ``T3CAFÉ`` typed with a combining
accent (NFD) is the same customer as the ERP's precomposed one. Case and width are *not* folded:
ERP keys are exact, and ``t3café`` or a fullwidth ``Ｔ３ＣＡＦÉ`` are other ids. After that an id must be
non-empty, at most :data:`MAX_ID_LENGTH` characters (every id column's width, on SQLite and
PostgreSQL alike) and hold no control character (Unicode category Cc), no NUL and no lone surrogate.

The sync applies this rule to every record it stores (a record outside it is skipped and named), and
the Python API and the MCP tools apply it to every id they take, so what the sync stores is exactly
what an API call can reach. :func:`fold_key` is the looser key that finds a case or width variant
of a known id, for the writers that refuse such variants (see ``connector.customer_ids``).
"""

from __future__ import annotations

import unicodedata

from connector.storable import is_storable

MAX_ID_LENGTH = 128


def canonical_id(value: str) -> str:
    """``value`` stripped of surrounding whitespace and in NFC (no other change)."""
    if value.isascii():
        return value.strip()
    stripped = value.strip()
    return stripped if unicodedata.is_normalized("NFC", stripped) else unicodedata.normalize("NFC", stripped)


def id_problem(canonical: str, limit: int = MAX_ID_LENGTH) -> str | None:
    """Why a canonical id breaks the rule (one short phrase), or None when it keeps it. ``limit``:
    a document's key, which prefixes the document type to its number, has a wider column."""
    if not canonical:
        return "is blank"
    if len(canonical) > limit:
        return f"is {len(canonical)} characters long (at most {limit})"
    if canonical.isascii():
        if not canonical.isprintable():
            return "holds a control character"
        return None
    if not is_storable(canonical):
        return "holds a NUL or a lone surrogate"
    if any(unicodedata.category(ch) == "Cc" for ch in canonical):
        return "holds a control character"
    return None


def fold_key(value: str) -> str:
    """A key equal for ids that differ only in case, width or compatibility form (NFKC + casefold)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", value).casefold())
