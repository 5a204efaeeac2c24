"""The fake Acumatica's in-memory tables, with the indexes that keep big reads fast.

Rows are kept in insertion order (the order the real server returns them in: by its internal
key). A filtered list is computed once per (filter, data version) and cached, so paging through
it is slicing a list; a range on the change field is answered from a sorted index with bisect.
Any write bumps the version and drops the caches.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, tzinfo
from typing import Any

from connector.testing.acumatica_filter import RowValues, parse_filter
from connector.testing.acumatica_schema import EntityDef, EntityView

#: Marks a wire field that a test removed from a record (see ``FakeAcumatica.corrupt``).
MISSING: Any = object()
_CACHE_LIMIT = 64


class Row:
    """One record: plain values (scalars, linked dicts, detail lists), custom fields, wire overrides."""

    __slots__ = ("custom", "id", "overrides", "seq", "values")

    def __init__(self, seq: int, guid: str, values: dict[str, Any], custom: dict[str, Any] | None) -> None:
        self.seq = seq
        self.id = guid
        self.values = values
        self.custom = custom
        self.overrides: dict[str, Any] | None = None


def lookup(row: Row, path: str) -> Any:
    """A field's plain value for filters: ``Field``, ``Linked/Field`` or ``cf:View.Field``."""
    if path.startswith("cf:"):
        return row.custom.get(path[3:]) if row.custom else None
    if "/" not in path:
        return row.values.get(path)
    value: Any = row.values
    for part in path.split("/"):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


class EntityTable:
    def __init__(self, definition: EntityDef, local_tz: tzinfo = UTC) -> None:
        self.definition = definition
        self.local_tz = local_tz
        self._rows: dict[tuple[str, ...], Row] = {}
        self._seq = 0
        self.version = 0
        self._ordered: list[Row] | None = None
        self._by_change: list[Row] | None = None
        self._change_keys: list[datetime] | None = None
        self._cache: dict[str, list[Row]] = {}

    def __len__(self) -> int:
        return len(self._rows)

    def normal_key(self, key: Iterable[str]) -> tuple[str, ...]:
        """Keys compare case-insensitively, as on the real (SQL Server) database."""
        parts = tuple(str(part).casefold() for part in key)
        if len(parts) != len(self.definition.key_fields):
            raise KeyError(f"{self.definition.name} keys have {len(self.definition.key_fields)} part(s)")
        return parts

    def key_of(self, values: Mapping[str, Any]) -> tuple[str, ...]:
        missing = [name for name in self.definition.key_fields if not values.get(name)]
        if missing:
            raise KeyError(f"{self.definition.name} record without key field(s) {', '.join(missing)}")
        return self.normal_key(values[name] for name in self.definition.key_fields)

    def display_key(self, row: Row) -> tuple[str, ...]:
        return tuple(str(row.values[name]) for name in self.definition.key_fields)

    # Writes -------------------------------------------------------------------------------------
    def _changed(self) -> None:
        self.version += 1
        self._ordered = None
        self._by_change = None
        self._change_keys = None
        self._cache.clear()

    def insert(self, values: dict[str, Any], *, guid: str, custom: dict[str, Any] | None = None) -> Row:
        key = self.key_of(values)
        if key in self._rows:
            raise KeyError(f"{self.definition.name} {'/'.join(key)} already exists")
        if not isinstance(values.get(self.definition.change_field), datetime):
            raise ValueError(
                f"{self.definition.name} record needs {self.definition.change_field} (aware datetime)"
            )
        self._seq += 1
        row = Row(self._seq, guid, values, custom)
        self._rows[key] = row
        self._changed()
        return row

    def load(self, rows: Iterable[tuple[dict[str, Any], str, dict[str, Any] | None]]) -> None:
        """Bulk insert for data generation (keys assumed unique), one cache drop at the end."""
        table = self._rows
        for values, guid, custom in rows:
            self._seq += 1
            table[self.key_of(values)] = Row(self._seq, guid, values, custom)
        self._changed()

    def get(self, key: Iterable[str]) -> Row | None:
        return self._rows.get(self.normal_key(key))

    def touch(self) -> None:
        """Call after changing a row's values in place."""
        self._changed()

    def delete(self, key: Iterable[str]) -> Row:
        normal = self.normal_key(key)
        row = self._rows.pop(normal, None)
        if row is None:
            raise KeyError(f"{self.definition.name} {'/'.join(normal)} does not exist")
        self._changed()
        return row

    # Reads --------------------------------------------------------------------------------------
    def ordered(self) -> list[Row]:
        if self._ordered is None:
            self._ordered = list(self._rows.values())
        return self._ordered

    def _change_index(self) -> tuple[list[Row], list[datetime]]:
        if self._by_change is None or self._change_keys is None:
            field = self.definition.change_field
            self._by_change = sorted(self.ordered(), key=lambda row: row.values[field])
            self._change_keys = [row.values[field] for row in self._by_change]
        return self._by_change, self._change_keys

    def select(self, filter_text: str | None, wire: EntityView | None = None) -> list[Row]:
        """Rows matching ``filter_text`` in server order (cached per filter, endpoint version and data
        version). ``wire``: the endpoint version's names and select codes the filter is written in."""
        if not filter_text:
            return self.ordered()
        cache_key = filter_text if wire is None else f"{wire.version}|{filter_text}"
        cached = self._cache.get(cache_key)
        if cached is not None:
            return cached
        parsed = parse_filter(
            filter_text, lookup if wire is None else _wire_lookup(wire), local_tz=self.local_tz
        )
        bound = parsed.bounds(self.definition.change_field if wire is None else wire.change_field)
        if bound is None:
            result = [row for row in self.ordered() if parsed.matches(row)]
        else:
            rows, keys = self._change_index()
            start = 0
            end = len(keys)
            if bound.low is not None:
                start = (bisect.bisect_left if bound.low_inclusive else bisect.bisect_right)(keys, bound.low)
            if bound.high is not None:
                end = (bisect.bisect_right if bound.high_inclusive else bisect.bisect_left)(keys, bound.high)
            result = sorted((row for row in rows[start:end] if parsed.matches(row)), key=lambda row: row.seq)
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[cache_key] = result
        return result


def _wire_lookup(wire: EntityView) -> RowValues:
    """``lookup`` for a filter written in ``wire``'s names: renamed fields read from the row's name,
    select fields compared by their ID (what a 26.200.001 client sends)."""
    stored, selects = wire.stored, wire.selects
    if not stored and not selects:
        return lookup

    def read(row: Row, path: str) -> Any:
        value = lookup(row, stored.get(path, path))
        return wire.code_of(path, value) if path in selects else value

    return read
