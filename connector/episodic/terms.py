"""What of an episodic entry the lexical index holds: its summary and the date it happened.

The summary carries the request, resolution, names, amounts and document numbers; the case date is
added as date terms, so "the 14 March dispute" finds a case dated 2026-03-14 whose text does not
say so. Only live entries are indexed: archiving or deleting an entry removes its terms.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa

from connector.episodic.tables import ENTRIES, LIVE
from connector.lexical import index as lexical
from connector.lexical.tables import CASE_SOURCE
from connector.lexical.tokens import date_terms
from connector.scope import Scope

_PAGE = 1000


def document_of(entry: Mapping[str, Any], counts: Mapping[str, int] | None = None) -> lexical.LexicalDocument:
    """An entry row (or the writer's values for one) as a lexical document; ``counts``: its
    summary's term counts if already known."""
    return lexical.LexicalDocument(
        scope=Scope(entry["tenant"], entry["customer_id"]),
        doc_id=entry["id"],
        text=entry["summary"],
        extra_terms=tuple(date_terms(entry["occurred_at"].date())),
        counts=counts,
    )


def index_entries(
    conn: sa.Connection,
    entries: Iterable[Mapping[str, Any]],
    *,
    replace: bool = True,
    counts: Mapping[str, Mapping[str, int]] | None = None,
) -> None:
    """Index entries in the caller's transaction; ``replace=False`` when none is indexed yet.
    ``counts``: term counts by summary text, for the summaries already tokenised (the writer does
    it while the model embeds, off the rows' transaction); the others are tokenised here."""
    known = counts or {}
    documents = [document_of(e, known.get(e["summary"])) for e in entries]
    if replace:
        lexical.delete(conn, CASE_SOURCE, [d.doc_id for d in documents])
    lexical.write(conn, CASE_SOURCE, documents)


def unindex_entries(conn: sa.Connection, entry_ids: Iterable[str]) -> None:
    lexical.delete(conn, CASE_SOURCE, entry_ids)


def index_live_entries(conn: sa.Connection) -> int:
    """(Re-)index every live entry, page by page (``episodic reindex`` after migration 0008)."""
    e = ENTRIES.c
    columns = (e.id, e.tenant, e.customer_id, e.summary, e.occurred_at)
    done, last_id = 0, ""
    while True:
        page = sa.select(*columns).where(e.status == LIVE, e.id > last_id).order_by(e.id).limit(_PAGE)
        rows = [dict(r) for r in conn.execute(page).mappings()]
        if not rows:
            return done
        index_entries(conn, rows, replace=True)
        done += len(rows)
        last_id = rows[-1]["id"]
