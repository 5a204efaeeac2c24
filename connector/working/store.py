"""Working memory: turns, tool calls, pinned values and the running summary, in the relational store.

Appends serialise on the session row: the first statement of the append transaction is a write
(insert-or-ignore of the session, then ``last_seq = last_seq + 1 RETURNING``), which takes the
row lock on PostgreSQL and the write lock on SQLite before anything is read, so two processes
appending to one session get consecutive ``seq`` values and every turn is kept. The unique
(session_id, seq) constraint is the backstop; a conflict or a busy database is retried.

Folding is idempotent across processes: a fold reads the summary and the seq it covers, calls
the LLM (or the deterministic summariser) outside any transaction, then applies the result with a
compare-and-set on ``summary_upto_seq``. A retried or concurrent fold that lost the race changes
nothing, so no turn is ever summarised twice.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import fields, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, OperationalError

from connector.audit.pending import write_announced
from connector.background import BackgroundJobs
from connector.clock import Clock
from connector.db.chunks import chunks
from connector.db.diagnosis import is_disk_full
from connector.erasure import Erasures
from connector.errors import LLMError, ScopeError, StoreError
from connector.failures import store_error
from connector.llm import LLMClient
from connector.resources import prompt_text
from connector.scope import Scope, require_id, tenant_or_default
from connector.settings import WorkingMemorySettings
from connector.storable import REPLACEMENT, storable_text
from connector.working.models import (
    ROLES,
    FoldResult,
    InvalidTurnError,
    NewTurn,
    PinnedValue,
    SessionInfo,
    SessionState,
    Turn,
    UnknownSessionError,
)
from connector.working.pins import extract_values, pin_kind
from connector.working.summary import extractive_fold, restore_facts
from connector.working.tables import WorkPin, WorkSession, WorkTurn
from connector.working.text import json_safe, transcript

log = logging.getLogger(__name__)

session_t: sa.Table = WorkSession.__table__  # type: ignore[attr-defined]
turn_t: sa.Table = WorkTurn.__table__  # type: ignore[attr-defined]
pin_t: sa.Table = WorkPin.__table__  # type: ignore[attr-defined]

_APPEND_ATTEMPTS = 8
_STATE_TURN_CAP = 200  # unsummarised turns returned by state() when folding lags far behind


def _insert(conn: Connection, table: sa.Table) -> Any:
    return postgresql.insert(table) if conn.dialect.name == "postgresql" else sqlite.insert(table)


def _clean_text(value: str) -> str:
    return storable_text(value, nul=REPLACEMENT)


MAX_EXTERNAL_ID = 255
_FUTURE_SLACK = timedelta(minutes=5)  # clocks of the source and of this process disagree a little


def _occurred_at(value: datetime | None, now: datetime) -> datetime:
    """When a turn was said: ``now`` by default; a given date must carry its timezone and not lie
    ahead of ``now`` (a turn dated in the future would outlive retention and lead every recall)."""
    if value is None:
        return now
    if not isinstance(value, datetime):
        raise InvalidTurnError(f"occurred_at must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidTurnError("occurred_at must carry a timezone (e.g. 2025-03-01T09:30:00+00:00)")
    when = value.astimezone(UTC)
    if when > now + _FUTURE_SLACK:
        raise InvalidTurnError(f"occurred_at {when.isoformat()} is in the future (now {now.isoformat()})")
    return when


def _external_id(value: str | None) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_EXTERNAL_ID:
        raise InvalidTurnError(f"external_id must be non-blank text of at most {MAX_EXTERNAL_ID} characters")
    return value


def _external_taken(engine: Engine, sid: str, prepared: Sequence[Any]) -> bool:
    """Whether the append failed because the session already holds one of its external ids."""
    wanted = [p[6] for p in prepared if p[6] is not None]
    with engine.connect() as conn:
        found = conn.execute(
            sa.select(turn_t.c.external_id)
            .where(turn_t.c.session_id == sid, turn_t.c.external_id.in_(wanted))
            .limit(1)
        ).first()
    return found is not None or len(set(wanted)) < len(wanted)


# The columns of the records they make, in their fields' order (the records are built from tuples).
_TURN_FIELDS = tuple(turn_t.c[f.name] for f in fields(Turn))
_PIN_FIELDS = tuple(pin_t.c[f.name] for f in fields(PinnedValue))


def _turn(row: Sequence[Any]) -> Turn:
    """A turn from a row of :data:`_TURN_FIELDS` (read as a tuple: reading every field by name
    cost a fraction of a long session's view more)."""
    return Turn(*row)


def _pin(row: Sequence[Any]) -> PinnedValue:
    """A pinned value from a row of :data:`_PIN_FIELDS`."""
    name, value, kind, source, seq, explicit, updated_at = row
    return PinnedValue(name, value, kind, source, seq, bool(explicit), updated_at)


def _info(row: Any) -> SessionInfo:
    return SessionInfo(
        session_id=row.session_id,
        tenant=row.tenant,
        customer_id=row.customer_id,
        agent_id=row.agent_id,
        workflow_id=row.workflow_id,
        last_seq=row.last_seq,
    )


class TurnListener(Protocol):
    """Told after turns are committed (the past-conversation indexer); must return at once."""

    def turns_recorded(self, session_id: str) -> None: ...


class WorkingMemory:
    """Per-session conversation state shared by every worker through the relational store."""

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock,
        settings: WorkingMemorySettings,
        llm: LLMClient | None,
        erasures: Erasures,
        default_tenant: str,
        background: BackgroundJobs | None = None,
        listener: TurnListener | None = None,
    ) -> None:
        """``background``: where LLM folds run (``settings.fold_in_background``); without it, or
        without an LLM, a due fold runs inside ``record_turn``. ``listener`` is told of every
        committed append (it queues the turns' indexing; it never runs it here)."""
        self.engine = engine
        self.clock = clock
        self.settings = settings
        self.llm = llm
        self.erasures = erasures
        self.default_tenant = default_tenant
        self.background = background
        self.listener = listener

    # Appending --------------------------------------------------------------------------------
    def record_turn(
        self,
        session_id: str,
        customer_id: str,
        role: str,
        content: str,
        *,
        tenant: str | None = None,
        tool_name: str | None = None,
        tool_args: Any = None,
        tool_result: Any = None,
        agent_id: str | None = None,
        workflow_id: str | None = None,
        occurred_at: datetime | None = None,
        external_id: str | None = None,
    ) -> Turn:
        """Append a turn; a tool turn's amounts, dates and document numbers are pinned.

        Creates the session on first use. A session belongs to one (tenant, customer): a turn
        for another customer raises ScopeError and stores nothing. Folds older turns into the
        running summary when enough have accumulated; a failing LLM leaves them for the next fold.
        ``occurred_at``: when it was said (default now; timezone-aware, not in the future);
        retention counts from it. ``external_id``: the caller's id of the message, returned with
        recall hits (unique within the session).
        """
        turn = NewTurn(
            role, content, tool_name=tool_name, tool_args=tool_args, tool_result=tool_result,
            occurred_at=occurred_at, external_id=external_id,
        )  # fmt: skip
        return self.record_turns(
            session_id, customer_id, [turn], tenant=tenant, agent_id=agent_id, workflow_id=workflow_id
        )[0]

    def record_turns(
        self,
        session_id: str,
        customer_id: str,
        turns: Sequence[NewTurn],
        *,
        tenant: str | None = None,
        agent_id: str | None = None,
        workflow_id: str | None = None,
    ) -> list[Turn]:
        """Append several turns in one transaction (imports, replays); same rules as :meth:`record_turn`.

        The turns get consecutive seqs even when other processes append to the session at the
        same time; a fold, if due, runs once afterwards.
        """
        stored, last_seq, summary_upto = self.append(
            session_id, customer_id, turns, tenant=tenant, agent_id=agent_id, workflow_id=workflow_id
        )
        if not stored:
            return stored
        if self.listener is not None:
            self.listener.turns_recorded(stored[0].session_id)
        self._maybe_fold(stored[0].session_id, last_seq, summary_upto)
        return stored

    def append(
        self,
        session_id: str,
        customer_id: str,
        turns: Sequence[NewTurn],
        *,
        tenant: str | None = None,
        agent_id: str | None = None,
        workflow_id: str | None = None,
    ) -> tuple[list[Turn], int, int]:
        """Store the turns in one transaction, telling no listener and folding nothing (an import
        indexes what it wrote itself; its old sessions need no running summary until continued).

        Returns the stored turns, the session's last seq and the seq its summary covers.
        """
        scope = Scope.of(tenant_or_default(tenant, self.default_tenant), customer_id)
        sid = require_id(session_id, "session_id")
        if not turns:
            return [], 0, 0
        self.erasures.require_writable(scope)
        limit = self.settings.max_pins_per_result
        now = self.clock.now()
        prepared = []
        for t in turns:
            if t.role not in ROLES:
                raise InvalidTurnError(f"role must be one of {', '.join(ROLES)}, got {t.role!r}")
            if not isinstance(t.content, str):
                raise InvalidTurnError(f"content must be text, got {type(t.content).__name__}")
            when = _occurred_at(t.occurred_at, now)
            external = _external_id(t.external_id)
            args = json_safe(t.tool_args) if t.tool_args is not None else None
            result = json_safe(t.tool_result) if t.tool_result is not None else None
            values = extract_values(t.tool_name, result, limit=limit) if result is not None else []
            prepared.append((t, _clean_text(t.content), args, result, values, when, external))
        session_row = {
            "session_id": sid,
            "tenant": scope.tenant,
            "customer_id": scope.customer_id,
            "agent_id": agent_id,
            "workflow_id": workflow_id,
            "last_seq": 0,
            "summary_upto_seq": 0,
            "folds": 0,
            "consolidated_upto_seq": 0,
            "created_at": now,
            "updated_at": now,
        }
        for attempt in range(1, _APPEND_ATTEMPTS + 1):
            try:
                with self.engine.begin() as conn:
                    # Writes first: the session row is locked before anything is read.
                    conn.execute(_insert(conn, session_t).values(session_row).on_conflict_do_nothing())
                    row = conn.execute(
                        session_t.update()
                        .where(session_t.c.session_id == sid)
                        .values(last_seq=session_t.c.last_seq + len(prepared), updated_at=now)
                        .returning(
                            session_t.c.last_seq,
                            session_t.c.tenant,
                            session_t.c.customer_id,
                            session_t.c.summary_upto_seq,
                        )
                    ).one()
                    if (row.tenant, row.customer_id) != (scope.tenant, scope.customer_id):
                        raise ScopeError(
                            f"session {sid!r} belongs to another customer or tenant; "
                            "start a new session for this customer"
                        )
                    first = int(row.last_seq) - len(prepared) + 1
                    conn.execute(
                        turn_t.insert(),
                        [
                            {
                                "session_id": sid,
                                "seq": first + i,
                                "role": t.role,
                                "content": content,
                                "tool_name": t.tool_name,
                                "tool_args": args,
                                "tool_result": result,
                                "created_at": when,
                                "external_id": external,
                            }
                            for i, (t, content, args, result, _, when, external) in enumerate(prepared)
                        ],
                    )
                    for i, (t, _, _, _, values, _, _) in enumerate(prepared):
                        source = f"tool {t.tool_name or 'result'}, turn {first + i}"
                        pins = [(v.name, v.value, v.kind) for v in values]
                        self._upsert_pins(conn, sid, pins, source, first + i, False, now)
                    if any(p[4] for p in prepared):
                        self._evict_extracted_pins(conn, sid)
                    write_announced(conn)  # Memory.record_turn's event: commits with the turns
                break
            except IntegrityError as exc:
                if any(p[6] is not None for p in prepared) and _external_taken(self.engine, sid, prepared):
                    raise InvalidTurnError(
                        f"session {sid!r} already has a turn with one of these external ids"
                    ) from None
                if attempt == _APPEND_ATTEMPTS:
                    raise StoreError(
                        f"could not append to session {sid!r} after {attempt} attempts: {type(exc).__name__}"
                    ) from None
                log.debug("append to %s conflicted (attempt %d), retrying", sid, attempt)
            except OperationalError as exc:
                if is_disk_full(exc, str(self.engine.url)):  # no retry frees space: say so at once
                    raise store_error(exc, str(self.engine.url)) from None
                if attempt == _APPEND_ATTEMPTS:
                    raise StoreError(
                        f"could not append to session {sid!r} after {attempt} attempts: {type(exc).__name__}"
                    ) from None
                log.debug("append to %s conflicted (attempt %d), retrying", sid, attempt)
        stored = [
            Turn(sid, first + i, t.role, content, when, t.tool_name, args, result, external)
            for i, (t, content, args, result, _, when, external) in enumerate(prepared)
        ]
        return stored, int(row.last_seq), int(row.summary_upto_seq)

    def fold_if_due(self, session_id: str, last_seq: int, summary_upto: int) -> None:
        """Fold as :meth:`record_turns` does after its append (an import calls it after
        :meth:`append`, so a long imported session shows its early turns summarised)."""
        self._maybe_fold(session_id, last_seq, summary_upto)

    def pin(self, session_id: str, name: str, value: Any, *, source: str | None = None) -> PinnedValue:
        """Pin ``value`` under ``name`` in an existing session; explicit pins win over extracted ones."""
        sid = require_id(session_id, "session_id")
        pin_name = require_id(name, "pin name")
        if isinstance(value, (dict, list)):
            raise InvalidTurnError("a pinned value must be a scalar (text, number, date), not a structure")
        safe = json_safe(value)
        text = _clean_text(str(safe))
        now = self.clock.now()
        with self.engine.begin() as conn:
            # The write comes first, so the session row is locked before anything is read.
            session = conn.execute(
                session_t.update()
                .where(session_t.c.session_id == sid)
                .values(updated_at=now)
                .returning(session_t.c.tenant, session_t.c.customer_id)
            ).first()
            if session is None:
                raise UnknownSessionError(f"session {sid!r} does not exist: record a turn first")
            self._upsert_pins(conn, sid, [(pin_name, text, pin_kind(value))], source, None, True, now)
            write_announced(conn, tenant=session.tenant, customer_id=session.customer_id)  # Memory.pin's
        return PinnedValue(pin_name, text, pin_kind(value), source, None, True, now)

    def _evict_extracted_pins(self, conn: Connection, sid: str) -> None:
        """Keep at most ``max_extracted_pins`` extracted values: those of the latest tool results.

        Pinned values are shown in full in every context, so an unbounded set would crowd out
        everything else in a long session. A value re-extracted later counts as recent again.
        """
        cap = self.settings.max_extracted_pins
        extracted = sa.and_(pin_t.c.session_id == sid, pin_t.c.explicit.is_(False))
        per_turn = conn.execute(
            sa.select(pin_t.c.seq, sa.func.count().label("n"))
            .where(extracted)
            .group_by(pin_t.c.seq)
            .order_by(pin_t.c.seq)
        ).all()
        excess = sum(int(r.n) for r in per_turn) - cap
        if excess <= 0:
            return
        evicted: list[int] = []
        for r in per_turn:  # whole tool results, oldest first, so no document is left half-pinned
            if excess <= 0:
                break
            evicted.append(r.seq)
            excess -= int(r.n)
        conn.execute(pin_t.delete().where(extracted, pin_t.c.seq.in_(evicted)))
        log.debug("session %s: unpinned the values of %d old tool results (cap %d)", sid, len(evicted), cap)

    def _upsert_pins(
        self,
        conn: Connection,
        sid: str,
        values: Sequence[tuple[str, str, str]],
        source: str | None,
        seq: int | None,
        explicit: bool,
        now: Any,
    ) -> None:
        if not values:
            return
        rows = [
            {
                "session_id": sid,
                "name": name,
                "value": value,
                "kind": kind,
                "source": source[:255] if source else None,
                "seq": seq,
                "explicit": explicit,
                "updated_at": now,
            }
            for name, value, kind in values
        ]
        stmt = _insert(conn, pin_t).values(rows)
        update = {c: stmt.excluded[c] for c in ("value", "kind", "source", "seq", "explicit", "updated_at")}
        # A value extracted from a tool result never overwrites one the workflow pinned explicitly.
        where = None if explicit else pin_t.c.explicit.is_(False)
        conn.execute(
            stmt.on_conflict_do_update(index_elements=["session_id", "name"], set_=update, where=where)
        )

    # Folding ----------------------------------------------------------------------------------
    def _maybe_fold(self, sid: str, last_seq: int, summary_upto: int) -> None:
        """Fold when due: an LLM fold on the background worker (the agent never waits on the LLM),
        a deterministic one at once."""
        if not self._fold_due(last_seq - summary_upto):
            return
        if self.llm is not None and self.background is not None and self.settings.fold_in_background:
            self.background.submit(("fold", sid), lambda: self._fold_or_postpone(sid))
        else:
            self._fold_or_postpone(sid)

    def _fold_due(self, unsummarised: int) -> bool:
        return unsummarised >= self.settings.verbatim_turns + self.settings.fold_batch

    def _fold_or_postpone(self, sid: str) -> None:
        try:
            self.fold(sid)
        except LLMError as exc:
            log.warning("fold of session %s postponed: %s", sid, exc)

    def fold(self, session_id: str) -> FoldResult:
        """Fold every turn older than the last ``verbatim_turns`` into the running summary, once.

        One LLM call (or the deterministic summariser in non-LLM mode). Raises LLMError when the
        endpoint fails; nothing changes then and the next fold covers the same turns.
        """
        sid = require_id(session_id, "session_id")
        keep = self.settings.verbatim_turns
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(session_t).where(session_t.c.session_id == sid)).one_or_none()
            if row is None:
                raise UnknownSessionError(f"session {sid!r} does not exist")
            base, target = int(row.summary_upto_seq), int(row.last_seq) - keep
            if target <= base:
                return FoldResult(sid, False, base, base, row.summary_mode)
            turns = [
                _turn(r)
                for r in conn.execute(
                    sa.select(*_TURN_FIELDS)
                    .where(turn_t.c.session_id == sid, turn_t.c.seq > base, turn_t.c.seq <= target)
                    .order_by(turn_t.c.seq)
                )
            ]
        summary, mode = self._summarise(row.summary, row.summary_mode, turns)
        with self.engine.begin() as conn:
            applied = conn.execute(
                session_t.update()
                .where(session_t.c.session_id == sid, session_t.c.summary_upto_seq == base)
                .values(
                    summary=summary,
                    summary_mode=mode,
                    summary_upto_seq=target,
                    folds=session_t.c.folds + 1,
                )
            ).rowcount
        if not applied:
            log.info("fold of session %s (turns %d-%d) lost to a concurrent fold", sid, base + 1, target)
        return FoldResult(sid, bool(applied), base + 1, target, mode)

    def _summarise(
        self, previous: str | None, previous_mode: str | None, turns: list[Turn]
    ) -> tuple[str, str]:
        llm = self.llm
        if llm is None:
            return non_llm_fold(previous, previous_mode, turns), "non-llm"
        user = (
            f"Summary so far:\n{previous or '(none yet)'}\n\n"
            f"Turns to fold into it:\n{transcript(turns)}\n\nWrite the new summary."
        )
        completion = llm.complete(prompt_text("running_summary.md"), user, max_tokens=500)
        return restore_facts(completion.text, previous, turns), "llm"

    # Reading ----------------------------------------------------------------------------------
    def view(self, conn: Connection, session_id: str) -> SessionState | None:
        """The session as a context shows it, read on ``conn``: while a due fold has not landed (its
        LLM call is on the background worker, or failed), the turns it will fold are shown folded
        by the deterministic summariser, labelled non-LLM, instead of crowding out the rest."""
        state = read_state(conn, session_id)
        if state is None or not self._fold_due(len(state.turns)):
            return state
        keep = self.settings.verbatim_turns
        older = list(state.turns[:-keep])
        return replace(
            state,
            summary=non_llm_fold(state.summary, state.summary_mode, older),
            summary_mode="non-llm",
            summary_upto_seq=older[-1].seq,
            turns=state.turns[-keep:],
        )

    def state(self, session_id: str) -> SessionState:
        """Summary, summary mode, unsummarised turns and pinned values of a session."""
        sid = require_id(session_id, "session_id")
        with self.engine.connect() as conn:
            found = read_state(conn, sid)
        if found is None:
            raise UnknownSessionError(f"session {sid!r} does not exist")
        return found

    def sessions_to_consolidate(self, *, limit: int = 100) -> list[SessionInfo]:
        """Sessions with turns that learned-fact consolidation has not seen, least recent first."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(session_t)
                .where(session_t.c.last_seq > session_t.c.consolidated_upto_seq)
                .order_by(session_t.c.updated_at, session_t.c.session_id)
                .limit(limit)
            )
            return [_info(r) for r in rows]

    def transcript(self, session_id: str, *, upto_seq: int | None = None) -> str:
        """Deterministic text of the session's turns (tool payloads included) and pinned values."""
        sid = require_id(session_id, "session_id")
        with self.engine.connect() as conn:
            cond = [turn_t.c.session_id == sid]
            if upto_seq is not None:
                cond.append(turn_t.c.seq <= upto_seq)
            turns = [
                _turn(r) for r in conn.execute(sa.select(*_TURN_FIELDS).where(*cond).order_by(turn_t.c.seq))
            ]
            pins = [
                _pin(r)
                for r in conn.execute(
                    sa.select(*_PIN_FIELDS).where(pin_t.c.session_id == sid).order_by(pin_t.c.name)
                )
            ]
        return transcript(turns, pins)

    def mark_consolidated(self, session_id: str, upto_seq: int) -> None:
        """Record that turns up to ``upto_seq`` were consolidated (never moves backwards)."""
        sid = require_id(session_id, "session_id")
        with self.engine.begin() as conn:
            conn.execute(
                session_t.update()
                .where(session_t.c.session_id == sid, session_t.c.consolidated_upto_seq < upto_seq)
                .values(consolidated_upto_seq=upto_seq)
            )

    # Erasure ----------------------------------------------------------------------------------
    def forget(self, customer_id: str, *, tenant: str) -> dict[str, int]:
        """Delete every session, turn and pinned value of one (tenant, customer); the counts are the
        rows deleted. A write that committed while this ran (it checked the tombstone before it was
        written) is found by the next pass: passes repeat until one finds nothing."""
        scope = Scope.of(tenant, customer_id)
        sessions = turns = pins = 0
        while True:
            with self.engine.begin() as conn:
                ids = [
                    r[0]
                    for r in conn.execute(
                        sa.select(session_t.c.session_id).where(
                            session_t.c.tenant == scope.tenant, session_t.c.customer_id == scope.customer_id
                        )
                    )
                ]
                for chunk in chunks(ids, 500):
                    turns += conn.execute(turn_t.delete().where(turn_t.c.session_id.in_(chunk))).rowcount
                    pins += conn.execute(pin_t.delete().where(pin_t.c.session_id.in_(chunk))).rowcount
                    sessions += conn.execute(
                        session_t.delete().where(session_t.c.session_id.in_(chunk))
                    ).rowcount
            if not ids:
                return {"working_sessions": sessions, "working_turns": turns, "working_pins": pins}


def non_llm_fold(previous: str | None, previous_mode: str | None, turns: Sequence[Turn]) -> str:
    """``previous`` with ``turns`` folded in by the deterministic summariser.

    Deterministic lines are never merged into an LLM summary as if they were one piece: they follow it.
    """
    base = previous if previous_mode == "non-llm" else None
    prefix = f"{previous}\n" if previous and previous_mode != "non-llm" else ""
    return prefix + extractive_fold(base, turns)


_SID: Any = sa.bindparam("sid")
_SESSION = sa.select(session_t).where(session_t.c.session_id == _SID)
_RECENT_TURNS = (
    sa.select(*_TURN_FIELDS)
    .where(turn_t.c.session_id == _SID, turn_t.c.seq > sa.bindparam("upto"))
    .order_by(turn_t.c.seq.desc())
    .limit(_STATE_TURN_CAP)
)
_PINS = (
    sa.select(*_PIN_FIELDS).where(pin_t.c.session_id == _SID).order_by(pin_t.c.explicit.desc(), pin_t.c.name)
)


def read_state(conn: Connection, sid: str) -> SessionState | None:
    """The state of session ``sid`` read on ``conn`` (the context builder shares its connection)."""
    row = conn.execute(_SESSION, {"sid": sid}).one_or_none()
    if row is None:
        return None
    upto = int(row.summary_upto_seq)
    recent = [_turn(r) for r in conn.execute(_RECENT_TURNS, {"sid": sid, "upto": upto})]
    recent.reverse()
    pins = tuple(_pin(r) for r in conn.execute(_PINS, {"sid": sid}))
    return SessionState(
        info=_info(row),
        summary=row.summary,
        summary_mode=row.summary_mode,
        summary_upto_seq=upto,
        folds=int(row.folds),
        turns=tuple(recent),
        pinned=pins,
        omitted_turns=max(0, int(row.last_seq) - upto - len(recent)),
    )
