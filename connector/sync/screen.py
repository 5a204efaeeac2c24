"""The id rule at the sync: every record's ids put in the one form, or the record skipped and named.

A record whose key (or the customer or party it points to) breaks the rule of :mod:`connector.ids`
(over 128 characters, a control character) would fail the page's write on PostgreSQL, whose
columns are that wide, and be stored on SQLite where no API call could reach it. So before a page
is written such a record becomes one of the page's problems: the stream goes on, the run names the
record, and ``sync.on_malformed_record = 'fail'`` stops the stream as for any malformed record.
Ids that keep the rule are stored in its form (stripped, NFC), the form every API call uses.
"""

from __future__ import annotations

import dataclasses

from connector.erp.protocol import RecordProblem
from connector.erp.records import CaseRecord, DocumentRecord, Page, Record
from connector.ids import MAX_ID_LENGTH, canonical_id, id_problem

_SHOWN = 40  # characters of an over-long id shown in the run's problems


# A document's key is its type's prefix and its number ("INV/AR001234"): its column is wider.
_DOCUMENT_KEY_LENGTH = 160
_PARTY_FIELDS = (("external_id", MAX_ID_LENGTH),)
_DOCUMENT_FIELDS = (("external_id", _DOCUMENT_KEY_LENGTH), ("party_external_id", MAX_ID_LENGTH))
_CASE_FIELDS = (("external_id", MAX_ID_LENGTH), ("customer_external_id", MAX_ID_LENGTH))


def _id_fields(record: Record) -> tuple[tuple[str, int], ...]:
    if isinstance(record, DocumentRecord):
        return _DOCUMENT_FIELDS
    if isinstance(record, CaseRecord):
        return _CASE_FIELDS
    return _PARTY_FIELDS


def _plain(value: str, limit: int) -> bool:
    """The fast path: a short printable ASCII id with no surrounding space is already canonical."""
    return len(value) <= limit and value.isascii() and value.isprintable() and value == value.strip()


def shown_id(value: str) -> str:
    """An id as the run's problems name it: cut after 40 characters (the reason gives its length)."""
    return value if len(value) <= _SHOWN else value[:_SHOWN] + "..."


def screen_record(record: Record) -> tuple[Record | None, str | None]:
    """(the record with canonical ids, None) or (None, why it breaks the id rule)."""
    changes: dict[str, str] = {}
    for name, limit in _id_fields(record):
        value = getattr(record, name)
        if value is None or (isinstance(value, str) and _plain(value, limit)):
            continue
        if not isinstance(value, str):
            return None, f"{name} is a {type(value).__name__}, not text"
        canonical = canonical_id(value)
        problem = id_problem(canonical, limit)
        if problem is not None:
            return None, f"{name} {problem}"
        if canonical != value:
            changes[name] = canonical
    return (dataclasses.replace(record, **changes) if changes else record), None  # type: ignore[arg-type]


def screen_page(page: Page) -> None:
    """Canonicalise the page's ids in place; records outside the rule move to ``page.problems``."""
    kept: list[Record] = []
    changed = False
    for record in page.records:
        screened, problem = screen_record(record)
        if screened is None:
            page.problems.append(RecordProblem(page.stream, shown_id(str(record.external_id)), problem or ""))
            changed = True
            continue
        changed = changed or screened is not record
        kept.append(screened)
    if changed:
        page.records = kept
        page.hashes = None
