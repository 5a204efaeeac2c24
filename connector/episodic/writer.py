"""Recording cases: validate, summarise, embed, then write relational rows and vectors together.

Idempotence and de-duplication, in this order, inside one customer's scope:
1. same case key (the caller's case id, else the content hash) and same content -> ``unchanged``;
   same key, changed content -> the entry is re-summarised and re-embedded (``updated``);
2. same content under another case id -> the case is kept raw but points at the existing entry;
3. near-duplicate -> ``merged`` into the existing entry: same case type, the same set of document
   numbers and cosine >= ``NEAR_DUPLICATE``. Requiring equal document numbers keeps two genuinely
   separate incidents (say, duplicate charges on two different invoices) apart, however alike.
Relational rows and Chroma vectors are written in one transaction: a Chroma failure rolls the rows back.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from connector.embeddings.base import Vectors
from connector.episodic.documents import extract_doc_keys, keys_for_documents, normalise_documents
from connector.episodic.models import RecordedCase, RecordStatus
from connector.episodic.ranking import cosine
from connector.episodic.summary import Summary, embedding_text, summarise
from connector.episodic.tables import CASES, ENTRIES, LIVE
from connector.scope import Scope, require_id

if TYPE_CHECKING:
    from connector.episodic.memory import EpisodicMemory

NEAR_DUPLICATE = 0.95
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
        raise ValueError(f"{what} must be a string, got {type(value).__name__}")
    if required and not value.strip():
        raise ValueError(f"{what} is empty: a case needs the customer's request")
    if len(value) > MAX_TEXT:
        raise ValueError(f"{what} is {len(value)} characters; at most {MAX_TEXT} are stored")
    return value


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
    """A NewCase, or ValueError/ScopeError saying what is wrong (nothing is stored)."""
    req = _text(request, "request", required=True)
    res = _text(resolution, "resolution", required=False)
    if case_type is not None and (not isinstance(case_type, str) or not case_type.strip()):
        raise ValueError("case_type must be a non-empty string or None")
    if occurred_at.tzinfo is None or occurred_at.utcoffset() is None:
        raise ValueError("occurred_at must be timezone-aware (UTC)")
    if isinstance(documents, str):
        raise ValueError("documents must be a sequence of document numbers, not one string")
    docs = normalise_documents(documents)
    extra = dict(metadata or {})
    try:
        json.dumps(extra)
    except (TypeError, ValueError):
        raise ValueError("metadata must be JSON-serialisable (str, number, bool, list, dict)") from None
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

    def write(self, cases: Sequence[NewCase]) -> list[RecordedCase]:
        try:
            return self._write(cases)
        except IntegrityError:  # another writer recorded one of these case keys first: now it exists
            return self._write(cases)

    def _write(self, cases: Sequence[NewCase]) -> list[RecordedCase]:
        memory = self.episodic.memory
        engine = memory.engine
        with engine.connect() as conn:
            pending = [c for c in cases if self._known_hash(conn, c) != c.content_hash]
        summaries = {
            id(c): summarise(
                memory.llm,
                request=c.request,
                resolution=c.resolution,
                documents=c.documents,
                occurred_at=c.occurred_at,
                case_type=c.case_type,
            )
            for c in pending
        }
        embedder = self.episodic.embedder
        vectors = (
            embedder.embed([embedding_text(summaries[id(c)].text) for c in pending]) if pending else None
        )
        vector_of = {id(c): vectors[i] for i, c in enumerate(pending)} if vectors is not None else {}
        index = self.episodic.index
        now = memory.clock.now()
        results: list[RecordedCase] = []
        with engine.begin() as conn:
            batch = _Batch()
            for case in cases:
                results.append(self._write_one(conn, case, summaries.get(id(case)), vector_of, batch, now))
            if batch.ids:
                index.upsert(batch.ids, np.vstack(batch.vectors), batch.metadatas)
            if batch.touched:
                rows = conn.execute(sa.select(ENTRIES).where(ENTRIES.c.id.in_(batch.touched))).mappings()
                by_id = {r["id"]: r for r in rows}
                ids = [i for i in batch.touched if i in by_id]
                index.update_metadata(ids, [chroma_metadata(by_id[i]) for i in ids])
        return results

    @staticmethod
    def _known_hash(conn: sa.Connection, case: NewCase) -> str | None:
        row = conn.execute(
            sa.select(CASES.c.content_hash).where(
                CASES.c.tenant == case.scope.tenant,
                CASES.c.customer_id == case.scope.customer_id,
                CASES.c.case_key == case.case_key,
            )
        ).first()
        return row[0] if row else None

    def _write_one(
        self,
        conn: sa.Connection,
        case: NewCase,
        summary: Summary | None,
        vector_of: dict[int, Vectors],
        batch: _Batch,
        now: datetime,
    ) -> RecordedCase:
        scope = case.scope
        existing = conn.execute(
            sa.select(CASES.c.id, CASES.c.content_hash, CASES.c.entry_id).where(
                CASES.c.tenant == scope.tenant,
                CASES.c.customer_id == scope.customer_id,
                CASES.c.case_key == case.case_key,
            )
        ).first()
        if existing is not None and existing.content_hash == case.content_hash:
            return self._result(conn, case, existing.entry_id, "unchanged")
        if summary is None or id(case) not in vector_of:  # same key twice in one batch
            summary = summarise(
                self.episodic.memory.llm,
                request=case.request,
                resolution=case.resolution,
                documents=case.documents,
                occurred_at=case.occurred_at,
                case_type=case.case_type,
            )
            vector_of[id(case)] = self.episodic.embedder.embed([embedding_text(summary.text)])[0]
        vector = vector_of[id(case)]
        if existing is not None:
            self._update_case(conn, existing.id, case, now)
            self._save_entry(conn, existing.entry_id, case, summary, now, batch, vector, update=True)
            return self._result(conn, case, existing.entry_id, "updated")
        target = self._same_content(conn, case) or self._near_duplicate(conn, case, vector, batch)
        if target is not None:
            self._insert_case(conn, case, target, now)
            self._merge_into(conn, target, case, now)
            batch.touched.append(target)
            return self._result(conn, case, target, "merged")
        entry_id = entry_id_for(scope, case.case_key)
        self._insert_case(conn, case, entry_id, now)
        self._save_entry(conn, entry_id, case, summary, now, batch, vector, update=False)
        return self._result(conn, case, entry_id, "created")

    def _same_content(self, conn: sa.Connection, case: NewCase) -> str | None:
        row = conn.execute(
            sa.select(CASES.c.entry_id)
            .join(ENTRIES, ENTRIES.c.id == CASES.c.entry_id)
            .where(
                CASES.c.tenant == case.scope.tenant,
                CASES.c.customer_id == case.scope.customer_id,
                CASES.c.content_hash == case.content_hash,
                ENTRIES.c.status == LIVE,
            )
            .limit(1)
        ).first()
        return row[0] if row else None

    def _near_duplicate(
        self, conn: sa.Connection, case: NewCase, vector: Vectors, batch: _Batch
    ) -> str | None:
        type_filter = (
            ENTRIES.c.case_type.is_(None) if case.case_type is None else ENTRIES.c.case_type == case.case_type
        )
        rows = conn.execute(
            sa.select(ENTRIES.c.id, ENTRIES.c.doc_keys).where(
                ENTRIES.c.tenant == case.scope.tenant,
                ENTRIES.c.customer_id == case.scope.customer_id,
                ENTRIES.c.status == LIVE,
                type_filter,
            )
        ).all()
        same_docs = [r.id for r in rows if sorted(r.doc_keys) == list(case.doc_keys)]
        if not same_docs:
            return None
        stored = {i: v for i, v in zip(batch.ids, batch.vectors, strict=True) if i in same_docs}
        missing = [i for i in same_docs if i not in stored]
        stored.update(self.episodic.index.vectors(missing))
        best = max(((cosine(vector, v), i) for i, v in stored.items()), default=None)
        return best[1] if best is not None and best[0] >= NEAR_DUPLICATE else None

    def _insert_case(self, conn: sa.Connection, case: NewCase, entry_id: str, now: datetime) -> None:
        conn.execute(
            sa.insert(CASES).values(
                tenant=case.scope.tenant,
                customer_id=case.scope.customer_id,
                case_key=case.case_key,
                entry_id=entry_id,
                recorded_at=now,
                **_case_values(case),
            )
        )

    def _update_case(self, conn: sa.Connection, case_row_id: int, case: NewCase, now: datetime) -> None:
        conn.execute(
            sa.update(CASES).where(CASES.c.id == case_row_id).values(recorded_at=now, **_case_values(case))
        )

    def _save_entry(
        self,
        conn: sa.Connection,
        entry_id: str,
        case: NewCase,
        summary: Summary,
        now: datetime,
        batch: _Batch,
        vector: Vectors,
        *,
        update: bool,
    ) -> None:
        values: dict[str, Any] = {
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
        }
        if update:
            conn.execute(sa.update(ENTRIES).where(ENTRIES.c.id == entry_id).values(**values))
            row = conn.execute(sa.select(ENTRIES).where(ENTRIES.c.id == entry_id)).mappings().one()
            if row["status"] != LIVE:
                return  # an archived entry is updated in the archive only; restore re-indexes it
        else:
            values.update(
                id=entry_id,
                tenant=case.scope.tenant,
                customer_id=case.scope.customer_id,
                case_id=case.case_key,
                recorded_at=now,
                status=LIVE,
                merged_count=1,
            )
            conn.execute(sa.insert(ENTRIES).values(**values))
            row = conn.execute(sa.select(ENTRIES).where(ENTRIES.c.id == entry_id)).mappings().one()
        batch.add(entry_id, vector, chroma_metadata(row))

    def _merge_into(self, conn: sa.Connection, entry_id: str, case: NewCase, now: datetime) -> None:
        row = conn.execute(sa.select(ENTRIES).where(ENTRIES.c.id == entry_id)).mappings().one()
        conn.execute(
            sa.update(ENTRIES)
            .where(ENTRIES.c.id == entry_id)
            .values(
                occurred_at=max(row["occurred_at"], case.occurred_at),
                retain_from=max(row["retain_from"], case.occurred_at),
                pii=bool(row["pii"] or case.pii),
                merged_count=row["merged_count"] + 1,
                updated_at=now,
            )
        )

    @staticmethod
    def _result(conn: sa.Connection, case: NewCase, entry_id: str, status: RecordStatus) -> RecordedCase:
        row = conn.execute(
            sa.select(ENTRIES.c.summary, ENTRIES.c.summary_mode, ENTRIES.c.occurred_at).where(
                ENTRIES.c.id == entry_id
            )
        ).one()
        return RecordedCase(
            case_id=case.case_key,
            entry_id=entry_id,
            status=status,
            summary=row.summary,
            summary_mode=row.summary_mode,
            occurred_at=row.occurred_at,
        )


def _case_values(case: NewCase) -> dict[str, Any]:
    return {
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


@dataclass
class _Batch:
    """Vectors to upsert and merged entries whose Chroma metadata must follow, at commit."""

    ids: list[str] = field(default_factory=list)
    vectors: list[Vectors] = field(default_factory=list)
    metadatas: list[dict[str, Any]] = field(default_factory=list)
    touched: list[str] = field(default_factory=list)

    def add(self, entry_id: str, vector: Vectors, metadata: dict[str, Any]) -> None:
        if entry_id in self.ids:
            i = self.ids.index(entry_id)
            self.vectors[i], self.metadatas[i] = vector, metadata
            return
        self.ids.append(entry_id)
        self.vectors.append(vector)
        self.metadatas.append(metadata)
