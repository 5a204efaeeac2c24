"""``$top``/``$skip`` paging that cannot skip a record, with loop detection.

Acumatica has no ordering parameter, no next link and no total count: the last page is the first
one shorter than ``$top``, and ``$skip`` counts positions in the server's order (its internal key)
at the moment of each request. A record deleted from a page already read moves every later record
one place up, so a plain ``$skip`` read would never see one of them, and nothing is stamped to tell.

So every page after the first is asked for with an overlap: it starts ``overlap`` positions before
where the previous one ended and must contain a record the previous page ended with (the anchor,
matched by its ``id``). Rows up to the anchor were read already; the page goes on after it, wherever
inserts or deletions moved it. When no anchor is found (more records moved than the overlap covers)
the read starts again from the first page (records read twice cost a hash comparison), at most
:data:`MAX_RESTARTS` times, then fails with one line so the next run reads the window again.

A server that ignores ``$skip`` returns the same rows again: a protocol error, not a loop; so is a
page longer than ``$top`` (a server that ignores ``$top``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterator
from typing import Any

from connector.errors import ERPProtocolError

log = logging.getLogger(__name__)

Fetch = Callable[[int, int], list[Any]]
MAX_RESTARTS = 3
_MAX_OVERLAP = 100


def overlap_for(page_size: int) -> int:
    """Rows re-read at each page boundary: a fiftieth of the page, 2 to 100 (20 for the default
    1,000). The overlap is how many deletions between two page requests of one read (about a
    second apart) are absorbed without a fresh start; a tenth of the page (the earlier rule)
    rendered, sent and decoded 10% more rows on every read for a churn no ERP shows in a second,
    and a fresh start still keeps a larger one correct."""
    return max(2, min(_MAX_OVERLAP, page_size // 50))


def _identity(row: Any) -> Hashable:
    """A row's ``id`` guid, else its JSON keys/values (what identifies a record between requests)."""
    if isinstance(row, dict) and isinstance(row.get("id"), str):
        return row["id"]  # type: ignore[no-any-return]
    return repr(sorted(row.items())) if isinstance(row, dict) else repr(row)


def _anchor(ids: list[Hashable], tail: list[Hashable]) -> int | None:
    """Index in ``ids`` of the last row of ``tail`` (the previous page's end) still there, or None."""
    where = {ident: i for i, ident in enumerate(ids)}
    for ident in reversed(tail):
        if ident in where:
            return where[ident]
    return None


def pages(
    fetch: Fetch, page_size: int, *, what: str, overlap: int | None = None
) -> Iterator[tuple[int, list[Any]]]:
    """Yield ``(page_number, rows)`` from ``fetch(skip, top)``, each record of the read at least once."""
    back = overlap if overlap is not None else overlap_for(page_size)
    number = 0
    restarts = 0
    offset = 0  # server position after the last row fetched
    tail: list[Hashable] = []  # identities of the rows the last page ended with
    previous: list[Hashable] | None = None
    while True:
        skip = max(0, offset - len(tail))
        top = page_size + (offset - skip)
        rows = fetch(skip, top)
        if len(rows) > top:
            raise ERPProtocolError(
                f"Acumatica {what}: page {number} has {len(rows)} records for $top={top}; "
                "the server ignores $top"
            )
        ids = [_identity(row) for row in rows]
        if rows and ids == previous:
            raise ERPProtocolError(
                f"Acumatica {what}: page {number} repeats page {number - 1} (same records); the server "
                "ignores $skip, so the read stops instead of looping"
            )
        previous = ids
        start = 0
        if tail:
            found = _anchor(ids, tail)
            if found is None:
                restarts += 1
                if restarts > MAX_RESTARTS:
                    raise ERPProtocolError(
                        f"Acumatica {what}: records kept moving while they were paged ({MAX_RESTARTS} "
                        "fresh starts); the watermark stays and the next run reads the window again"
                    )
                log.info("Acumatica %s: records moved past the page overlap; reading from the start", what)
                offset, tail, previous = 0, [], None
                continue
            start = found + 1
        yield number, rows[start:]
        number += 1
        offset = skip + len(rows)
        tail = ids[-back:]
        if len(rows) < top:
            return
