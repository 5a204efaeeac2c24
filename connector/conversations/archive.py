"""Archived turns, reached on purpose (``include_archived``): ranked lexically, read from working memory.

A turn dated before the index's window (``conversations.window_start``) is archived: retention took
its row, postings and vector out of the index (and a turn imported that old was never indexed), but
its text stays in working memory (``work_turn``) until the customer is erased. No vector is kept for
it, so nothing past retention lingers in Chroma and erasure has nothing more to reach: the turns are
read from the customer's own sessions (the scope in SQL, and each row's session scope checked again
by the caller's read) and ranked by BM25 over the query's terms with the archive's own statistics,
as case recall reaches its archive by document number only.

Never past the PII window: with ``conversations.pii`` the index window *is* the PII window, so the
archive is empty; a customer whose erasure is recorded has none either (its rows are gone, the
tombstone is checked as a second guard). The cost follows the size of the customer's archive
(every archived text is read and tokenized), which is why it is reached only on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import sqlalchemy as sa

from connector.conversations.indexer import INDEXED_ROLES, indexed_text, turn_id
from connector.lexical.bm25 import Posting, score
from connector.lexical.tokens import term_counts
from connector.recall.fusion import Fused
from connector.scope import Scope
from connector.working.tables import WorkSession, WorkTurn

FAR_PAST = datetime(1900, 1, 1, tzinfo=UTC)
FAR_FUTURE = datetime(9999, 1, 1, tzinfo=UTC)
_session_t: sa.Table = WorkSession.__table__  # type: ignore[attr-defined]
_turn_t: sa.Table = WorkTurn.__table__  # type: ignore[attr-defined]

_ARCHIVED = (
    sa.select(_turn_t.c.session_id, _turn_t.c.seq, _turn_t.c.role, _turn_t.c.content, _turn_t.c.created_at)
    .select_from(_turn_t.join(_session_t, _session_t.c.session_id == _turn_t.c.session_id))
    .where(
        _session_t.c.tenant == sa.bindparam("tenant"),
        _session_t.c.customer_id == sa.bindparam("customer_id"),
        _session_t.c.session_id != sa.bindparam("exclude"),
        _turn_t.c.role.in_(sorted(INDEXED_ROLES)),
        _turn_t.c.created_at < sa.bindparam("archived_before"),
        _turn_t.c.created_at >= sa.bindparam("since"),
        _turn_t.c.created_at <= sa.bindparam("until"),
    )
)


@dataclass(frozen=True, slots=True)
class ArchiveQuery:
    """Which archived turns one recall may reach: dated before ``archived_before`` (the index's
    window) and inside ``since``/``until``, not of ``exclude_session``; ``named``: the span the
    question names (narrows, unless no archived turn is in it)."""

    archived_before: datetime
    since: datetime | None
    until: datetime | None
    exclude_session: str | None
    named: tuple[datetime, datetime] | None


def rank(
    conn: sa.Connection, scope: Scope, terms: list[str], wanted: ArchiveQuery, *, k: int
) -> list[tuple[tuple[str, str, int, str], Fused]]:
    """The top ``k`` archived turns holding a query term, as ``(id, session_id, seq, text)`` rows
    with their BM25 rank (``Fused.lexical``; no dense score: archived turns keep no vector)."""
    if not terms:
        return []
    params = {
        "tenant": scope.tenant,
        "customer_id": scope.customer_id,
        "exclude": wanted.exclude_session or "",
        "archived_before": wanted.archived_before,
        "since": wanted.since or FAR_PAST,
        "until": wanted.until or FAR_FUTURE,
    }
    rows = [r for r in conn.execute(_ARCHIVED, params).all() if indexed_text(r.role, r.content) is not None]
    if wanted.named is not None:  # the time the question names, unless no archived turn is of it
        start, end = wanted.named
        inside = [r for r in rows if start <= r.created_at < end]
        rows = inside or rows
    keys = {f"{r.session_id}\x1f{r.seq}": r for r in rows}
    postings: list[Posting] = []
    lengths: dict[str, int] = {}
    wanted_terms = set(terms)
    for key, row in keys.items():
        counts = term_counts(indexed_text(row.role, row.content) or "")
        lengths[key] = sum(counts.values())
        postings.extend(Posting(key, t, n) for t, n in counts.items() if t in wanted_terms)
    scored = sorted(
        score(postings, lengths, query_terms=terms).items(), key=lambda item: (-item[1].score, item[0])
    )
    out = []
    for index, (key, lexical) in enumerate(scored[:k]):
        row = keys[key]
        own = (turn_id(scope.tenant, row.session_id, int(row.seq)), row.session_id, int(row.seq), row.content)
        out.append((own, Fused(index, lexical.score, 0.0, lexical.score, lexical.terms, ())))
    return out
