"""The agent's path never waits on the LLM (#14.6).

With an LLM endpoint that hangs, ``record_turn`` and ``record_case`` store what they were given and
return before the endpoint has answered; the fold of the running summary and the case's rewording
run on Memory's background worker. A context built meanwhile shows the labelled non-LLM summary of
the turns waiting to be folded; once the LLM answers, its summary is what the stores hold and show.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest
import respx
import sqlalchemy as sa
from context_fixtures import NOW, seed_erp, stub_context
from llm_stub import LLM_BASE, completion
from pydantic import SecretStr
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.episodic.models import RecordedCase
from connector.episodic.tables import ENTRIES
from connector.lexical.tables import DOCS
from connector.llm import LLMClient
from connector.memory import Memory
from connector.settings import LLMSettings, Settings, WorkingMemorySettings

HANG_LIMIT_S = 30  # a guard so a broken test cannot hang the suite; released long before


class HangingLLM:
    """A respx side effect that answers only once released, and records what it answered."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.release = threading.Event()
        self.asked = threading.Event()
        self.answered: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.asked.set()
        if not self.release.wait(HANG_LIMIT_S):
            raise httpx.ReadTimeout("the test never released the LLM", request=request)
        self.answered.append(self.text)
        return completion(self.text)


@pytest.fixture
def hanging() -> Iterator[tuple[respx.MockRouter, HangingLLM]]:
    llm = HangingLLM("The customer disputes INV-004821 and was promised a credit memo.")
    with respx.mock(assert_all_called=False) as router:
        router.route(host="127.0.0.1").pass_through()  # a Chroma server, when used
        router.post(f"{LLM_BASE}/chat/completions").mock(side_effect=llm)
        yield router, llm
        llm.release.set()


def llm_memory(settings: Settings, engine: Engine) -> Memory:
    """A Memory whose LLM client has a short timeout and no retries (the endpoint is mocked)."""
    conf = LLMSettings(base_url=LLM_BASE, api_key=SecretStr("k"), model="m", timeout_s=2.0, max_retries=0)
    settings = settings.model_copy(update={"working": WorkingMemorySettings(verbatim_turns=4, fold_batch=2)})
    return Memory(settings, clock=FrozenClock(NOW), llm=LLMClient(conf), engine=engine)


def test_record_turn_returns_before_the_llm_answers_and_the_context_uses_the_non_llm_summary(
    sqlite_engine: Engine, settings: Settings, hanging: tuple[respx.MockRouter, HangingLLM]
) -> None:
    _, llm = hanging
    memory = llm_memory(settings, sqlite_engine)
    seed_erp(memory)
    memory.record_turn("s-1", "ABARTENDE", "user", "INV-004821 was charged twice, 1,250.75 USD each.")
    for i in range(5):  # the 6th turn makes a fold due: it goes to the background worker
        memory.record_turn("s-1", "ABARTENDE", "assistant" if i % 2 == 0 else "user", f"message {i}")
    assert llm.asked.wait(HANG_LIMIT_S)  # the fold is waiting on the LLM right now
    assert llm.answered == []  # ... and record_turn has returned all the same
    assert memory.working.state("s-1").summary is None  # nothing folded yet

    meanwhile = stub_context(memory).build("ABARTENDE", "what do I owe?", session_id="s-1")
    assert "## Conversation summary (non-LLM mode (deterministic); turns 1-2" in meanwhile.text
    assert "INV-004821" in "\n".join(i.text for i in meanwhile.section("summary").items)
    assert [t.source for t in meanwhile.section("recent_turns").items] == [
        f"turn:s-1#{n}" for n in range(3, 7)
    ]

    llm.release.set()
    assert memory.background.wait(HANG_LIMIT_S)
    state = memory.working.state("s-1")
    assert (state.summary_mode, state.summary_upto_seq) == ("llm", 2)
    after = stub_context(memory).build("ABARTENDE", "what do I owe?", session_id="s-1")
    assert "## Conversation summary (LLM summary; turns 1-2" in after.text
    assert "promised a credit memo" in after.text
    memory.close()


def test_record_case_returns_the_labelled_summary_and_the_llm_wording_arrives_after(
    memory: Memory, hanging: tuple[respx.MockRouter, HangingLLM]
) -> None:
    _, llm = hanging
    with llm_memory(memory.settings, memory.engine) as agent:
        recorded = agent.record_case(
            "ABARTENDE", "Charged twice for INV-004821", "Credit memo CM-000311 issued for 1,250.00 USD"
        )
        assert llm.asked.wait(HANG_LIMIT_S) and llm.answered == []  # returned while the LLM hangs
        assert recorded.summary_mode == "non-llm" and "CM-000311" in recorded.summary
        [meanwhile] = agent.recall_cases("ABARTENDE", "charged twice")
        assert meanwhile.summary_mode == "non-llm" and meanwhile.summary == recorded.summary

        llm.release.set()
        assert agent.background.wait(HANG_LIMIT_S)
        [after] = agent.recall_cases("ABARTENDE", "charged twice")
        assert after.summary_mode == "llm"
        assert after.summary.startswith("The customer disputes INV-004821")
        assert "CM-000311" in after.summary  # dropped by the LLM, appended back


def test_record_cases_returns_while_the_llm_hangs_and_rewords_each_entry_once_after(
    memory: Memory, hanging: tuple[respx.MockRouter, HangingLLM]
) -> None:
    """The bulk path (ERP ingest, loads) defers the rewording like record_case: no LLM call inline,
    not even for a case archived at write; one job per entry, with the entry's last content."""
    _, llm = hanging
    with llm_memory(memory.settings, memory.engine) as agent:
        case = agent.episodic.prepare
        old = agent.clock.now() - timedelta(days=agent.settings.retention.episodic_days + 20)
        batch = [
            case("ABARTENDE", "Charged twice for INV-004821", "Credit memo CM-000311", case_id="A"),
            case("ABARTENDE", "Charged twice for INV-004821", "Credit memo CM-000312", case_id="A"),
            case("COFFEESHOP", "Late delivery of SO-000140", "Freight refunded", case_id="B"),
            case("COFFEESHOP", "Wrong price on INV-000901", "Repriced", case_id="C", occurred_at=old),
        ]
        results: list[RecordedCase] = []
        writer = threading.Thread(target=lambda: results.extend(agent.episodic.record_cases(batch)))
        writer.start()
        writer.join(HANG_LIMIT_S / 3)  # an inline LLM call would hang for HANG_LIMIT_S per case
        assert not writer.is_alive() and llm.answered == []
        assert [r.status for r in results] == ["created", "updated", "created", "archived"]
        assert {r.summary_mode for r in results} == {"non-llm"}
        assert "CM-000312" in results[1].summary
        [meanwhile] = agent.recall_cases("ABARTENDE", "charged twice")
        assert meanwhile.summary_mode == "non-llm" and meanwhile.summary == results[1].summary

        llm.release.set()
        assert agent.background.wait(HANG_LIMIT_S)
        assert len(llm.answered) == 3  # A once (its last content), B, and the archived C
        with agent.engine.connect() as conn:
            modes = dict(conn.execute(sa.select(ENTRIES.c.case_id, ENTRIES.c.summary_mode)).all())
            indexed = set(conn.execute(sa.select(DOCS.c.doc_id)).scalars())
        assert modes == {"A": "llm", "B": "llm", "C": "llm"}
        assert indexed == {results[0].entry_id, results[2].entry_id}  # the archived entry has no terms
        [after] = agent.recall_cases("ABARTENDE", "charged twice")
        assert after.summary_mode == "llm" and "CM-000312" in after.summary
        assert agent.episodic.check_index().consistent
