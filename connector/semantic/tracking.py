"""Which fields of the ERP's records are tracked, and the change rows a write of them makes.

The upsert hands each updated record with its stored values (read by the same classify query
that compares content hashes, so tracking costs no extra statement) to a :class:`ChangeRecorder`,
which compares the tracked fields as typed values and returns one row per real change. Inserts
record nothing: the first sight of a record is its baseline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from connector.erp.records import DocumentRecord, PartyRecord, Record
from connector.semantic.history_table import ErpChange
from connector.settings import HistorySettings

change_t: sa.Table = ErpChange.__table__  # type: ignore[attr-defined]

#: Party fields the context shows, tracked by default.
PARTY_FIELDS: tuple[str, ...] = (
    "status",
    "credit_limit",
    "currency",
    "terms",
    "tax_zone",
    "tax_id",
    "party_class",
)
#: Contact fields (personal data): tracked only when configured, and then kept for the PII window.
CONTACT_FIELDS: tuple[str, ...] = ("name", "email", "phone")
#: Document fields the context shows, tracked by default.
DOCUMENT_FIELDS: tuple[str, ...] = ("status", "amount", "balance", "due_date", "is_open")
#: The pseudo-field a deletion (found by the key scan) or a revival is recorded under.
DELETED = "deleted"

_TYPES: dict[str, str] = {
    "credit_limit": "money",
    "amount": "money",
    "balance": "money",
    "due_date": "date",
    "doc_date": "date",
    "is_open": "bool",
    DELETED: "bool",
}


def value_type(name: str) -> str:
    return _TYPES.get(name, "text")


def canonical(value: Any) -> str | None:
    """The stored text of a value: money as a plain decimal (``50000`` equals ``50000.00``),
    dates ISO, booleans ``true``/``false``, text stripped (an empty text is no value)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal | int | float):
        return format(Decimal(str(value)).normalize(), "f")
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    text = str(value).strip()
    return text or None


def typed(text: str | None, kind: str) -> Any:
    """The value of a stored text, back in its type."""
    if text is None:
        return None
    if kind == "money":
        return Decimal(text)
    if kind == "date":
        return date.fromisoformat(text)
    if kind == "bool":
        return text == "true"
    return text


@dataclass(frozen=True, slots=True)
class TrackedFields:
    """The tracked fields of each entity (``party``, ``document``)."""

    party: tuple[str, ...] = PARTY_FIELDS
    document: tuple[str, ...] = DOCUMENT_FIELDS

    def of(self, entity: str) -> tuple[str, ...]:
        return self.party if entity == "party" else self.document if entity == "document" else ()


def entity_of(table: sa.Table) -> str | None:
    return {"party": "party", "document": "document"}.get(table.name)


@dataclass(slots=True)
class ChangeRecorder:
    """Turns the writes of one transaction into ``erp_change`` rows (see module docstring)."""

    fields: TrackedFields
    seen_at: datetime
    run_id: int | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)

    def columns(self, table: sa.Table) -> tuple[str, ...]:
        entity = entity_of(table)
        return self.fields.of(entity) if entity else ()

    def compare(self, table: sa.Table, stored: Mapping[str, Any], record: Record) -> None:
        """Record each tracked field whose value differs between ``stored`` and ``record``."""
        entity = entity_of(table)
        if entity is None:
            return
        for name in self.fields.of(entity):
            old, new = canonical(stored.get(name)), canonical(getattr(record, name, None))
            if old != new:
                self.rows.append(self._row(entity, record, name, old, new, record.source_modified_at))

    def deletion(self, table: sa.Table, owner: Mapping[str, Any], *, deleted: bool, stamp: datetime) -> None:
        """A record the key scan no longer finds (``deleted``), or one that came back."""
        entity = entity_of(table)
        if entity is None:
            return
        old, new = ("false", "true") if deleted else ("true", "false")
        self.rows.append(
            {
                "tenant": owner["tenant"],
                "entity": entity,
                "kind": owner["kind"],
                "external_id": owner["external_id"],
                "number": owner.get("number"),
                "party_kind": owner["party_kind"],
                "party_external_id": owner["party_external_id"],
                "field": DELETED,
                "value_type": "bool",
                "old_value": old,
                "new_value": new,
                "currency": None,
                "erp_changed_at": stamp,
                "seen_at": self.seen_at,
                "run_id": self.run_id,
            }
        )

    def _row(
        self, entity: str, record: Record, name: str, old: str | None, new: str | None, stamp: datetime | None
    ) -> dict[str, Any]:
        kind, number, party_kind, party_id = owner_of(record)
        return {
            "tenant": record.tenant,
            "entity": entity,
            "kind": kind,
            "external_id": record.external_id,
            "number": number,
            "party_kind": party_kind,
            "party_external_id": party_id,
            "field": name,
            "value_type": value_type(name),
            "old_value": old,
            "new_value": new,
            "currency": getattr(record, "currency", None) if value_type(name) == "money" else None,
            "erp_changed_at": stamp or self.seen_at,
            "seen_at": self.seen_at,
            "run_id": self.run_id,
        }

    def late(self, conn: Connection, table: sa.Table, record: Record) -> None:
        """A record stamped before the stored one (a late or out-of-order delivery): its changes go
        into the history in stamp order, and the current values are left as they are (the caller
        does not write it). Only a field with a recorded change after the record's stamp is placed
        (the value it held then is that change's old value); anything else is older than what the
        history knows and records nothing."""
        entity = entity_of(table)
        stamp = record.source_modified_at
        if entity is None or stamp is None:
            return
        self.flush(conn)  # the rows this transaction recorded so far are part of what is looked up
        kind = owner_of(record)[0]
        for name in self.fields.of(entity):
            later = conn.execute(
                sa.select(change_t.c.id, change_t.c.old_value, change_t.c.new_value)
                .where(
                    change_t.c.tenant == record.tenant,
                    change_t.c.entity == entity,
                    change_t.c.kind == kind,
                    change_t.c.external_id == record.external_id,
                    change_t.c.field == name,
                    change_t.c.erp_changed_at > stamp,
                )
                .order_by(change_t.c.erp_changed_at, change_t.c.id)
                .limit(1)
            ).first()
            if later is None:
                continue
            before, value = later.old_value, canonical(getattr(record, name, None))
            if value == before:
                continue
            self.rows.append(self._row(entity, record, name, before, value, stamp))
            if value == later.new_value:  # the later change is now no change at all
                conn.execute(change_t.delete().where(change_t.c.id == later.id))
            else:
                conn.execute(change_t.update().where(change_t.c.id == later.id).values(old_value=value))
        self.flush(conn)

    def flush(self, conn: Connection) -> int:
        """Insert the recorded rows (in the caller's transaction); returns how many."""
        rows, self.rows = self.rows, []
        if rows:
            conn.execute(change_t.insert(), rows)
        return len(rows)


def owner_of(record: Record) -> tuple[str, str | None, str, str]:
    """(kind, document number, party kind, party id) of a party or document record."""
    if isinstance(record, PartyRecord):
        return record.kind, None, record.kind, record.external_id
    if isinstance(record, DocumentRecord):
        return record.doc_type, record.number, record.party_kind, record.party_external_id
    raise TypeError(f"no history for {type(record).__name__}")


def tracked_fields(settings: HistorySettings) -> TrackedFields:
    """The tracked fields the settings name (checked against :data:`HISTORY_TRACKABLE` when loaded)."""
    party, document = settings.fields.get("party"), settings.fields.get("document")
    return TrackedFields(
        party=tuple(dict.fromkeys(party)) if party is not None else PARTY_FIELDS,
        document=tuple(dict.fromkeys(document)) if document is not None else DOCUMENT_FIELDS,
    )
