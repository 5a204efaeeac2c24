"""Each customer's indexed turns held in memory as one matrix, read from the store once per change.

Why: ranking a customer's turns read every candidate row and its vector on each recall, so its cost
grew with the customer's history (48.6 ms p95 at ~490 turns). Here a process keeps, per customer,
the turns' vectors (every part of a long turn: :mod:`connector.conversations.parts`) as one float32
matrix beside compact arrays of what recall filters on (date, session) and ranks with (lexical
length). A recall reads one row, the customer's generation (:mod:`connector.conversations.generations`):
unchanged, it reads nothing else; higher, it reads only the rows stamped since; another epoch (a
removal), the customer again. The dense side is then one matrix-vector product in numpy (0.5 ms
for 10,000 turns) and a partial sort, with no Python work per turn.

The turns' lexical postings are held beside them (:mod:`connector.conversations.scope_terms`), read
with the turns of each generation, so a recall reads nothing of the store but the generation and
its hits' texts. The first read of a customer's postings (all of them, one key range: about 60 rows
per long turn) runs on a background thread; until it is installed, recalls read the postings of
their terms from the store (:mod:`connector.conversations.stored_terms`), so the first recall of a
long history costs what it did before postings were held.

Vectors are read through the part's :class:`~connector.recall.vector_cache.CachedIndex`, checked
against their rows' scope and hash like any recall's. A row whose vector is not in the index yet
(written by a pass that has not reached Chroma) waits in ``pending`` and is read again by later
recalls. Bounded by bytes across customers (least recently used customers go first).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import sqlalchemy as sa

from connector.conversations import generations
from connector.conversations.generations import ScopeState
from connector.conversations.scope_terms import HeldTerms
from connector.conversations.stored_terms import StoredTerms, Terms
from connector.conversations.tables import PARTS, TURNS
from connector.lexical.tables import DOCS, POSTINGS, TURN_SOURCE
from connector.recall.vector_cache import CachedIndex
from connector.scope import Scope

log = logging.getLogger(__name__)

ScopeKey = tuple[str, str]
_RETRY_S = 1.0  # a row whose vector was missing is looked up again at most this often

# Each turn's lexical length by the document's primary key (source, id), its scope read beside it
# and checked in Python: with the scope in the join, PostgreSQL with stale statistics (after an
# import, before autovacuum's analyse) joined every turn to every document of the customer: 18 s
# for 10,000 turns, past the database's read deadline, against milliseconds.
_TURN_ROWS = (
    sa.select(
        TURNS.c.id,
        TURNS.c.session_id,
        TURNS.c.seq,
        TURNS.c.occurred_at,
        TURNS.c.vector_hash,
        TURNS.c.gen,
        DOCS.c.length,
        DOCS.c.tenant,
        DOCS.c.customer_id,
    )
    .select_from(TURNS.outerjoin(DOCS, sa.and_(DOCS.c.source == TURN_SOURCE, DOCS.c.doc_id == TURNS.c.id)))
    .where(
        TURNS.c.tenant == sa.bindparam("tenant"),
        TURNS.c.customer_id == sa.bindparam("customer_id"),
        TURNS.c.gen > sa.bindparam("since"),
    )
    .order_by(TURNS.c.gen, TURNS.c.id)
)
_PART_ROWS = (
    sa.select(PARTS.c.id, PARTS.c.turn_id, PARTS.c.vector_hash, PARTS.c.gen)
    .where(
        PARTS.c.tenant == sa.bindparam("tenant"),
        PARTS.c.customer_id == sa.bindparam("customer_id"),
        PARTS.c.gen > sa.bindparam("since"),
    )
    .order_by(PARTS.c.gen, PARTS.c.turn_id, PARTS.c.part)
)
_POSTING_COLUMNS = (POSTINGS.c.doc_id, POSTINGS.c.term, POSTINGS.c.tf)
_OF_SCOPE = (
    POSTINGS.c.tenant == sa.bindparam("tenant"),
    POSTINGS.c.customer_id == sa.bindparam("customer_id"),
    POSTINGS.c.source == TURN_SOURCE,
)
# The first read of a customer (in the background): every posting of its turns, one range of the
# postings' primary key.
_ALL_POSTINGS = sa.select(*_POSTING_COLUMNS).where(*_OF_SCOPE)
# Later reads: the postings of the turns written since (by the turns' generation, then each turn's
# postings by their document index).
_NEW_POSTINGS = (
    sa.select(*_POSTING_COLUMNS)
    .select_from(POSTINGS.join(TURNS, TURNS.c.id == POSTINGS.c.doc_id))
    .where(
        TURNS.c.tenant == sa.bindparam("tenant"),
        TURNS.c.customer_id == sa.bindparam("customer_id"),
        TURNS.c.gen > sa.bindparam("since"),
        *_OF_SCOPE,
    )
)


def epoch_seconds(moment: datetime) -> float:
    return moment.timestamp()


class _Growing:
    """A numpy array appended to in place (capacity doubles): readers keep a view of what was there."""

    def __init__(self, width: int | None, dtype: Any) -> None:
        shape = (16,) if width is None else (16, width)
        self.data = np.zeros(shape, dtype=dtype)
        self.size = 0

    def extend(self, values: Any) -> None:
        values = np.asarray(values, dtype=self.data.dtype)
        need = self.size + len(values)
        if need > len(self.data):
            grown = np.zeros((max(need, 2 * len(self.data)), *self.data.shape[1:]), dtype=self.data.dtype)
            grown[: self.size] = self.data[: self.size]
            self.data = grown
        self.data[self.size : need] = values
        self.size = need

    def view(self) -> np.ndarray:
        return self.data[: self.size]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What one recall ranks: the customer's turns and vectors as they were at its start."""

    turn_ids: list[str]
    sessions: list[str]
    seqs: list[int]
    hashes: list[str]
    index_of: dict[str, int]
    occurred: np.ndarray  # epoch seconds, per turn
    session_code: np.ndarray  # per turn: the position of its session in ``session_names``
    session_codes: dict[str, int]
    lengths: np.ndarray  # lexical document length, per turn (0: none)
    matrix: np.ndarray  # one row per vector: the turn's own first, parts after
    owner: np.ndarray  # per vector: its turn's position
    first: np.ndarray  # per turn: the row of its own vector
    part_rows: np.ndarray  # the rows that are a turn's further part
    total: np.ndarray  # the sum of the turns' own vectors (the customer's centroid direction)
    toward: np.ndarray  # per vector: its cosine to that centroid (0 when the vectors cancel out)
    grouped: np.ndarray  # the vectors' rows ordered by turn (a turn's own row, then its parts')
    starts: np.ndarray  # per turn: where its rows start in ``grouped``
    terms: Terms  # the turns' lexical postings (held, or read from the store: see the module doc)

    @property
    def turns(self) -> int:
        return len(self.turn_ids)


@dataclass
class _Held:
    """One customer's turns in memory (appended to as the generation grows)."""

    state: ScopeState
    dimension: int
    turn_ids: list[str] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)
    seqs: list[int] = field(default_factory=list)
    hashes: list[str] = field(default_factory=list)
    index_of: dict[str, int] = field(default_factory=dict)
    session_codes: dict[str, int] = field(default_factory=dict)
    pending_turns: dict[str, Any] = field(default_factory=dict)  # id -> row, vector not found yet
    pending_parts: dict[str, Any] = field(default_factory=dict)
    tried: float = 0.0
    derived: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None  # rows, toward, grouped, starts
    occurred: _Growing = field(init=False)
    session_code: _Growing = field(init=False)
    lengths: _Growing = field(init=False)
    first: _Growing = field(init=False)
    matrix: _Growing = field(init=False)
    owner: _Growing = field(init=False)
    part_rows: _Growing = field(init=False)
    total: np.ndarray = field(init=False)
    terms: HeldTerms | None = None  # None until the background read of the postings is installed
    loading_terms: bool = False

    def __post_init__(self) -> None:
        self.occurred = _Growing(None, np.float64)
        self.session_code = _Growing(None, np.int32)
        self.lengths = _Growing(None, np.float64)
        self.first = _Growing(None, np.int64)
        self.matrix = _Growing(self.dimension, np.float32)
        self.owner = _Growing(None, np.int64)
        self.part_rows = _Growing(None, np.int64)
        self.total = np.zeros(self.dimension, dtype=np.float64)

    @property
    def nbytes(self) -> int:
        held = 0 if self.terms is None else self.terms.nbytes
        return int(self.matrix.data.nbytes) + 200 * len(self.turn_ids) + held

    def _derived(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What every recall would otherwise compute over all the vectors, once per change."""
        rows = self.matrix.size
        if self.derived is None or self.derived[0] != rows:
            norm = float(np.sqrt(self.total @ self.total))
            matrix = self.matrix.view()
            toward = (
                np.einsum("ij,j->i", matrix, (self.total / norm).astype(np.float32))
                if norm > 0
                else np.zeros(rows, dtype=np.float32)
            )
            owner = self.owner.view()
            grouped = np.argsort(owner, kind="stable")
            starts = np.searchsorted(owner[grouped], np.arange(len(self.turn_ids)))
            self.derived = (rows, toward, grouped, starts)
        return self.derived[1], self.derived[2], self.derived[3]

    def snapshot(self, stored: Callable[[dict[str, int], int], Terms]) -> Snapshot:
        """The turns as they are now; ``stored`` makes the lexical side while the postings load."""
        toward, grouped, starts = self._derived()
        return Snapshot(
            list(self.turn_ids), self.sessions, self.seqs, self.hashes, self.index_of,
            self.occurred.view(), self.session_code.view(), dict(self.session_codes), self.lengths.view(),
            self.matrix.view(), self.owner.view(), self.first.view(), self.part_rows.view(),
            self.total.copy(), toward, grouped, starts,
            stored(self.index_of, len(self.turn_ids)) if self.terms is None else self.terms.snapshot(),
        )  # fmt: skip

    def add(
        self, index: CachedIndex, scope: Scope, turns: list[Any], parts: list[Any], postings: list[Any]
    ) -> None:
        """Take rows read from the store (and those still waiting for their vector)."""
        for row in turns:
            if row[0] not in self.index_of:
                self.pending_turns[row[0]] = row
        for row in parts:
            self.pending_parts[row[0]] = row
        if not self.pending_turns and not self.pending_parts:
            return
        waiting = {row[0] for row in turns if row[0] in self.pending_turns}
        wanted = {i: r[4] for i, r in self.pending_turns.items()}
        wanted.update({i: r[2] for i, r in self.pending_parts.items()})
        found = index.guarded(scope, wanted)
        self.tried = time.monotonic()
        new_turns = [r for i, r in self.pending_turns.items() if i in found]
        if new_turns:
            start_row = self.matrix.size
            start_turn = len(self.turn_ids)
            for r in new_turns:
                del self.pending_turns[r[0]]
                self.index_of[r[0]] = len(self.turn_ids)
                self.turn_ids.append(r[0])
                self.sessions.append(r[1])
                self.seqs.append(int(r[2]))
                self.hashes.append(r[4])
            codes = [self.session_codes.setdefault(r[1], len(self.session_codes)) for r in new_turns]
            vectors = np.stack([np.asarray(found[r[0]], dtype=np.float32).reshape(-1) for r in new_turns])
            self.occurred.extend([epoch_seconds(r[3]) for r in new_turns])
            self.session_code.extend(codes)
            mine = (scope.tenant, scope.customer_id)
            self.lengths.extend([float(r[6] or 0) if (r[7], r[8]) == mine else 0.0 for r in new_turns])
            self.matrix.extend(vectors)
            self.owner.extend(np.arange(start_turn, start_turn + len(new_turns)))
            self.first.extend(np.arange(start_row, start_row + len(new_turns)))
            self.total = self.total + vectors.sum(axis=0, dtype=np.float64)
            if self.terms is not None:
                self.terms.held([r[0] for r in new_turns], self.index_of)
        if self.terms is not None:  # this read's postings: of turns held now, or kept until their vector is
            self.terms.take(postings, self.index_of, waiting)
        new_parts = [r for i, r in self.pending_parts.items() if i in found and r[1] in self.index_of]
        if new_parts:
            start_row = self.matrix.size
            for r in new_parts:
                del self.pending_parts[r[0]]
            self.matrix.extend(
                np.stack([np.asarray(found[r[0]], dtype=np.float32).reshape(-1) for r in new_parts])
            )
            self.owner.extend([self.index_of[r[1]] for r in new_parts])
            self.part_rows.extend(np.arange(start_row, start_row + len(new_parts)))


class ScopeVectors:
    """The held customers of one process (see the module doc), least recently used dropped first."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max(0, int(max_bytes))
        self._held: OrderedDict[ScopeKey, _Held] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[ScopeKey, threading.Lock] = {}

    def snapshot(self, conn: sa.Connection, scope: Scope, index: CachedIndex, state: ScopeState) -> Snapshot:
        """The customer's turns at ``state`` (read from ``conn`` and ``index`` what is not held)."""
        key = (scope.tenant, scope.customer_id)
        with self._lock:
            guard = self._loading.setdefault(key, threading.Lock())
        with guard:  # one reader per customer at a time; other customers' recalls go on
            with self._lock:
                held = self._held.get(key)
                if held is not None:
                    self._held.move_to_end(key)
            if held is None or held.state.epoch != state.epoch or held.state.generation > state.generation:
                held = _Held(ScopeState(0, state.epoch), index.dimension)
            if held.state.generation < state.generation:
                self._read(conn, scope, index, held, held.state.generation)
                held.state = ScopeState(max(held.state.generation, state.generation), state.epoch)
            elif (held.pending_turns or held.pending_parts) and time.monotonic() - held.tried > _RETRY_S:
                held.add(index, scope, [], [], [])
            snap = held.snapshot(lambda index_of, turns: StoredTerms(conn, scope, index_of, turns))
            self._keep(key, held)
            if held.terms is None and not held.loading_terms:
                held.loading_terms = True
                threading.Thread(
                    target=self._load_terms, args=(conn.engine, scope, held), name="turn-terms", daemon=True
                ).start()
        return snap

    def held_snapshot(self, scope: Scope) -> tuple[ScopeState, Snapshot] | None:
        """The customer's turns as this process holds them and the state they were read at, without
        reading the store: the recall checks that state in the statement that reads its hits
        (:func:`connector.conversations.recall.recall`), one round trip in all. None when the store
        must be read first: the customer is not held, its postings are not held yet, or a row waits
        for its vector."""
        key = (scope.tenant, scope.customer_id)
        with self._lock:
            guard = self._loading.setdefault(key, threading.Lock())
        with guard:
            with self._lock:
                held = self._held.get(key)
                if held is None:
                    return None
                self._held.move_to_end(key)
            if held.terms is None or held.pending_turns or held.pending_parts:
                return None
            return held.state, held.snapshot(_terms_held)

    def _load_terms(self, engine: sa.Engine, scope: Scope, held: _Held) -> None:
        """Read all the customer's postings, then install them unless ``held`` was dropped meanwhile;
        the postings of turns written since the read began are read again under the customer's
        lock (one generation range), so none is missed or counted twice."""
        key = (scope.tenant, scope.customer_id)
        params = {"tenant": scope.tenant, "customer_id": scope.customer_id}
        with self._lock:
            guard = self._loading.setdefault(key, threading.Lock())
        try:
            with guard:
                since = held.state.generation
            with engine.connect() as conn:
                result = conn.execute(_ALL_POSTINGS, params)
                rows = result.cursor.fetchall()
                result.close()
            with guard:
                with self._lock:
                    if self._held.get(key) is not held:
                        return  # erased, evicted or read again meanwhile
                with engine.connect() as conn:
                    result = conn.execute(_NEW_POSTINGS, {**params, "since": since})
                    newer = result.cursor.fetchall()
                    result.close()
                again = {row[0] for row in newer}
                terms = HeldTerms()
                terms.take(
                    [r for r in rows if r[0] not in again] + list(newer), held.index_of, held.pending_turns
                )
                held.terms = terms
        except Exception:  # the store's postings serve this customer's recalls meanwhile
            log.warning(
                "reading the postings of a customer's turns failed; its recalls read them from the store",
                exc_info=True,
            )
            held.loading_terms = False

    def terms_held(self, scope: Scope) -> bool:
        """Whether the customer's postings are in memory yet (tests and benchmarks wait for it)."""
        with self._lock:
            held = self._held.get((scope.tenant, scope.customer_id))
        return held is not None and held.terms is not None

    def _read(self, conn: sa.Connection, scope: Scope, index: CachedIndex, held: _Held, since: int) -> None:
        params = {"tenant": scope.tenant, "customer_id": scope.customer_id, "since": since}
        turns = list(conn.execute(_TURN_ROWS, params).all())
        parts = list(conn.execute(_PART_ROWS, params).all())
        postings: list[Any] = []
        if turns and held.terms is not None:  # the first read's postings come from the background read
            result = conn.execute(_NEW_POSTINGS, params)
            postings = list(result.cursor.fetchall())  # plain tuples: a Row per posting cost twice the read
            result.close()
        held.add(index, scope, turns, parts, postings)
        top = max([int(r[5]) for r in turns[-1:]] + [int(r[3]) for r in parts[-1:]] + [since])
        held.state = ScopeState(top, held.state.epoch)

    def _keep(self, key: ScopeKey, held: _Held) -> None:
        with self._lock:
            self._held[key] = held
            self._held.move_to_end(key)
            total = sum(h.nbytes for h in self._held.values())
            while total > self.max_bytes and len(self._held) > 1:
                _, dropped = self._held.popitem(last=False)
                total -= dropped.nbytes

    def drop(self, scope: Scope) -> None:
        """Nothing of the customer stays held (erasure)."""
        with self._lock:
            self._held.pop((scope.tenant, scope.customer_id), None)

    def clear(self) -> None:
        with self._lock:
            self._held.clear()

    def held(self, scope: Scope) -> bool:
        with self._lock:
            return (scope.tenant, scope.customer_id) in self._held


def _terms_held(_index_of: dict[str, int], _turns: int) -> Terms:
    raise AssertionError("a held snapshot's postings are held")


def read_state(conn: sa.Connection, scope: Scope) -> ScopeState | None:
    return generations.state(conn, scope)
