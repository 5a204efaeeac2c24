"""Recalling turns of a customer's earlier sessions by the same hybrid ranking as past cases.

Scope first: the customer's indexed turns are held in memory per process and read again only when
its generation moved (:mod:`connector.conversations.scope_vectors`); the candidates are the union of
the dense and the lexical top lists (:mod:`connector.conversations.bounded`), filtered by retention
window, dates and ``exclude_session``, so the cost does not follow the customer's history. Each hit
then gets its ``before``/``after`` neighbours from its own session (read with the session's scope as
a second guard). A hit already inside a better hit's window is not repeated: that window shows it
(per call, 0 neighbours give a plain ranking). The query is embedded only when the customer has
indexed turns, while the customer's new rows are read. ``include_archived`` adds the turns past the
window, ranked lexically (:mod:`connector.conversations.archive`), among the live hits by how many of
the query's terms each holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from connector.conversations import archive as archived
from connector.conversations import bounded, generations
from connector.conversations.archive import ArchiveQuery
from connector.conversations.bounded import Filters
from connector.conversations.generations import ScopeState
from connector.conversations.models import InvalidRecallError, TurnHit
from connector.conversations.scope_vectors import Snapshot
from connector.conversations.tables import SCOPES
from connector.db.reads import read_connection
from connector.db.types import JSONType
from connector.embeddings.shared_query import SharedQuery
from connector.lexical.tokens import MAX_QUERY_CHARS
from connector.recall import anchors, when
from connector.recall.fusion import Fused, Fusion
from connector.recall.profiles import TURN_PROFILES, check_profile, resolve
from connector.recall.ranking import score_threshold
from connector.recall.scoped_recall import RecallQuery
from connector.scope import Scope
from connector.working.models import Turn
from connector.working.tables import WorkSession, WorkTurn

if TYPE_CHECKING:
    from connector.conversations.memory import ConversationMemory

MAX_K = 200  # hits per recall (documented in docs/guides/recall.md)
MAX_NEIGHBOURS = 20
_session_t: sa.Table = WorkSession.__table__  # type: ignore[attr-defined]
_turn_t: sa.Table = WorkTurn.__table__  # type: ignore[attr-defined]

PROFILES = TURN_PROFILES  # the names RecallOptions.profile takes (connector.recall.profiles)


@dataclass(frozen=True, slots=True)
class RecallOptions:
    """Per-call choices (None: the part's settings). ``before``/``after``: neighbouring turns shown
    around each hit (0 and 0: a plain ranking, where a turn next to a better hit is a hit of its
    own); ``since``/``until``: only turns dated in that span; ``profile``: a name of
    :data:`PROFILES` or a :class:`~connector.recall.fusion.Fusion`; ``dates_in_query``: the
    dates the query's words name (:mod:`connector.recall.when`), or the ERP event they anchor
    time on (:mod:`connector.recall.anchors`), narrow the candidates."""

    before: int | None = None
    after: int | None = None
    since: datetime | None = None
    until: datetime | None = None
    profile: str | Fusion | None = None
    dates_in_query: bool = True  # "last week", "in March", "3 days ago" narrow to those dates


def _check(options: RecallOptions) -> None:
    for name in ("before", "after"):
        value = getattr(options, name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_NEIGHBOURS
        ):
            raise InvalidRecallError(
                f"{name} must be an integer between 0 and {MAX_NEIGHBOURS}, got {value!r}"
            )
    for name in ("since", "until"):
        value = getattr(options, name)
        if value is not None and (not isinstance(value, datetime) or value.tzinfo is None):
            raise InvalidRecallError(f"{name} must be a timezone-aware datetime, got {value!r}")
    problem = check_profile(options.profile, TURN_PROFILES)
    if problem is not None:
        raise InvalidRecallError(problem)


def recall(
    conv: ConversationMemory,
    scope: Scope,
    query: object,
    *,
    k: int,
    exclude_session: str | None,
    as_of: datetime | None,
    shared_query: SharedQuery | None = None,
    options: RecallOptions | None = None,
    include_archived: bool = False,
) -> list[TurnHit]:
    if not isinstance(query, str):
        raise InvalidRecallError(f"query must be text, got {type(query).__name__}")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InvalidRecallError(f"k must be an integer between 1 and {MAX_K}, got {k!r}")
    options = options or RecallOptions()
    _check(options)
    text = query[:MAX_QUERY_CHARS]
    if not text.strip():
        return []
    settings = conv.settings
    before = settings.before if options.before is None else options.before
    after = settings.after if options.after is None else options.after
    fusion = resolve(options.profile, TURN_PROFILES, conv.fusion)
    cutoff = conv.window_start()
    not_before = max(cutoff, options.since) if options.since is not None else cutoff
    ends = [t for t in (as_of, options.until) if t is not None]
    moment = as_of or conv.clock.now()
    named = when.span(text, moment) if options.dates_in_query else None
    anchor = anchors.find(text) if options.dates_in_query else None
    window = before + after + 1
    search = RecallQuery(text, shared_query)
    until = min(ends) if ends else None

    def choose(snap: Snapshot) -> list[Chosen]:
        if search.vector is None or search.vector.cancelled():  # a stale snapshot's rank cancelled it
            search.vector = conv.ranking.embed(search.text, search.shared)
        ranked = bounded.rank(
            snap, search, Filters(not_before, until, exclude_session, named), k=k * window,
            per_signal=max(settings.candidates_per_signal, min(k * window, settings.max_candidates)),
            fusion=fusion, threshold=score_threshold(conv.embedder.model_id),
        )  # fmt: skip
        return _without_repeats(ranked, k, before, after)

    with read_connection(conv.engine) as conn:
        # Held: ranked as held, and the hits' read says whether the store moved since (one statement).
        held = conv.scope_vectors.held_snapshot(scope)
        state = held[0] if held is not None else generations.state(conn, scope)
        archive = include_archived and conv.archive_reachable() and not conv.erasures.is_erased(scope, conn)
        if state is None and not archive:  # nothing indexed for this customer: nothing embedded either
            return []
        if anchor is not None:  # "before the credit hold": the customer's own ERP history dates it
            named = anchors.resolve(conn, scope, anchor, moment) or named
        chosen: list[Chosen] = []
        turns: dict[tuple[str, int], Turn] = {}
        if held is not None:
            chosen = choose(held[1])
            state, turns = _read_state_and_turns(conn, scope, chosen, cutoff)
            if state is None:  # erased meanwhile (by another process)
                search.cancel()
                conv.scope_vectors.drop(scope)
                return []
        if state is not None and (held is None or state != held[0]):  # not held, or written since
            chosen = choose(conv.scope_vectors.snapshot(conn, scope, conv.index, state))
            turns = _read_turns(conn, scope, chosen, cutoff)
        hits = _hits(chosen, turns)
        if archive:  # lexically, from working memory (connector.conversations.archive)
            wanted = ArchiveQuery(cutoff, options.since, until, exclude_session, named)
            stored = archived.rank(conn, scope, search.terms, wanted, k=k * window)
            picked = _without_repeats(stored, k, before, after)
            found = _hits(picked, _read_turns(conn, scope, picked, archived.FAR_PAST), archived=True)
            hits = _with_archive(hits, found, k)
    return hits


def _hits(
    chosen: Sequence[Chosen], turns: dict[tuple[str, int], Turn], *, archived: bool = False
) -> list[TurnHit]:
    hits = []
    for row, fused, lower, upper, repeats in chosen:
        turn_id, session_id, seq = row[:3]
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
                before=tuple(turns[(session_id, s)] for s in lower if (session_id, s) in turns),
                after=tuple(turns[(session_id, s)] for s in upper if (session_id, s) in turns),
                repeats=tuple(sorted((turns[p] for p in repeats if p in turns), key=_oldest_first)),
                archived=archived,
            )
        )
    return hits


def _with_archive(live: list[TurnHit], archived: list[TurnHit], k: int) -> list[TurnHit]:
    """The top ``k`` of both: live hits keep their order, and each archived hit (in its BM25 order)
    comes before the first live hit holding fewer of the query's terms than it does."""
    merged: list[TurnHit] = []
    waiting = list(archived)
    for hit in live:
        while waiting and len(waiting[0].matched_terms) > len(hit.matched_terms):
            merged.append(waiting.pop(0))
        merged.append(hit)
    return (merged + waiting)[:k]


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


# One statement for every read, the hits' turns and neighbours: their sessions and turn numbers as
# two lists, so both databases seek the unique session and (session, seq) keys for each pair of the
# two (a superset of the pairs wanted, cut in Python), and each row's session scope read with it
# and checked in Python, a second guard. With the scope in SQL, or a (session, seq) tuple IN, both
# databases walked every session of the customer (PostgreSQL with stale statistics, SQLite always)
# and SQLite every turn of each: 3.3 ms at 10,000 turns on SQLite against 0.1 ms. A statement built
# per recall from its spans cost more to compile than to run.
# A turn that is no tool call stores JSON ``null`` as its tool arguments and result: read as SQL NULL,
# it reaches the hit as None without a JSON decode (two per turn, a tenth of the read's cost).
_TOOL_JSON = tuple(
    sa.type_coerce(sa.func.nullif(_turn_t.c[name], sa.literal_column("'null'")), JSONType).label(name)
    for name in ("tool_args", "tool_result")
)
_COLUMNS = (
    *(_turn_t.c[name] for name in ("session_id", "seq", "role", "content", "created_at", "tool_name")),
    *_TOOL_JSON,
    _turn_t.c.external_id,
    _session_t.c.tenant,
    _session_t.c.customer_id,
)
_JOINED = _turn_t.join(_session_t, _session_t.c.session_id == _turn_t.c.session_id)
_TURNS = (
    sa.select(*_COLUMNS)
    .select_from(_JOINED)
    .where(
        _session_t.c.session_id.in_(sa.bindparam("sessions", expanding=True)),
        _turn_t.c.session_id.in_(sa.bindparam("turn_sessions", expanding=True)),
        _turn_t.c.seq.in_(sa.bindparam("seqs", expanding=True)),
        _turn_t.c.created_at >= sa.bindparam("after"),
    )
)
# PostgreSQL: the lists as two arrays, so the statement's text is one whatever their lengths and
# psycopg prepares it (planning the IN-list variant took 15 times its execution).
_TEXTS = postgresql.ARRAY(sa.String())
_TURNS_PG = (
    sa.select(*_COLUMNS)
    .select_from(_JOINED)
    .where(
        _session_t.c.session_id == sa.any_(sa.bindparam("sessions", type_=_TEXTS)),
        _turn_t.c.session_id == sa.any_(sa.bindparam("turn_sessions", type_=_TEXTS)),
        _turn_t.c.seq == sa.any_(sa.bindparam("seqs", type_=postgresql.ARRAY(sa.Integer()))),
        _turn_t.c.created_at >= sa.bindparam("after"),
    )
)


# The same read with the customer's generation and epoch (:mod:`connector.conversations.generations`)
# in one statement, a row of their own after the turns: a recall ranked on the turns this process
# holds learns in the same round trip whether they are still the customer's (no such row: erased;
# another state: read the new rows and rank again). The customer's row is read by its key. A UNION
# ALL: a join of the two made SQLite materialise the turns first, a third slower than this. The
# turns come first, so their columns' types (dates, JSON) decode every row.
def _with_state(turns: sa.Select[Any]) -> sa.CompoundSelect[Any]:
    state = sa.select(SCOPES.c.generation, SCOPES.c.epoch, *(sa.null() for _ in _COLUMNS)).where(
        SCOPES.c.tenant == sa.bindparam("tenant"), SCOPES.c.customer_id == sa.bindparam("customer_id")
    )
    return sa.union_all(turns.with_only_columns(sa.null(), sa.null(), *_COLUMNS), state)


_STATE_AND_TURNS = _with_state(_TURNS)
_STATE_AND_TURNS_PG = _with_state(_TURNS_PG)


def _read_turns(
    conn: sa.Connection, scope: Scope, chosen: Sequence[Chosen], cutoff: datetime
) -> dict[tuple[str, int], Turn]:
    """The hits' turns and their neighbours, each from its own session of this scope."""
    params, pairs = _turn_params(chosen, cutoff)
    if not pairs:
        return {}
    rows = conn.execute(_TURNS_PG if conn.dialect.name == "postgresql" else _TURNS, params).all()
    return _turns_of(rows, scope, pairs)


def _read_state_and_turns(
    conn: sa.Connection, scope: Scope, chosen: Sequence[Chosen], cutoff: datetime
) -> tuple[ScopeState | None, dict[tuple[str, int], Turn]]:
    """The customer's generation and epoch now (None: nothing indexed, or erased) and, as
    :func:`_read_turns`, the hits' turns: one statement."""
    params, pairs = _turn_params(chosen, cutoff)
    statement = _STATE_AND_TURNS_PG if conn.dialect.name == "postgresql" else _STATE_AND_TURNS
    rows = conn.execute(statement, {**params, "tenant": scope.tenant, "customer_id": scope.customer_id}).all()
    states = [ScopeState(int(r[0]), int(r[1])) for r in rows if r[0] is not None]
    found = _turns_of([r[2:] for r in rows if r[0] is None], scope, pairs)
    return (states[0] if states else None), found


def _turn_params(chosen: Sequence[Chosen], cutoff: datetime) -> tuple[dict[str, Any], set[tuple[str, int]]]:
    """The read's parameters for the hits and their neighbours, and the (session, seq) pairs wanted."""
    wanted = sorted(
        {(row[1], seq) for row, _, lower, upper, _ in chosen for seq in (*lower, row[2], *upper)}
        | {pair for *_, repeats in chosen for pair in repeats}
    )
    sessions = sorted({session for session, _ in wanted})
    params = {
        "after": cutoff, "sessions": sessions, "turn_sessions": sessions,
        "seqs": sorted({seq for _, seq in wanted}),
    }  # fmt: skip
    return params, set(wanted)


def _turns_of(rows: Sequence[Any], scope: Scope, pairs: set[tuple[str, int]]) -> dict[tuple[str, int], Turn]:
    """The rows read that are wanted and of this scope, as turns by (session, seq)."""
    # A row is (session_id, seq, role, content, created_at, tool_name, tool_args, tool_result,
    # external_id, tenant, customer_id).
    return {
        (r[0], int(r[1])): Turn(r[0], int(r[1]), r[2], r[3], r[4], r[5], r[6], r[7], r[8])
        for r in rows
        if (r[0], int(r[1])) in pairs and r[9] == scope.tenant and r[10] == scope.customer_id
    }
