"""``build_context``: the ERP's facts, past cases, learned facts and the conversation in one budgeted text.

Deterministic: every list has a total order, the date comes from ``as_of`` or the injected
clock, and nothing random or wall-clock enters the text, so equal inputs give byte-identical
output (and a stable prefix for prompt caching). Stateless over the stores.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.engine import Engine

from connector.clock import Clock
from connector.context import candidates as cand
from connector.context.budget import Allocation, Chosen, Costs, KeptCosts, allocate
from connector.context.changes import change_items, read_changes
from connector.context.documents import named_documents
from connector.context.headings import summary_heading, turns_heading
from connector.context.models import SECTION_ORDER, ContextItem, ContextResult, ContextSection
from connector.context.ports import CaseRecall, ConversationRecall, FactReader, SessionView
from connector.context.query import ContextInputError, clean_query
from connector.context.references import MAX_REFERENCES, parse_references
from connector.context.render import render
from connector.context.sources import stream_freshness
from connector.db.reads import read_connection
from connector.embeddings.shared_query import SharedQuery
from connector.errors import ConnectorError, ScopeError, UnknownCustomerError
from connector.scope import Scope, require_id, tenant_or_default
from connector.semantic.as_of import changes_after, documents_as_of, first_sync, party_as_of, totals_of
from connector.semantic.documents import KindTotal, OpenDocument, document_totals, ranked_documents
from connector.semantic.parties import close_matches, load_party
from connector.settings import MIN_TOKEN_BUDGET, ContextSettings, HistorySettings
from connector.telemetry import traced_context
from connector.threads import LazyPool
from connector.tokens import token_counter
from connector.working.models import SessionState

log = logging.getLogger(__name__)

MIN_BUDGET = MIN_TOKEN_BUDGET  # the same floor as the context.token_budget setting
PARTY_KINDS = ("customer", "vendor")
SECTION_TITLES = {
    "today": "Today",
    "erp_facts": "ERP facts",
    "open_documents": "Open documents (named in the query first, then overdue first)",
    "erp_changes": "Recent ERP changes",
    "pinned": "Pinned values",
    "learned_facts": "Learned facts",
    "past_cases": "Similar past cases",
    "earlier_conversations": "From earlier conversations",
    "summary": "Conversation summary",
    "recent_turns": "Recent turns",
}
_MAX_REFITS = 4


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


class ContextBuilder:
    """Builds the agent's prompt context for one customer, query and (optional) session."""

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock,
        settings: ContextSettings,
        expected_sync_lag: timedelta,
        default_tenant: str,
        erp_kinds: Mapping[str, str],
        cases: CaseRecall,
        facts: FactReader,
        sessions: SessionView,
        conversations: ConversationRecall | None = None,
        conversation_hits: int = 2,
        history: HistorySettings | None = None,
    ) -> None:
        """``expected_sync_lag``: ERP data older than this is flagged as stale in the context.
        ``erp_kinds``: the ERP (``acumatica``, ``sap``) of each configured tenant, by tenant name.
        ``conversations``: turns of earlier sessions (none: the section stays out), at most
        ``conversation_hits`` of them. ``history``: the ERP change history's settings (none: the
        "Recent ERP changes" section stays out)."""
        self.engine = engine
        self.clock = clock
        self.settings = settings
        self.expected_sync_lag = expected_sync_lag
        self.default_tenant = default_tenant
        self.erp_kinds = dict(erp_kinds)
        self.cases = cases
        self.facts = facts
        self.sessions = sessions
        self.conversations = conversations
        self.conversation_hits = conversation_hits
        self.history = history
        # Threads for the recalls. The case recall runs on the building thread after its reads on
        # SQLite, whose statements are work in this process: on a thread of its own, its Python
        # only waited for the GIL the builder held, one more wake-up on a busy machine. On a server
        # database its statements are round trips, and a thread of its own overlaps them with the
        # builder's (bench_context, alternated: on SQLite p95 7% lower run here; on PostgreSQL
        # 7-24% higher).
        self._recall_pool = LazyPool("context-recall")
        self._cases_here = engine.dialect.name == "sqlite"
        # Candidates' text and cost by tokenizer, kept from build to build (keyed by content).
        self._kept_costs: dict[str, KeptCosts] = {}

    def close(self) -> None:
        """Stop the turn recall's thread (started again if the builder is used after) and drop the
        kept candidate costs (they hold the text of recent contexts)."""
        self._recall_pool.shutdown()
        self._kept_costs.clear()

    def suggestions(
        self, customer_id: str, *, tenant: str | None = None, party_kind: str = "customer"
    ) -> list[str]:
        """Ids of the tenant's parties that resemble ``customer_id``: for an operator's "did you
        mean" (the CLI), never for an agent (they are other customers' ids). Scans the tenant's ids."""
        scope = Scope.of(tenant_or_default(tenant, self.default_tenant), customer_id)
        with self.engine.connect() as conn:
            return close_matches(conn, scope.tenant, party_kind, scope.customer_id)

    @traced_context
    def build(
        self,
        customer_id: str,
        query: str,
        *,
        session_id: str | None = None,
        tenant: str | None = None,
        token_budget: int | None = None,
        as_of: datetime | None = None,
        party_kind: str = "customer",
    ) -> ContextResult:
        """The context for ``customer_id`` answering ``query``; raises UnknownCustomerError when
        the party is not in semantic memory. The error names no other customer (an agent must not
        learn other ids): an operator's tool asks :meth:`suggestions` for close matches.

        ``party_kind="vendor"`` builds a vendor's context: ERP facts, open bills and the session;
        past cases and learned facts are customer memories and are left out.
        """
        started = time.perf_counter()
        timings: dict[str, float] = {}
        scope = Scope.of(tenant_or_default(tenant, self.default_tenant), customer_id)
        sid = require_id(session_id, "session_id") if session_id is not None else None
        cfg = self.settings
        budget = cfg.token_budget if token_budget is None else token_budget
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < MIN_BUDGET:
            raise ContextInputError(
                f"token_budget must be an integer of at least {MIN_BUDGET}, got {budget!r}"
            )
        if party_kind not in PARTY_KINDS:
            raise ContextInputError(f"party_kind must be one of {', '.join(PARTY_KINDS)}, got {party_kind!r}")
        customer_memories = party_kind == "customer"
        if as_of is not None and (as_of.tzinfo is None or as_of.utcoffset() is None):
            raise ContextInputError("as_of must be a timezone-aware datetime")
        today = (as_of or self.clock.now()).astimezone(UTC)
        query_clean = clean_query(query, cfg.max_query_chars)
        warnings = list(query_clean.warnings)
        refs = parse_references(query_clean.text)
        if refs.capped:
            warnings.append(
                f"the query names more than {MAX_REFERENCES} documents, amounts or dates; "
                f"only the first {MAX_REFERENCES} were looked up"
            )
        day = today.date()

        # The query's embedding (the build's slowest step, and one that releases the GIL) starts
        # first and runs while this thread reads the relational facts. The turn recall runs beside
        # them on a thread of its own: its three statements wait on the database, which the reads
        # here overlap. Where the case recall runs depends on the database (see __init__).
        shared = SharedQuery()
        if customer_memories and cfg.max_cases and query_clean.text:
            self._start_query(query_clean.text, shared)
        cases = self.cases if customer_memories else None
        pool = self._recall_pool.get
        recall = (
            None
            if self._cases_here
            else pool().submit(self._past_cases, cases, scope, query_clean.text, as_of, shared)
        )
        want_turns = customer_memories and self.conversations is not None and self.conversation_hits
        earlier = (
            pool().submit(self._earlier_turns, scope, query_clean.text, sid, as_of, shared)
            if want_turns
            else None
        )
        step = time.perf_counter()
        with read_connection(self.engine) as conn:
            facts = load_party(conn, scope.tenant, party_kind, scope.customer_id)
            if facts is None:
                raise UnknownCustomerError(scope.customer_id)  # one indexed read; no scan of ids
            owner = (conn, scope.tenant, party_kind, scope.customer_id)
            named = named_documents(*owner, refs)
            streams = stream_freshness(conn, scope.tenant)
            totals = document_totals(*owner, day)
            ranked = ranked_documents(*owner, day, cfg.max_open_documents)
            rebuilt = as_of is not None and self._rebuilds(as_of, facts.party.synced_at, streams)
            if rebuilt:
                assert as_of is not None
                facts, named, ranked, totals = self._as_of(conn, owner, as_of, facts, named, warnings)
            timings["erp"] = _ms(step)
            step = time.perf_counter()
            changes = None
            if self.history is not None:
                changes = read_changes(
                    conn, self.history, tenant=scope.tenant, party_kind=party_kind,
                    customer_id=scope.customer_id, query=query_clean.text,
                    documents=[d.number for d in named], session_id=sid, until=today,
                )  # fmt: skip
            timings["erp_changes"] = _ms(step)
            step = time.perf_counter()
            state = self.sessions.view(conn, sid) if sid is not None else None
            timings["working"] = _ms(step)
        if state is not None and (state.info.tenant, state.info.customer_id) != (
            scope.tenant,
            scope.customer_id,
        ):
            raise ScopeError(f"session {sid!r} belongs to another customer or tenant")
        if sid is not None and state is None:
            warnings.append(f"session {sid} has no turns yet")
        if state is not None and state.omitted_turns:
            warnings.append(
                f"{state.omitted_turns} older turns are neither summarised nor shown (folding lags)"
            )

        step = time.perf_counter()
        learned = self._learned_facts(scope, state, warnings) if customer_memories else []
        timings["learned_facts"] = _ms(step)

        # Every section but the recalled ones is built and costed while the query is embedded and
        # the turn recall runs.
        step = time.perf_counter()
        erp_as_of = today if rebuilt else max([facts.party.synced_at, *(ts for _, ts in streams)])
        stale = self._staleness(today, erp_as_of, streams)
        erp = self._erp_kind(scope.tenant)
        summary, older_lines = cand.summary_items(state, budget * 12) if state else ([], 0)
        candidates: dict[str, list[cand.Candidate]] = {
            "today": [cand.today_item(today)],
            "erp_facts": cand.erp_items(facts, scope.tenant, party_kind, totals, erp),
            "open_documents": cand.document_items(scope.tenant, named, ranked, day, erp, totals),
            "erp_changes": change_items(changes) if changes is not None else [],
            "pinned": cand.pinned_items(sid or "", state.pinned, query_clean.text) if state else [],
            "learned_facts": cand.fact_items(learned),
            "past_cases": [],
            "earlier_conversations": [],
            "summary": summary,
            "recent_turns": cand.turn_items(state) if state else [],
        }
        counter = token_counter(cfg.tokenizer)
        kept = self._kept_costs.get(counter.name)
        if kept is None:
            kept = self._kept_costs.setdefault(counter.name, KeptCosts(counter))
        costs = Costs(counter, max_chars=max(4000, budget * 8), kept=kept)
        costs.warm(c for items in candidates.values() for c in items)
        timings["candidates"] = _ms(step)

        hits, recall_warnings, timings["past_cases"] = (
            recall.result()
            if recall is not None
            else self._past_cases(cases, scope, query_clean.text, as_of, shared)
        )
        warnings.extend(recall_warnings)
        turn_hits: list[Any] = []
        if earlier is not None:
            turn_hits, earlier_warnings, timings["earlier_conversations"] = earlier.result()
            warnings.extend(earlier_warnings)
        warnings.extend(stale)

        step = time.perf_counter()
        candidates["past_cases"] = cand.case_items(hits)
        candidates["earlier_conversations"] = cand.conversation_items(turn_hits)
        documents = {f"document:{scope.tenant}/{d.doc_type}/{d.external_id}": d for d in (*named, *ranked)}
        result = self._fit(
            scope, party_kind, sid, today, erp_as_of, state, candidates, warnings, budget, older_lines,
            totals, documents, costs,
        )  # fmt: skip
        timings["budget_render"] = _ms(step)
        timings["total"] = _ms(started)
        return ContextResult(**result, timings_ms=timings)

    async def abuild(
        self,
        customer_id: str,
        query: str,
        *,
        session_id: str | None = None,
        tenant: str | None = None,
        token_budget: int | None = None,
        as_of: datetime | None = None,
        party_kind: str = "customer",
    ) -> ContextResult:
        """:meth:`build` for async agents: the blocking store reads run in a worker thread."""
        return await asyncio.to_thread(
            self.build,
            customer_id,
            query,
            session_id=session_id,
            tenant=tenant,
            token_budget=token_budget,
            as_of=as_of,
            party_kind=party_kind,
        )

    def _rebuilds(self, as_of: datetime, synced: datetime, streams: Sequence[tuple[str, datetime]]) -> bool:
        """Whether the facts are rebuilt as of a past date: history is on and ``as_of`` is before
        the last sync (at or after it, the stored facts are what was known then)."""
        history = self.history
        return history is not None and history.enabled and as_of < max([synced, *(ts for _, ts in streams)])

    def _as_of(
        self,
        conn: Any,
        owner: tuple[Any, str, str, str],
        as_of: datetime,
        facts: Any,
        named: list[OpenDocument],
        warnings: list[str],
    ) -> tuple[Any, list[OpenDocument], list[OpenDocument], list[KindTotal]]:
        """The party's facts, named and ranked documents and totals as they stood at ``as_of``."""
        tenant = owner[1]
        undo = changes_after(*owner, as_of)
        documents = documents_as_of(*owner, as_of, undo)
        day = as_of.astimezone(UTC).date()
        then = {d.external_id: d for d in documents}
        named = [then.get(d.external_id, d) for d in named if d.doc_date is None or d.doc_date <= day]
        warnings.append(
            f"ERP facts and open documents as of {as_of.astimezone(UTC):%Y-%m-%d %H:%M} UTC, rebuilt from "
            "the change history (tracked fields only; other fields show their current value)"
        )
        first = first_sync(conn, tenant)
        if first is not None and as_of < first:
            warnings.append(
                f"{as_of.astimezone(UTC):%Y-%m-%d} is before the first sync ({first:%Y-%m-%d}): "
                "the facts shown are those the first sync saw"
            )
        party = dataclasses.replace(facts, party=party_as_of(facts.party, undo))
        return party, named, documents[: self.settings.max_open_documents], totals_of(documents, day)

    def _erp_kind(self, tenant: str) -> str | None:
        """``acumatica`` or ``sap`` for a configured tenant; None for one the settings do not name."""
        return self.erp_kinds.get(tenant)

    # Sources that may be unavailable: a warning, never a failed context ----------------------------
    def _top_facts(self, scope: Scope, agent_id: str | None, workflow_id: str | None) -> Sequence[Any]:
        limit = self.settings.max_learned_facts
        if limit == 0:
            return []
        return self.facts.top(
            scope.customer_id, tenant=scope.tenant, limit=limit, agent_id=agent_id, workflow_id=workflow_id
        )

    def _learned_facts(self, scope: Scope, state: SessionState | None, warnings: list[str]) -> list[Any]:
        """The customer's top facts (those of no agent or workflow) merged with those of the
        session's agent and workflow."""
        limit = self.settings.max_learned_facts
        found: dict[int, Any] = {}
        try:
            scoped = [self._top_facts(scope, None, None)]
            if limit and state is not None and (state.info.agent_id or state.info.workflow_id):
                scoped.append(self._top_facts(scope, state.info.agent_id, state.info.workflow_id))
            for facts in scoped:
                for fact in facts:
                    found.setdefault(fact.id, fact)
        except ConnectorError as exc:
            log.warning("learned facts unavailable for %s/%s: %s", scope.tenant, scope.customer_id, exc)
            warnings.append(f"learned facts unavailable: {type(exc).__name__}")
            return []
        return sorted(found.values(), key=lambda f: (-f.importance, f.id))[:limit]

    def _start_query(self, query: str, shared: SharedQuery) -> None:
        """Start the query's embedding; if that fails here (the model cannot load), the recall
        fails the same way and says so in the context's warnings."""
        try:
            self.cases.start_query(query, shared)
        except (ConnectorError, OSError) as exc:
            log.debug("query embedding not started early: %s", type(exc).__name__)

    def _past_cases(
        self,
        episodic: CaseRecall | None,
        scope: Scope,
        query: str,
        as_of: datetime | None,
        shared: SharedQuery | None = None,
    ) -> tuple[list[Any], list[str], float]:
        """(hits, warnings, milliseconds)."""
        started = time.perf_counter()
        k = self.settings.max_cases
        if episodic is None or k == 0 or not query:
            return [], [], 0.0
        try:
            hits = episodic.recall(
                scope.customer_id, query, k=k, tenant=scope.tenant, as_of=as_of, shared_query=shared
            )
        except (ConnectorError, OSError) as exc:
            log.warning("past cases unavailable for %s/%s: %s", scope.tenant, scope.customer_id, exc)
            return [], [f"similar past cases unavailable: {type(exc).__name__}"], _ms(started)
        return list(hits), [], _ms(started)

    def _earlier_turns(
        self,
        scope: Scope,
        query: str,
        sid: str | None,
        as_of: datetime | None,
        shared: SharedQuery | None = None,
    ) -> tuple[list[Any], list[str], float]:
        """(hits of earlier sessions, warnings, milliseconds). The current session is left out: its
        turns are the summary and recent turns."""
        started = time.perf_counter()
        conversations = self.conversations
        if conversations is None or not query:
            return [], [], 0.0
        try:
            hits = conversations.recall(
                scope.customer_id, query, k=self.conversation_hits, tenant=scope.tenant,
                exclude_session=sid, as_of=as_of, shared_query=shared,
            )  # fmt: skip
        except (ConnectorError, OSError) as exc:
            log.warning(
                "earlier conversations unavailable for %s/%s: %s", scope.tenant, scope.customer_id, exc
            )
            return [], [f"earlier conversations unavailable: {type(exc).__name__}"], _ms(started)
        return list(hits), [], _ms(started)

    def _staleness(
        self, today: datetime, erp_as_of: datetime, streams: Sequence[tuple[str, datetime]]
    ) -> list[str]:
        lag = self.expected_sync_lag
        out: list[str] = []
        behind = today - erp_as_of
        if behind > lag:
            out.append(
                f"ERP data is {cand.age(behind.total_seconds())} old "
                f"(last synced {erp_as_of:%Y-%m-%d %H:%M} UTC; expected within "
                f"{lag.total_seconds() / 60:.0f} min): check the sync before relying on balances"
            )
        else:
            late = [name for name, ts in streams if today - ts > lag]
            if late:
                out.append(f"streams not synced within the expected lag: {', '.join(late)}")
        return out

    # Budget and rendering ----------------------------------------------------------------------------
    def _fit(
        self,
        scope: Scope,
        party_kind: str,
        sid: str | None,
        today: datetime,
        erp_as_of: datetime,
        state: SessionState | None,
        candidates: dict[str, list[cand.Candidate]],
        warnings: list[str],
        budget: int,
        older_summary_lines: int,
        totals: Sequence[KindTotal],
        documents: dict[str, OpenDocument],
        costs: Costs,
    ) -> dict[str, Any]:
        cfg = self.settings
        counter = costs.counter
        shares = dict(cfg.shares)
        as_of_text = f"{erp_as_of:%Y-%m-%d %H:%M} UTC"

        summary_lines = len(candidates["summary"]) + older_summary_lines

        def text_of(allocation: Allocation | None, notes: Sequence[str]) -> str:
            def chosen_of(section: str) -> list[Chosen]:
                return allocation.chosen[section] if allocation is not None else []

            bodies = {s: "" for s in SECTION_ORDER}
            if allocation is not None:
                for s in SECTION_ORDER:
                    chosen = sorted(
                        allocation.chosen[s], key=lambda ch: (ch.candidate.fixed is False, ch.candidate.order)
                    )
                    bodies[s] = "\n".join(ch.text for ch in chosen)
            return render(
                party_kind=party_kind,
                customer_id=scope.customer_id, tenant=scope.tenant, erp_as_of=as_of_text,
                summary_label=summary_heading(state, chosen_of("summary"), summary_lines),
                turns_label=turns_heading(state, chosen_of("recent_turns")), warnings=notes, bodies=bodies,
            )  # fmt: skip

        def with_not_shown(allocation: Allocation) -> Allocation:
            """Put the line that counts and sums the open documents not shown in its placeholder's
            place (the placeholder, at its longest, reserved the room as a fixed item)."""
            chosen = allocation.chosen["open_documents"]
            chosen[:] = [ch for ch in chosen if ch.candidate.source != cand.NOT_SHOWN]
            shown = [documents[ch.candidate.source] for ch in chosen if ch.candidate.source in documents]
            line = cand.omitted_item(totals, shown)
            if line is not None:
                chosen.append(Chosen(line, *costs.whole(line)))
            return allocation

        fixed_cost = sum(costs.whole(c)[1] for items in candidates.values() for c in items if c.fixed)
        overhead = counter.count(text_of(None, warnings))
        if overhead + fixed_cost > budget:
            warnings.append(
                f"over budget: the ERP header and pinned values alone need {overhead + fixed_cost} tokens "
                f"of the {budget} allowed; nothing else was included"
            )
            overhead = counter.count(text_of(None, warnings))
        effective = budget
        for _ in range(_MAX_REFITS):
            allocation = with_not_shown(
                allocate(candidates, SECTION_ORDER, effective, shares, overhead, costs)
            )
            text = text_of(allocation, warnings)
            total = counter.count(text)
            if total <= budget:
                break
            effective -= total - budget + 4
        open_total = sum(t.count for t in totals)
        open_shown = sum(
            1
            for ch in allocation.chosen["open_documents"]
            if ch.candidate.source in documents and documents[ch.candidate.source].is_open
        )
        dropped = dict(allocation.dropped, open_documents=open_total - open_shown)
        dropped["summary"] = dropped.get("summary", 0) + older_summary_lines
        sections = []
        for s in SECTION_ORDER:
            chosen = sorted(
                allocation.chosen[s], key=lambda ch: (ch.candidate.fixed is False, ch.candidate.order)
            )
            items = tuple(
                ContextItem(
                    ch.candidate.source,
                    ch.text,
                    ch.tokens,
                    ch.candidate.score,
                    ch.truncated,
                    ch.candidate.lexical_score,
                    ch.candidate.fused_score,
                    ch.candidate.matched_terms,
                )
                for ch in chosen
            )
            sections.append(
                ContextSection(
                    name=s,
                    title=SECTION_TITLES[s],
                    items=items,
                    tokens=sum(i.tokens for i in items),
                    dropped=dropped.get(s, 0),
                    cap=allocation.caps.get(s, 0),
                    borrowed=allocation.borrowed.get(s, 0),
                )
            )
        return {
            "customer_id": scope.customer_id,
            "party_kind": party_kind,
            "tenant": scope.tenant,
            "session_id": sid,
            "today": today,
            "text": text,
            "sections": tuple(sections),
            "warnings": tuple(warnings),
            "token_count": total,
            "token_budget": budget,
            "tokenizer": counter.name,
            "over_budget": total > budget,
            "erp_as_of": erp_as_of,
            "summary_mode": state.summary_mode if state is not None and state.summary else None,
        }
