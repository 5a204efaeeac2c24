"""The LangGraph memory nodes on their own: what they read from the state and what they record."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="the langgraph extra is not installed")

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from connector.errors import ScopeError
from connector.integrations.langgraph import ainject_memory, inject_memory, record_memory


@dataclass
class Context:
    text: str


@dataclass
class RecordingMemory:
    """Records the calls the nodes make; stands in for Memory in these unit tests."""

    turns: list[tuple[tuple[Any, ...], dict[str, Any]]] = field(default_factory=list)
    builds: list[tuple[tuple[Any, ...], dict[str, Any]]] = field(default_factory=list)

    def record_turn(self, *args: Any, **kw: Any) -> None:
        self.turns.append((args, kw))

    def build_context(self, *args: Any, **kw: Any) -> Context:
        self.builds.append((args, kw))
        return Context(f"context for {args[1]!r}")

    async def abuild_context(self, *args: Any, **kw: Any) -> Context:
        return self.build_context(*args, **kw)


def state(**kw: Any) -> dict[str, Any]:
    return {"customer_id": "C1", "session_id": "s-1", **kw}


def test_inject_memory_builds_the_context_for_the_latest_user_message() -> None:
    memory = RecordingMemory()
    messages = [HumanMessage("first", id="1"), AIMessage("answer", id="2"), HumanMessage("second?", id="3")]
    update = inject_memory(memory, token_budget=900)(state(messages=messages, tenant="acme"))  # type: ignore[arg-type]
    assert update == {"memory_context": "context for 'second?'"}
    assert memory.builds == [
        (("C1", "second?"), {"session_id": "s-1", "tenant": "acme", "token_budget": 900})
    ]


def test_the_async_node_uses_abuild_context_and_prefers_an_explicit_query() -> None:
    memory = RecordingMemory()
    node = ainject_memory(memory)  # type: ignore[arg-type]
    update = asyncio.run(node(state(query="open invoices?", messages=[HumanMessage("hello", id="1")])))
    assert update == {"memory_context": "context for 'open invoices?'"}
    assert memory.builds[0][0] == ("C1", "open invoices?")


def test_record_memory_records_each_message_once_with_roles_and_tool_payloads() -> None:
    memory = RecordingMemory()
    node = record_memory(memory)  # type: ignore[arg-type]
    call = {"name": "get_invoice", "args": {"nbr": "INV-1"}, "id": "call-1"}
    messages: list[Any] = [
        SystemMessage("be brief", id="0"),
        HumanMessage("where is INV-1?", id="1"),
        AIMessage("", tool_calls=[call], id="2"),
    ]
    first = node(state(messages=messages, agent_id="billing"))
    messages += [
        ToolMessage('{"balance": "12.50"}', tool_call_id="call-1", name="get_invoice", id="3"),
        AIMessage("INV-1 has 12.50 open", id="4"),
    ]
    second = node(state(messages=messages, agent_id="billing", **first))
    assert second["memory_recorded_ids"] == ["0", "1", "2", "3", "4"]
    recorded = [
        (args[2], args[3], {k: v for k, v in kw.items() if v is not None}) for args, kw in memory.turns
    ]
    assert recorded == [
        ("user", "where is INV-1?", {"agent_id": "billing"}),
        (
            "assistant",
            'calls get_invoice({"nbr": "INV-1"})',
            {"agent_id": "billing", "tool_name": "get_invoice", "tool_args": {"nbr": "INV-1"}},
        ),
        (
            "tool",
            '{"balance": "12.50"}',
            {
                "agent_id": "billing",
                "tool_name": "get_invoice",
                "tool_args": {"nbr": "INV-1"},
                "tool_result": {"balance": "12.50"},
            },
        ),
        ("assistant", "INV-1 has 12.50 open", {"agent_id": "billing"}),
    ]
    assert all(args[:2] == ("s-1", "C1") for args, _ in memory.turns)


def test_plain_dict_messages_without_ids_are_recorded_once() -> None:
    memory = RecordingMemory()
    node = record_memory(memory)  # type: ignore[arg-type]
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
    ]
    update = node(state(messages=messages))
    node(state(messages=messages, **update))
    assert [(args[2], args[3]) for args, _ in memory.turns] == [("user", "hi"), ("assistant", "hello")]


@pytest.mark.parametrize("missing", ["customer_id", "session_id"])
def test_nodes_refuse_a_state_without_customer_or_session(missing: str) -> None:
    incomplete = state(messages=[HumanMessage("hi", id="1")])
    del incomplete[missing]
    with pytest.raises(ScopeError, match=missing):
        record_memory(RecordingMemory())(incomplete)  # type: ignore[arg-type]
    if missing == "customer_id":
        with pytest.raises(ScopeError, match=missing):
            inject_memory(RecordingMemory())(incomplete)  # type: ignore[arg-type]
