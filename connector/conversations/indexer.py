"""Indexing turns off the agent's path: read a session's new turns, embed them, write rows, then vectors.

``record_turn`` only asks for a job (keyed by session, so a burst of turns is one batch); the job
runs on the part's bounded background worker. One pass over a session:

1. read the turns after the session's ``indexed_upto_seq`` (at most ``BATCH``);
2. embed the user and assistant turns with text, outside any transaction (tool turns, blank turns
   and turns already past their retention window are passed over, but still counted as read);
3. in one transaction: the tombstone check, a compare-and-set of ``indexed_upto_seq`` (a concurrent
   pass in another process that got there first makes this one change nothing), the ``conv_turn``
   rows and their lexical postings;
4. the vectors to Chroma (no vector without a committed row); a failed Chroma write leaves rows that
   recall skips (their vector is missing) until :func:`repair` re-embeds them;
5. the tombstone again: a ``forget`` that ran meanwhile may have missed what 3 and 4 wrote, so the
   pass removes it itself.

Identical texts are distinct turns: every turn has its own row, postings and vector (ids are a
digest of tenant, session and turn number, so a retried pass writes the same ids).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from connector.conversations import generations
from connector.conversations.models import TurnIndexCheck
from connector.conversations.parts import part_id, part_texts
from connector.conversations.tables import PARTS, SESSIONS, TURNS
from connector.db.chunks import chunks
from connector.embeddings.base import Vectors
from connector.lexical import index as lexical
from connector.lexical.index import LexicalDocument
from connector.lexical.tables import TURN_SOURCE
from connector.recall.vector_index import HASH_KEY, Eraser, guarded, vector_hash
from connector.scope import Scope
from connector.vectors.deadline import with_patience
from connector.vectors.files import purge_chroma_log
from connector.vectors.reconcile import RowState, compare
from connector.working.tables import WorkSession, WorkTurn

if TYPE_CHECKING:
    from connector.conversations.memory import ConversationMemory

log = logging.getLogger(__name__)

INDEXED_ROLES = frozenset({"user", "assistant"})
MAX_INDEXED_CHARS = 32_000  # a pasted megabyte is indexed by its beginning (parts: MAX_PARTS windows)
BATCH = 256  # turns per pass; a longer backlog takes several passes
_CHUNK = 500

work_session_t: sa.Table = WorkSession.__table__  # type: ignore[attr-defined]
work_turn_t: sa.Table = WorkTurn.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class _Pending:
    scope: Scope
    upto: int
    turns: list[Any]


# A session's batch: (session, its pending turns, turn rows, their indexed texts, part rows).
Planned = tuple[str, _Pending, list[dict[str, Any]], list[str], list[dict[str, Any]]]


def turn_id(tenant: str, session_id: str, seq: int) -> str:
    """The id of an indexed turn (lexical doc id and Chroma id); not the session id itself."""
    return hashlib.sha256(f"turn\x1f{tenant}\x1f{session_id}\x1f{seq}".encode()).hexdigest()[:32]


def _scope_row(scope: Scope) -> dict[str, str]:
    return {"tenant": scope.tenant, "customer_id": scope.customer_id}


def _insert(conn: sa.Connection, table: sa.Table) -> Any:
    return postgresql.insert(table) if conn.dialect.name == "postgresql" else sqlite.insert(table)


_PROGRESS = (
    sa.select(
        work_session_t.c.session_id,
        work_session_t.c.tenant,
        work_session_t.c.customer_id,
        work_session_t.c.last_seq,
        sa.func.coalesce(SESSIONS.c.indexed_upto_seq, 0),
    )
    .select_from(work_session_t.outerjoin(SESSIONS, SESSIONS.c.session_id == work_session_t.c.session_id))
    .where(work_session_t.c.session_id.in_(sa.bindparam("sessions", expanding=True)))
)
# The first BATCH turns after each session's progress, for several sessions in one statement.
_NEXT = (
    sa.select(
        work_turn_t.c.session_id,
        work_turn_t.c.seq,
        work_turn_t.c.role,
        work_turn_t.c.content,
        work_turn_t.c.created_at,
        sa.func.row_number()
        .over(partition_by=work_turn_t.c.session_id, order_by=work_turn_t.c.seq)
        .label("n"),
    )
    .select_from(work_turn_t.outerjoin(SESSIONS, SESSIONS.c.session_id == work_turn_t.c.session_id))
    .where(
        work_turn_t.c.session_id.in_(sa.bindparam("sessions", expanding=True)),
        work_turn_t.c.seq > sa.func.coalesce(SESSIONS.c.indexed_upto_seq, 0),
    )
    .subquery()
)
_NEXT_TURNS = (
    sa.select(_NEXT.c.session_id, _NEXT.c.seq, _NEXT.c.role, _NEXT.c.content, _NEXT.c.created_at)
    .where(_NEXT.c.n <= BATCH)
    .order_by(_NEXT.c.session_id, _NEXT.c.seq)
)


def _pending_of(conv: ConversationMemory, sids: Sequence[str]) -> dict[str, _Pending]:
    """Each session's turns not indexed yet (at most ``BATCH``), read for many sessions at once
    (an import's group was four statements per session); a session that is gone, or whose
    customer was erased, is left out."""
    found: dict[str, _Pending] = {}
    with conv.engine.connect() as conn:
        for chunk in chunks(list(sids), _CHUNK):
            progress = conn.execute(_PROGRESS, {"sessions": chunk}).all()
            scopes = {row[0]: Scope(row[1], row[2]) for row in progress}
            erased = set(conv.erasures.erased_among(scopes.values(), conn))
            behind = [row for row in progress if scopes[row[0]] not in erased]
            for sid, _, _, _, upto in behind:
                found[sid] = _Pending(scopes[sid], int(upto), [])
            wanted = [row[0] for row in behind if int(row[3]) > int(row[4])]
            if wanted:
                for turn in conn.execute(_NEXT_TURNS, {"sessions": wanted}).all():
                    found[turn[0]].turns.append(turn)
    return {sid: found[sid] for sid in sids if sid in found}


def indexed_text(role: str, content: str) -> str | None:
    """What a turn is indexed under, or None for a turn that is not indexed (tool, blank)."""
    if role not in INDEXED_ROLES or not content.strip():
        return None
    return content[:MAX_INDEXED_CHARS]


def index_session(conv: ConversationMemory, sid: str) -> int:
    """Index every turn of session ``sid`` not indexed yet; returns how many turns were indexed."""
    return index_sessions(conv, [sid])


@with_patience
def index_sessions(conv: ConversationMemory, sids: Sequence[str], *, cache: bool = True) -> int:
    """Index the turns not indexed yet of every session in ``sids``; returns how many were indexed.

    The sessions' texts are embedded in one call and their vectors written in one upsert: an import
    of many short sessions then runs the embedder on batches as large as one long session's. A
    write, so opening a Chroma server and the reads inside wait ``chroma.timeout_s`` (a recall's
    ``chroma.read_timeout_s`` failed the indexing of every turn on a loaded machine)."""
    total = 0
    todo = list(dict.fromkeys(sids))
    while todo:
        batch = pending_batch(conv, todo)
        if batch is None:
            break
        total += write(conv, batch, embed(conv, batch), cache=cache)
        todo = batch.unfinished
    return total


@dataclass(frozen=True, slots=True)
class Batch:
    """What one pass over several sessions embeds (``texts``) and then writes (``planned``)."""

    planned: list[Planned]
    texts: list[str]

    @property
    def unfinished(self) -> list[str]:
        """Sessions with more turns after this batch (a full ``BATCH`` read): they need another pass."""
        return [sid for sid, pending, *_ in self.planned if len(pending.turns) >= BATCH]


@with_patience
def pending_batch(conv: ConversationMemory, sids: Sequence[str]) -> Batch | None:
    """Step 1 and the rows to write for ``sids`` (None when none has a turn to read)."""
    pendings = [(sid, p) for sid, p in _pending_of(conv, list(dict.fromkeys(sids))).items() if p.turns]
    return plan(conv, pendings) if pendings else None


def plan(conv: ConversationMemory, pendings: Sequence[tuple[str, _Pending]]) -> Batch:
    """The rows, postings' texts and embedded texts of one batch of each session.

    A turn longer than one embedder window is embedded in parts too (:mod:`connector.conversations.parts`):
    its row's vector is made from its whole text (the embedder keeps the opening), each further part's
    from its own window, all in the same call."""
    cutoff = conv.window_start()
    model_id = conv.embedder.model_id
    texts: list[str] = []  # each turn's text, then its further parts', session after session
    planned: list[Planned] = []
    for sid, pending in pendings:
        scope = pending.scope
        rows: list[dict[str, Any]] = []
        lexical_texts: list[str] = []
        part_rows: list[dict[str, Any]] = []
        for t in pending.turns:
            text = indexed_text(t.role, t.content)
            if text is None or t.created_at < cutoff:
                continue
            own = turn_id(scope.tenant, sid, int(t.seq))
            rows.append(
                {
                    "id": own,
                    "tenant": scope.tenant,
                    "customer_id": scope.customer_id,
                    "session_id": sid,
                    "seq": int(t.seq),
                    "occurred_at": t.created_at,
                    "vector_hash": vector_hash(model_id, text),
                }
            )
            lexical_texts.append(text)
            texts.append(text)
            for number, part in enumerate(part_texts(text), start=1):
                part_rows.append(
                    {
                        "id": part_id(own, number),
                        "turn_id": own,
                        "tenant": scope.tenant,
                        "customer_id": scope.customer_id,
                        "part": number,
                        "occurred_at": t.created_at,
                        "vector_hash": vector_hash(model_id, part),
                    }
                )
                texts.append(part)
        planned.append((sid, pending, rows, lexical_texts, part_rows))
    return Batch(planned, texts)


def embed(conv: ConversationMemory, batch: Batch) -> Vectors | None:
    """Step 2: the batch's vectors (no store is touched)."""
    return np.asarray(conv.embedder.embed(batch.texts), dtype=np.float32) if batch.texts else None


@with_patience
def write(conv: ConversationMemory, batch: Batch, vectors: Vectors | None, *, cache: bool = True) -> int:
    """Steps 3-5 for a batch embedded by :func:`embed`; returns how many turns were indexed (a write:
    its reads wait ``chroma.timeout_s``, as :func:`index_sessions`). ``cache``: read the vectors
    written back into the vector cache (off for an import: see ``CachedIndex.upsert_uncached``)."""
    planned = batch.planned
    ids: list[str] = []
    metadatas: list[dict[str, str]] = []
    blocks: list[Any] = []
    written: dict[Scope, list[str]] = {}
    offset = 0
    committed = _commit_together(conv, planned) if len(planned) > 1 else None
    for sid, pending, rows, lexical_texts, part_rows in planned:
        ordered = _in_text_order(rows, part_rows)
        start, offset = offset, offset + len(ordered)
        new_upto = int(pending.turns[-1].seq)  # tool or blank turns only: the progress moves all the same
        if committed is not None:
            if sid not in committed or not rows:
                continue
        elif not _commit(conv, sid, pending, new_upto, rows, lexical_texts, part_rows) or not rows:
            continue
        ids += [row["id"] for row in ordered]
        metadatas += [{**_scope_row(pending.scope), HASH_KEY: row["vector_hash"]} for row in ordered]
        assert vectors is not None
        blocks.append(vectors[start:offset])
        written.setdefault(pending.scope, []).extend(row["id"] for row in rows)
    if not ids:
        return 0
    if cache:
        conv.index.upsert(ids, np.concatenate(blocks), metadatas)
    else:
        conv.index.upsert_uncached(ids, np.concatenate(blocks), metadatas)
    indexed = sum(len(scope_ids) for scope_ids in written.values())
    for scope, scope_ids in written.items():
        if conv.erasures.is_erased(scope):  # forget ran meanwhile and may have missed these
            remove(conv, scope_ids)
            indexed -= len(scope_ids)
    return indexed


def _in_text_order(rows: list[dict[str, Any]], part_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each turn's row followed by its parts' rows: the order their texts were embedded in."""
    parts: dict[str, list[dict[str, Any]]] = {}
    for p in part_rows:
        parts.setdefault(p["turn_id"], []).append(p)
    return [x for r in rows for x in (r, *parts.get(r["id"], ()))]


def _commit(
    conv: ConversationMemory,
    sid: str,
    pending: _Pending,
    new_upto: int,
    rows: list[dict[str, Any]],
    texts: list[str],
    part_rows: Sequence[dict[str, Any]] = (),
) -> bool:
    """Step 3: progress, rows and postings in one transaction; False if the customer was erased or
    another pass indexed these turns first (then nothing is written)."""
    scope = pending.scope
    with conv.engine.connect() as conn:
        transaction = conn.begin()
        try:
            if conv.erasures.is_erased(scope, conn):
                transaction.rollback()
                return False
            conn.execute(
                _insert(conn, SESSIONS)
                .values(session_id=sid, **_scope_row(scope), indexed_upto_seq=0)
                .on_conflict_do_nothing()
            )
            moved = conn.execute(
                sa.update(SESSIONS)
                .where(SESSIONS.c.session_id == sid, SESSIONS.c.indexed_upto_seq == pending.upto)
                .values(indexed_upto_seq=new_upto)
            ).rowcount
            if not moved:
                transaction.rollback()
                log.debug("turns of session %s were indexed by another pass", sid)
                return False
            if rows:
                gen = generations.bump(conn, scope)
                conn.execute(sa.insert(TURNS), [{**r, "gen": gen} for r in rows])
                if part_rows:
                    conn.execute(sa.insert(PARTS), [{**p, "gen": gen} for p in part_rows])
                documents = [LexicalDocument(scope, r["id"], t) for r, t in zip(rows, texts, strict=True)]
                lexical.write(conn, TURN_SOURCE, documents)
            transaction.commit()
        except IntegrityError:
            transaction.rollback()
            log.debug("turns of session %s were indexed by another pass", sid)
            return False
        except BaseException:
            transaction.rollback()
            raise
    return True


def _commit_together(conv: ConversationMemory, planned: Sequence[Planned]) -> set[str] | None:
    """Step 3 for several sessions in one transaction (an import's batch): one erasure check and one
    generation per customer, the rows and postings of every session in one insert each, one commit.
    Returns the sessions committed (a session whose progress another pass moved, or whose customer
    was erased, is left out), or None when a conflict rolled everything back: then each session is
    committed on its own (:func:`_commit`)."""
    done: set[str] = set()
    with conv.engine.connect() as conn:
        transaction = conn.begin()
        try:
            scopes = list(dict.fromkeys(p.scope for _, p, *_ in planned))
            erased = set(conv.erasures.erased_among(scopes, conn))
            turn_rows: list[dict[str, Any]] = []
            parts: list[dict[str, Any]] = []
            documents: list[LexicalDocument] = []
            gens: dict[Scope, int] = {}
            for sid, pending, rows, texts, part_rows in planned:
                scope = pending.scope
                if scope in erased:
                    continue
                conn.execute(
                    _insert(conn, SESSIONS)
                    .values(session_id=sid, **_scope_row(scope), indexed_upto_seq=0)
                    .on_conflict_do_nothing()
                )
                moved = conn.execute(
                    sa.update(SESSIONS)
                    .where(SESSIONS.c.session_id == sid, SESSIONS.c.indexed_upto_seq == pending.upto)
                    .values(indexed_upto_seq=int(pending.turns[-1].seq))
                ).rowcount
                if not moved:
                    log.debug("turns of session %s were indexed by another pass", sid)
                    continue
                done.add(sid)
                if not rows:
                    continue
                if scope not in gens:
                    gens[scope] = generations.bump(conn, scope)
                turn_rows += [{**r, "gen": gens[scope]} for r in rows]
                parts += [{**p, "gen": gens[scope]} for p in part_rows]
                documents += [LexicalDocument(scope, r["id"], t) for r, t in zip(rows, texts, strict=True)]
            if turn_rows:
                conn.execute(sa.insert(TURNS), turn_rows)
            if parts:
                conn.execute(sa.insert(PARTS), parts)
            lexical.write(conn, TURN_SOURCE, documents)
            transaction.commit()
        except IntegrityError:
            transaction.rollback()
            return None
        except BaseException:
            transaction.rollback()
            raise
    return done


def pending_sessions(conv: ConversationMemory, limit: int | None = None) -> list[str]:
    """Sessions with turns the indexer has not read yet (least recently updated first)."""
    progress = sa.func.coalesce(SESSIONS.c.indexed_upto_seq, 0)
    statement = (
        sa.select(work_session_t.c.session_id)
        .select_from(work_session_t.outerjoin(SESSIONS, SESSIONS.c.session_id == work_session_t.c.session_id))
        .where(work_session_t.c.last_seq > progress)
        .order_by(work_session_t.c.updated_at, work_session_t.c.session_id)
    )
    if limit is not None:
        statement = statement.limit(limit)
    with conv.engine.connect() as conn:
        return list(conn.execute(statement).scalars())


def remove(conv: ConversationMemory, ids: Sequence[str], *, eraser: Eraser | None = None) -> int:
    """Take indexed turns out of every store: Chroma (and its log), the rows, the postings; returns
    the rows deleted. ``eraser``: what deletes the vectors (default: the part's index)."""
    if not ids:
        return 0
    scopes: set[tuple[str, str]] = set()
    parts: list[str] = []
    with conv.engine.connect() as conn:
        for chunk in chunks(ids, _CHUNK):
            scopes.update(
                (r[0], r[1])
                for r in conn.execute(
                    sa.select(TURNS.c.tenant, TURNS.c.customer_id).where(TURNS.c.id.in_(chunk)).distinct()
                )
            )
            parts.extend(conn.execute(sa.select(PARTS.c.id).where(PARTS.c.turn_id.in_(chunk))).scalars())
    vector_ids = [*ids, *parts]
    (eraser or conv.index).delete(vector_ids)
    if conv.embedded_chroma_path is not None:  # its log still holds the vectors and their scope
        purge_chroma_log(conv.embedded_chroma_path, vector_ids)
    deleted = 0
    with conv.engine.begin() as conn:
        for chunk in chunks(ids, _CHUNK):
            deleted += conn.execute(sa.delete(TURNS).where(TURNS.c.id.in_(chunk))).rowcount
            conn.execute(sa.delete(PARTS).where(PARTS.c.turn_id.in_(chunk)))
        lexical.delete(conn, TURN_SOURCE, ids)
        generations.removed(conn, scopes)
    return deleted


_Wanted = tuple[str, str, str, str, str]  # vector id, tenant, customer, hash, text


def _wanted(conv: ConversationMemory) -> list[_Wanted]:
    """Every vector the indexed turns (and their further parts) should have in the index."""
    on_turn = sa.and_(work_turn_t.c.session_id == TURNS.c.session_id, work_turn_t.c.seq == TURNS.c.seq)
    with conv.engine.connect() as conn:
        rows = conn.execute(
            sa.select(
                TURNS.c.id, TURNS.c.tenant, TURNS.c.customer_id, TURNS.c.vector_hash,
                work_turn_t.c.role, work_turn_t.c.content,
            ).join(work_turn_t, on_turn)
        ).all()  # fmt: skip
        part_rows = conn.execute(
            sa.select(
                PARTS.c.id,
                PARTS.c.part,
                TURNS.c.id.label("turn_id"),
                work_turn_t.c.role,
                work_turn_t.c.content,
            )
            .join(TURNS, TURNS.c.id == PARTS.c.turn_id)
            .join(work_turn_t, on_turn)
        ).all()
    wanted: list[_Wanted] = []
    scope_of: dict[str, tuple[str, str]] = {}
    for r in rows:
        wanted.append((r.id, r.tenant, r.customer_id, r.vector_hash, indexed_text(r.role, r.content) or ""))
        scope_of[r.id] = (r.tenant, r.customer_id)
    for p in part_rows:
        texts = part_texts(indexed_text(p.role, p.content) or "")
        if p.turn_id in scope_of and 1 <= p.part <= len(texts):
            text = texts[p.part - 1]
            tenant, customer = scope_of[p.turn_id]
            wanted.append((p.id, tenant, customer, vector_hash(conv.embedder.model_id, text), text))
    return wanted


def _embed(conv: ConversationMemory, broken: Sequence[_Wanted]) -> int:
    """Embed the wanted vectors' texts and give the index the vectors, stamped with scope and hash;
    recall processes read the customers' vectors again (their epoch moves)."""
    if not broken:
        return 0
    vectors = conv.embedder.embed([w[4] for w in broken])
    conv.index.upsert(
        [w[0] for w in broken],
        np.asarray(vectors, dtype=np.float32),
        [
            {"tenant": w[1], "customer_id": w[2], HASH_KEY: vector_hash(conv.embedder.model_id, w[4])}
            for w in broken
        ],
    )
    with conv.engine.begin() as conn:
        generations.removed(conn, {(w[1], w[2]) for w in broken})
    return len(broken)


@with_patience
def check(conv: ConversationMemory, *, fix: bool) -> TurnIndexCheck:
    """Compare the indexed turns (and parts) with the turns collection id by id, from the stamps
    alone (no vector is read); with ``fix`` embed only the missing ones and delete the orphans."""
    wanted = _wanted(conv)
    states = {w[0]: RowState(w[1], w[2], w[3]) for w in wanted}
    diff = compare(states, conv.index.stamps())
    missing = {*diff.missing, *diff.unstamped}
    if fix:
        conv.index.delete(diff.orphans)
        todo = [w for w in wanted if w[0] in missing and not conv.erasures.is_erased(Scope(w[1], w[2]))]
        for chunk in chunks(todo, _CHUNK):
            _embed(conv, chunk)
    return TurnIndexCheck(
        indexed_turns=diff.rows, index_vectors=diff.vectors, missing=len(missing),
        orphans=len(diff.orphans), fixed=fix,
    )  # fmt: skip


@with_patience
def repair(conv: ConversationMemory) -> int:
    """Re-embed indexed turns (and their further parts) whose vector is missing or stale in Chroma
    (a failed vector write). Returns how many vectors were written. Reads every indexed turn's
    vector: an operator's job, not the agent's (:func:`check` compares stamps only).
    """
    fixed = 0
    for chunk in chunks(_wanted(conv), _CHUNK):
        found = conv.index.stored([w[0] for w in chunk])
        broken = [
            w
            for w in chunk
            if w[0] not in found or not guarded({w[0]: found[w[0]]}, Scope(w[1], w[2]), {w[0]: w[3]})
        ]
        fixed += _embed(conv, broken)
    return fixed
