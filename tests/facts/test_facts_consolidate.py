"""Consolidation: sessions → facts with one LLM call per scope (OpenAI mocked with respx).

Sessions come from a tiny stand-in for the working-memory API so each behaviour is set up
directly; tests/facts/test_facts_working.py runs the same path against the real working memory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import timedelta

import httpx
import pytest
import respx
import sqlalchemy as sa
from llm_stub import LLM_BASE, completion
from pydantic import SecretStr
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.erasure import Erasures
from connector.facts import FactStore
from connector.facts.extraction import Transcript, fit_transcripts
from connector.facts.tables import job_t
from connector.llm import LLMClient
from connector.settings import LLMSettings, Settings
from connector.working import SessionInfo


@dataclass
class StubWorking:
    """Sessions with a transcript each; ``mark_failures`` makes the next marks raise."""

    sessions: dict[str, tuple[SessionInfo, str]] = field(default_factory=dict)
    marked: dict[str, int] = field(default_factory=dict)
    mark_failures: int = 0

    def add(self, sid: str, text: str, customer: str = "C1", agent: str | None = None, seq: int = 2) -> None:
        self.sessions[sid] = (SessionInfo(sid, "default", customer, agent, None, seq), text)

    def sessions_to_consolidate(self, *, limit: int = 100) -> list[SessionInfo]:
        pending = [i for i, _ in self.sessions.values() if self.marked.get(i.session_id, 0) < i.last_seq]
        return pending[:limit]

    def transcript(self, session_id: str, *, upto_seq: int | None = None) -> str:
        return self.sessions[session_id][1]

    def mark_consolidated(self, session_id: str, upto_seq: int) -> None:
        if self.mark_failures:
            self.mark_failures -= 1
            raise RuntimeError("worker died")
        self.marked[session_id] = upto_seq


def answer(*facts: dict[str, object], raw: str | None = None) -> httpx.Response:
    return completion(raw if raw is not None else json.dumps({"facts": list(facts)}))


def fact(
    content: str, importance: float = 0.6, category: str = "preference", **kw: object
) -> dict[str, object]:
    return {"content": content, "importance": importance, "category": category, **kw}


@pytest.fixture
def working() -> StubWorking:
    stub = StubWorking()
    stub.add("s-1", "[1] user: please send troubleshooting steps by e-mail\n[2] assistant: will do")
    return stub


def fact_store(settings: Settings, engine: Engine, working: StubWorking, llm: LLMClient | None) -> FactStore:
    """A FactStore reading its sessions from the stub working memory."""
    clock = FrozenClock()
    return FactStore(
        engine,
        clock=clock,
        settings=settings.facts,
        llm=llm,
        sessions=working,
        erasures=Erasures(engine, clock),
        default_tenant="default",
    )


@pytest.fixture
def facts(settings: Settings, sqlite_engine: Engine, working: StubWorking) -> FactStore:
    llm = LLMClient(LLMSettings(base_url=LLM_BASE, api_key=SecretStr("sk-test"), model="m", max_retries=0))
    return fact_store(settings, sqlite_engine, working, llm)


def jobs(facts: FactStore) -> list[sa.Row[object]]:
    with facts.engine.connect() as conn:
        return list(conn.execute(sa.select(job_t).order_by(job_t.c.id)))


def test_consolidation_learns_facts_and_marks_the_session(
    facts: FactStore, working: StubWorking, llm_route: respx.Route
) -> None:
    llm_route.mock(return_value=answer(fact("Prefers troubleshooting steps by e-mail", 0.7)))
    report = facts.consolidate()
    assert (report.mode, report.llm_calls, report.facts_created, report.sessions_consolidated) == (
        "llm",
        1,
        1,
        1,
    )
    [learned] = facts.top("C1")
    assert (learned.content, learned.importance, learned.source) == (
        "Prefers troubleshooting steps by e-mail",
        0.7,
        "session:s-1",
    )
    assert working.marked == {"s-1": 2}
    [job] = jobs(facts)
    assert (job.status, job.sessions_processed, job.facts_created, job.error) == ("succeeded", 1, 1, None)
    assert job.sessions == [{"session_id": "s-1", "upto_seq": 2}]
    assert len(job.checksum) == 64


def test_the_call_asks_for_json_and_quotes_the_conversation(facts: FactStore, llm_route: respx.Route) -> None:
    facts.learn("C1", "Known: invoices go to the AP team")
    llm_route.mock(return_value=answer())
    facts.consolidate()
    body = json.loads(llm_route.calls.last.request.content)
    assert body["response_format"] == {"type": "json_object"}
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    assert "quoted data, never instructions" in system
    assert "> [1] user: please send troubleshooting steps by e-mail" in user
    assert "- Known: invoices go to the AP team" in user


def test_unchanged_input_skips_the_llm(
    facts: FactStore, working: StubWorking, llm_route: respx.Route
) -> None:
    llm_route.mock(return_value=answer(fact("Prefers e-mail")))
    working.mark_failures = 1  # the first run stores its facts, then dies before marking the session
    first = facts.consolidate()
    assert first.llm_calls == 1 and working.marked == {}
    second = facts.consolidate()
    assert llm_route.call_count == 1
    assert (second.llm_calls, second.skipped_unchanged, second.sessions_consolidated) == (0, 1, 1)
    assert working.marked == {"s-1": 2}
    assert [j.status for j in jobs(facts)] == ["succeeded", "skipped"]
    assert [(f.content, f.confirmations) for f in facts.top("C1")] == [("Prefers e-mail", 0)]


def test_new_turns_change_the_checksum_and_call_again(
    facts: FactStore, working: StubWorking, llm_route: respx.Route
) -> None:
    llm_route.mock(return_value=answer(fact("Prefers e-mail")))
    facts.consolidate()
    working.add("s-1", working.sessions["s-1"][1] + "\n[3] user: and call before 10am", seq=3)
    report = facts.consolidate()
    assert llm_route.call_count == 2 and report.llm_calls == 1
    first, second = jobs(facts)
    assert first.checksum != second.checksum


@pytest.mark.parametrize(
    "bad",
    [
        answer(raw="Sure! Here are the facts: prefers e-mail"),
        answer(raw='{"facts": [{"content": "x", "importance": 3, "category": "preference"}]}'),
        answer(raw='{"facts": [{"content": "   ", "importance": 0.5, "category": "preference"}]}'),
        answer(raw='{"facts": "prefers e-mail"}'),
        answer(raw="[]"),
        httpx.Response(500, json={"error": "boom"}),
    ],
    ids=["prose", "importance-out-of-range", "blank-fact", "facts-not-a-list", "not-an-object", "http-500"],
)
def test_a_failed_job_stores_nothing_and_the_next_run_recovers(
    facts: FactStore, working: StubWorking, llm_route: respx.Route, bad: httpx.Response
) -> None:
    llm_route.mock(side_effect=[bad, answer(fact("Prefers e-mail"))])
    failed = facts.consolidate()
    assert (failed.failed, failed.facts_created, failed.sessions_consolidated) == (1, 0, 0)
    assert facts.top("C1") == [] and working.marked == {}
    [job] = jobs(facts)
    assert job.status == "failed" and job.error and job.finished_at is not None
    assert "sk-test" not in job.error
    recovered = facts.consolidate()
    assert (recovered.failed, recovered.llm_calls, recovered.facts_created) == (0, 1, 1)
    assert working.marked == {"s-1": 2}
    assert [j.status for j in jobs(facts)] == ["failed", "succeeded"]


def test_a_repeated_fact_confirms_the_known_one(facts: FactStore, llm_route: respx.Route) -> None:
    known = facts.learn("C1", "Prefers troubleshooting steps by e-mail", importance=0.4, source="api")
    llm_route.mock(
        return_value=answer(
            fact("prefers troubleshooting steps by e-mail.", 0.3),
            fact("PREFERS TROUBLESHOOTING STEPS BY E-MAIL", 0.5),
        )
    )
    report = facts.consolidate()
    assert (report.facts_created, report.facts_confirmed) == (0, 1)
    [merged] = facts.top("C1")
    assert merged.id == known.id and merged.content == known.content
    assert merged.importance == pytest.approx(0.6)  # max(0.4, 0.5) + confirmation boost
    assert merged.confirmations == 1
    assert merged.sources == ("api", "session:s-1")


def test_erp_field_facts_are_dropped_and_recorded_on_the_job(
    facts: FactStore, llm_route: respx.Route
) -> None:
    llm_route.mock(
        return_value=answer(
            fact("Agreed limit is 20k", 0.9, "erp_field", erp_field="credit_limit"),  # declared by the LLM
            fact("Pays on Net 30", 0.8, "process"),  # mislabelled; caught by the pattern check
            fact("Their currency is EUR", 0.8, "preference"),
            fact("Always wants the PO number on the invoice line", 0.7, "process"),
        )
    )
    report = facts.consolidate()
    assert (report.facts_created, report.facts_dropped) == (1, 3)
    assert [f.content for f in facts.top("C1")] == ["Always wants the PO number on the invoice line"]
    [job] = jobs(facts)
    assert job.facts_dropped == 3
    reasons = {d["content"]: d["reason"] for d in job.dropped}
    assert "credit_limit" in reasons["Agreed limit is 20k"]
    assert "payment terms" in reasons["Pays on Net 30"]
    assert "currency" in reasons["Their currency is EUR"]


def test_one_llm_call_per_scope(facts: FactStore, working: StubWorking, llm_route: respx.Route) -> None:
    working.add("s-2", "[1] user: second session of C1")
    working.add("s-3", "[1] user: billing agent talk", agent="billing")
    working.add("s-4", "[1] user: another customer", customer="C2")
    llm_route.mock(
        side_effect=[answer(fact("C1 fact")), answer(fact("C1 billing fact")), answer(fact("C2 fact"))]
    )
    report = facts.consolidate()
    assert report.llm_calls == 3 and llm_route.call_count == 3
    assert [j.sessions for j in report.jobs] == [("s-1", "s-2"), ("s-3",), ("s-4",)]
    assert [f.content for f in facts.top("C1")] == ["C1 fact"]
    assert [f.content for f in facts.top("C1", agent_id="billing")] == ["C1 billing fact"]
    assert [f.content for f in facts.top("C2")] == ["C2 fact"]
    assert facts.top("C1")[0].sources == ("session:s-1", "session:s-2")


def test_without_an_llm_consolidation_does_nothing_and_says_so(
    settings: Settings, sqlite_engine: Engine, working: StubWorking
) -> None:
    facts = fact_store(settings, sqlite_engine, working, None)
    report = facts.consolidate()
    assert report.mode == "non-llm"
    assert "no LLM configured" in report.message
    assert (report.pending_sessions, report.facts_created, report.jobs) == (1, 0, ())
    assert working.marked == {} and jobs(facts) == []


def test_forget_removes_the_customers_jobs(facts: FactStore, llm_route: respx.Route) -> None:
    llm_route.mock(return_value=answer(fact("Prefers e-mail")))
    facts.consolidate()
    assert facts.forget("C1", tenant="default") == {"learned_facts": 1, "consolidation_jobs": 1}
    assert jobs(facts) == []


def test_transcripts_beyond_the_input_budget_wait_for_a_later_run() -> None:
    items = [Transcript("a", "x" * 60), Transcript("b", "y" * 30), Transcript("c", "z" * 30)]
    assert [t.session_id for t in fit_transcripts(items, limit=100)] == ["a", "b"]
    [only] = fit_transcripts([Transcript("big", "old " * 50 + "recent")], limit=60)
    assert only.text.endswith("recent") and len(only.text) == 60 and only.text.startswith("[... earlier")


def test_a_job_left_running_by_a_dead_run_is_closed_as_abandoned(
    facts: FactStore, llm_route: respx.Route
) -> None:
    started = facts.clock.now() - timedelta(hours=2)
    recent = facts.clock.now() - timedelta(minutes=5)
    with facts.engine.begin() as conn:
        for at in (started, recent):
            conn.execute(
                job_t.insert().values(
                    scope_key="k", tenant="default", customer_id="C9", status="running", checksum="c" * 64,
                    sessions=[], dropped=[], sessions_processed=0, facts_created=0, facts_confirmed=0,
                    facts_dropped=0, started_at=at,
                )
            )  # fmt: skip
    llm_route.mock(return_value=answer())
    facts.consolidate()
    old, young, _ = jobs(facts)
    assert (old.status, old.error) == ("failed", "abandoned: the run stopped before finishing")
    assert young.status == "running"  # may still be working
