"""Consolidation: unconsolidated sessions → learned facts, one LLM call per scope.

Per scope (tenant, customer, agent, workflow) with pending sessions:

1. read each session's transcript up to its ``last_seq`` through the working-memory API;
2. if a successful job of this scope already saw exactly this input (SHA-256 of prompt, model and
   conversations), skip the LLM and only mark the sessions consolidated — this is how a run that
   died after storing its facts but before marking its sessions is finished without a second call;
3. otherwise one LLM call; an answer that is not valid JSON of the expected shape fails the job,
   stores nothing and leaves the sessions for the next run;
4. in one transaction: drop ERP-field facts (recorded on the job), merge repeats into known facts,
   insert the new ones, and close the job; then mark the sessions consolidated.

The job row (``consolidation_job``) records status, sessions, counts, checksum and error.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Protocol

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from connector.errors import LLMError
from connector.facts.erp_fields import erp_field_reason
from connector.facts.extraction import (
    Extraction,
    Transcript,
    fit_transcripts,
    input_checksum,
    parse_extraction,
    render_conversations,
    system_prompt,
    user_message,
)
from connector.facts.models import ConsolidationReport, DroppedFact, JobOutcome
from connector.facts.normalise import content_key
from connector.facts.scope import FactScope
from connector.facts.store import FactInput, store_fact
from connector.facts.tables import fact_t, job_t

if TYPE_CHECKING:
    from connector.facts.store import FactStore
    from connector.llm import LLMClient

log = logging.getLogger(__name__)

KNOWN_FACTS_IN_PROMPT = 30
ANSWER_MAX_TOKENS = 1500
SKIP_REFERENCE_STATUSES = ("succeeded", "skipped")
ABANDONED_AFTER = timedelta(hours=1)


class PendingSession(Protocol):
    """What consolidation needs of ``working.sessions_to_consolidate``'s items (SessionInfo)."""

    @property
    def session_id(self) -> str: ...
    @property
    def tenant(self) -> str: ...
    @property
    def customer_id(self) -> str: ...
    @property
    def agent_id(self) -> str | None: ...
    @property
    def workflow_id(self) -> str | None: ...
    @property
    def last_seq(self) -> int: ...


class SessionSource(Protocol):
    """The working-memory API consolidation reads sessions through."""

    def sessions_to_consolidate(self, *, limit: int = 100) -> Sequence[PendingSession]: ...
    def transcript(self, session_id: str, *, upto_seq: int | None = None) -> str: ...
    def mark_consolidated(self, session_id: str, upto_seq: int) -> None: ...


@dataclass(frozen=True, slots=True)
class _Batch:
    scope: FactScope
    sessions: tuple[PendingSession, ...]
    transcripts: tuple[Transcript, ...]


def _group(sessions: Sequence[PendingSession]) -> dict[FactScope, list[PendingSession]]:
    groups: dict[FactScope, list[PendingSession]] = {}
    for session in sessions:
        scope = FactScope.of(session.tenant, session.customer_id, session.agent_id, session.workflow_id)
        groups.setdefault(scope, []).append(session)
    ordered = sorted(
        groups, key=lambda s: (s.tenant, s.customer_id, s.agent_id or "", s.workflow_id or "", s.key)
    )
    return {scope: sorted(groups[scope], key=lambda s: s.session_id) for scope in ordered}


def consolidate(store: FactStore, *, max_sessions: int = 500) -> ConsolidationReport:
    source: SessionSource = store.sessions
    pending = source.sessions_to_consolidate(limit=max_sessions)
    llm = store.llm
    if llm is None:
        return ConsolidationReport(
            mode="non-llm",
            message=(
                f"no LLM configured: consolidation learned nothing; {len(pending)} session(s) stay "
                "unconsolidated until an LLM endpoint is configured (llm.base_url / llm.api_key)"
            ),
            pending_sessions=len(pending),
        )
    _close_abandoned(store)
    outcomes = []
    llm_calls = 0
    for scope, sessions in _group(pending).items():
        batch = _batch(source, scope, sessions)
        outcome, called = _run_job(store, llm, source, batch)
        outcomes.append(outcome)
        llm_calls += called
    return _report(len(pending), llm_calls, outcomes)


def _batch(source: SessionSource, scope: FactScope, sessions: list[PendingSession]) -> _Batch:
    transcripts = [
        Transcript(s.session_id, source.transcript(s.session_id, upto_seq=s.last_seq)) for s in sessions
    ]
    fitted = fit_transcripts(transcripts)
    return _Batch(scope, tuple(sessions[: len(fitted)]), tuple(fitted))


def _run_job(
    store: FactStore, llm: LLMClient, source: SessionSource, batch: _Batch
) -> tuple[JobOutcome, int]:
    """One scope's job; returns its outcome and the number of LLM calls made (0 or 1)."""
    scope = batch.scope
    system = system_prompt()
    conversations = render_conversations(batch.transcripts)
    checksum = input_checksum(system, llm.model, conversations)
    job_id, unchanged, known = _open_job(store, llm.model, batch, checksum)
    outcome = JobOutcome(
        job_id=job_id,
        tenant=scope.tenant,
        customer_id=scope.customer_id,
        agent_id=scope.agent_id,
        workflow_id=scope.workflow_id,
        status="skipped" if unchanged else "running",
        sessions=tuple(s.session_id for s in batch.sessions),
        checksum=checksum,
    )
    if unchanged:
        _mark(source, batch)
        return outcome, 0
    try:
        answer = llm.complete(
            system, user_message(conversations, known), json_mode=True, max_tokens=ANSWER_MAX_TOKENS
        )
        extraction = parse_extraction(answer.text)
    except LLMError as exc:
        _fail(store, job_id, str(exc))
        log.warning("consolidation job %s for %s/%s failed: %s", job_id, scope.tenant, scope.customer_id, exc)
        return replace(outcome, status="failed", error=str(exc)), 1
    try:
        created, confirmed, dropped = _store(store, job_id, batch, extraction)
    except IntegrityError:
        error = "a concurrent run stored the same fact first; nothing was stored, the sessions stay pending"
        _fail(store, job_id, error)
        return replace(outcome, status="failed", error=error), 1
    except Exception as exc:
        _fail(store, job_id, f"storing facts failed: {type(exc).__name__}")
        raise
    _mark(source, batch)
    done = replace(
        outcome, status="succeeded", facts_created=created, facts_confirmed=confirmed, dropped=dropped
    )
    return done, 1


def _open_job(store: FactStore, model: str, batch: _Batch, checksum: str) -> tuple[int, bool, list[str]]:
    """Record the job; (job id, whether a successful job already saw this input, known facts)."""
    scope = batch.scope
    now = store.clock.now()
    with store.engine.begin() as conn:
        unchanged = (
            conn.execute(
                sa.select(job_t.c.id)
                .where(
                    job_t.c.scope_key == scope.key,
                    job_t.c.checksum == checksum,
                    job_t.c.status.in_(SKIP_REFERENCE_STATUSES),
                )
                .limit(1)
            ).first()
            is not None
        )
        job_id = conn.execute(
            job_t.insert()
            .values(
                scope_key=scope.key,
                tenant=scope.tenant,
                customer_id=scope.customer_id,
                agent_id=scope.agent_id,
                workflow_id=scope.workflow_id,
                status="skipped" if unchanged else "running",
                checksum=checksum,
                sessions=[{"session_id": s.session_id, "upto_seq": s.last_seq} for s in batch.sessions],
                sessions_processed=len(batch.sessions) if unchanged else 0,
                facts_created=0,
                facts_confirmed=0,
                facts_dropped=0,
                dropped=[],
                model=model,
                started_at=now,
                finished_at=now if unchanged else None,
            )
            .returning(job_t.c.id)
        ).scalar_one()
        known = [] if unchanged else _known_facts(conn, scope)
    return int(job_id), unchanged, known


def _known_facts(conn: sa.Connection, scope: FactScope) -> list[str]:
    rows = conn.execute(
        sa.select(fact_t.c.content)
        .where(fact_t.c.scope_key == scope.key)
        .order_by(fact_t.c.importance.desc(), fact_t.c.id)
        .limit(KNOWN_FACTS_IN_PROMPT)
    )
    return [row.content for row in rows]


def _store(
    store: FactStore, job_id: int, batch: _Batch, extraction: Extraction
) -> tuple[int, int, tuple[DroppedFact, ...]]:
    """Apply the ERP-field rule, merge repeats, insert new facts and close the job: one transaction."""
    dropped: list[DroppedFact] = []
    kept: dict[str, FactInput] = {}
    for item in extraction.facts:
        reason = erp_field_reason(item.content, item.category, item.erp_field)
        if reason is not None:
            dropped.append(DroppedFact(item.content, reason))
            continue
        key = content_key(item.content)
        if key not in kept or kept[key].importance < item.importance:
            kept[key] = FactInput(item.content, item.importance, item.category)
    sources = [f"session:{s.session_id}" for s in batch.sessions]
    now = store.clock.now()
    created = confirmed = 0
    with store.engine.begin() as conn:
        for fact in kept.values():
            _, is_new = store_fact(conn, batch.scope, fact, sources, now)
            created += is_new
            confirmed += not is_new
        conn.execute(
            job_t.update()
            .where(job_t.c.id == job_id)
            .values(
                status="succeeded",
                sessions_processed=len(batch.sessions),
                facts_created=created,
                facts_confirmed=confirmed,
                facts_dropped=len(dropped),
                dropped=[{"content": d.content, "reason": d.reason} for d in dropped],
                finished_at=now,
            )
        )
    return created, confirmed, tuple(dropped)


def _close_abandoned(store: FactStore) -> None:
    """Jobs still "running" long after they started belong to a run that died; say so on them."""
    now = store.clock.now()
    with store.engine.begin() as conn:
        conn.execute(
            job_t.update()
            .where(job_t.c.status == "running", job_t.c.started_at < now - ABANDONED_AFTER)
            .values(status="failed", error="abandoned: the run stopped before finishing", finished_at=now)
        )


def _fail(store: FactStore, job_id: int, error: str) -> None:
    with store.engine.begin() as conn:
        conn.execute(
            job_t.update()
            .where(job_t.c.id == job_id)
            .values(status="failed", error=error, finished_at=store.clock.now())
        )


def _mark(source: SessionSource, batch: _Batch) -> None:
    """Mark the sessions consolidated. A failure here is recovered by the checksum skip next run."""
    for session in batch.sessions:
        try:
            source.mark_consolidated(session.session_id, session.last_seq)
        except Exception:
            log.exception("could not mark session %s consolidated; the next run will", session.session_id)


def _report(pending: int, llm_calls: int, outcomes: list[JobOutcome]) -> ConsolidationReport:
    done = [o for o in outcomes if o.status in SKIP_REFERENCE_STATUSES]
    failed = [o for o in outcomes if o.status == "failed"]
    skipped = [o for o in outcomes if o.status == "skipped"]
    created = sum(o.facts_created for o in outcomes)
    message = (
        f"{len(outcomes)} scope(s): {len(done) - len(skipped)} consolidated, {len(skipped)} unchanged "
        f"(LLM skipped), {len(failed)} failed; {created} fact(s) learned"
    )
    return ConsolidationReport(
        mode="llm",
        message=message,
        pending_sessions=pending,
        sessions_consolidated=sum(len(o.sessions) for o in done),
        facts_created=created,
        facts_confirmed=sum(o.facts_confirmed for o in outcomes),
        facts_dropped=sum(len(o.dropped) for o in outcomes),
        llm_calls=llm_calls,
        skipped_unchanged=len(skipped),
        failed=len(failed),
        jobs=tuple(outcomes),
    )
