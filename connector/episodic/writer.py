"""Recording cases: validate, summarise, embed, then write relational rows and vectors together.

Idempotence and de-duplication, in this order, inside one customer's scope:
1. same case key (the caller's case id, else the content hash) and same content -> ``unchanged``;
   same key, changed content -> the entry is re-summarised and re-embedded (``updated``);
2. same content under another case id -> the case is kept raw but points at the existing entry;
3. near-duplicate -> ``merged`` into the existing entry: same case type, the same set of document
   numbers and cosine >= ``NEAR_DUPLICATE``. Requiring equal document numbers keeps two genuinely
   separate incidents (say, duplicate charges on two different invoices) apart, however alike.
Relational rows (each entry with the float16 copy of its vector) and Chroma vectors are written in
one transaction: a Chroma failure rolls the rows back. A batch is read and written set-wise (see
:mod:`connector.episodic.batch`); its cases are applied in order, so duplicates and near-duplicates
within one batch are caught just as across batches.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import IntegrityError

from connector.embeddings.base import Vectors
from connector.episodic import vectors as copies
from connector.episodic.batch import NEAR_DUPLICATE, BatchView, EntryRow, key_of, known_hashes
from connector.episodic.documents import extract_doc_keys, keys_for_documents, normalise_documents
from connector.episodic.models import InvalidCaseError, RecordedCase, RecordStatus
from connector.episodic.summary import Summary, embedding_text, summarise
from connector.episodic.tables import LIVE
from connector.scope import Scope, require_id
from connector.storable import REPLACEMENT, storable, storable_text

if TYPE_CHECKING:
    from connector.episodic.memory import EpisodicMemory

__all__ = ["NEAR_DUPLICATE", "CaseWriter", "NewCase", "chroma_metadata", "content_hash", "validate"]

MAX_TEXT = 20_000


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
    documents: Sequence[str],
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
    if isinstance(documents, str):
        raise InvalidCaseError("documents must be a sequence of document numbers, not one string")
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
    """Entry metadata kept next to the vector (scope, type, dates as numbers, documents, PII)."""
    occurred: datetime = entry["occurred_at"]
    return {
        "tenant": entry["tenant"],
        "customer_id": entry["customer_id"],
        "case_id": entry["case_id"],
        "case_type": entry["case_type"] or "",
        "occurred_at": occurred.isoformat(),
        "occurred_at_ts": int(occurred.timestamp()),
        "documents": ", ".join(entry["documents"]),
        "pii": bool(entry["pii"]),
    }


class CaseWriter:
    """Writes a batch of validated cases for :class:`EpisodicMemory`."""

    def __init__(self, episodic: EpisodicMemory) -> None:
        self.episodic = episodic
        self._prepared: dict[int, tuple[Summary, Vectors]] = {}

    def write(self, cases: Sequence[NewCase]) -> list[RecordedCase]:
        erasures = self.episodic.erasures
        for scope in dict.fromkeys(c.scope for c in cases):
            erasures.require_writable(scope)
        try:
            return self._write(cases)
        except IntegrityError:  # another writer recorded one of these case keys first: now it exists
            return self._write(cases)

    def _write(self, cases: Sequence[NewCase]) -> list[RecordedCase]:
        episodic = self.episodic
        with episodic.engine.connect() as conn:
            known = known_hashes(conn, cases)
        self._prepare([c for c in cases if known.get(key_of(c)) != c.content_hash])
        index = self.episodic.index
        now = episodic.clock.now()
        with episodic.engine.begin() as conn:
            view = BatchView.load(conn, cases, index, model_id=self.episodic.embedder.model_id)
            results = [self._apply(view, case, now) for case in cases]
            view.flush(conn, index, chroma_metadata)
        return results

    def _prepare(self, cases: Sequence[NewCase]) -> None:
        """Summaries and vectors of the cases to write, outside the transaction (LLM and model are slow).

        Equal texts are embedded once (the same case twice in one batch costs one embedding).
        """
        llm = self.episodic.llm
        summaries = {id(c): _summary(llm, c) for c in cases if id(c) not in self._prepared}
        if not summaries:
            return
        text_of = {case_id: embedding_text(s.text) for case_id, s in summaries.items()}
        texts = list(dict.fromkeys(text_of.values()))
        embedded = self.episodic.embedder.embed(texts)
        row_of = {text: i for i, text in enumerate(texts)}
        for case_id, summary in summaries.items():
            self._prepared[case_id] = (summary, embedded[row_of[text_of[case_id]]])

    def _summary_and_vector(self, case: NewCase) -> tuple[Summary, Vectors]:
        if id(case) not in self._prepared:  # known unchanged at first, changed since: embed now
            self._prepare([case])
        return self._prepared[id(case)]

    def _apply(self, view: BatchView, case: NewCase, now: datetime) -> RecordedCase:
        """One case against the batch's view of the store, in the order the module docstring gives."""
        row = view.cases.get(key_of(case))
        if row is not None and row.content_hash == case.content_hash and row.entry_id in view.entries:
            return _result(case, view.entries[row.entry_id], "unchanged")
        summary, vector = self._summary_and_vector(case)
        if row is not None:
            values = self._content_values(case, summary, vector, now)
            if row.entry_id not in view.entries:  # its entry vanished: recreate it under the same id
                values = {**self._new_entry_values(row.entry_id, case, now), **values}
            entry = view.put_entry(row.entry_id, values, vector)
            view.rewrite_case(row, case, _case_values(case, now))
            return _result(case, entry, "updated")
        target = view.same_content(case) or view.near_duplicate(case, vector)
        if target is not None:
            view.add_case(case, target, _case_values(case, now))
            return _result(case, view.change(target, _merged(view.entries[target], case, now)), "merged")
        entry_id = entry_id_for(case.scope, case.case_key)
        values = {
            **self._new_entry_values(entry_id, case, now),
            **self._content_values(case, summary, vector, now),
        }
        entry = view.put_entry(entry_id, values, vector)
        view.add_case(case, entry_id, _case_values(case, now))
        return _result(case, entry, "created")

    def _content_values(
        self, case: NewCase, summary: Summary, vector: Vectors, now: datetime
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
            "vector": copies.encode(vector),
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
