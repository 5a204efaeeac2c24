"""Consolidation against the real working memory (SQLite + PostgreSQL), LLM mocked with respx."""

from __future__ import annotations

import json

import httpx
import pytest
import respx
from llm_stub import LLM_BASE, completion
from pydantic import SecretStr
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.llm import LLMClient
from connector.memory import Memory
from connector.settings import LLMSettings, Settings


def answer(*contents: str) -> httpx.Response:
    facts = [{"content": c, "importance": 0.7, "category": "preference"} for c in contents]
    return completion(json.dumps({"facts": facts}))


@pytest.fixture
def memory(settings: Settings, engine: Engine) -> Memory:
    llm = LLMClient(LLMSettings(base_url=LLM_BASE, api_key=SecretStr("sk-test"), model="m", max_retries=0))
    return Memory(settings, clock=FrozenClock(), llm=llm, engine=engine)


def test_sessions_are_consolidated_once_and_new_turns_are_seen(
    memory: Memory, llm_route: respx.Route
) -> None:
    llm_route.mock(
        side_effect=[answer("Prefers troubleshooting steps by e-mail"), answer("Calls before 10 am")]
    )
    memory.record_turn("s-1", "C1", "user", "Please send troubleshooting steps by e-mail, not by phone.")
    memory.record_turn("s-1", "C1", "assistant", "Noted, I will e-mail them.")
    first = memory.facts.consolidate()
    assert (first.llm_calls, first.facts_created, first.sessions_consolidated) == (1, 1, 1)
    user = json.loads(llm_route.calls.last.request.content)["messages"][1]["content"]
    assert "Please send troubleshooting steps by e-mail" in user
    [fact] = memory.facts.top("C1")
    assert (fact.content, fact.source) == ("Prefers troubleshooting steps by e-mail", "session:s-1")

    nothing_new = memory.facts.consolidate()
    assert (nothing_new.pending_sessions, nothing_new.llm_calls, llm_route.call_count) == (0, 0, 1)

    memory.record_turn("s-1", "C1", "user", "Also, call me before 10 am.")
    again = memory.facts.consolidate()
    assert (again.llm_calls, again.facts_created) == (1, 1)
    assert [f.content for f in memory.facts.top("C1")] == [
        "Prefers troubleshooting steps by e-mail",
        "Calls before 10 am",
    ]


def test_facts_land_in_the_sessions_agent_and_workflow_scope(memory: Memory, llm_route: respx.Route) -> None:
    llm_route.mock(return_value=answer("Wants dispute updates weekly"))
    memory.record_turn(
        "s-9", "C1", "user", "Update me weekly on the dispute", agent_id="billing", workflow_id="dispute"
    )
    memory.facts.consolidate()
    assert memory.facts.top("C1") == []
    assert [f.content for f in memory.facts.top("C1", agent_id="billing", workflow_id="dispute")] == [
        "Wants dispute updates weekly"
    ]


def test_failed_job_leaves_the_session_for_the_next_run(memory: Memory, llm_route: respx.Route) -> None:
    llm_route.mock(side_effect=[httpx.Response(503), answer("Prefers e-mail")])
    memory.record_turn("s-1", "C1", "user", "e-mail me please")
    assert memory.facts.consolidate().failed == 1
    assert memory.working.sessions_to_consolidate()[0].session_id == "s-1"
    assert memory.facts.consolidate().facts_created == 1
    assert memory.working.sessions_to_consolidate() == []
