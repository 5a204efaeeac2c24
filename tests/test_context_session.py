"""A long session in the context: pinned values survive folds exactly; the summary says its mode."""

from __future__ import annotations

import httpx
import respx
from context_fixtures import NOW, seed_erp, with_stub_episodic
from pydantic import SecretStr
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.llm import LLMClient
from connector.memory import Memory
from connector.settings import LLMSettings, Settings, WorkingMemorySettings

BASE = "http://llm.test/v1"


def completion(text: str) -> httpx.Response:
    message = {"role": "assistant", "content": text}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    body = {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]}
    return httpx.Response(200, json=body)


def long_session(memory: Memory, turns: int) -> None:
    invoice = {"ReferenceNbr": "INV-004821", "Amount": "18250.40", "DueDate": "2026-02-04"}
    memory.record_turn("s-1", "ABARTENDE", "tool", "", tool_name="get_invoice", tool_result=invoice)
    for i in range(turns):
        memory.record_turn(
            "s-1", "ABARTENDE", "user" if i % 2 == 0 else "assistant", f"message {i} " + "x " * 30
        )


@respx.mock
def test_invoice_total_survives_ten_llm_folds_into_the_context(
    sqlite_engine: Engine, settings: Settings
) -> None:
    respx.post(f"{BASE}/chat/completions").mock(return_value=completion("They discussed an invoice dispute."))
    llm = LLMClient(LLMSettings(base_url=BASE, api_key=SecretStr("k"), model="m", max_retries=0))
    settings = settings.model_copy(update={"working": WorkingMemorySettings(verbatim_turns=6, fold_batch=3)})
    memory = Memory(settings, clock=FrozenClock(NOW), llm=llm, engine=sqlite_engine)
    seed_erp(memory)
    with_stub_episodic(memory)
    long_session(memory, 36)
    state = memory.working.state("s-1")
    assert (state.folds, state.summary_upto_seq) == (10, 30)
    result = memory.build_context("ABARTENDE", "what do I owe?", session_id="s-1", token_budget=600)
    assert "- INV-004821: Amount 18250.40; DueDate 2026-02-04 (tool get_invoice, turn 1)" in result.text
    assert (
        "## Conversation summary (LLM summary; turns 1-30)\n> They discussed an invoice dispute."
        in result.text
    )
    assert result.summary_mode == "llm" and result.token_count <= 600


def test_non_llm_summary_is_labelled_in_the_context(sqlite_engine: Engine, settings: Settings) -> None:
    settings = settings.model_copy(update={"working": WorkingMemorySettings(verbatim_turns=6, fold_batch=3)})
    memory = Memory(settings, clock=FrozenClock(NOW), llm=None, engine=sqlite_engine)
    seed_erp(memory)
    with_stub_episodic(memory)
    long_session(memory, 36)
    result = memory.build_context("ABARTENDE", "what do I owe?", session_id="s-1")
    assert "## Conversation summary (non-LLM mode (deterministic); turns 1-30)" in result.text
    assert "18250.40" in result.section("summary").items[0].text  # the deterministic summary kept it too
    assert result.summary_mode == "non-llm"
