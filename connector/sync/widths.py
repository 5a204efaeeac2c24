"""Values wider than their column: found only when a page's write fails, as unstorable text is.

PostgreSQL refuses a value longer than its ``varchar(n)`` column (``StringDataRightTruncation``) and
fails the whole page; SQLite stores it. The widths come from the table metadata, so they follow the
schema. Ids are screened before the write (:mod:`connector.sync.screen`); these are the other text
fields (a name, an e-mail, a contact's phone), which ``clean`` cuts to the column's width.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import sqlalchemy as sa

from connector.erp.records import CaseRecord, DocumentRecord, PartyRecord, Record
from connector.semantic.upsert import address_t, attribute_t, case_t, contact_t, document_t, party_t


def _widths(table: sa.Table) -> dict[str, int]:
    widths = {column.name: getattr(column.type, "length", None) for column in table.columns}
    return {name: width for name, width in widths.items() if isinstance(width, int)}


_RECORD_WIDTHS = {
    PartyRecord: _widths(party_t),
    DocumentRecord: _widths(document_t),
    CaseRecord: _widths(case_t),
}
_CHILD_WIDTHS = {"contacts": _widths(contact_t), "addresses": _widths(address_t)}
_ATTRIBUTE_NAME_WIDTH = _widths(attribute_t)["name"]


def _too_wide(value: Any, width: int) -> bool:
    return isinstance(value, str) and len(value) > width


def _child_too_wide(child: Any, widths: dict[str, int]) -> bool:
    return any(_too_wide(getattr(child, name, None), width) for name, width in widths.items())


def overlong_fields(record: Record) -> list[str]:
    """Names of the record's fields holding a value wider than its column."""
    found = [
        name
        for name, width in _RECORD_WIDTHS[type(record)].items()
        if _too_wide(getattr(record, name, None), width)
    ]
    for name, widths in _CHILD_WIDTHS.items():
        if any(_child_too_wide(child, widths) for child in getattr(record, name, ())):
            found.append(name)
    if isinstance(record, PartyRecord) and any(len(key) > _ATTRIBUTE_NAME_WIDTH for key in record.attributes):
        found.append("attributes")
    return found


def _cut(child: Any, widths: dict[str, int]) -> Any:
    changes = {
        name: getattr(child, name)[:width]
        for name, width in widths.items()
        if _too_wide(getattr(child, name, None), width)
    }
    return dataclasses.replace(child, **changes) if changes else child


def clipped(record: Record, fields: list[str]) -> Record:
    """The record with those fields cut to their columns' widths."""
    widths = _RECORD_WIDTHS[type(record)]
    changes: dict[str, Any] = {}
    for name in fields:
        value = getattr(record, name)
        if name in _CHILD_WIDTHS:
            changes[name] = tuple(_cut(child, _CHILD_WIDTHS[name]) for child in value)
        elif name == "attributes":
            changes[name] = {key[:_ATTRIBUTE_NAME_WIDTH]: item for key, item in value.items()}
        elif name in widths:
            changes[name] = value[: widths[name]]
    return dataclasses.replace(record, **changes)
