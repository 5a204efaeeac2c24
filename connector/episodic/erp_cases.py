"""Closed CRM cases from the ERP (Acumatica Case, synced into ``crm_case``) become episodic entries.

Each case is recorded under its customer with the case key ``crm:<CaseID>``, so recording is
idempotent; ``crm_case.episodic_hash`` remembers which content was recorded, so a case is
re-recorded (and its entry updated) only when the ERP changed it. A case closed longer ago than
the retention window goes straight to the archive (``archived``), a PII one past its window is not
kept (``expired``): see :mod:`connector.episodic.writer`. A page of cases is recorded as one
batch (:meth:`EpisodicMemory.record_cases`: set-wise reads, embedding ahead, the LLM's rewording
queued, never waited on); a case that cannot be recorded (no customer, no text) is skipped and logged,
and so are the cases of a customer erased while the ingest runs (the other customers' go on).
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime
from typing import TYPE_CHECKING

import sqlalchemy as sa

from connector.episodic.models import InvalidCaseError
from connector.erasure import customer_digest
from connector.errors import ErasedCustomerError, ScopeError
from connector.scope import Scope, require_id
from connector.semantic.tables import CrmCase

if TYPE_CHECKING:
    from connector.episodic.memory import EpisodicMemory
    from connector.episodic.writer import NewCase

log = logging.getLogger(__name__)

CRM_CASES: sa.Table = CrmCase.metadata.tables["crm_case"]


def _request(subject: str | None, description: str | None) -> str:
    parts = [p.strip() for p in (subject, description) if p and p.strip()]
    return ". ".join(parts)


def ingest(episodic: EpisodicMemory, tenant: str, *, batch_size: int = 200) -> dict[str, int]:
    """Record new or changed closed cases of ``tenant``; how many, by what became of them."""
    tenant = require_id(tenant, "tenant")
    c = CRM_CASES.c
    pending_filter = sa.and_(
        c.tenant == tenant,
        c.is_closed.is_(True),
        c.deleted_at.is_(None),
        c.customer_external_id.is_not(None),
        sa.or_(c.episodic_hash.is_(None), c.episodic_hash != c.content_hash),
    )
    recorded: Counter[str] = Counter()
    skipped: set[int] = set()
    erased = episodic.erasures.erased_digests(tenant)
    while True:
        with episodic.engine.connect() as conn:
            rows = conn.execute(
                sa.select(CRM_CASES).where(pending_filter, c.id.not_in(skipped) if skipped else sa.true())
                .order_by(c.id).limit(batch_size)
            ).mappings().all()  # fmt: skip
        if not rows:
            return dict(recorded)
        batch: list[tuple[int, str, NewCase]] = []  # crm_case row id, content hash, the case
        for row in rows:
            request = _request(row["subject"], row["description"])
            occurred: datetime | None = row["closed_at"] or row["reported_at"] or row["source_modified_at"]
            try:
                scope = Scope.of(tenant, row["customer_external_id"])
                if not request:
                    raise InvalidCaseError("the case has neither subject nor description")
                if customer_digest(tenant, scope.customer_id) in erased:
                    skipped.add(row["id"])  # erased by forget: stays out until the erasure is lifted
                    continue
                case = episodic.prepare(
                    scope.customer_id,
                    request,
                    row["resolution"] or "",
                    tenant=tenant,
                    case_id=f"crm:{row['external_id']}",
                    case_type=row["case_class"],
                    occurred_at=occurred,
                    metadata={"source": "erp", "crm_status": row["status"], "priority": row["priority"]},
                )
            except (ScopeError, InvalidCaseError) as exc:
                log.warning("CRM case %s/%s not recorded: %s", tenant, row["external_id"], exc)
                skipped.add(row["id"])
                continue
            batch.append((row["id"], row["content_hash"], case))
        if not batch:
            continue
        # One batched write per page (set-wise reads, one Chroma upsert per chunk; recording case by
        # case cost two commits and a Chroma call each), then the page's hashes in one executemany.
        try:
            results = episodic.record_cases([case for _, _, case in batch])
        except ErasedCustomerError:  # forget ran since this ingest began: that customer stays out,
            known, erased = erased, episodic.erasures.erased_digests(tenant)  # the others go on
            if erased == known:
                raise
            continue
        with episodic.engine.begin() as conn:
            conn.execute(
                sa.update(CRM_CASES)
                .where(c.id == sa.bindparam("_row"))
                .values(episodic_hash=sa.bindparam("_hash")),
                [{"_row": row_id, "_hash": digest} for row_id, digest, _ in batch],
            )
        recorded.update(result.status for result in results)
