"""Running summary: incremental, idempotent folds with a respx-mocked OpenAI endpoint or without an LLM."""

from __future__ import annotations

import json

import httpx
import pytest
import respx
from llm_stub import LLM_BASE, completion
from pydantic import SecretStr
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.errors import LLMError
from connector.llm import LLMClient
from connector.memory import Memory
from connector.settings import LLMSettings, Settings, WorkingMemorySettings

INVOICE = {"ReferenceNbr": "INV-004821", "Amount": "18250.40", "DueDate": "2026-02-04"}


def folded_turns(request: httpx.Request) -> list[int]:
    """The seqs of the turns an LLM request asks to fold."""
    user = json.loads(request.content)["messages"][1]["content"]
    part = user.split("Turns to fold into it:\n", 1)[1]
    return [int(line[1 : line.index("]")]) for line in part.splitlines() if line.startswith("[")]


@pytest.fixture
def small_settings(tmp_path: object) -> Settings:
    """Folds inside record_turn, so each test sees every fold as it happens (the background
    worker that keeps LLM folds off the agent's path is tested in test_llm_off_path.py)."""
    working = WorkingMemorySettings(verbatim_turns=4, fold_batch=2, fold_in_background=False)
    return Settings(data_dir=f"{tmp_path}/data", working=working)


def memory_with_llm(settings: Settings, engine: Engine, max_retries: int = 2) -> Memory:
    conf = LLMSettings(base_url=LLM_BASE, api_key=SecretStr("k"), model="m", max_retries=max_retries)
    llm = LLMClient(conf)
    return Memory(settings, clock=FrozenClock(), llm=llm, engine=engine)


def talk(memory: Memory, turns: int, start: int = 0) -> None:
    for i in range(start, start + turns):
        memory.record_turn("s-1", "C1", "user" if i % 2 == 0 else "assistant", f"message {i}")


@respx.mock
def test_invoice_total_survives_ten_llm_folds_exactly(
    small_settings: Settings, sqlite_engine: Engine
) -> None:
    # The mocked LLM "forgets" every number; the pinned value must not care, and the check after
    # each call puts the invoice and its amount back into the summary.
    route = respx.post(f"{LLM_BASE}/chat/completions").mock(
        return_value=completion("They talked about an invoice.")
    )
    memory = memory_with_llm(small_settings, sqlite_engine)
    memory.record_turn("s-1", "C1", "tool", "", tool_name="get_invoice", tool_result=INVOICE)
    talk(memory, 24)
    state = memory.working.state("s-1")
    assert state.folds == 10 and route.call_count == 10
    assert state.summary_mode == "llm"
    assert state.summary == (
        "They talked about an invoice.\n"
        "Kept from the turns (the summary had left them out): INV-004821: Amount 18250.40"
    )
    pins = {p.name: p.value for p in state.pinned}
    assert pins["INV-004821.Amount"] == "18250.40"
    assert pins["INV-004821.DueDate"] == "2026-02-04"


@respx.mock
def test_each_turn_is_folded_exactly_once(small_settings: Settings, sqlite_engine: Engine) -> None:
    route = respx.post(f"{LLM_BASE}/chat/completions").mock(return_value=completion("s"))
    memory = memory_with_llm(small_settings, sqlite_engine)
    talk(memory, 30)
    seen = [seq for call in route.calls for seq in folded_turns(call.request)]
    assert seen == list(range(1, 27))  # all but the 4 verbatim turns, each once, in order
    assert memory.working.state("s-1").summary_upto_seq == 26
    assert [t.seq for t in memory.working.state("s-1").turns] == [27, 28, 29, 30]


@respx.mock
def test_a_429_is_retried_inside_one_fold(small_settings: Settings, sqlite_engine: Engine) -> None:
    route = respx.post(f"{LLM_BASE}/chat/completions").mock(
        side_effect=[httpx.Response(429, headers={"retry-after-ms": "1"}), completion("folded once")]
    )
    memory = memory_with_llm(small_settings, sqlite_engine)
    talk(memory, 6)
    state = memory.working.state("s-1")
    assert route.call_count == 2
    assert folded_turns(route.calls[0].request) == folded_turns(route.calls[1].request) == [1, 2]
    assert (state.summary, state.folds, state.summary_upto_seq) == ("folded once", 1, 2)


@respx.mock
def test_a_timed_out_fold_changes_nothing_and_the_retry_folds_once(
    small_settings: Settings, sqlite_engine: Engine
) -> None:
    route = respx.post(f"{LLM_BASE}/chat/completions").mock(
        side_effect=[httpx.ReadTimeout("slow"), completion("after timeout")]
    )
    memory = memory_with_llm(small_settings, sqlite_engine, max_retries=0)
    talk(memory, 6)  # the fold at turn 6 times out: the turn is kept, the summary untouched
    state = memory.working.state("s-1")
    assert (state.summary, state.summary_upto_seq, len(state.turns)) == (None, 0, 6)
    with pytest.raises(LLMError, match="timed out"):
        route.side_effect = [httpx.ReadTimeout("slow")]
        memory.working.fold("s-1")
    route.side_effect = None
    route.return_value = completion("after timeout")
    result = memory.working.fold("s-1")
    assert result.applied and (result.from_seq, result.upto_seq) == (1, 2)
    assert memory.working.fold("s-1").applied is False  # nothing left: a repeat is a no-op
    assert [folded_turns(c.request) for c in route.calls] == [[1, 2], [1, 2], [1, 2]]
    assert memory.working.state("s-1").folds == 1


@respx.mock
def test_a_fold_that_loses_the_race_is_discarded(small_settings: Settings, sqlite_engine: Engine) -> None:
    memory = memory_with_llm(small_settings, sqlite_engine)
    other_worker = memory_with_llm(small_settings, sqlite_engine)
    talk(memory, 5)  # below the fold threshold
    calls: list[str] = []

    def llm(request: httpx.Request) -> httpx.Response:
        calls.append("call")
        if len(calls) == 1:  # while worker A waits for its LLM, worker B folds the same turns
            assert other_worker.working.fold("s-1").applied
            return completion("A's stale summary")
        return completion("B's summary")

    respx.post(f"{LLM_BASE}/chat/completions").mock(side_effect=llm)
    result = memory.working.fold("s-1")
    state = memory.working.state("s-1")
    assert result.applied is False
    assert (state.summary, state.folds, state.summary_upto_seq) == ("B's summary", 1, 1)


def test_non_llm_summary_keeps_every_number_id_and_date(
    small_settings: Settings, sqlite_engine: Engine
) -> None:
    memory = Memory(small_settings, clock=FrozenClock(), llm=None, engine=sqlite_engine)
    memory.record_turn("s-1", "C1", "tool", "", tool_name="get_invoice", tool_result=INVOICE)
    long_text = "word " * 80 + "the customer promised to pay 1,250.75 by March 3, 2026 on PO-778812"
    memory.record_turn("s-1", "C1", "user", long_text)
    talk(memory, 30)
    state = memory.working.state("s-1")
    assert state.summary_mode == "non-llm" and state.folds >= 10
    assert state.summary is not None
    assert state.summary.startswith(f"[non-LLM summary of turns 1-{state.summary_upto_seq}: ")
    lines = state.summary.splitlines()
    assert "INV-004821 (turn 1): Amount 18250.40; DueDate 2026-02-04" in lines
    promise = next(line for line in lines if line.startswith("PO-778812 (turn 2): "))
    assert "1,250.75; March 3, 2026; user: " in promise and "promised to pay 1,250.75" in promise


def test_fold_count_matches_batches(small_settings: Settings, sqlite_engine: Engine) -> None:
    memory = Memory(small_settings, clock=FrozenClock(), llm=None, engine=sqlite_engine)
    talk(memory, 5)
    assert memory.working.state("s-1").folds == 0
    talk(memory, 1, start=5)
    assert memory.working.state("s-1").folds == 1
