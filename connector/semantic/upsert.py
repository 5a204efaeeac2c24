"""Bulk upsert of canonical records: one classify query and one write statement per batch.

Rows are matched by their natural key. A row whose content hash is unchanged is not written
(its ``synced_at`` is not even touched), so a no-change sync costs one read per batch. The
functions take a Connection so the caller decides the transaction (the sync job commits the
watermark in the same one). Works on SQLite and PostgreSQL through ``INSERT .. ON CONFLICT``.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from connector.db.chunks import chunks
from connector.db.copy_stream import copy_into
from connector.erp.records import (
    Address,
    CaseRecord,
    Contact,
    DocumentRecord,
    PartyRecord,
    Record,
    content_hash,
)
from connector.semantic.copy_layout import layouts
from connector.semantic.tables import CrmCase, Document, Party, PartyAddress, PartyAttribute, PartyContact

party_t: sa.Table = Party.__table__  # type: ignore[attr-defined]
contact_t: sa.Table = PartyContact.__table__  # type: ignore[attr-defined]
address_t: sa.Table = PartyAddress.__table__  # type: ignore[attr-defined]
attribute_t: sa.Table = PartyAttribute.__table__  # type: ignore[attr-defined]
document_t: sa.Table = Document.__table__  # type: ignore[attr-defined]
case_t: sa.Table = CrmCase.__table__  # type: ignore[attr-defined]
# What is written to each table, and how, follows from the table metadata (connector.semantic.copy_layout).
RECORD_LAYOUTS, CHILD_LAYOUTS = layouts(
    {PartyRecord: party_t, DocumentRecord: document_t, CaseRecord: case_t},
    {"contacts": (contact_t, Contact), "addresses": (address_t, Address), "attributes": (attribute_t, None)},
)


class ChangeSink(Protocol):
    """Receives the changes of tracked fields a write makes (:mod:`connector.semantic.tracking`'s
    recorder; a protocol, so the write path does not depend on how history is kept)."""

    def columns(self, table: sa.Table) -> tuple[str, ...]:
        """The tracked columns of ``table`` (read by the classify query beside the hash)."""
        ...

    def compare(self, table: sa.Table, stored: Any, record: Any) -> None: ...

    def late(self, conn: Connection, table: sa.Table, record: Any) -> None: ...

    def deletion(self, table: sa.Table, owner: Any, *, deleted: bool, stamp: datetime) -> None: ...

    def flush(self, conn: Connection) -> int: ...


@dataclass(slots=True)
class UpsertCounts:
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    stale: int = 0  # records stamped before the stored one: not written (counted in unchanged too)
    presumption_failed: bool = False  # ``presume_new`` met an existing key

    def add(self, other: UpsertCounts) -> None:
        self.inserted += other.inserted
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.stale += other.stale
        self.presumption_failed |= other.presumption_failed

    @property
    def written(self) -> int:
        return self.inserted + self.updated


def _kind_column(table: sa.Table) -> str:
    return {"party": "kind", "document": "doc_type", "crm_case": ""}[table.name]


def _row_for(record: Record, synced_at: datetime, digest: str | None = None) -> dict[str, Any]:
    """The record's row as a dict of column values (SQLite's executemany, the ORM baseline)."""
    layout = RECORD_LAYOUTS[table_for(record).name]
    return layout.row(record, synced_at, content_hash(record) if digest is None else digest)


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


@dataclass(slots=True)
class _Stored:
    """What the classify query knows of a stored row."""

    digest: str
    deleted: bool
    stamp: datetime | None
    tracked: dict[str, Any]


def _existing_hashes(
    conn: Connection, table: sa.Table, keys: Iterable[tuple[Any, ...]], tracked: Sequence[str] = ()
) -> dict[tuple[Any, ...], _Stored]:
    """Map key -> the stored row's hash, deletion, change stamp and ``tracked`` column values, for the
    ``keys`` (natural-key tuples) that exist."""
    names = _key_columns(table)
    found: dict[tuple[Any, ...], _Stored] = {}
    width = len(names)
    # Group by (tenant, kind) so the lookup is a simple IN list on external_id.
    groups: dict[tuple[Any, ...], list[str]] = {}
    for key in keys:
        groups.setdefault(key[:-1], []).append(key[-1])
    postgres = conn.dialect.name == "postgresql"
    for prefix, ids in groups.items():
        for chunk in chunks(ids, 5000):
            cond = [table.c[k] == v for k, v in zip(names[:-1], prefix, strict=True)]
            # PostgreSQL: one array parameter, not thousands of rendered IN parameters per page.
            match = (
                table.c.external_id == sa.func.any(sa.bindparam("ids", chunk, type_=_TEXT_ARRAY))
                if postgres
                else table.c.external_id.in_(chunk)
            )
            stmt = sa.select(
                *[table.c[k] for k in names],
                table.c.content_hash,
                table.c.deleted_at.is_not(None),
                table.c.source_modified_at,
                *[table.c[t] for t in tracked],
            ).where(*cond, match)
            for db_row in conn.execute(stmt):
                found[tuple(db_row[:width])] = _Stored(
                    db_row[width],
                    bool(db_row[width + 1]),
                    db_row[width + 2],
                    dict(zip(tracked, db_row[width + 3 :], strict=True)),
                )
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
    history: ChangeSink | None = None,
) -> UpsertCounts:
    """Insert new records, update changed ones, skip unchanged ones. Returns the counts.

    The last occurrence of a key in one batch wins (an ERP page may repeat a record that changed
    while we paged). ``presume_new`` is the caller's belief that none of the keys exists yet (a
    first full load): on PostgreSQL the rows are then COPied straight in without the classify
    query, and if a key does exist the attempt is undone and the batch classified as usual
    (``counts.presumption_failed`` tells the caller to stop presuming). ``hashes``, when given,
    are the records' :func:`~connector.erp.records.content_hash` values in order, computed ahead.

    A record stamped before the stored row (a late or out-of-order delivery) is not written: the
    current value never moves backwards (``counts.stale``). ``history`` receives every change of a
    tracked field, written in this transaction, so a crash loses or duplicates none.
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
        tracked = history.columns(table) if history is not None else ()
        existing = _existing_hashes(conn, table, keyed, tracked)
        to_write: list[tuple[Record, str]] = []
        known_parties: list[PartyRecord] = []  # updated ones: their old children must go first
        late: list[Record] = []
        fresh = 0
        for key, (record, digest) in keyed.items():
            previous = existing.get(key)
            if previous is None:
                counts.inserted += 1
                fresh += 1
            elif previous.digest == digest and not previous.deleted:
                counts.unchanged += 1
                continue
            elif _older(record.source_modified_at, previous.stamp):
                counts.unchanged += 1
                counts.stale += 1
                late.append(record)
                continue
            else:
                counts.updated += 1
                if isinstance(record, PartyRecord):
                    known_parties.append(record)
                if history is not None:
                    if previous.deleted:
                        history.deletion(table, _owner(record), deleted=False, stamp=synced_at)
                    history.compare(table, previous.tracked, record)
            to_write.append((record, digest))
        _write_rows(conn, table, to_write, synced_at, all_new=fresh == len(to_write))
        if history is not None:
            for record in late:
                history.late(conn, table, record)
            history.flush(conn)
        parties = _parties(to_write)
        if parties:
            _replace_party_children(conn, parties, known_parties)
    return counts


def _older(stamp: datetime | None, stored: datetime | None) -> bool:
    """Whether a record's change stamp is before the stored row's (neither missing)."""
    return stamp is not None and stored is not None and stamp < stored


def _owner(record: Record) -> dict[str, Any]:
    """The key and owning party of a party or document record (a change row names both)."""
    if isinstance(record, PartyRecord):
        return {"tenant": record.tenant, "kind": record.kind, "external_id": record.external_id,
                "party_kind": record.kind, "party_external_id": record.external_id}  # fmt: skip
    if isinstance(record, DocumentRecord):
        return {"tenant": record.tenant, "kind": record.doc_type, "external_id": record.external_id,
                "number": record.number, "party_kind": record.party_kind,
                "party_external_id": record.party_external_id}  # fmt: skip
    return {}


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
            for chunk in chunks(ids, 5000):
                conn.execute(
                    table.delete().where(
                        table.c.tenant == tenant,
                        table.c.party_kind == kind,
                        table.c.party_external_id.in_(chunk),
                    )
                )
    if not parties:
        return
    postgres = conn.dialect.name == "postgresql"
    for layout in CHILD_LAYOUTS:
        if postgres:
            _copy_text(conn, layout.table.name, layout.columns, layout.lines, parties)
        else:
            rows = layout.rows(parties)
            if rows:
                conn.execute(layout.table.insert(), rows)


def _copy_new(
    conn: Connection, table: sa.Table, entries: Sequence[tuple[Record, str]], synced_at: datetime
) -> bool:
    """COPY rows the classify found absent (or the caller presumes new) straight into ``table`` (a
    first full sync is all such pages; the stage and its INSERT .. SELECT doubled the server's work).
    In a savepoint: if one of the keys exists (a concurrent writer, a repeated record, a presumption
    that was wrong), it is undone and False sends the rows to the classify and upsert instead."""
    layout = RECORD_LAYOUTS[table.name]
    try:
        with conn.begin_nested():
            _copy_text(conn, table.name, layout.columns, layout.lines, entries, synced_at)
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
    layout = RECORD_LAYOUTS[table.name]
    names = layout.columns
    keys = _key_columns(table)
    quote = conn.dialect.identifier_preparer.quote
    cols = ", ".join(quote(n) for n in names)
    stage = f"_stage_{table.name}_{zlib.crc32(cols.encode()):08x}"
    conn.exec_driver_sql(
        f"CREATE TEMP TABLE IF NOT EXISTS {stage} AS SELECT {cols} FROM {quote(table.name)} WITH NO DATA"
    )
    conn.exec_driver_sql(f"TRUNCATE {stage}")
    _copy_text(conn, stage, names, layout.lines, entries, synced_at)
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

    Formatting every value ourselves (see :mod:`connector.semantic.copy_format`) and sending the page
    in one write replaces a bind-processor call per value and psycopg's per-row adaptation, which
    were most of the writer's time. A value a column refuses fails before anything is sent, as with
    ``execute()``; a driver error is raised as SQLAlchemy's so callers' handlers still apply.
    """
    try:
        payload = "".join(lines(items, *args))
    except (TypeError, ValueError, ArithmeticError) as exc:
        raise sa.exc.StatementError(
            f"({type(exc).__module__}.{type(exc).__name__}) {exc}", f"COPY {target}", None, exc
        ) from exc
    if payload:
        copy_into(conn, target, columns, lambda copy: copy.write(payload))


def _live(table: sa.Table, tenant: str, kind: str | None) -> list[Any]:
    """The conditions of a (tenant, kind)'s live rows (``kind`` None: every kind, as for cases)."""
    keys = _key_columns(table)
    cond = [table.c.tenant == tenant, table.c.deleted_at.is_(None)]
    if kind is not None and len(keys) == 3:
        cond.append(table.c[keys[1]] == kind)
    return cond


def live_external_ids(conn: Connection, table: sa.Table, tenant: str, kind: str | None) -> set[str]:
    """External ids of the live (not deleted) rows of (tenant, kind)."""
    return {r[0] for r in conn.execute(sa.select(table.c.external_id).where(*_live(table, tenant, kind)))}


def mark_missing_deleted(
    conn: Connection,
    table: sa.Table,
    tenant: str,
    kind: str | None,
    existing_ids: set[str],
    deleted_at: datetime,
    history: ChangeSink | None = None,
) -> int:
    """Set ``deleted_at`` on live rows of (tenant, kind) whose id is not in ``existing_ids``;
    ``history`` records each as a deletion (in this transaction)."""
    cond = _live(table, tenant, kind)
    live = [r[0] for r in conn.execute(sa.select(table.c.external_id).where(*cond))]
    gone = [ext for ext in live if ext not in existing_ids]
    if history is not None and gone and table.name in ("party", "document"):
        _record_deletions(conn, table, cond, gone, deleted_at, history)
    for chunk in chunks(gone, 5000):
        conn.execute(
            table.update().where(*cond, table.c.external_id.in_(chunk)).values(deleted_at=deleted_at)
        )
    return len(gone)


def _record_deletions(
    conn: Connection, table: sa.Table, cond: list[Any], gone: list[str], stamp: datetime, history: ChangeSink
) -> None:
    keys = _key_columns(table)
    if table.name == "party":
        owner_cols = [table.c.tenant, table.c[keys[1]], table.c.external_id]
    else:
        owner_cols = [table.c.tenant, table.c[keys[1]], table.c.external_id, table.c.number,
                      table.c.party_kind, table.c.party_external_id]  # fmt: skip
    for chunk in chunks(gone, 5000):
        for row in conn.execute(sa.select(*owner_cols).where(*cond, table.c.external_id.in_(chunk))):
            owner = {"tenant": row[0], "kind": row[1], "external_id": row[2]}
            if table.name == "party":
                owner.update(party_kind=row[1], party_external_id=row[2])
            else:
                owner.update(number=row[3], party_kind=row[4], party_external_id=row[5])
            history.deletion(table, owner, deleted=True, stamp=stamp)
    history.flush(conn)
