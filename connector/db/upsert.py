"""Bulk upsert of canonical records: one classify query and one write statement per batch.

Rows are matched by their natural key. A row whose content hash is unchanged is not written
(its ``synced_at`` is not even touched), so a no-change sync costs one read per batch. The
functions take a Connection so the caller decides the transaction (the sync job commits the
watermark in the same one). Works on SQLite and PostgreSQL through ``INSERT .. ON CONFLICT``.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from connector.db.engine import _pg_json
from connector.db.models import CrmCase, Document, Party, PartyAddress, PartyAttribute, PartyContact
from connector.erp.records import CaseRecord, DocumentRecord, PartyRecord, Record, content_hash

party_t: sa.Table = Party.__table__  # type: ignore[attr-defined]
contact_t: sa.Table = PartyContact.__table__  # type: ignore[attr-defined]
address_t: sa.Table = PartyAddress.__table__  # type: ignore[attr-defined]
attribute_t: sa.Table = PartyAttribute.__table__  # type: ignore[attr-defined]
document_t: sa.Table = Document.__table__  # type: ignore[attr-defined]
case_t: sa.Table = CrmCase.__table__  # type: ignore[attr-defined]


@dataclass(slots=True)
class UpsertCounts:
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    presumption_failed: bool = False  # ``presume_new`` met an existing key

    def add(self, other: UpsertCounts) -> None:
        self.inserted += other.inserted
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.presumption_failed |= other.presumption_failed

    @property
    def written(self) -> int:
        return self.inserted + self.updated


def _kind_column(table: sa.Table) -> str:
    return {"party": "kind", "document": "doc_type", "crm_case": ""}[table.name]


def _row_for(record: Record, synced_at: datetime, digest: str | None = None) -> dict[str, Any]:
    """The record's row as a dict of column values (SQLite's executemany, the ORM baseline)."""
    common = {
        "tenant": record.tenant,
        "external_id": record.external_id,
        "raw": record.raw,
        "extra": record.extra,
        "content_hash": content_hash(record) if digest is None else digest,
        "source_modified_at": record.source_modified_at,
        "synced_at": synced_at,
        "deleted_at": None,
    }
    if isinstance(record, PartyRecord):
        return common | {
            "kind": record.kind,
            "name": record.name,
            "status": record.status,
            "currency": record.currency,
            "credit_limit": record.credit_limit,
            "terms": record.terms,
            "tax_zone": record.tax_zone,
            "tax_id": record.tax_id,
            "party_class": record.party_class,
            "email": record.email,
            "phone": record.phone,
        }
    if isinstance(record, DocumentRecord):
        return common | {
            "doc_type": record.doc_type,
            "number": record.number,
            "party_kind": record.party_kind,
            "party_external_id": record.party_external_id,
            "status": record.status,
            "currency": record.currency,
            "amount": record.amount,
            "balance": record.balance,
            "doc_date": record.doc_date,
            "due_date": record.due_date,
            "description": record.description,
            "customer_ref": record.customer_ref,
            "is_open": record.is_open,
        }
    return common | {
        "customer_external_id": record.customer_external_id,
        "subject": record.subject,
        "status": record.status,
        "priority": record.priority,
        "case_class": record.case_class,
        "reported_at": record.reported_at,
        "closed_at": record.closed_at,
        "description": record.description,
        "resolution": record.resolution,
        "is_closed": record.is_closed,
    }


def table_for(record: Record) -> sa.Table:
    if isinstance(record, PartyRecord):
        return party_t
    if isinstance(record, DocumentRecord):
        return document_t
    return case_t


def _key_columns(table: sa.Table) -> list[str]:
    kind = _kind_column(table)
    return ["tenant", kind, "external_id"] if kind else ["tenant", "external_id"]


_TEXT_ARRAY = postgresql.ARRAY(sa.Text())


def _existing_hashes(
    conn: Connection, table: sa.Table, keys: Iterable[tuple[Any, ...]]
) -> dict[tuple[Any, ...], tuple[str, bool]]:
    """Map key -> (content_hash, is_deleted) for the ``keys`` (natural-key tuples) that exist."""
    names = _key_columns(table)
    found: dict[tuple[Any, ...], tuple[str, bool]] = {}
    # Group by (tenant, kind) so the lookup is a simple IN list on external_id.
    groups: dict[tuple[Any, ...], list[str]] = {}
    for key in keys:
        groups.setdefault(key[:-1], []).append(key[-1])
    postgres = conn.dialect.name == "postgresql"
    for prefix, ids in groups.items():
        for start in range(0, len(ids), 5000):
            chunk = ids[start : start + 5000]
            cond = [table.c[k] == v for k, v in zip(names[:-1], prefix, strict=True)]
            # PostgreSQL: one array parameter, not thousands of rendered IN parameters per page.
            match = (
                table.c.external_id == sa.func.any(sa.bindparam("ids", chunk, type_=_TEXT_ARRAY))
                if postgres
                else table.c.external_id.in_(chunk)
            )
            stmt = sa.select(
                *[table.c[k] for k in names], table.c.content_hash, table.c.deleted_at.is_not(None)
            ).where(*cond, match)
            for db_row in conn.execute(stmt):
                found[tuple(db_row[: len(names)])] = (db_row[len(names)], bool(db_row[len(names) + 1]))
    return found


def _insert_stmt(conn: Connection, table: sa.Table) -> Any:
    return postgresql.insert(table) if conn.dialect.name == "postgresql" else sqlite.insert(table)


def _write_rows(
    conn: Connection,
    table: sa.Table,
    entries: list[tuple[Record, str]],
    synced_at: datetime,
    *,
    all_new: bool = False,
) -> None:
    """Write ``entries`` (record, content hash): INSERT .. ON CONFLICT (key) DO UPDATE.

    PostgreSQL gets COPY (straight into the table when all rows are new, else through a stage).
    SQLite gets one executemany of one statement object per table, so SQLAlchemy compiles it once
    and caches it (a multi-row VALUES clause costs a full compile per batch).
    """
    if not entries:
        return
    if conn.dialect.name == "postgresql":
        if all_new and _copy_new(conn, table, entries, synced_at):
            return
        _copy_upsert(conn, table, entries, synced_at)
        return
    keys = _key_columns(table)
    rows = [_row_for(record, synced_at, digest) for record, digest in entries]
    stmt = _insert_stmt(conn, table)
    update_cols = {c: stmt.excluded[c] for c in rows[0] if c not in keys}
    conn.execute(stmt.on_conflict_do_update(index_elements=keys, set_=update_cols), rows)


def _record_key(record: Record) -> tuple[Any, ...]:
    """The natural key in the order of the table's key columns (see :func:`_key_columns`)."""
    if isinstance(record, PartyRecord):
        return (record.tenant, record.kind, record.external_id)
    if isinstance(record, DocumentRecord):
        return (record.tenant, record.doc_type, record.external_id)
    return (record.tenant, record.external_id)


@dataclass(slots=True)
class _Batch:
    """One table's share of a batch: records by key (the last occurrence wins) and their hashes."""

    table: sa.Table
    keyed: dict[tuple[Any, ...], tuple[Record, str]]


def _batches(records: Iterable[Record], hashes: Sequence[str] | None = None) -> list[_Batch]:
    by_table: dict[str, _Batch] = {}
    pairs = zip(records, hashes, strict=True) if hashes is not None else ((r, None) for r in records)
    for record, digest in pairs:
        table = table_for(record)
        batch = by_table.get(table.name)
        if batch is None:
            batch = by_table[table.name] = _Batch(table, {})
        batch.keyed[_record_key(record)] = (record, content_hash(record) if digest is None else digest)
    return list(by_table.values())


def upsert_records(
    conn: Connection,
    records: Iterable[Record],
    synced_at: datetime,
    *,
    presume_new: bool = False,
    hashes: Sequence[str] | None = None,
) -> UpsertCounts:
    """Insert new records, update changed ones, skip unchanged ones. Returns the counts.

    The last occurrence of a key in one batch wins (an ERP page may repeat a record that changed
    while we paged). ``presume_new`` is the caller's belief that none of the keys exists yet (a
    first full load): on PostgreSQL the rows are then COPied straight in without the classify
    query, and if a key does exist the attempt is undone and the batch classified as usual
    (``counts.presumption_failed`` tells the caller to stop presuming). ``hashes``, when given,
    are the records' :func:`~connector.erp.records.content_hash` values in order, computed ahead.
    """
    counts = UpsertCounts()
    postgres = conn.dialect.name == "postgresql"
    for batch in _batches(records, hashes):
        table, keyed = batch.table, batch.keyed
        if presume_new and postgres and not counts.presumption_failed:
            entries = list(keyed.values())
            if _copy_new(conn, table, entries, synced_at):
                counts.inserted += len(entries)
                _replace_party_children(conn, _parties(entries), ())
                continue
            counts.presumption_failed = True
        existing = _existing_hashes(conn, table, keyed)
        to_write: list[tuple[Record, str]] = []
        known_parties: list[PartyRecord] = []  # updated ones: their old children must go first
        fresh = 0
        for key, (record, digest) in keyed.items():
            previous = existing.get(key)
            if previous is None:
                counts.inserted += 1
                fresh += 1
            elif previous[0] == digest and not previous[1]:
                counts.unchanged += 1
                continue
            else:
                counts.updated += 1
                if isinstance(record, PartyRecord):
                    known_parties.append(record)
            to_write.append((record, digest))
        _write_rows(conn, table, to_write, synced_at, all_new=fresh == len(to_write))
        parties = _parties(to_write)
        if parties:
            _replace_party_children(conn, parties, known_parties)
    return counts


def _parties(entries: Sequence[tuple[Record, str]]) -> list[PartyRecord]:
    return [record for record, _ in entries if isinstance(record, PartyRecord)]


def _replace_party_children(
    conn: Connection, parties: Sequence[PartyRecord], known: Sequence[PartyRecord]
) -> None:
    """Contacts, addresses and attributes of changed parties: delete and re-insert in bulk.

    Only parties that existed before (``known``) can have children to delete; skipping the delete
    for new ones keeps a first full sync to plain inserts (a delete per page that scans a growing
    child table made a 100,000-customer load quadratic on PostgreSQL).
    """
    groups: dict[tuple[str, str], list[str]] = {}
    for party in known:
        groups.setdefault((party.tenant, party.kind), []).append(party.external_id)
    for table in (contact_t, address_t, attribute_t):
        for (tenant, kind), ids in groups.items():
            for start in range(0, len(ids), 5000):
                conn.execute(
                    table.delete().where(
                        table.c.tenant == tenant,
                        table.c.party_kind == kind,
                        table.c.party_external_id.in_(ids[start : start + 5000]),
                    )
                )
    if not parties:
        return
    if conn.dialect.name == "postgresql":
        for table in (contact_t, address_t, attribute_t):
            columns, lines = _CHILD_COPY[table.name]
            _copy_text(conn, table.name, columns, lines, parties)
        return
    contacts, addresses, attributes = _child_rows(parties)
    for table, rows in ((contact_t, contacts), (address_t, addresses), (attribute_t, attributes)):
        if rows:
            conn.execute(table.insert(), rows)


def _child_rows(
    parties: Sequence[PartyRecord],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Contact, address and attribute rows as dicts, for SQLite's executemany."""
    contacts: list[dict[str, Any]] = []
    addresses: list[dict[str, Any]] = []
    attributes: list[dict[str, Any]] = []
    for party in parties:
        owner = {"tenant": party.tenant, "party_kind": party.kind, "party_external_id": party.external_id}
        for i, c in enumerate(party.contacts):
            contacts.append(
                owner
                | {
                    "ordinal": i,
                    "role": c.role,
                    "name": c.name,
                    "email": c.email,
                    "phone": c.phone,
                    "external_id": c.external_id,
                }
            )
        for i, a in enumerate(party.addresses):
            addresses.append(
                owner
                | {
                    "ordinal": i,
                    "role": a.role,
                    "line1": a.line1,
                    "line2": a.line2,
                    "city": a.city,
                    "region": a.region,
                    "postal_code": a.postal_code,
                    "country": a.country,
                }
            )
        for name, value in party.attributes.items():
            attributes.append(owner | {"name": name, "value": value})
    return contacts, addresses, attributes


def _copy_new(
    conn: Connection, table: sa.Table, entries: Sequence[tuple[Record, str]], synced_at: datetime
) -> bool:
    """COPY rows the classify found absent (or the caller presumes new) straight into ``table`` (a
    first full sync is all such pages; the stage and its INSERT .. SELECT doubled the server's work).
    In a savepoint: if one of the keys exists (a concurrent writer, a repeated record, a presumption
    that was wrong), it is undone and False sends the rows to the classify and upsert instead."""
    columns, lines = _RECORD_COPY[table.name]
    try:
        with conn.begin_nested():
            _copy_text(conn, table.name, columns, lines, entries, synced_at)
    except sa.exc.IntegrityError:
        return False
    return True


def _copy_upsert(
    conn: Connection, table: sa.Table, entries: Sequence[tuple[Record, str]], synced_at: datetime
) -> None:
    """PostgreSQL upsert: COPY into a session temp table, then one INSERT .. SELECT .. ON CONFLICT.

    Same statement semantics as the executemany (keys are unique within ``entries``), without a
    round trip, bind and plan per row. The stage copies the target's column types, so values are
    checked exactly as an INSERT checks them; it is emptied before each use.
    """
    names, lines = _RECORD_COPY[table.name]
    keys = _key_columns(table)
    quote = conn.dialect.identifier_preparer.quote
    cols = ", ".join(quote(n) for n in names)
    stage = f"_stage_{table.name}_{zlib.crc32(cols.encode()):08x}"
    conn.exec_driver_sql(
        f"CREATE TEMP TABLE IF NOT EXISTS {stage} AS SELECT {cols} FROM {quote(table.name)} WITH NO DATA"
    )
    conn.exec_driver_sql(f"TRUNCATE {stage}")
    _copy_text(conn, stage, names, lines, entries, synced_at)
    updates = ", ".join(f"{quote(n)} = EXCLUDED.{quote(n)}" for n in names if n not in keys)
    conn.exec_driver_sql(
        f"INSERT INTO {quote(table.name)} ({cols}) SELECT {cols} FROM {stage} "
        f"ON CONFLICT ({', '.join(quote(k) for k in keys)}) DO UPDATE SET {updates}"
    )


def _copy_text(
    conn: Connection,
    target: str,
    columns: Sequence[str],
    lines: Callable[..., Iterable[str]],
    items: Sequence[Any],
    *args: Any,
) -> None:
    """COPY ``items`` into ``target`` as one text-format payload built by ``lines``.

    Formatting every value ourselves (see :func:`copy_text`) and sending the page in one write
    replaces a bind-processor call per value and psycopg's per-row adaptation, which were most of
    the writer's time. A value a column refuses fails before anything is sent, as with
    ``execute()``; a driver error is raised as SQLAlchemy's so callers' handlers still apply.
    """
    quote = conn.dialect.identifier_preparer.quote
    command = f"COPY {quote(target)} ({', '.join(quote(n) for n in columns)}) FROM STDIN"
    try:
        payload = "".join(lines(items, *args))
    except (TypeError, ValueError, ArithmeticError) as exc:
        raise sa.exc.StatementError(
            f"({type(exc).__module__}.{type(exc).__name__}) {exc}", command, None, exc
        ) from exc
    if not payload:
        return
    driver: Any = conn.connection.driver_connection
    dbapi: Any = conn.dialect.loaded_dbapi
    try:
        with driver.cursor() as cursor, cursor.copy(command) as copy:
            copy.write(payload)
    except dbapi.Error as exc:
        raise sa.exc.DBAPIError.instance(command, None, exc, dbapi.Error) from exc


# COPY text format ---------------------------------------------------------------------------
# One line per row, values separated by tabs, ``\N`` for NULL; a backslash, tab, newline or
# carriage return inside a value is escaped. Each formatter mirrors the bind processor of its
# column type (connector.db.types), so COPY stores exactly what an INSERT would.

_NULL = "\\N"
_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def copy_text(value: str | None) -> str:
    """A text value for COPY: NULL stays distinct from the empty string; specials are escaped."""
    if value is None:
        return _NULL
    if not isinstance(value, str):
        value = str(value)
    if "\\" in value or not value.isprintable():  # isprintable is False for tab, newline, CR
        return value.translate(_ESCAPES)
    return value


def copy_money(value: Decimal | int | str | None) -> str:
    """NUMERIC: exact decimal text; a float is refused as :class:`~connector.db.types.Money` does."""
    if value is None:
        return _NULL
    if type(value) is not Decimal:
        if isinstance(value, float):
            raise TypeError("money must be Decimal, not float")
        value = Decimal(value)
    return str(value)


def copy_timestamp(value: datetime | None) -> str:
    """TIMESTAMPTZ: ISO 8601 in UTC with its offset; a naive datetime is refused."""
    if value is None:
        return _NULL
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("naive datetime given to a UTC column; pass an aware datetime")
    return value.astimezone(UTC).isoformat()


def copy_date(value: date | None) -> str:
    return _NULL if value is None else value.isoformat()


def copy_bool(value: bool | None) -> str:
    return _NULL if value is None else ("t" if value else "f")


def copy_json(value: Any) -> str:
    """JSONB: the engine's serializer (orjson), escaped; None is JSON null, as sa.JSON binds it."""
    return copy_text(_pg_json(value))


def _common(record: Record, digest: str, synced: str) -> str:
    """tenant, external_id, raw, extra, content_hash, source_modified_at, synced_at, deleted_at."""
    return (
        f"{copy_text(record.tenant)}\t{copy_text(record.external_id)}\t{copy_json(record.raw)}\t"
        f"{copy_json(record.extra)}\t{digest}\t{copy_timestamp(record.source_modified_at)}\t"
        f"{synced}\t{_NULL}"
    )


_COMMON = (
    "tenant", "external_id", "raw", "extra", "content_hash", "source_modified_at", "synced_at",
    "deleted_at",
)  # fmt: skip
_PARTY_COLUMNS = (
    *_COMMON, "kind", "name", "status", "currency", "credit_limit", "terms", "tax_zone", "tax_id",
    "party_class", "email", "phone",
)  # fmt: skip
_DOCUMENT_COLUMNS = (
    *_COMMON, "doc_type", "number", "party_kind", "party_external_id", "status", "currency", "amount",
    "balance", "doc_date", "due_date", "description", "customer_ref", "is_open",
)  # fmt: skip
_CASE_COLUMNS = (
    *_COMMON, "customer_external_id", "subject", "status", "priority", "case_class", "reported_at",
    "closed_at", "description", "resolution", "is_closed",
)  # fmt: skip


def _party_lines(entries: Sequence[tuple[PartyRecord, str]], synced_at: datetime) -> Iterator[str]:
    t, synced = copy_text, copy_timestamp(synced_at)
    for r, digest in entries:
        yield (
            f"{_common(r, digest, synced)}\t{t(r.kind)}\t{t(r.name)}\t{t(r.status)}\t{t(r.currency)}\t"
            f"{copy_money(r.credit_limit)}\t{t(r.terms)}\t{t(r.tax_zone)}\t{t(r.tax_id)}\t"
            f"{t(r.party_class)}\t{t(r.email)}\t{t(r.phone)}\n"
        )


def _document_lines(entries: Sequence[tuple[DocumentRecord, str]], synced_at: datetime) -> Iterator[str]:
    t, m, d, synced = copy_text, copy_money, copy_date, copy_timestamp(synced_at)
    for r, digest in entries:
        yield (
            f"{_common(r, digest, synced)}\t{t(r.doc_type)}\t{t(r.number)}\t{t(r.party_kind)}\t"
            f"{t(r.party_external_id)}\t{t(r.status)}\t{t(r.currency)}\t{m(r.amount)}\t"
            f"{m(r.balance)}\t{d(r.doc_date)}\t{d(r.due_date)}\t{t(r.description)}\t"
            f"{t(r.customer_ref)}\t{copy_bool(r.is_open)}\n"
        )


def _case_lines(entries: Sequence[tuple[CaseRecord, str]], synced_at: datetime) -> Iterator[str]:
    t, ts, synced = copy_text, copy_timestamp, copy_timestamp(synced_at)
    for r, digest in entries:
        yield (
            f"{_common(r, digest, synced)}\t{t(r.customer_external_id)}\t{t(r.subject)}\t"
            f"{t(r.status)}\t{t(r.priority)}\t{t(r.case_class)}\t{ts(r.reported_at)}\t"
            f"{ts(r.closed_at)}\t{t(r.description)}\t{t(r.resolution)}\t{copy_bool(r.is_closed)}\n"
        )


def _owner(party: PartyRecord) -> str:
    return f"{copy_text(party.tenant)}\t{copy_text(party.kind)}\t{copy_text(party.external_id)}"


def _contact_lines(parties: Sequence[PartyRecord]) -> Iterator[str]:
    t = copy_text
    for party in parties:
        if party.contacts:
            owner = _owner(party)
            for i, c in enumerate(party.contacts):
                yield (
                    f"{owner}\t{i}\t{t(c.role)}\t{t(c.name)}\t{t(c.email)}\t{t(c.phone)}\t"
                    f"{t(c.external_id)}\n"
                )


def _address_lines(parties: Sequence[PartyRecord]) -> Iterator[str]:
    t = copy_text
    for party in parties:
        if party.addresses:
            owner = _owner(party)
            for i, a in enumerate(party.addresses):
                yield (
                    f"{owner}\t{i}\t{t(a.role)}\t{t(a.line1)}\t{t(a.line2)}\t{t(a.city)}\t"
                    f"{t(a.region)}\t{t(a.postal_code)}\t{t(a.country)}\n"
                )


def _attribute_lines(parties: Sequence[PartyRecord]) -> Iterator[str]:
    t = copy_text
    for party in parties:
        if party.attributes:
            owner = _owner(party)
            for name, value in party.attributes.items():
                yield f"{owner}\t{t(name)}\t{t(value)}\n"


_OWNER = ("tenant", "party_kind", "party_external_id")
_RECORD_COPY: dict[str, tuple[tuple[str, ...], Callable[..., Iterator[str]]]] = {
    "party": (_PARTY_COLUMNS, _party_lines),
    "document": (_DOCUMENT_COLUMNS, _document_lines),
    "crm_case": (_CASE_COLUMNS, _case_lines),
}
_CHILD_COPY: dict[str, tuple[tuple[str, ...], Callable[..., Iterator[str]]]] = {
    "party_contact": ((*_OWNER, "ordinal", "role", "name", "email", "phone", "external_id"), _contact_lines),
    "party_address": (
        (*_OWNER, "ordinal", "role", "line1", "line2", "city", "region", "postal_code", "country"),
        _address_lines,
    ),
    "party_attribute": ((*_OWNER, "name", "value"), _attribute_lines),
}


def mark_missing_deleted(
    conn: Connection,
    table: sa.Table,
    tenant: str,
    kind: str | None,
    existing_ids: set[str],
    deleted_at: datetime,
) -> int:
    """Set ``deleted_at`` on live rows of (tenant, kind) whose id is not in ``existing_ids``."""
    keys = _key_columns(table)
    cond = [table.c.tenant == tenant, table.c.deleted_at.is_(None)]
    if kind is not None and len(keys) == 3:
        cond.append(table.c[keys[1]] == kind)
    live = [r[0] for r in conn.execute(sa.select(table.c.external_id).where(*cond))]
    gone = [ext for ext in live if ext not in existing_ids]
    for start in range(0, len(gone), 5000):
        conn.execute(
            table.update()
            .where(*cond, table.c.external_id.in_(gone[start : start + 5000]))
            .values(deleted_at=deleted_at)
        )
    return len(gone)
