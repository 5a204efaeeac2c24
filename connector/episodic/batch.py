"""What one write batch sees of the store: read in a few set-based statements, written back in a few.

Recording case by case cost about eight statements per case (key and content checks, the
near-duplicate candidates, inserts, re-reads). A batch now reads up front everything its cases can
touch — the case rows of its keys, the live entries holding its content hashes, the near-duplicate
candidates of its customers — and the writer applies the cases one after another to this view, so a
case sees the ones before it in the same batch exactly as sequential recording did (the same case
twice is one entry, a near-duplicate of an earlier case of the batch is merged into it). The result
goes back with one executemany per kind of change and one Chroma upsert.

Write order (no vector without a committed row): the rows are committed first, re-embedded entries
marked ``vector_pending``; then Chroma gets the vectors; then the marks are cleared. A failed commit
has touched no Chroma vector; a failed Chroma write leaves pending rows that the next write of the
same case, or ``reindex --check --fix``, completes; recall skips a vector whose hash is not its row's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import sqlalchemy as sa

from connector.db.chunks import chunks
from connector.embeddings.base import Vectors
from connector.episodic import terms as entry_terms
from connector.episodic.tables import CASES, ENTRIES, LIVE
from connector.lexical.tokens import same_words
from connector.recall.ranking import cosine

if TYPE_CHECKING:
    from connector.episodic.writer import NewCase
    from connector.recall.vector_index import VectorIndex
    from connector.scope import Scope

NEAR_DUPLICATE = 0.95
_CHUNK = 300  # tuples per IN list: well inside SQLite's and PostgreSQL's parameter limits

ScopeKey = tuple[str, str]  # tenant, customer
CaseKey = tuple[str, str, str]  # tenant, customer, case key (or content hash)
DupKey = tuple[str, str, str | None, tuple[str, ...]]  # tenant, customer, type, sorted document keys
# Entry columns a later case may change; one UPDATE statement (executemany) writes them all.
MUTABLE = (
    "case_type", "summary", "summary_mode", "documents", "doc_keys", "occurred_at", "retain_from",
    "updated_at", "pii", "embedding_model", "merged_count", "vector_hash", "vector_pending",
)  # fmt: skip
_UPDATE_ENTRY = sa.update(ENTRIES).where(ENTRIES.c.id == sa.bindparam("_entry"))
_UPDATE_CASE = sa.update(CASES).where(CASES.c.id == sa.bindparam("_case"))
MARK_INDEXED = (  # Chroma has the row's vector: the row stops waiting (unless re-embedded since)
    sa.update(ENTRIES)
    .where(ENTRIES.c.id == sa.bindparam("_entry"), ENTRIES.c.vector_hash == sa.bindparam("_hash"))
    .values(vector_pending=False)
)


def key_of(case: NewCase) -> CaseKey:
    return (case.scope.tenant, case.scope.customer_id, case.case_key)


def dup_key_of(case: NewCase) -> DupKey:
    return (case.scope.tenant, case.scope.customer_id, case.case_type, case.doc_keys)


def _entry_dup_key(values: dict[str, Any]) -> DupKey:
    doc_keys = tuple(sorted(values["doc_keys"]))
    return (values["tenant"], values["customer_id"], values["case_type"], doc_keys)


def _per_scope(
    tenant: Any, customer: Any, column: Any | None, wanted: dict[ScopeKey, set[str]]
) -> Iterator[tuple[Any, dict[str, Any]]]:
    """WHERE clauses with their parameters, a chunk of scopes each: OR of (tenant = ? AND
    customer = ? [AND column IN (...)]).

    Both SQLite (multi-index OR) and PostgreSQL (bitmap OR) probe an index per scope with this
    shape; a row-value IN, ``(tenant, customer, key) IN (VALUES ...)``, made SQLite scan the table.
    """
    group: list[tuple[ScopeKey, set[str]]] = []
    size = 0
    for scope, values in wanted.items():
        group.append((scope, values))
        size += 1 + len(values)
        if size >= _CHUNK:
            yield _scopes_clause(tenant, customer, column, len(group)), _scopes_params(group)
            group, size = [], 0
    if group:
        yield _scopes_clause(tenant, customer, column, len(group)), _scopes_params(group)


@lru_cache(maxsize=128)
def _scopes_clause(tenant: Any, customer: Any, column: Any | None, scopes: int) -> Any:
    """The clause of :func:`_per_scope` for ``scopes`` scopes, of bound parameters, built once per
    shape: building it cost three times what running its statement did (the SQL is the same)."""
    terms = []
    for n in range(scopes):
        term = sa.and_(tenant == sa.bindparam(f"scope_t{n}"), customer == sa.bindparam(f"scope_c{n}"))
        if column is not None:
            term = sa.and_(term, column.in_(sa.bindparam(f"scope_v{n}", expanding=True)))
        terms.append(term)
    return sa.or_(*terms)


def _scopes_params(group: Sequence[tuple[ScopeKey, set[str]]]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for n, ((t, c), values) in enumerate(group):
        params.update({f"scope_t{n}": t, f"scope_c{n}": c, f"scope_v{n}": sorted(values)})
    return params


def _wanted(cases: Sequence[NewCase], value: Callable[[NewCase], str]) -> dict[ScopeKey, set[str]]:
    wanted: dict[ScopeKey, set[str]] = {}
    for case in cases:
        wanted.setdefault((case.scope.tenant, case.scope.customer_id), set()).add(value(case))
    return wanted


@dataclass
class CaseRow:
    """An ``episodic_case`` row: ``row_id`` None when this batch inserts it."""

    row_id: int | None
    content_hash: str
    entry_id: str
    values: dict[str, Any] | None = None  # the columns to insert or update; None: untouched


@dataclass
class EntryRow:
    """An ``episodic_entry`` row as the batch sees it, with its float32 vector when known."""

    values: dict[str, Any]
    new: bool
    vector: Vectors | None = None
    changed: bool = False
    reembedded: bool = False

    @property
    def live(self) -> bool:
        return bool(self.values["status"] == LIVE)


def known_hashes(conn: sa.Connection, cases: Sequence[NewCase]) -> dict[CaseKey, str]:
    """Content hash already stored and indexed under each case key (to embed only new or changed
    cases; a case whose entry still waits for its vector is embedded again)."""
    return {key: row.content_hash for key, row in _case_rows(conn, cases, indexed_only=True).items()}


def _case_rows(
    conn: sa.Connection, cases: Sequence[NewCase], *, indexed_only: bool = False
) -> dict[CaseKey, CaseRow]:
    c = CASES.c
    found: dict[CaseKey, CaseRow] = {}
    wanted = _wanted(cases, lambda x: x.case_key)
    for where, params in _per_scope(c.tenant, c.customer_id, c.case_key, wanted):
        statement = sa.select(c.id, c.tenant, c.customer_id, c.case_key, c.content_hash, c.entry_id)
        if indexed_only:
            statement = statement.join(ENTRIES, ENTRIES.c.id == c.entry_id).where(
                ENTRIES.c.vector_pending.is_(False)
            )
        for r in conn.execute(statement.where(where), params):
            found[(r.tenant, r.customer_id, r.case_key)] = CaseRow(r.id, r.content_hash, r.entry_id)
    return found


@dataclass
class BatchView:
    """The store as one batch sees it while its cases are applied in order."""

    cases: dict[CaseKey, CaseRow] = field(default_factory=dict)
    content: dict[CaseKey, dict[str, str]] = field(default_factory=dict)  # (scope, hash) -> key -> entry
    entries: dict[str, EntryRow] = field(default_factory=dict)
    similar: dict[DupKey, list[str]] = field(default_factory=dict)  # live entries by type + documents

    @classmethod
    def load(cls, conn: sa.Connection, cases: Sequence[NewCase], index: VectorIndex) -> BatchView:
        view = cls(cases=_case_rows(conn, cases))
        view._load_content(conn, cases)
        view._load_similar(conn, cases)
        wanted = {dup_key_of(c) for c in cases}
        candidates = {i for key in wanted for i in view.similar.get(key, ())}
        targets = {r.entry_id for r in view.cases.values()}
        targets.update(e for by_key in view.content.values() for e in by_key.values())
        view._load_entries(conn, sorted(targets | candidates))
        view._load_vectors(sorted(candidates), index)
        return view

    def _load_content(self, conn: sa.Connection, cases: Sequence[NewCase]) -> None:
        c = CASES.c
        wanted = _wanted(cases, lambda x: x.content_hash)
        for where, params in _per_scope(c.tenant, c.customer_id, c.content_hash, wanted):
            statement = (
                sa.select(c.tenant, c.customer_id, c.content_hash, c.case_key, c.entry_id)
                .join(ENTRIES, ENTRIES.c.id == c.entry_id)
                .where(where, ENTRIES.c.status == LIVE)
            )
            for r in conn.execute(statement, params):
                holders = self.content.setdefault((r.tenant, r.customer_id, r.content_hash), {})
                holders[r.case_key] = r.entry_id

    def _load_similar(self, conn: sa.Connection, cases: Sequence[NewCase]) -> None:
        e = ENTRIES.c
        for where, params in _per_scope(e.tenant, e.customer_id, None, _wanted(cases, lambda x: "")):
            statement = sa.select(e.id, e.tenant, e.customer_id, e.case_type, e.doc_keys)
            for r in conn.execute(statement.where(where, e.status == LIVE), params).mappings():
                self.similar.setdefault(_entry_dup_key(dict(r)), []).append(r["id"])

    def _load_entries(self, conn: sa.Connection, ids: Sequence[str]) -> None:
        for chunk in chunks(ids, _CHUNK):
            for r in conn.execute(sa.select(ENTRIES).where(ENTRIES.c.id.in_(chunk))).mappings():
                self.entries[r["id"]] = EntryRow(values=dict(r), new=False)

    def _load_vectors(self, ids: Sequence[str], index: VectorIndex) -> None:
        """Vectors of the near-duplicate candidates, from the index by id."""
        for entry_id, vector in index.vectors([i for i in ids if i in self.entries]).items():
            self.entries[entry_id].vector = vector

    # Lookups ---------------------------------------------------------------------------------------
    def same_content(self, case: NewCase) -> str | None:
        """A live entry that already holds this exact content in the case's scope."""
        holders = self.content.get((case.scope.tenant, case.scope.customer_id, case.content_hash))
        return next(iter(holders.values())) if holders else None

    def near_duplicate(self, case: NewCase, vector: Vectors, text: str) -> str | None:
        """The most similar live entry of the same type and documents, if cosine >= NEAR_DUPLICATE
        and its summary says the same in the same terms (names, amounts and dates included)."""
        best: tuple[float, str] | None = None
        for entry_id in self.similar.get(dup_key_of(case), ()):
            entry = self.entries.get(entry_id)
            if entry is None or entry.vector is None:
                continue  # no vector anywhere: not comparable (reindex restores it)
            candidate = (cosine(vector, entry.vector), entry_id)
            best = candidate if best is None or candidate > best else best
        if best is None or best[0] < NEAR_DUPLICATE:
            return None
        return best[1] if same_words(text, self.entries[best[1]].values["summary"]) else None

    # Changes ---------------------------------------------------------------------------------------
    def add_case(self, case: NewCase, entry_id: str, values: dict[str, Any]) -> None:
        self.cases[key_of(case)] = CaseRow(
            None, case.content_hash, entry_id, {**values, "entry_id": entry_id}
        )
        self._hold_content(case, entry_id)

    def rewrite_case(self, row: CaseRow, case: NewCase, values: dict[str, Any]) -> None:
        """A known case key with new content: the row follows it, and so does the content lookup."""
        old = self.content.get((case.scope.tenant, case.scope.customer_id, row.content_hash), {})
        old.pop(case.case_key, None)
        row.content_hash, row.values = case.content_hash, {**values, "entry_id": row.entry_id}
        entry = self.entries.get(row.entry_id)
        if entry is not None and entry.live:
            self._hold_content(case, row.entry_id)

    def _hold_content(self, case: NewCase, entry_id: str) -> None:
        by_key = self.content.setdefault((case.scope.tenant, case.scope.customer_id, case.content_hash), {})
        by_key[case.case_key] = entry_id

    def put_entry(self, entry_id: str, values: dict[str, Any], vector: Vectors | None) -> EntryRow:
        """Create the entry, or rewrite an existing one with new content and a new vector.

        Only live entries have a vector in the index: an archived one keeps none (restore embeds it).
        """
        entry = self.entries.get(entry_id)
        if entry is None:
            entry = self.entries[entry_id] = EntryRow(values=values, new=True)
        else:
            self._unlist(entry_id, entry)
            entry.values.update(values)
            entry.changed = True
        if entry.live and vector is not None:
            entry.vector, entry.reembedded = vector, True
            self.similar.setdefault(_entry_dup_key(entry.values), []).append(entry_id)
        else:
            entry.vector, entry.reembedded = None, False
            entry.values.update(vector_hash=None, vector_pending=False)
        return entry

    def _unlist(self, entry_id: str, entry: EntryRow) -> None:
        listed = self.similar.get(_entry_dup_key(entry.values), [])
        if entry_id in listed:
            listed.remove(entry_id)

    def change(self, entry_id: str, values: dict[str, Any]) -> EntryRow:
        entry = self.entries[entry_id]
        entry.values.update(values)
        entry.changed = True
        return entry

    # Writing back ----------------------------------------------------------------------------------
    def write_rows(self, conn: sa.Connection, counts: Mapping[str, Mapping[str, int]] | None = None) -> None:
        """The batch's rows, one executemany per kind (re-embedded entries arrive ``vector_pending``);
        ``counts``: term counts of summaries already tokenised, by text."""
        new_cases = [r.values for r in self.cases.values() if r.row_id is None and r.values is not None]
        changed_cases = [
            {"_case": r.row_id, **r.values} for r in self.cases.values() if r.row_id is not None and r.values
        ]
        new_entries = [e.values for e in self.entries.values() if e.new]
        changed_entries = [
            {"_entry": i, **{k: e.values[k] for k in MUTABLE}}
            for i, e in self.entries.items()
            if e.changed and not e.new
        ]
        _execute(conn, sa.insert(CASES), new_cases)
        _execute(conn, _UPDATE_CASE, changed_cases)
        _execute(conn, sa.insert(ENTRIES), new_entries)
        _execute(conn, _UPDATE_ENTRY, changed_entries)
        touched = [(i, e) for i, e in self.entries.items() if e.live and (e.new or e.changed)]
        entry_terms.unindex_entries(conn, [i for i, e in touched if not e.new])
        entry_terms.index_entries(conn, [e.values for _, e in touched], replace=False, counts=counts)

    def write_index(self, index: VectorIndex, metadata: Callable[[dict[str, Any]], Any]) -> None:
        """After the rows are committed: the new vectors (one upsert) and the moved metadata."""
        touched = [(i, e) for i, e in self.entries.items() if e.live and (e.new or e.changed)]
        vectors = self._reembedded()
        if vectors:
            matrix = np.vstack([e.vector for _, e in vectors if e.vector is not None])
            index.upsert([i for i, _ in vectors], matrix, [metadata(e.values) for _, e in vectors])
        moved = [(i, e) for i, e in touched if not e.reembedded]
        index.update_metadata([i for i, _ in moved], [metadata(e.values) for _, e in moved])

    def vector_ids(self, scope: Scope) -> list[str]:
        """Ids of ``scope`` whose vectors :meth:`write_index` upserts."""
        return [
            i
            for i, e in self._reembedded()
            if (e.values["tenant"], e.values["customer_id"]) == (scope.tenant, scope.customer_id)
        ]

    def clear_pending(self, conn: sa.Connection) -> None:
        """Chroma has the vectors: the rows stop waiting (unless a later write re-embedded them)."""
        marks = [{"_entry": i, "_hash": e.values["vector_hash"]} for i, e in self._reembedded()]
        _execute(conn, MARK_INDEXED, marks)

    def _reembedded(self) -> list[tuple[str, EntryRow]]:
        return [
            (i, e)
            for i, e in self.entries.items()
            if e.live and (e.new or e.changed) and e.reembedded and e.vector is not None
        ]


def _execute(conn: sa.Connection, statement: Any, rows: Iterable[dict[str, Any]]) -> None:
    rows = list(rows)
    if rows:
        conn.execute(statement, rows)
