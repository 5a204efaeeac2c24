"""Records whose text no store can hold (a NUL, a lone surrogate, a value wider than its column on
PostgreSQL): found only when a page write fails.

The happy path pays nothing: a page is written as it came, and only when the write fails is the
page searched for such text. If some is found, ``sync.on_malformed_record`` decides: ``clean``
(default) stores the records with NULs removed and lone surrogates replaced by U+FFFD, ``skip``
leaves them out, ``fail`` stops the stream; either way the record's key is named in the run's
problems. A value wider than its column (:mod:`connector.sync.widths`) is cut to the width by
``clean``. One bad record therefore never blocks a stream.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from connector.erp import Page, Record, RecordProblem
from connector.errors import SyncError
from connector.storable import is_storable, storable
from connector.sync.widths import clipped, overlong_fields

Policy = Literal["clean", "skip", "fail"]


def _unstorable(value: Any) -> bool:
    if isinstance(value, str):
        return not is_storable(value)
    if isinstance(value, dict):
        return any(_unstorable(k) or _unstorable(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_unstorable(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return any(_unstorable(getattr(value, f.name)) for f in dataclasses.fields(value))
    return False


def unstorable_fields(record: Record) -> list[str]:
    """Names of the record's fields holding text a store refuses."""
    return [f.name for f in dataclasses.fields(record) if _unstorable(getattr(record, f.name))]


def _cleaned(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(
            value, **{f.name: _cleaned(getattr(value, f.name)) for f in dataclasses.fields(value)}
        )
    if isinstance(value, tuple):
        return tuple(_cleaned(v) for v in value)
    return storable(value)


def cleaned(record: Record, fields: list[str]) -> Record:
    """The record with those fields made storable (ValueError if its key is then empty)."""
    return dataclasses.replace(record, **{name: _cleaned(getattr(record, name)) for name in fields})


def repair_page(page: Page, policy: Policy, *, tenant: str) -> list[str]:
    """Clean or drop the page's records with unstorable text; returns one line per record handled.

    Empty when the page has none (the failure had another cause). ``fail`` raises SyncError.
    """
    notes: list[str] = []
    kept: list[Record] = []
    for record in page.records:
        fields = unstorable_fields(record)
        wide = overlong_fields(record)
        if not fields and not wide:
            kept.append(record)
            continue
        key = repr(storable(record.external_id))
        whats = []
        if fields:
            whats.append(f"text a store cannot hold (NUL or lone surrogate) in {', '.join(fields)}")
        if wide:
            whats.append(f"a value longer than its column in {', '.join(wide)}")
        what = "; ".join(whats)
        if policy == "fail":
            raise SyncError(
                f"{tenant}/{page.stream}: record {key} has {what} (sync.on_malformed_record = 'fail'; "
                "'clean' stores it cleaned, 'skip' leaves it out)"
            )
        if policy == "clean":
            try:
                kept.append(clipped(cleaned(record, fields), wide))
            except ValueError as exc:
                page.problems.append(RecordProblem(page.stream, key, f"{what}; cleaned it is invalid: {exc}"))
                notes.append(f"skipped {key}: {what}; cleaned it is invalid")
                continue
            done = [f"removed NUL / replaced lone surrogates in {', '.join(fields)}"] if fields else []
            done += [f"cut {', '.join(wide)} to the column width"] if wide else []
            notes.append(f"cleaned {key}: {'; '.join(done)}")
        else:
            page.problems.append(RecordProblem(page.stream, key, what))
            notes.append(f"skipped {key}: {what}")
    if notes:
        page.records = kept
        page.hashes = None  # the cleaned records hash differently
    return notes
