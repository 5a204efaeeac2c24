"""Importing a conversation history: dated turns into working memory, indexed before the call returns.

Every line is checked first (:mod:`connector.conversations.import_lines`), then each session as a
whole against the store: its id must not belong to another customer (session ids are global, see
below), its customer must be known to semantic memory (unless unknown customers are allowed) and
not erased. With any bad line and ``skip_bad`` off, nothing is written; with ``skip_bad`` on, the
sessions holding a bad line are left out whole and the rest is imported. Either way no session is
ever half-imported.

A session id names one conversation of one customer. The same id under two customers (in the file,
or in the file and the store) is refused with a message naming both lines or the owner's scope
rather than merged or renamed behind the caller's back: prefix the ids (``<customer>/<session>``)
when the source reuses them.

A turn whose ``external_id`` the session already holds is skipped (a re-import adds nothing); a
turn without one is appended each time. Each session is one transaction, folded afterwards into
its running summary as ``record_turns`` folds (so a long imported session continued later shows
its early turns summarised; with an LLM that fold is an LLM call on the background worker). Turns
keep their dates, so retention counts from them: a turn dated before the retention window is stored in
working memory but not indexed (counted as ``archived``). The indexing runs on the caller's thread,
sessions together (one embedding call for several sessions' turns), so recall sees every imported
turn when the import returns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.conversations.import_lines import (
    BadLine,
    ImportTurn,
    InvalidImportError,
    check,
    numbered,
    read_jsonl,
)
from connector.db.chunks import chunks
from connector.erasure import Erasures
from connector.errors import ErasedCustomerError, ScopeError
from connector.scope import Scope, tenant_or_default
from connector.semantic.tables import Party
from connector.working.models import InvalidTurnError, NewTurn
from connector.working.tables import WorkSession, WorkTurn

INDEX_GROUP = 512  # turns written before they are indexed together (one embedding call)
_CHUNK = 500

_session_t: sa.Table = WorkSession.__table__  # type: ignore[attr-defined]
_turn_t: sa.Table = WorkTurn.__table__  # type: ignore[attr-defined]
_party_t: sa.Table = Party.__table__  # type: ignore[attr-defined]

Progress = Callable[[int, int], None]  # (turns handled, turns to handle)


class TurnWriter(Protocol):
    """Working memory's append without side effects (:meth:`WorkingMemory.append`)."""

    def append(
        self, session_id: str, customer_id: str, turns: Sequence[NewTurn], *, tenant: str | None = None
    ) -> tuple[list[Any], int, int]: ...

    def fold_if_due(self, session_id: str, last_seq: int, summary_upto: int) -> None: ...


class TurnIndex(Protocol):
    """The past-conversation index (:class:`ConversationMemory`), or None when it is off."""

    def index_sessions(self, session_ids: Sequence[str], *, cache: bool = True) -> int: ...


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an import did. ``turns``: stored; ``indexed``: recallable now; ``archived``: stored but
    dated before the retention window (kept in working memory, not recallable); ``already_present``:
    skipped because the session holds their external id; ``skipped_sessions`` / ``bad_lines``: left
    out (only with ``skip_bad``)."""

    sessions: int
    turns: int
    indexed: int
    archived: int
    already_present: int
    skipped_sessions: int = 0
    bad_lines: tuple[BadLine, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.bad_lines


@dataclass(slots=True)
class _Session:
    scope: Scope
    turns: list[ImportTurn] = field(default_factory=list)
    bad: list[BadLine] = field(default_factory=list)


class Importer:
    """One import run: checks, then writes and indexes session by session."""

    def __init__(
        self,
        engine: Engine,
        *,
        writer: TurnWriter,
        index: TurnIndex | None,
        erasures: Erasures,
        default_tenant: str,
        now: datetime,
        window_start: datetime,
        allow_unknown_customers: bool,
    ) -> None:
        self.engine = engine
        self.writer = writer
        self.index = index
        self.erasures = erasures
        self.default_tenant = default_tenant
        self.now = now
        self.window_start = window_start
        self.allow_unknown_customers = allow_unknown_customers

    def run(
        self,
        records: Iterable[tuple[int, object]],
        *,
        skip_bad: bool = False,
        progress: Progress | None = None,
    ) -> ImportReport:
        sessions, loose = self._group(records)
        present = self._check_store(sessions)
        bad = [*loose, *(b for s in sessions.values() for b in s.bad)]
        if bad and not skip_bad:
            raise InvalidImportError(sorted(bad, key=lambda b: b.line))
        good = {sid: s for sid, s in sessions.items() if not s.bad}
        total = sum(len(s.turns) for s in good.values())
        done = stored = archived = indexed = skipped = written = grouped = 0
        group: list[str] = []
        for sid, session in good.items():
            held = present.get(sid, set())
            new = [t for t in session.turns if t.external_id is None or t.external_id not in held]
            skipped += len(session.turns) - len(new)
            done += len(session.turns) - len(new)
            if new:
                try:
                    scope = session.scope
                    turns, last_seq, summary_upto = self.writer.append(
                        sid, scope.customer_id, [_new_turn(t) for t in new], tenant=scope.tenant
                    )
                except (ScopeError, InvalidTurnError, ErasedCustomerError) as exc:  # a concurrent writer won
                    if not skip_bad:
                        raise
                    bad.append(BadLine(new[0].line, f"session {sid!r} not imported: {exc}", sid))
                    continue
                self.writer.fold_if_due(sid, last_seq, summary_upto)  # as record_turns would
                written += 1
                stored += len(turns)
                archived += sum(1 for t in new if t.occurred_at < self.window_start)
                group.append(sid)
                grouped += len(new)
                done += len(new)
            if grouped >= INDEX_GROUP:
                indexed += self._index(group)
                group, grouped = [], 0
            if progress is not None:
                progress(done, total)
        indexed += self._index(group)
        bad_sessions = {b.session for b in bad if b.session is not None and b.session in sessions}
        return ImportReport(
            sessions=written, turns=stored, indexed=indexed, archived=archived, already_present=skipped,
            skipped_sessions=len(bad_sessions), bad_lines=tuple(sorted(bad, key=lambda b: b.line)),
        )  # fmt: skip

    def _index(self, group: list[str]) -> int:
        if self.index is None or not group:
            return 0
        return self.index.index_sessions(group, cache=False)  # thousands of vectors no recall asked for

    # Checking ----------------------------------------------------------------------------------
    def _group(self, records: Iterable[tuple[int, object]]) -> tuple[dict[str, _Session], list[BadLine]]:
        """Checked turns by session (in order of first appearance), and bad lines of no session."""
        sessions: dict[str, _Session] = {}
        loose: list[BadLine] = []
        first_line: dict[str, int] = {}
        seen_ids: dict[tuple[str, str], ImportTurn] = {}
        for number, record in records:
            turn = check(number, record, self.now)
            if isinstance(turn, BadLine):
                if turn.session is not None and turn.session in sessions:
                    sessions[turn.session].bad.append(turn)
                elif turn.session is not None:  # its session may appear on later lines: skip them too
                    sessions[turn.session] = _Session(Scope("", ""), bad=[turn])
                else:
                    loose.append(turn)
                continue
            scope = Scope.of(tenant_or_default(turn.tenant, self.default_tenant), turn.customer_id)
            session = sessions.get(turn.session_id)
            if session is None:
                session = sessions[turn.session_id] = _Session(scope)
                first_line[turn.session_id] = number
            elif session.scope.customer_id == "":  # known so far only from a bad line
                session.scope = scope
                first_line.setdefault(turn.session_id, number)
            elif session.scope != scope:
                session.bad.append(
                    BadLine(
                        number,
                        f"session {turn.session_id!r} is under {_who(scope)} here but under "
                        f"{_who(session.scope)} at line {first_line[turn.session_id]}: session ids name one "
                        "customer's conversation (prefix them with the customer to import both)",
                        turn.session_id,
                    )
                )
                continue
            if turn.external_id is not None:
                key = (turn.session_id, turn.external_id)
                earlier = seen_ids.get(key)
                if earlier is not None:
                    if (earlier.role, earlier.content) != (turn.role, turn.content):
                        session.bad.append(
                            BadLine(
                                number,
                                f"external_id {turn.external_id!r} is also line {earlier.line} of session "
                                f"{turn.session_id!r}, with other content",
                                turn.session_id,
                            )
                        )
                    continue  # the same message twice: imported once
                seen_ids[key] = turn
            session.turns.append(turn)
        return sessions, loose

    def _check_store(self, sessions: dict[str, _Session]) -> dict[str, set[str]]:
        """Mark sessions the store refuses (another owner, unknown or erased customer); returns the
        external ids each session already holds."""
        present: dict[str, set[str]] = {}
        ids = [sid for sid, s in sessions.items() if not s.bad]
        with self.engine.connect() as conn:
            for chunk in chunks(ids, _CHUNK):
                owners = conn.execute(
                    sa.select(_session_t.c.session_id, _session_t.c.tenant, _session_t.c.customer_id).where(
                        _session_t.c.session_id.in_(chunk)
                    )
                ).all()
                for sid, tenant, customer in owners:
                    session = sessions[sid]
                    if Scope(tenant, customer) != session.scope:
                        session.bad.append(
                            BadLine(
                                session.turns[0].line,
                                f"session {sid!r} already exists under another customer or tenant; session "
                                "ids name one customer's conversation (prefix them with the customer)",
                                sid,
                            )
                        )
                for sid, external in conn.execute(
                    sa.select(_turn_t.c.session_id, _turn_t.c.external_id).where(
                        _turn_t.c.session_id.in_(chunk), _turn_t.c.external_id.is_not(None)
                    )
                ):
                    present.setdefault(sid, set()).add(external)
            scopes = list(dict.fromkeys(s.scope for s in sessions.values() if not s.bad))
            unknown = set() if self.allow_unknown_customers else self._unknown(conn, scopes)
            erased = set(self.erasures.erased_among(scopes, conn))
        for sid, session in sessions.items():
            if session.bad:
                continue
            line = session.turns[0].line
            if session.scope in erased:
                session.bad.append(BadLine(line, f"customer {session.scope.customer_id!r} was erased", sid))
            elif session.scope in unknown:
                who = _who(session.scope)
                session.bad.append(
                    BadLine(
                        line,
                        f"unknown {who}: not in semantic memory; sync it first, or allow unknown "
                        "customers (--allow-unknown-customers)",
                        sid,
                    )
                )
        return present

    @staticmethod
    def _unknown(conn: sa.Connection, scopes: list[Scope]) -> set[Scope]:
        """The scopes whose customer is not a live party of its tenant (one query per few hundred)."""
        known: set[Scope] = set()
        by_tenant: dict[str, list[str]] = {}
        for scope in scopes:
            by_tenant.setdefault(scope.tenant, []).append(scope.customer_id)
        for tenant, customers in by_tenant.items():
            for chunk in chunks(customers, _CHUNK):
                rows = conn.execute(
                    sa.select(_party_t.c.external_id).where(
                        _party_t.c.tenant == tenant,
                        _party_t.c.kind == "customer",
                        _party_t.c.external_id.in_(chunk),
                        _party_t.c.deleted_at.is_(None),
                    )
                ).scalars()
                known.update(Scope(tenant, c) for c in rows)
        return {s for s in scopes if s not in known}


def records_of(source: str | Path | Iterable[Mapping[str, Any]]) -> Iterable[tuple[int, object]]:
    """Numbered records of a JSON Lines file (a path) or of records handed in."""
    if isinstance(source, (str, Path)):
        return read_jsonl(Path(source))
    return numbered(source)


def _who(scope: Scope) -> str:
    return f"customer {scope.customer_id!r} (tenant {scope.tenant!r})"


def _new_turn(t: ImportTurn) -> NewTurn:
    return NewTurn(
        t.role, t.content, tool_name=t.tool_name, tool_args=t.tool_args, tool_result=t.tool_result,
        occurred_at=t.occurred_at, external_id=t.external_id,
    )  # fmt: skip
