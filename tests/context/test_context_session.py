"""A long session in the context: pinned values survive folds exactly; the summary says its mode."""

from __future__ import annotations

import httpx
import respx
from context_fixtures import NOW, seed_erp, stub_context
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
    working = WorkingMemorySettings(
        verbatim_turns=6, fold_batch=3, fold_in_background=False
    )  # ten folds, as they happen
    settings = settings.model_copy(update={"working": working})
    memory = Memory(settings, clock=FrozenClock(NOW), llm=llm, engine=sqlite_engine)
    seed_erp(memory)
    long_session(memory, 36)
    state = memory.working.state("s-1")
    assert (state.folds, state.summary_upto_seq) == (10, 30)
    result = stub_context(memory).build("ABARTENDE", "what do I owe?", session_id="s-1", token_budget=600)
    assert "- INV-004821: Amount 18250.40; DueDate 2026-02-04 (tool get_invoice, turn 1)" in result.text
    assert (
        "## Conversation summary (LLM summary; turns 1-30 summarised)\n> They discussed an invoice dispute.\n"
        "> Kept from the turns (the summary had left them out): INV-004821: Amount 18250.40\n"
    ) in result.text
    shown = [int(i.source.rsplit("#", 1)[1]) for i in result.section("recent_turns").items]
    assert shown[0] > 31 and shown[-1] == 37  # 600 tokens do not hold every unsummarised turn
    assert (
        f"## Recent turns (turns {shown[0]}-37 shown; turns 31-{shown[0] - 1} left out for budget)\n"
        in result.text
    )
    assert result.summary_mode == "llm" and result.token_count <= 600


def test_non_llm_summary_is_labelled_in_the_context(sqlite_engine: Engine, settings: Settings) -> None:
    settings = settings.model_copy(update={"working": WorkingMemorySettings(verbatim_turns=6, fold_batch=3)})
    memory = Memory(settings, clock=FrozenClock(NOW), llm=None, engine=sqlite_engine)
    seed_erp(memory)
    long_session(memory, 36)
    result = stub_context(memory).build("ABARTENDE", "what do I owe?", session_id="s-1")
    assert (
        "## Conversation summary (non-LLM mode (deterministic); turns 1-30 summarised; its line shown)\n"
        "> INV-004821 (turn 1): Amount 18250.40; DueDate 2026-02-04\n"
    ) in result.text
    assert result.summary_mode == "non-llm"


@respx.mock
def test_an_amount_the_llm_drops_comes_back_into_the_summary(
    sqlite_engine: Engine, settings: Settings
) -> None:
    route = respx.post(f"{BASE}/chat/completions").mock(
        return_value=completion("The customer disputed INV-004821 and was promised a credit memo.")
    )
    llm = LLMClient(LLMSettings(base_url=BASE, api_key=SecretStr("k"), model="m", max_retries=0))
    settings = settings.model_copy(update={"working": WorkingMemorySettings(verbatim_turns=4, fold_batch=2)})
    memory = Memory(settings, clock=FrozenClock(NOW), llm=llm, engine=sqlite_engine)
    memory.record_turn("s-1", "ABARTENDE", "user", "INV-004821 charged me 1,250.75 EUR twice.")
    memory.record_turn(
        "s-1", "ABARTENDE", "assistant", "We will issue credit memo CM-000311 for 1,250.75 EUR."
    )
    for i in range(6):
        memory.record_turn("s-1", "ABARTENDE", "user", f"message {i}")
    assert memory.background.wait(30)  # the folds ran off the agent's path
    assert route.called
    summary = memory.working.state("s-1").summary or ""
    assert summary.startswith("The customer disputed INV-004821 and was promised a credit memo.\n")
    kept = "Kept from the turns (the summary had left them out): "
    assert summary.endswith(kept + "INV-004821: 1,250.75 EUR; CM-000311: 1,250.75 EUR")


def long_nonllm_session(memory: Memory, length: int) -> None:
    """Like the benchmark's sessions: the invoice at turns 1-2, then talk with amounts and an order
    looked up every ninth turn."""
    from connector.working import NewTurn

    turns = [
        NewTurn("user", "Why was I charged twice for INV-004821?"),
        NewTurn("tool", "", tool_name="get_invoice", tool_args={"nbr": "INV-004821"},
                tool_result={"ReferenceNbr": "INV-004821", "Amount": "18250.40", "DueDate": "2026-02-04"}),
    ]  # fmt: skip
    while len(turns) < length:
        n = len(turns)
        if n % 9 == 0:
            order = f"SO-{n:06d}"
            result = {"OrderNbr": order, "OrderTotal": f"{n * 7}.{n % 100:02d}"}
            turns.append(
                NewTurn("tool", "", tool_name="get_order", tool_args={"nbr": order}, tool_result=result)
            )
        else:
            words = "the customer asked about the delivery schedule and the agent checked the order status"
            turns.append(NewTurn("user" if n % 2 == 0 else "assistant", f"{words} (ref {n}, {n * 3}.00 USD)"))
    for start in range(0, length, 10):
        memory.working.record_turns("s-1", "ABARTENDE", turns[start : start + 10])


def test_a_reference_from_turn_2_of_500_is_in_the_context_without_an_llm(
    sqlite_engine: Engine, settings: Settings
) -> None:
    memory = Memory(settings, clock=FrozenClock(NOW), llm=None, engine=sqlite_engine)
    seed_erp(memory)
    long_nonllm_session(memory, 500)
    state = memory.working.state("s-1")
    assert state.summary_upto_seq >= 470
    result = stub_context(memory).build("ABARTENDE", "where is my order?", session_id="s-1")  # default budget
    summary = "\n".join(i.text for i in result.section("summary").items)
    assert "> INV-004821 (turns 1 to 2): Amount 18250.40; DueDate 2026-02-04" in summary
    assert (
        f"## Conversation summary (non-LLM mode (deterministic); turns 1-{state.summary_upto_seq} summarised"
        in (result.text)
    )
    assert f"## Recent turns (turns {state.summary_upto_seq + 1}-500)" in result.text
    assert not result.over_budget
