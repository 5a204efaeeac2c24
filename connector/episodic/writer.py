"""Recording cases: validate, summarise, embed, then write relational rows and vectors together.

Idempotence and de-duplication, in this order, inside one customer's scope:
1. same case key (the caller's case id, else the content hash) and same content -> ``unchanged``;
   same key, changed content -> the entry is re-summarised and re-embedded (``updated``);
2. same content under another case id -> the case is kept raw but points at the existing entry;
3. near-duplicate -> ``merged`` into the existing entry: same case type, the same set of document
   numbers, cosine >= ``NEAR_DUPLICATE`` and the same terms (numbers, amounts, dates equal; 80% of
   the words shared: embeddings barely see names and numbers). Requiring equal document numbers
   keeps two genuinely separate incidents (say, duplicate charges on two different invoices) apart,
   however alike.
Retention applies at write time: a new case dated past the retention window goes straight to the
archive (``archived``; not embedded, since nothing recalls it by similarity), and a PII case past its
PII window is not stored at all (``expired``), as the next retention pass would delete it.
Rows are committed before Chroma gets the vectors (see :mod:`connector.episodic.batch` for the
order and what a failure leaves). A batch is read and written set-wise; its cases are applied in
order, so duplicates and near-duplicates within one batch are caught just as across batches.
A batch longer than ``WRITE_CHUNK`` cases is written a chunk at a time, each chunk complete in
both stores (rows, vectors, marks cleared) before the next starts, while a helper thread embeds
the next chunk: the model keeps the cores busy while the rows, postings and Chroma are written.
A failure stops the batch after the chunks already complete; recording it again completes it
(the chunks written come back ``unchanged``).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import IntegrityError

from connector.audit.pending import write_announced
from connector.embeddings.base import Vectors
from connector.episodic.batch import NEAR_DUPLICATE, BatchView, EntryRow, key_of, known_hashes
from connector.episodic.documents import extract_doc_keys, keys_for_documents, normalise_documents
from connector.episodic.models import InvalidCaseError, RecordedCase, RecordStatus
from connector.episodic.summary import Summary, embedding_text, summarise
from connector.episodic.tables import ARCHIVED, LIVE
from connector.errors import ErasedCustomerError, StoreError
from connector.lexical.tokens import term_counts
from connector.recall.vector_index import Stamp, vector_hash
from connector.recall.windows import Windows
from connector.scope import Scope, require_id
from connector.storable import REPLACEMENT, storable, storable_text
from connector.threads import ContextThreadPoolExecutor
from connector.vectors.deadline import with_patience
from connector.vectors.files import purge_chroma_log

if TYPE_CHECKING:
    from connector.episodic.memory import EpisodicMemory

__all__ = ["NEAR_DUPLICATE", "CaseWriter", "NewCase", "chroma_metadata", "content_hash", "validate"]

MAX_TEXT = 20_000
# Cases written per transaction in a long batch; the next chunk is embedded meanwhile. A call of 64
# (bench_episodic's) is one chunk: on 2 cores the model needs both, so embedding a second chunk
# beside the first one's write only slowed both (Chroma's upsert holds the GIL while its threads
# work); chunks of 32 took 19-37% more wall time for the same calls (session 6, see the README),
# and 15-29% more on a slower 2-core machine with the cheaper model build (session 7).
WRITE_CHUNK = 64
Prepared = tuple[Summary, Vectors, str]  # a case's summary, its vector, that vector's hash
Made = tuple[dict[int, Prepared], dict[str, Counter[str]]]  # by case; term counts by summary text


@dataclass(frozen=True, slots=True)
class NewCase:
    """One case to record, validated; ``scope`` comes only from the explicit arguments."""

    scope: Scope
    request: str
    resolution: str
    case_key: str
    case_type: str | None
    occurred_at: datetime
    documents: tuple[str, ...]
    doc_keys: tuple[str, ...]
    pii: bool
    transcript: str | None
    extra: dict[str, Any] = field(default_factory=dict)
    content_hash: str = ""


def content_hash(case_type: str | None, request: str, resolution: str, documents: Sequence[str]) -> str:
    payload = json.dumps(
        [case_type, request.strip(), resolution.strip(), sorted(documents)], ensure_ascii=False
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def entry_id_for(scope: Scope, case_key: str) -> str:
    """Deterministic, so a retried write lands on the same Chroma id."""
    return hashlib.sha256(f"{scope.tenant}\x1f{scope.customer_id}\x1f{case_key}".encode()).hexdigest()[:40]


def _text(value: object, what: str, *, required: bool) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise InvalidCaseError(f"{what} must be a string, got {type(value).__name__}")
    if required and not value.strip():
        raise InvalidCaseError(f"{what} is empty: a case needs the customer's request")
    if len(value) > MAX_TEXT:
        raise InvalidCaseError(f"{what} is {len(value)} characters; at most {MAX_TEXT} are stored")
    return storable_text(value, nul=REPLACEMENT)  # a NUL or lone surrogate no store can hold


def validate(
    scope: Scope,
    request: object,
    resolution: object,
    *,
    case_id: object,
    case_type: object,
    occurred_at: datetime,
    documents: Sequence[str] | None,
    pii: bool,
    transcript: object,
    metadata: Mapping[str, Any] | None,
) -> NewCase:
    """A NewCase, or InvalidCaseError/ScopeError saying what is wrong (nothing is stored)."""
    req = _text(request, "request", required=True)
    res = _text(resolution, "resolution", required=False)
    if case_type is not None and (not isinstance(case_type, str) or not case_type.strip()):
        raise InvalidCaseError("case_type must be a non-empty string or None")
    if occurred_at.tzinfo is None or occurred_at.utcoffset() is None:
        raise InvalidCaseError("occurred_at must be timezone-aware (UTC)")
    if documents is None:  # said explicitly: no documents
        documents = ()
    if isinstance(documents, str):
        raise InvalidCaseError("documents must be a sequence of document numbers, not one string")
    if not isinstance(documents, Iterable):
        raise InvalidCaseError(
            f"documents must be a sequence of document numbers or None, got {type(documents).__name__}"
        )
    docs = normalise_documents([storable(d, nul="") for d in documents])
    extra = storable(dict(metadata or {}), nul=REPLACEMENT)
    try:
        json.dumps(extra)
    except (TypeError, ValueError):
        raise InvalidCaseError("metadata must be JSON-serialisable (str, number, bool, list, dict)") from None
    ctype = case_type.strip() if isinstance(case_type, str) else None
    digest = content_hash(ctype, req, res, docs)
    key = require_id(case_id, "case_id") if case_id is not None else f"sha256:{digest[:32]}"
    keys = sorted(keys_for_documents(docs) | extract_doc_keys(req, res))
    return NewCase(
        scope=scope,
        request=req,
        resolution=res,
        case_key=key,
        case_type=ctype,
        occurred_at=occurred_at,
        documents=docs,
        doc_keys=tuple(keys),
        pii=bool(pii),
        transcript=_text(transcript, "transcript", required=False) or None,
        extra=extra,
        content_hash=digest,
    )


def chroma_metadata(entry: Mapping[Any, Any]) -> dict[str, Any]:
    """The metadata kept next to an entry's vector: its stamp (scope and vector hash), nothing else.

    Recall reads the metadata of every vector it fetches, and checks only the stamp; type, dates,
    documents and PII live in the relational row, which decides what is recallable. Older versions
    stored those here too; :data:`~connector.episodic.chroma_index.CASE_RETIRED_KEYS` clears them.
    """
    return Stamp.metadata(entry["tenant"], entry["customer_id"], entry["vector_hash"])


class CaseWriter:
    """Writes a batch of validated cases for :class:`EpisodicMemory`."""

    def __init__(self, episodic: EpisodicMemory, *, deterministic: bool = False) -> None:
        """``deterministic``: write the deterministic summary even with an LLM (it rewords later)."""
        self.episodic = episodic
        self._deterministic = deterministic
        self._prepared: dict[int, Prepared] = {}
        self._counts: dict[str, Counter[str]] = {}  # lexical term counts of the prepared summaries
        self._vectors: dict[str, Vectors] = {}  # by vector hash: what this batch's chunks embedded

    @with_patience
    def write(self, cases: Sequence[NewCase]) -> list[RecordedCase]:
        """Record ``cases`` in order; a batch longer than ``WRITE_CHUNK`` is written chunk by chunk,
        the next chunk embedded while this one is written (see the module docstring)."""
        self.episodic.erasures.require_all_writable(c.scope for c in cases)
        now = self.episodic.clock.now()  # one time for the whole batch, as if written at once
        windows = Windows.at(now, self.episodic.retention)
        chunks = [cases[start : start + WRITE_CHUNK] for start in range(0, len(cases), WRITE_CHUNK)]
        if len(chunks) <= 1:
            self._keep(self._prepared_for(cases, windows))
            return self._write_chunk(cases, now, windows)
        results: list[RecordedCase] = []
        with ContextThreadPoolExecutor(1, thread_name_prefix="episodic-embed-ahead") as ahead:
            prepared = ahead.submit(self._prepared_for, chunks[0], windows)
            for number, chunk in enumerate(chunks):
                self._keep(prepared.result())
                if number + 1 < len(chunks):
                    prepared = ahead.submit(self._prepared_for, chunks[number + 1], windows)
                results.extend(self._write_chunk(chunk, now, windows))
        return results

    def _write_chunk(self, cases: Sequence[NewCase], now: datetime, windows: Windows) -> list[RecordedCase]:
        try:
            return self._write(cases, now, windows)
        except IntegrityError:  # another writer recorded one of these case keys first: now it exists
            return self._write(cases, now, windows)

    def _write(self, cases: Sequence[NewCase], now: datetime, windows: Windows) -> list[RecordedCase]:
        episodic = self.episodic
        index = self.episodic.index
        scopes = list(dict.fromkeys(c.scope for c in cases))
        with episodic.engine.begin() as conn:
            episodic.erasures.require_all_writable(scopes, conn)  # a forget since the batch began wins
            view = BatchView.load(conn, cases, index)
            results = [self._apply(view, case, now, windows) for case in cases]
            view.write_rows(conn, self._counts)
            write_announced(conn)  # Memory.record_case's event: commits with the case rows
        try:
            view.write_index(index, chroma_metadata)
        except StoreError as exc:
            raise StoreError(
                f"{exc}. The cases are stored and their vectors pending: record them again, or run "
                "`connector episodic reindex --check --fix`"
            ) from None
        self._publish(cases)  # before the erasure re-check: a racing forget drops them again
        self._undo_if_erased(scopes, view)
        with episodic.engine.begin() as conn:
            view.clear_pending(conn)
        return results

    def _undo_if_erased(self, scopes: Sequence[Scope], view: BatchView) -> None:
        """A ``forget`` that ran while this chunk was written may have missed its rows (not yet
        committed when it deleted) or its vectors (upserted after it deleted by id): take them out
        again, then refuse the write as a write after the erasure (other customers' cases stay)."""
        erased = self.episodic.erasures.erased_among(scopes)
        for scope in erased:
            ids = view.vector_ids(scope)
            self.episodic.index.delete(ids)
            if self.episodic.embedded_chroma_path is not None:  # nor in Chroma's log and free pages
                purge_chroma_log(
                    self.episodic.embedded_chroma_path, ids, scope=(scope.tenant, scope.customer_id)
                )
            self.episodic.forget(scope.customer_id, tenant=scope.tenant, sweep=False)
        if erased:
            raise ErasedCustomerError(erased[0].customer_id, erased[0].tenant)

    def _keep(self, made: Made) -> None:
        prepared, counts = made
        self._prepared.update(prepared)
        self._counts.update(counts)
        self._vectors.update((digest, vector) for _, vector, digest in prepared.values())

    def _prepared_for(self, cases: Sequence[NewCase], windows: Windows) -> Made:
        """What :meth:`_prepare` makes for the cases that will need a vector: not stored unchanged
        and indexed already, and new ones only if they stay live (archived or expired ones do not)."""
        with self.episodic.engine.connect() as conn:
            known = known_hashes(conn, cases)
        return self._prepare([
            c for c in cases
            if known.get(key_of(c)) != c.content_hash
            and (key_of(c) in known or windows.fate(c.occurred_at, pii=c.pii) == "live")
        ])  # fmt: skip

    def _prepare(self, cases: Sequence[NewCase]) -> Made:
        """Summaries, vectors and lexical term counts of the cases to write, outside the transaction
        (LLM and model are slow; tokenising here keeps it off the rows' transaction, and in a long
        batch on the embed-ahead thread, beside the previous chunk's write).

        Equal texts are embedded once: a text an earlier call or an earlier chunk of this batch
        embedded is not embedded again (:mod:`.text_vectors`: the same vector, bit for bit). Runs on
        the embed-ahead thread too, so it returns what it made and leaves ``_prepared`` alone.
        """
        llm = None if self._deterministic else self.episodic.llm
        summaries = {id(c): _summary(llm, c) for c in cases if id(c) not in self._prepared}
        if not summaries:
            return {}, {}
        text_of = {case_id: embedding_text(s.text) for case_id, s in summaries.items()}
        embedder = self.episodic.embedder
        model = embedder.model_id
        hash_of = {text: vector_hash(model, text) for text in text_of.values()}
        vectors = self.episodic.text_vectors.lookup(hash_of.values())
        for digest in hash_of.values():  # embedded for an earlier chunk of this batch, not written yet
            earlier = self._vectors.get(digest)  # key by key: the writer's thread may add meanwhile
            if earlier is not None and digest not in vectors:
                vectors[digest] = earlier
        missing = [text for text, digest in hash_of.items() if digest not in vectors]
        if missing:
            vectors.update(zip([hash_of[t] for t in missing], embedder.embed(missing), strict=True))
        prepared = {
            case_id: (summary, vectors[digest], digest)
            for case_id, summary in summaries.items()
            for digest in (hash_of[text_of[case_id]],)
        }
        return prepared, {s.text: term_counts(s.text) for s in summaries.values()}

    def _publish(self, cases: Sequence[NewCase]) -> None:
        """Keep the vectors this chunk's cases used for later calls (:mod:`.text_vectors`), each
        under the scopes of its cases; a PII case's vector is not kept."""
        vectors: dict[str, Vectors] = {}
        scopes: dict[str, list[Scope]] = {}
        for case in cases:
            made = self._prepared.get(id(case))
            if made is None or case.pii:
                continue
            _, vector, digest = made
            vectors[digest] = vector
            scopes.setdefault(digest, []).append(case.scope)
        self.episodic.text_vectors.keep(vectors, scopes)

    def _summary_and_vector(self, case: NewCase) -> Prepared:
        if id(case) not in self._prepared:  # known unchanged at first, changed since: embed now
            self._keep(self._prepare([case]))
        return self._prepared[id(case)]

    def _apply(self, view: BatchView, case: NewCase, now: datetime, windows: Windows) -> RecordedCase:
        """One case against the batch's view of the store, in the order the module docstring gives."""
        row = view.cases.get(key_of(case))
        entry = view.entries.get(row.entry_id) if row is not None else None
        # an entry a failed write left waiting for its vector is written again, not "unchanged"
        waiting = entry is not None and entry.values["vector_pending"] and not entry.reembedded
        if row is not None and entry is not None and not waiting and row.content_hash == case.content_hash:
            return _result(case, entry, "unchanged")
        fate = windows.fate(case.occurred_at, pii=case.pii)
        if row is None and fate == "expired":
            return _expired(case)
        target = view.same_content(case) if row is None else None
        if row is None and target is None and fate == "archived":
            return self._archive(view, case, now)
        summary, vector, digest = self._summary_and_vector(case)
        if row is not None:
            values = self._content_values(case, summary, digest, now)
            if entry is None:  # its entry vanished: recreate it under the same id
                values = {**self._new_entry_values(row.entry_id, case, now), **values}
            written = view.put_entry(row.entry_id, values, vector)
            view.rewrite_case(row, case, _case_values(case, now))
            return _result(case, written, "updated")
        target = target or view.near_duplicate(case, vector, summary.text)
        if target is not None:
            view.add_case(case, target, _case_values(case, now))
            return _result(case, view.change(target, _merged(view.entries[target], case, now)), "merged")
        entry_id = entry_id_for(case.scope, case.case_key)
        values = {
            **self._new_entry_values(entry_id, case, now),
            **self._content_values(case, summary, digest, now),
        }
        written = view.put_entry(entry_id, values, vector)
        view.add_case(case, entry_id, _case_values(case, now))
        return _result(case, written, "created")

    def _archive(self, view: BatchView, case: NewCase, now: datetime) -> RecordedCase:
        """A new case already past retention: an archived entry without a vector (restore embeds it)."""
        summary = _summary(None if self._deterministic else self.episodic.llm, case)
        entry_id = entry_id_for(case.scope, case.case_key)
        values = {
            **self._new_entry_values(entry_id, case, now),
            **self._content_values(case, summary, None, now),
            "status": ARCHIVED,
            "archived_at": now,
        }
        written = view.put_entry(entry_id, values, None)
        view.add_case(case, entry_id, _case_values(case, now))
        return _result(case, written, "archived")

    def _content_values(
        self, case: NewCase, summary: Summary, digest: str | None, now: datetime
    ) -> dict[str, Any]:
        """Entry columns that follow the case's content (set on create and on update)."""
        return {
            "case_type": case.case_type,
            "summary": summary.text,
            "summary_mode": summary.mode,
            "documents": list(case.documents),
            "doc_keys": list(case.doc_keys),
            "occurred_at": case.occurred_at,
            "retain_from": case.occurred_at,
            "updated_at": now,
            "pii": case.pii,
            "embedding_model": self.episodic.embedder.model_id,
            "vector_hash": digest,
            "vector_pending": digest is not None,
        }

    @staticmethod
    def _new_entry_values(entry_id: str, case: NewCase, now: datetime) -> dict[str, Any]:
        """Entry columns set once, when the entry is created; scope comes from the validated case."""
        return {
            "id": entry_id,
            "tenant": case.scope.tenant,
            "customer_id": case.scope.customer_id,
            "case_id": case.case_key,
            "recorded_at": now,
            "archived_at": None,
            "status": LIVE,
            "merged_count": 1,
        }


def _summary(llm: Any, case: NewCase) -> Summary:
    return summarise(
        llm,
        request=case.request,
        resolution=case.resolution,
        documents=case.documents,
        occurred_at=case.occurred_at,
        case_type=case.case_type,
    )


def _merged(entry: EntryRow, case: NewCase, now: datetime) -> dict[str, Any]:
    """A near-duplicate or same-content case folded into an entry: latest date, PII if either is."""
    values = entry.values
    return {
        "occurred_at": max(values["occurred_at"], case.occurred_at),
        "retain_from": max(values["retain_from"], case.occurred_at),
        "pii": bool(values["pii"] or case.pii),
        "merged_count": values["merged_count"] + 1,
        "updated_at": now,
    }


def _result(case: NewCase, entry: EntryRow, status: RecordStatus) -> RecordedCase:
    values = entry.values
    return RecordedCase(
        case_id=case.case_key,
        entry_id=values["id"],
        status=status,
        summary=values["summary"],
        summary_mode=values["summary_mode"],
        occurred_at=values["occurred_at"],
    )


def _expired(case: NewCase) -> RecordedCase:
    """A PII case past its PII window: nothing is stored, the result says so."""
    return RecordedCase(
        case_id=case.case_key,
        entry_id=entry_id_for(case.scope, case.case_key),
        status="expired",
        summary="",
        summary_mode="non-llm",
        occurred_at=case.occurred_at,
    )


def _case_values(case: NewCase, now: datetime) -> dict[str, Any]:
    """Every column of a case row (the same keys for every row, as executemany needs)."""
    return {
        "tenant": case.scope.tenant,
        "customer_id": case.scope.customer_id,
        "case_key": case.case_key,
        "recorded_at": now,
        "case_type": case.case_type,
        "request": case.request,
        "resolution": case.resolution,
        "transcript": case.transcript,
        "documents": list(case.documents),
        "extra": case.extra,
        "occurred_at": case.occurred_at,
        "pii": case.pii,
        "content_hash": case.content_hash,
    }
