"""LangGraph nodes: put the built memory context into the graph state, record the turns afterwards.

Needs the ``langgraph`` extra (``pip install 'erp-memory-connector[langgraph]'``)::

    from langgraph.graph import END, START, StateGraph
    from connector.integrations.langgraph import MemoryState, inject_memory, record_memory

    graph = StateGraph(MemoryState)
    graph.add_node("inject_memory", inject_memory(memory))   # state["memory_context"] = context text
    graph.add_node("agent", call_model)                      # puts memory_context into its prompt
    graph.add_node("record_memory", record_memory(memory))   # new messages -> working memory
    graph.add_edge(START, "inject_memory")
    graph.add_edge("inject_memory", "agent")
    graph.add_edge("agent", "record_memory")
    graph.add_edge("record_memory", END)

The state names the customer and session (``customer_id``, ``session_id``; optionally ``tenant``,
``agent_id``, ``workflow_id``). ``record_memory`` records each message once: it keeps the ids of
the messages it recorded in ``memory_recorded_ids``, so it can run after every agent step.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from connector.errors import ConfigError, ScopeError

try:
    from langchain_core.messages import AnyMessage
    from langgraph.graph.message import add_messages
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ConfigError(
        "connector.integrations.langgraph needs LangGraph: pip install 'erp-memory-connector[langgraph]'"
    ) from exc

if TYPE_CHECKING:
    from connector.memory import Memory

MAX_REMEMBERED_IDS = 500
_ROLES = {"human": "user", "user": "user", "ai": "assistant", "assistant": "assistant", "tool": "tool"}

Node = Callable[[Mapping[str, Any]], dict[str, Any]]
AsyncNode = Callable[[Mapping[str, Any]], Awaitable[dict[str, Any]]]


class MemoryState(TypedDict, total=False):
    """Graph state the memory nodes read and write; extend it with your own keys."""

    messages: Annotated[list[AnyMessage], add_messages]
    customer_id: str
    session_id: str
    query: str
    tenant: str | None
    agent_id: str | None
    workflow_id: str | None
    memory_context: str
    memory_recorded_ids: list[str]


def inject_memory(memory: Memory, *, token_budget: int | None = None) -> Node:
    """A node that builds the context into ``state["memory_context"]``.

    The query is ``state["query"]`` when set, else the latest user message.
    """

    def node(state: Mapping[str, Any]) -> dict[str, Any]:
        customer_id, query, options = _context_request(state, token_budget)
        return {"memory_context": memory.build_context(customer_id, query, **options).text}

    return node


def ainject_memory(memory: Memory, *, token_budget: int | None = None) -> AsyncNode:
    """The async form of :func:`inject_memory`, for graphs run with ``ainvoke``/``astream``."""

    async def node(state: Mapping[str, Any]) -> dict[str, Any]:
        customer_id, query, options = _context_request(state, token_budget)
        return {"memory_context": (await memory.abuild_context(customer_id, query, **options)).text}

    return node


def _context_request(state: Mapping[str, Any], token_budget: int | None) -> tuple[str, str, dict[str, Any]]:
    customer_id = _required(state, "customer_id")
    query = state.get("query") or _last_user_text(state.get("messages") or ())
    options = {
        "session_id": state.get("session_id"),
        "tenant": state.get("tenant"),
        "token_budget": token_budget,
    }
    return customer_id, query, options


def record_memory(memory: Memory) -> Node:
    """A node that appends the messages not yet recorded to working memory, as turns of the session."""

    def node(state: Mapping[str, Any]) -> dict[str, Any]:
        customer_id = _required(state, "customer_id")
        session_id = _required(state, "session_id")
        messages: Sequence[Any] = state.get("messages") or ()
        recorded = list(state.get("memory_recorded_ids") or ())
        seen = set(recorded)
        tool_calls = _tool_calls_by_id(messages)
        for index, message in enumerate(messages):
            key = _message_key(index, message)
            if key in seen:
                continue
            role = _ROLES.get(_kind(message))
            if role is not None:
                memory.record_turn(
                    session_id,
                    customer_id,
                    role,
                    _turn_content(message),
                    tenant=state.get("tenant"),
                    agent_id=state.get("agent_id"),
                    workflow_id=state.get("workflow_id"),
                    **_tool_fields(message, role, tool_calls),
                )
            recorded.append(key)
            seen.add(key)
        return {"memory_recorded_ids": recorded[-MAX_REMEMBERED_IDS:]}

    return node


def _required(state: Mapping[str, Any], key: str) -> str:
    value = state.get(key)
    if value is None:
        raise ScopeError(f"graph state has no {key!r}: the memory nodes need the customer and session")
    return str(value)


def _field(message: Any, name: str, default: Any = None) -> Any:
    if isinstance(message, Mapping):
        return message.get(name, default)
    return getattr(message, name, default)


def _kind(message: Any) -> str:
    return str(_field(message, "type") or _field(message, "role") or "")


def _text(content: Any) -> str:
    """Message content as text; LangChain content blocks contribute their text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p if isinstance(p, str) else str(p.get("text", "")) for p in content if isinstance(p, str | dict)
        ]
        return "\n".join(part for part in parts if part)
    return "" if content is None else str(content)


def _last_user_text(messages: Sequence[Any]) -> str:
    for message in reversed(messages):
        if _ROLES.get(_kind(message)) == "user":
            return _text(_field(message, "content"))
    return ""


def _message_key(index: int, message: Any) -> str:
    """The message id, or for id-less messages a key from position, kind and content."""
    message_id = _field(message, "id")
    if message_id:
        return str(message_id)
    digest = hashlib.sha256(f"{_kind(message)}\x00{_text(_field(message, 'content'))}".encode()).hexdigest()
    return f"{index}:{digest[:16]}"


def _tool_calls_by_id(messages: Sequence[Any]) -> dict[str, Mapping[str, Any]]:
    calls: dict[str, Mapping[str, Any]] = {}
    for message in messages:
        for call in _field(message, "tool_calls") or ():
            if call.get("id"):
                calls[str(call["id"])] = call
    return calls


def _turn_content(message: Any) -> str:
    text = _text(_field(message, "content"))
    calls = _field(message, "tool_calls") or ()
    if text or not calls:
        return text
    return "; ".join(
        f"calls {call.get('name')}({json.dumps(call.get('args'), sort_keys=True)})" for call in calls
    )


def _tool_fields(message: Any, role: str, tool_calls: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """tool_name / tool_args / tool_result for record_turn: a tool result carries the call's arguments."""
    if role == "assistant":
        calls: Sequence[Mapping[str, Any]] = _field(message, "tool_calls") or ()
        if len(calls) == 1:
            return {"tool_name": calls[0].get("name"), "tool_args": calls[0].get("args")}
        return {}
    if role != "tool":
        return {}
    call = tool_calls.get(str(_field(message, "tool_call_id") or ""), {})
    raw = _text(_field(message, "content"))
    try:
        result: Any = json.loads(raw)
    except ValueError:
        result = raw
    return {
        "tool_name": _field(message, "name") or call.get("name"),
        "tool_args": call.get("args"),
        "tool_result": result,
    }
