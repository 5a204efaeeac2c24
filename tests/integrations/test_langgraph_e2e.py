"""End to end on a tiny LangGraph: inject_memory → agent (OpenAI) → record_memory.

OpenAI is mocked at the HTTP layer with respx: the same endpoint answers the agent's chat calls
and the consolidation call. Turn 1 starts with no learned facts; consolidation learns them from
the recorded turns; turn 2's prompt contains them; decay then lowers their importance.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest
import respx
from llm_stub import LLM_BASE, completion

pytest.importorskip("langgraph", reason="the langgraph extra is not installed")

import openai
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from pydantic import SecretStr
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.erp.records import PartyRecord
from connector.integrations.langgraph import MemoryState, inject_memory, record_memory
from connector.llm import LLMClient
from connector.memory import Memory
from connector.semantic.upsert import upsert_records
from connector.settings import LLMSettings, Settings

LEARNED = "Prefers troubleshooting steps by e-mail"


class FakeOpenAI:
    """Answers consolidation calls with facts, agent calls with a canned reply; keeps the agent prompts."""

    def __init__(self) -> None:
        self.agent_prompts: list[str] = []
        self.consolidation_calls = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        messages = json.loads(request.content)["messages"]
        if "You extract durable facts" in messages[0]["content"]:
            self.consolidation_calls += 1
            facts = [
                {"content": LEARNED, "importance": 0.8, "category": "communication"},
                {"content": "Credit limit is 5,000", "importance": 0.9, "category": "erp_field"},
            ]
            return completion(json.dumps({"facts": facts}))
        self.agent_prompts.append(messages[0]["content"])
        return completion("Understood, I will send the steps by e-mail.")


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    with respx.mock(assert_all_called=True) as mock:
        mock.post(f"{LLM_BASE}/chat/completions").mock(side_effect=fake)
        yield fake


def build_graph(memory: Memory) -> Any:
    client = openai.OpenAI(base_url=LLM_BASE, api_key="sk-agent", max_retries=0)

    def agent(state: MemoryState) -> dict[str, Any]:
        history = [
            {"role": "user" if m.type == "human" else "assistant", "content": str(m.content)}
            for m in state["messages"]
        ]
        reply = client.chat.completions.create(
            model="m",
            messages=[
                {"role": "system", "content": "Use this memory:\n" + state["memory_context"]},
                *history,
            ],  # type: ignore[list-item]
        )
        return {"messages": [AIMessage(reply.choices[0].message.content or "")]}

    builder = StateGraph(MemoryState)
    builder.add_node("inject_memory", inject_memory(memory))
    builder.add_node("agent", agent)
    builder.add_node("record_memory", record_memory(memory))
    builder.add_edge(START, "inject_memory")
    builder.add_edge("inject_memory", "agent")
    builder.add_edge("agent", "record_memory")
    builder.add_edge("record_memory", END)
    return builder.compile()


def test_turn_two_receives_what_consolidation_learned_from_turn_one(
    settings: Settings, engine: Engine, fake_openai: FakeOpenAI
) -> None:
    clock = FrozenClock()
    llm = LLMClient(LLMSettings(base_url=LLM_BASE, api_key=SecretStr("sk-test"), model="m", max_retries=0))
    memory = Memory(settings, clock=clock, llm=llm, engine=engine)
    customer = PartyRecord(
        tenant="default", kind="customer", external_id="C1", name="Printer Co", credit_limit=Decimal("5000")
    )
    with memory.engine.begin() as conn:
        upsert_records(conn, [customer], clock.now())
    graph = build_graph(memory)

    first = graph.invoke(
        {
            "customer_id": "C1",
            "session_id": "s-1",
            "messages": [
                HumanMessage("My printer jams again. Please e-mail me the steps, I never answer calls.")
            ],
        }
    )
    assert memory.facts.top("C1") == []
    assert LEARNED not in fake_openai.agent_prompts[0]
    assert len(first["memory_recorded_ids"]) == 2
    assert "e-mail me the steps" in memory.working.transcript("s-1")

    report = memory.facts.consolidate()
    assert (report.llm_calls, report.facts_created, report.facts_dropped) == (1, 1, 1)
    [fact] = memory.facts.top("C1")
    assert (fact.content, fact.importance, fact.source) == (LEARNED, 0.8, "session:s-1")

    clock.advance(timedelta(minutes=30))
    second = graph.invoke(
        {"customer_id": "C1", "session_id": "s-2", "messages": [HumanMessage("It jams on page two now.")]}
    )
    assert LEARNED in second["memory_context"]
    assert LEARNED in fake_openai.agent_prompts[1]
    assert "Credit limit is 5,000" not in fake_openai.agent_prompts[1]

    clock.advance(timedelta(days=3))
    assert memory.facts.decay().facts_decayed == 1
    [decayed] = memory.facts.top("C1")
    assert decayed.importance == pytest.approx(0.8 * 0.95**3)
    assert fake_openai.consolidation_calls == 1
