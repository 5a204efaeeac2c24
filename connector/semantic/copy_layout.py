"""What the bulk upsert writes for each table, derived from the table metadata.

A column is written when the canonical record (or child: contact, address, attribute) has a field
of the same name, or when it is sync bookkeeping (``content_hash``, ``synced_at``, ``deleted_at``);
any other column (``id``, ``crm_case.episodic_hash``) is left to its default. Adding a column is
therefore one model field, its migration and the record field of the same name:
``tests/db/test_schema_migrations.py`` checks the first two agree, the layout follows by itself.

The functions that format a page for COPY and build SQLite's executemany rows are generated
once per table from that column list, as straight-line code (one f-string per row, like the
hand-written formatters they replace): a loop over columns per value cost a third more per record.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from connector.erp.records import PartyRecord
from connector.semantic.copy_format import FORMATTERS, NULL, formatter_name

_BOOKKEEPING = {"content_hash": "digest", "synced_at": "synced", "deleted_at": None}
OWNER = ("tenant", "party_kind", "party_external_id")
_TAB, _NEWLINE = "\\t", "\\n"  # as written in the generated source's f-strings


@dataclass(frozen=True, slots=True)
class RecordLayout:
    """A record table's written columns, its COPY line formatter and its executemany row builder."""

    table: sa.Table
    columns: tuple[str, ...]
    lines: Callable[[Sequence[tuple[Any, str]], Any], Iterator[str]]  # (entries, synced_at)
    row: Callable[[Any, Any, str], dict[str, Any]]  # (record, synced_at, digest)


@dataclass(frozen=True, slots=True)
class ChildLayout:
    """A party child table's written columns, COPY line formatter and executemany rows builder."""

    table: sa.Table
    columns: tuple[str, ...]
    lines: Callable[[Sequence[PartyRecord]], Iterator[str]]
    rows: Callable[[Sequence[PartyRecord]], list[dict[str, Any]]]


def _field_names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


# Binds every formatter to a local name at the top of a generated function (a local read is
# cheaper than a global one, on every value of every row).
_LOCAL_FORMATTERS = "".join(f"    {name} = _FORMATTERS[{name!r}]\n" for name in FORMATTERS)


def _compile(source: str, name: str) -> Callable[..., Any]:
    namespace: dict[str, Any] = {"_FORMATTERS": FORMATTERS}
    exec(compile(source, f"<copy layout {name}>", "exec"), namespace)
    return namespace["generated"]  # type: ignore[no-any-return]


def record_layout(table: sa.Table, record_type: type) -> RecordLayout:
    fields = _field_names(record_type)
    columns = [c for c in table.columns if c.name in fields or c.name in _BOOKKEEPING]
    copy_parts: list[str] = []
    row_parts: list[str] = []
    for column in columns:
        name = column.name
        if name in _BOOKKEEPING:
            source = _BOOKKEEPING[name]
            copy_parts.append(NULL.replace("\\", "\\\\") if source is None else "{" + source + "}")
            row_parts.append(f"{name!r}: {'None' if source is None else source + '_value'}")
            continue
        copy_parts.append("{" + f"{formatter_name(column)}(r.{name})" + "}")
        row_parts.append(f"{name!r}: r.{name}")
    line = _TAB.join(copy_parts)
    lines = _compile(
        "def generated(entries, synced_at):\n"
        f"{_LOCAL_FORMATTERS}"
        "    synced = copy_timestamp(synced_at)\n"
        "    for r, digest in entries:\n"
        f'        yield f"{line}{_NEWLINE}"\n',
        f"{table.name} lines",
    )
    row = _compile(
        f"def generated(r, synced_value, digest_value):\n    return {{{', '.join(row_parts)}}}\n",
        f"{table.name} row",
    )
    return RecordLayout(table, tuple(c.name for c in columns), lines, row)


def child_layout(table: sa.Table, attribute: str, child_type: type | None) -> ChildLayout:
    """A child table filled from ``party.<attribute>``: a tuple of ``child_type`` (with an ``ordinal``
    column for its position), or, when ``child_type`` is None, a name -> value mapping."""
    fields = {"name", "value"} if child_type is None else _field_names(child_type) | {"ordinal"}
    by_name = {c.name: c for c in table.columns}
    # The owner's columns first: their text is formatted once per party, not once per child.
    columns = [by_name[n] for n in OWNER] + [c for c in table.columns if c.name in fields - set(OWNER)]
    owner = {"tenant": "p.tenant", "party_kind": "p.kind", "party_external_id": "p.external_id"}
    if child_type is None:
        loop, item = f"for name, value in p.{attribute}.items():", {"name": "name", "value": "value"}
    else:
        loop = f"for ordinal, c in enumerate(p.{attribute}):"
        item = {c.name: "ordinal" if c.name == "ordinal" else f"c.{c.name}" for c in columns}
    values = {c.name: owner.get(c.name) or item[c.name] for c in columns}
    formatted = [
        "{ordinal}" if values[c.name] == "ordinal" else "{" + f"{formatter_name(c)}({values[c.name]})" + "}"
        for c in columns
    ]  # the enumerate index is an int already
    owner_text, child_text = _TAB.join(formatted[: len(OWNER)]), _TAB.join(formatted[len(OWNER) :])
    row_dict = ", ".join(f"{c.name!r}: {values[c.name]}" for c in columns)
    lines = _compile(
        "def generated(parties):\n"
        f"{_LOCAL_FORMATTERS}"
        "    for p in parties:\n"
        f"        if not p.{attribute}:\n"
        "            continue\n"
        f'        owner = f"{owner_text}"\n'
        f"        {loop}\n"
        f'            yield f"{{owner}}{_TAB}{child_text}{_NEWLINE}"\n',
        f"{table.name} lines",
    )
    rows = _compile(
        f"def generated(parties):\n    return [{{{row_dict}}} for p in parties {loop[:-1]}]\n",
        f"{table.name} rows",
    )
    return ChildLayout(table, tuple(c.name for c in columns), lines, rows)


def layouts(
    records: dict[type, sa.Table], party_children: dict[str, tuple[sa.Table, type | None]]
) -> tuple[dict[str, RecordLayout], tuple[ChildLayout, ...]]:
    """Layouts of the record tables (keyed by table name) and of the party child tables
    (``{party field: (table, child type or None for a name -> value mapping)}``)."""
    by_table = {table.name: record_layout(table, cls) for cls, table in records.items()}
    children = tuple(child_layout(table, field, cls) for field, (table, cls) in party_children.items())
    return by_table, children
