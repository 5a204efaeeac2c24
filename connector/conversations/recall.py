"""Recalling turns of a customer's earlier sessions by the same hybrid ranking as past cases.

Scope first: the candidates are the customer's indexed turns (tenant, customer; inside the retention
window; not of ``exclude_session``), read from ``conv_turn``. Their vectors come from Chroma by id,
checked against their rows (:func:`~connector.episodic.vector_index.guarded`), through the vector
cache case recall uses (:mod:`connector.episodic.vector_cache`); their BM25 scores come
from the scoped lexical index over those candidates only; :func:`~connector.episodic.fusion.fuse`
ranks them as it ranks cases. Each hit then gets its ``before``/``after`` neighbours from its own
session (read with the session's scope as a second guard). A hit already inside a better hit's
window is not repeated: that window shows it. The query is embedded only when the customer has
indexed turns, beside the Chroma and lexical reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from connector.conversations.models import InvalidRecallError, TurnHit
from connector.conversations.tables import TURNS
from connector.db.reads import read_connection
from connector.db.types import JSONType
from connector.embeddings.shared_query import SharedQuery
from connector.episodic.fusion import Fused
from connector.episodic.scoped_recall import RecallQuery
from connector.lexical import index as lexical
from connector.lexical.tables import TURN_SOURCE
from connector.lexical.tokens import MAX_QUERY_CHARS
from connector.scope import Scope
from connector.working.models import Turn
from connector.working.tables import WorkSession, WorkTurn

if TYPE_CHECKING:
    from connector.conversations.memory import ConversationMemory

MAX_K = 50
_END_OF_TIME = datetime(9999, 12, 31, tzinfo=UTC)
_session_t: sa.Table = WorkSession.__table__  # type: ignore[attr-defined]
_turn_t: sa.Table = WorkTurn.__table__  # type: ignore[attr-defined]

# A candidate row is (id, session_id, seq, vector_hash, lexical_length): the hits read the first four
# by position.
_WITH_LENGTHS, _LENGTH = lexical.with_lengths(TURNS, TURN_SOURCE)
_CANDIDATES = {
    excluding: sa.select(TURNS.c.id, TURNS.c.session_id, TURNS.c.seq, TURNS.c.vector_hash, _LENGTH)
    .select_from(_WITH_LENGTHS)
    .where(
        TURNS.c.tenant == sa.bindparam("tenant"),
        TURNS.c.customer_id == sa.bindparam("customer_id"),
        TURNS.c.occurred_at >= sa.bindparam("after"),
        TURNS.c.occurred_at <= sa.bindparam("as_of"),
        *([TURNS.c.session_id != sa.bindparam("exclude")] if excluding else []),
    )
    .order_by(TURNS.c.occurred_at.desc(), TURNS.c.id)
    .limit(sa.bindparam("limit"))
    for excluding in (False, True)
}


def recall(
    conv: ConversationMemory,
    scope: Scope,
    query: object,
    *,
    k: int,
    exclude_session: str | None,
    as_of: datetime | None,
    shared_query: SharedQuery | None = None,
) -> list[TurnHit]:
    if not isinstance(query, str):
        raise InvalidRecallError(f"query must be text, got {type(query).__name__}")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InvalidRecallError(f"k must be an integer between 1 and {MAX_K}, got {k!r}")
    text = query[:MAX_QUERY_CHARS]
    if not text.strip():
        return []
    settings = conv.settings
    cutoff = conv.window_start()
    params: dict[str, Any] = {
        "tenant": scope.tenant,
        "customer_id": scope.customer_id,
        "after": cutoff,
        "as_of": as_of or _END_OF_TIME,
        "exclude": exclude_session,
        "limit": settings.max_candidates,
    }
    window = settings.before + settings.after + 1
    search = RecallQuery(text, shared_query)  # embedded only once the customer has indexed turns
    with read_connection(conv.engine) as conn:
        ranked = conv.ranking.rank(
            conn, scope, _CANDIDATES[exclude_session is not None], params, search, k=k * window,
            fusion=conv.fusion,
        )  # fmt: skip
        chosen = _without_repeats(ranked, k, settings.before, settings.after)
        turns = _read_turns(conn, scope, chosen, cutoff)
    hits = []
    for row, fused, before, after, repeats in chosen:
        turn_id, session_id, seq = row[:3]  # (id, session_id, seq, ...) as _CANDIDATES selects them
        own = turns.get((session_id, seq))
        if own is None:  # erased or past retention meanwhile
            continue
        hits.append(
            TurnHit(
                turn_id=turn_id,
                turn=own,
                score=round(fused.dense, 4),
                lexical_score=round(fused.lexical, 4),
                fused_score=round(fused.fused, 6),
                matched_terms=fused.matched_terms,
                before=tuple(turns[(session_id, s)] for s in before if (session_id, s) in turns),
                after=tuple(turns[(session_id, s)] for s in after if (session_id, s) in turns),
                repeats=tuple(sorted((turns[p] for p in repeats if p in turns), key=_oldest_first)),
            )
        )
    return hits


def _oldest_first(turn: Turn) -> tuple[datetime, str, int]:
    return turn.created_at, turn.session_id, turn.seq


Chosen = tuple[Any, Fused, list[int], list[int], list[tuple[str, int]]]


def _without_repeats(ranked: Sequence[tuple[Any, Fused]], k: int, before: int, after: int) -> list[Chosen]:
    """The top ``k`` hits, each with the neighbour turn numbers no better hit already shows, and
    the (session, turn number) of the lower-ranked turns that say word for word what it says.

    A turn that a better hit shows (as the hit or a neighbour) is not a hit again. Nor is a turn
    with the same embedded text (the same vector hash) as a better hit: small talk repeated across
    sessions ("Yes! Exactly what I was thinking.") would otherwise fill several of the ``k`` places
    with one sentence; the better hit lists it among its repeats instead (a request made in two
    sessions is still seen twice)."""
    shown: dict[str, set[int]] = {}
    said: dict[str, list[tuple[str, int]]] = {}
    chosen: list[Chosen] = []
    for row, fused in ranked:
        session_id, seq, text_hash = row[1], row[2], row[3]  # by position: a Row's attribute lookup is slow
        seen = shown.setdefault(session_id, set())
        if seq in seen:
            continue
        if text_hash in said:
            said[text_hash].append((session_id, seq))
            continue
        if len(chosen) == k:
            continue  # only repeats of the chosen hits are still wanted
        repeats: list[tuple[str, int]] = []
        said[text_hash] = repeats
        lower = [s for s in range(max(1, seq - before), seq) if s not in seen]
        upper = [s for s in range(seq + 1, seq + after + 1) if s not in seen]
        seen.update((*lower, seq, *upper))
        chosen.append((row, fused, lower, upper, repeats))
    return chosen


# One statement for every read, the hits' turns and neighbours as (session, turn number) pairs: an
# index seek per session of the unique (session, seq) key. A statement built per recall from its
# spans cost more to compile than to run.
# A turn that is no tool call stores JSON ``null`` as its tool arguments and result: read as SQL NULL,
# it reaches the hit as None without a JSON decode (two per turn, a tenth of the read's cost).
_TOOL_JSON = tuple(
    sa.type_coerce(sa.func.nullif(_turn_t.c[name], sa.literal_column("'null'")), JSONType).label(name)
    for name in ("tool_args", "tool_result")
)
_TURNS = (
    sa.select(
        *(_turn_t.c[name] for name in ("session_id", "seq", "role", "content", "created_at", "tool_name")),
        *_TOOL_JSON,
        _turn_t.c.external_id,
    )
    .join(_session_t, _session_t.c.session_id == _turn_t.c.session_id)
    .where(
        _session_t.c.tenant == sa.bindparam("tenant"),
        _session_t.c.customer_id == sa.bindparam("customer_id"),
        _turn_t.c.created_at >= sa.bindparam("after"),
        sa.tuple_(_turn_t.c.session_id, _turn_t.c.seq).in_(sa.bindparam("turns", expanding=True)),
    )
)


def _read_turns(
    conn: sa.Connection, scope: Scope, chosen: Sequence[Chosen], cutoff: datetime
) -> dict[tuple[str, int], Turn]:
    """The hits' turns and their neighbours, each from its own session of this scope."""
    wanted = sorted(
        {(row[1], seq) for row, _, lower, upper, _ in chosen for seq in (*lower, row[2], *upper)}
        | {pair for *_, repeats in chosen for pair in repeats}
    )
    if not wanted:
        return {}
    params = {"tenant": scope.tenant, "customer_id": scope.customer_id, "after": cutoff, "turns": wanted}
    # A row is (session_id, seq, role, content, created_at, tool_name, tool_args, tool_result, external_id).
    return {
        (r[0], int(r[1])): Turn(r[0], int(r[1]), r[2], r[3], r[4], r[5], r[6], r[7], r[8])
        for r in conn.execute(_TURNS, params).all()
    }
