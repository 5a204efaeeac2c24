"""What the episodic API returns: small frozen dataclasses, never bare dicts."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from connector.errors import ConnectorError

# "archived": a new case already past the retention window, stored in the archive only (not embedded,
# not recalled unless asked for); "expired": a PII case already past its PII window, not stored at all.
RecordStatus = Literal["created", "updated", "unchanged", "merged", "archived", "expired"]
SummaryMode = Literal["llm", "non-llm"]


class InvalidCaseError(ConnectorError, ValueError):
    """A case to record or a recall query that cannot be used; nothing was stored or searched."""


@dataclass(frozen=True, slots=True)
class RecordedCase:
    """Outcome of ``record_case``: which entry holds the case and what happened to it."""

    case_id: str
    entry_id: str
    status: RecordStatus
    summary: str
    summary_mode: SummaryMode
    occurred_at: datetime


@dataclass(frozen=True, slots=True)
class CaseHit:
    """One recalled past case and why it ranked.

    ``score`` is the dense (cosine) similarity to the query, ``lexical_score`` the case's BM25 score
    within the customer's cases and ``matched_terms`` the query terms it contains (normalised:
    ``d0314`` is 14 March, ``1250`` is 1,250.00), ``fused_score`` what the two fused into, and
    ``matched_documents`` the query's document numbers the case names (those rank first).
    """

    case_id: str
    entry_id: str
    occurred_at: datetime
    summary: str
    score: float
    documents: tuple[str, ...]
    case_type: str | None = None
    summary_mode: SummaryMode = "non-llm"
    matched_documents: tuple[str, ...] = ()
    lexical_score: float = 0.0
    fused_score: float = 0.0
    matched_terms: tuple[str, ...] = ()
    archived: bool = False  # found in the archive (``recall(..., include_archived=True)``)


@dataclass(frozen=True, slots=True)
class RetentionReport:
    """One retention pass: entries archived out of the live index and PII entries deleted."""

    ran_at: datetime
    archived: int
    pii_deleted: int
    archive_after_days: int
    pii_after_days: int
    archived_entry_ids: tuple[str, ...] = field(default=(), repr=False)


@dataclass(frozen=True, slots=True)
class RestoreReport:
    restored: int
    entry_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class IndexCheck:
    """``reindex --check``: how the live entries and the vector index differ (and whether fixed)."""

    live_entries: int
    index_vectors: int
    orphans: int  # vectors without a live entry
    missing: int  # live entries without their vector (absent, pending, stale or of another scope)
    unstamped: int  # live entries from before vector hashes, vector present
    fixed: bool
    # live entries whose right vector carries the metadata keys older versions stored beside its stamp:
    # slower to read, not inconsistent; ``--fix`` (and ``reindex``) rewrites them as the stamp alone
    old_metadata: int = 0

    @property
    def consistent(self) -> bool:
        return self.orphans == self.missing == self.unstamped == 0


@dataclass(frozen=True, slots=True)
class EpisodicStats:
    embedding_model: str
    live_entries: int
    archived_entries: int
    cases: int
    customers: int
    index_vectors: int
