"""Records the facts area returns: learned facts and the reports of its maintenance jobs."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from connector.errors import ConnectorError


class FactError(ConnectorError, ValueError):
    """A fact that cannot be stored: blank, too long, out-of-range importance, or an ERP field."""


@dataclass(frozen=True, slots=True)
class LearnedFact:
    """A fact with no home in the ERP. ``source`` is where it was first learned (``session:<id>``,
    ``case:<id>`` or a caller's label); ``sources`` lists every source that stated or confirmed it."""

    id: int
    tenant: str
    customer_id: str
    agent_id: str | None
    workflow_id: str | None
    content: str
    category: str
    importance: float
    source: str | None
    sources: tuple[str, ...]
    confirmations: int
    created_at: datetime
    updated_at: datetime
    last_confirmed_at: datetime


@dataclass(frozen=True, slots=True)
class DroppedFact:
    content: str
    reason: str


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """What one consolidation job did for one scope. ``status``: succeeded, skipped or failed."""

    job_id: int
    tenant: str
    customer_id: str
    agent_id: str | None
    workflow_id: str | None
    status: str
    sessions: tuple[str, ...]
    checksum: str
    facts_created: int = 0
    facts_confirmed: int = 0
    dropped: tuple[DroppedFact, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ConsolidationReport:
    """One consolidation pass. ``mode`` is "llm" or "non-llm"; in non-LLM mode nothing is learned and
    ``message`` says so, and the pending sessions wait for a run with an LLM."""

    mode: str
    message: str
    pending_sessions: int = 0
    sessions_consolidated: int = 0
    facts_created: int = 0
    facts_confirmed: int = 0
    facts_dropped: int = 0
    llm_calls: int = 0
    skipped_unchanged: int = 0
    failed: int = 0
    jobs: tuple[JobOutcome, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class DecayReport:
    """One decay pass: how many facts lost importance and how many fell below the threshold."""

    as_of: datetime
    factor: float
    threshold: float
    facts_decayed: int
    facts_removed: int
