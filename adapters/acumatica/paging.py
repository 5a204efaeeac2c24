"""``$top``/``$skip`` paging until a short page, with loop detection.

Acumatica has no next link and no total count: the last page is the first one shorter than
``$top``. A server that ignores ``$skip`` would loop forever by that rule, so a page whose
records are the same as the previous page's is a protocol error; so is a page longer than
``$top`` (a server that ignores ``$top``). The offsets and the repeat check are the shared
:mod:`connector.adapters.paging` classes SAP pages with too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from connector.adapters.paging import OffsetPaginator, SeenPages
from connector.errors import ERPProtocolError

Fetch = Callable[[int, int], list[Any]]


def _fingerprint(rows: list[Any]) -> tuple[str, ...]:
    """Record ids (``id`` guid, else the row's JSON keys/values) that identify a page's content."""
    marks = []
    for row in rows:
        if isinstance(row, dict) and isinstance(row.get("id"), str):
            marks.append(row["id"])
        else:
            marks.append(repr(sorted(row.items())) if isinstance(row, dict) else repr(row))
    return tuple(marks)


def pages(fetch: Fetch, page_size: int, *, what: str) -> Iterator[tuple[int, list[Any]]]:
    """Yield ``(page_number, rows)`` from ``fetch(skip, top)`` until a page shorter than ``page_size``."""
    offsets = OffsetPaginator(page_size)
    seen = SeenPages()
    number = 0
    while not offsets.finished:
        rows = fetch(offsets.current, page_size)
        if len(rows) > page_size:
            raise ERPProtocolError(
                f"Acumatica {what}: page {number} has {len(rows)} records for $top={page_size}; "
                "the server ignores $top"
            )
        earlier = seen.repeat_of(_fingerprint(rows), str(number)) if rows else None
        if earlier is not None:
            raise ERPProtocolError(
                f"Acumatica {what}: page {number} repeats page {earlier} (same records); the server "
                "ignores $skip, so the read stops instead of looping"
            )
        yield number, rows
        offsets.advance(len(rows))
        number += 1
