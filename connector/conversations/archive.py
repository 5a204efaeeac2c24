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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from connector.conversations.indexer import INDEXED_ROLES, MAX_INDEXED_CHARS, turn_id
from connector.lexical.bm25 import Posting, score
from connector.lexical.tokens import fold_unicode, term_counts
from connector.recall.fusion import Fused
from connector.scope import Scope
from connector.working.tables import WorkSession, WorkTurn

FAR_PAST = datetime(1900, 1, 1, tzinfo=UTC)
FAR_FUTURE = datetime(9999, 1, 1, tzinfo=UTC)
_session_t: sa.Table = WorkSession.__table__  # type: ignore[attr-defined]
_turn_t: sa.Table = WorkTurn.__table__  # type: ignore[attr-defined]

# Only what ranking needs (no date: decoding it was a sixth of the cost; the spans are in SQL).
_ARCHIVED = (
    sa.select(_turn_t.c.session_id, _turn_t.c.seq, _turn_t.c.content)
    .select_from(_turn_t.join(_session_t, _session_t.c.session_id == _turn_t.c.session_id))
    .where(
        _session_t.c.tenant == sa.bindparam("tenant"),
        _session_t.c.customer_id == sa.bindparam("customer_id"),
        _session_t.c.session_id != sa.bindparam("exclude"),
        _turn_t.c.role.in_(sorted(INDEXED_ROLES)),
        _turn_t.c.created_at < sa.bindparam("archived_before"),
        _turn_t.c.created_at >= sa.bindparam("since"),
        _turn_t.c.created_at <= sa.bindparam("until"),
        _turn_t.c.created_at < sa.bindparam("span_end"),
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
    with their BM25 rank (``Fused.lexical``; no dense score: archived turns keep no vector). Only the
    texts that may hold a query term are tokenized (:func:`_probe`)."""
    if not terms:
        return []
    since = wanted.since or FAR_PAST
    params: dict[str, Any] = {
        "tenant": scope.tenant,
        "customer_id": scope.customer_id,
        "exclude": wanted.exclude_session or "",
        "archived_before": wanted.archived_before,
        "since": since,
        "until": wanted.until or FAR_FUTURE,
        "span_end": FAR_FUTURE,
    }
    rows: list[Any] = []
    if wanted.named is not None:  # the time the question names, unless no archived turn is of it
        start, end = wanted.named
        spanned = {**params, "since": max(start, since), "span_end": end}
        rows = _texts(conn.execute(_ARCHIVED, spanned).all())
    if not rows:
        rows = _texts(conn.execute(_ARCHIVED, params).all())
    postings: list[Posting] = []
    lengths: dict[str, int] = {}
    skipped: dict[str, int] = {}  # texts that cannot hold a query term: their word counts
    read_words = 0
    wanted_terms = set(terms)
    could_hold = _probe(terms)
    for index, row in enumerate(rows):
        key, text = str(index), row[2][:MAX_INDEXED_CHARS]
        if could_hold is not None and not could_hold(text):
            skipped[key] = len(text.split())
            continue
        counts = term_counts(text)
        lengths[key] = sum(counts.values())
        read_words += len(text.split())
        postings.extend(Posting(key, t, n) for t, n in counts.items() if t in wanted_terms)
    if skipped:  # their lengths only move the average length: their terms are about this share of words
        share = sum(lengths.values()) / read_words if read_words else 0.6
        lengths.update({k: max(1, round(words * share)) for k, words in skipped.items()})
    scored = sorted(
        score(postings, lengths, query_terms=terms).items(), key=lambda item: (-item[1].score, int(item[0]))
    )
    out = []
    for index, (key, lexical) in enumerate(scored[:k]):
        session_id, seq, content = rows[int(key)]
        own = (turn_id(scope.tenant, session_id, int(seq)), session_id, int(seq), content)
        out.append((own, Fused(index, lexical.score, 0.0, lexical.score, lexical.terms, ())))
    return out


def _texts(rows: Sequence[Any]) -> list[Any]:
    """The rows with text (a blank turn is not indexed either)."""
    return [r for r in rows if r[2].strip()]


def _probe(terms: list[str]) -> Callable[[str], bool] | None:
    """A cheap test a text passes if it may hold one of ``terms`` (tokenizing every archived text
    was nine tenths of the cost): a plain word's term is a prefix of the word as folded, but for a
    "y" that stood for "ies". None when a term is a date, amount or number (normalised forms)."""
    if not all(t.isalpha() for t in terms):
        return None
    probes = tuple(t[:-1] if t.endswith("y") and len(t) > 2 else t for t in terms)

    def could_hold(text: str) -> bool:
        folded = (text.lower() if text.isascii() else fold_unicode(text)).replace("'", "")
        return any(p in folded for p in probes)

    return could_hold
