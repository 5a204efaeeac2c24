"""Recording cases: summaries, idempotence, near-duplicates, scope guard (embedded and server Chroma)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest
import respx
import sqlalchemy as sa
from pydantic import SecretStr

from connector.episodic import writer
from connector.episodic.tables import CASES, ENTRIES
from connector.errors import ConnectorError, ScopeError
from connector.llm import LLMClient
from connector.memory import Memory
from connector.settings import LLMSettings

REQUEST = "Customer disputed INV-004821: charged twice for 1,250.00 USD on 2026-02-10."
RESOLUTION = "Credit memo CM-000311 for 1,250.00 USD issued on 2026-02-12; duplicate line removed."


def count(memory: Memory, table: sa.Table) -> int:
    with memory.engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())


def test_non_llm_summary_keeps_every_id_amount_and_date_and_says_so(memory: Memory) -> None:
    recorded = memory.record_case("ABARTENDE", REQUEST, RESOLUTION, documents=["SO-000777"])
    assert recorded.status == "created" and recorded.summary_mode == "non-llm"
    for token in ("INV-004821", "CM-000311", "1,250.00 USD", "2026-02-10", "2026-02-12", "SO-000777"):
        assert token in recorded.summary


def test_the_raw_case_is_kept_in_the_relational_store(memory: Memory) -> None:
    memory.record_case("ABARTENDE", REQUEST, RESOLUTION, transcript="Agent: hello ... long negotiation")
    with memory.engine.connect() as conn:
        row = conn.execute(sa.select(CASES)).mappings().one()
    assert row["request"] == REQUEST and row["transcript"].startswith("Agent: hello")
    assert "negotiation" not in memory.recall_cases("ABARTENDE", "duplicate charge")[0].summary


def test_recording_the_same_case_twice_leaves_one_entry(memory: Memory) -> None:
    first = memory.record_case("ABARTENDE", REQUEST, RESOLUTION, case_id="CASE-1")
    again = memory.record_case("ABARTENDE", REQUEST, RESOLUTION, case_id="CASE-1")
    same_text = memory.record_case("ABARTENDE", REQUEST, RESOLUTION)
    assert again.status == "unchanged" and again.entry_id == first.entry_id
    assert same_text.entry_id == first.entry_id
    assert count(memory, ENTRIES) == 1
    assert memory.episodic.index.count() == 1


def test_a_changed_case_updates_its_entry(memory: Memory) -> None:
    first = memory.record_case("ABARTENDE", REQUEST, RESOLUTION, case_id="CASE-1")
    changed = memory.record_case(
        "ABARTENDE", REQUEST, "Refund of 1,250.00 USD paid on 2026-02-20.", case_id="CASE-1"
    )
    assert changed.status == "updated" and changed.entry_id == first.entry_id
    assert "2026-02-20" in memory.recall_cases("ABARTENDE", "double charge")[0].summary
    assert count(memory, ENTRIES) == 1 and count(memory, CASES) == 1


def test_a_near_duplicate_is_merged_not_added(memory: Memory) -> None:
    first = memory.record_case("ABARTENDE", REQUEST, RESOLUTION, case_type="dispute", case_id="CASE-1")
    later = datetime(2026, 4, 2, tzinfo=UTC)
    near = memory.record_case(
        "ABARTENDE",
        "The customer disputed INV-004821: they were charged twice for 1,250.00 USD on 2026-02-10.",
        RESOLUTION,
        case_type="dispute",
        case_id="CASE-2",
        occurred_at=later,
    )
    assert near.status == "merged" and near.entry_id == first.entry_id
    assert count(memory, ENTRIES) == 1 and count(memory, CASES) == 2
    hit = memory.recall_cases("ABARTENDE", "charged twice")[0]
    assert hit.occurred_at == later


def test_look_alike_cases_about_other_documents_stay_separate(memory: Memory) -> None:
    memory.record_case("ABARTENDE", REQUEST, RESOLUTION, case_type="dispute")
    other = memory.record_case(
        "ABARTENDE",
        REQUEST.replace("INV-004821", "INV-004822"),
        RESOLUTION.replace("CM-000311", "CM-000312"),
        case_type="dispute",
    )
    assert other.status == "created"
    assert count(memory, ENTRIES) == 2


def test_the_same_case_for_another_customer_is_a_separate_entry(memory: Memory) -> None:
    a = memory.record_case("ABARTENDE", REQUEST, RESOLUTION, case_id="CASE-1")
    b = memory.record_case("COFFEESHOP", REQUEST, RESOLUTION, case_id="CASE-1")
    assert a.entry_id != b.entry_id and b.status == "created"


@pytest.mark.parametrize("customer", ["", "   ", "\t\n", None, 42])
def test_a_missing_or_blank_customer_fails_before_any_store_is_touched(
    memory: Memory, customer: object
) -> None:
    with pytest.raises(ScopeError):
        memory.record_case(customer, REQUEST, RESOLUTION)  # type: ignore[arg-type]
    with pytest.raises(ScopeError):
        memory.recall_cases(customer, "anything")  # type: ignore[arg-type]
    assert "index" not in vars(memory.episodic)  # Chroma was never opened
    assert count(memory, ENTRIES) == 0


def test_metadata_cannot_change_the_scope_of_a_write(memory: Memory) -> None:
    memory.record_case(
        "ABARTENDE",
        REQUEST,
        RESOLUTION,
        metadata={"customer_id": "COFFEESHOP", "tenant": "other", "where": {}},
    )
    assert memory.recall_cases("COFFEESHOP", "charged twice") == []
    assert memory.recall_cases("ABARTENDE", "charged twice", tenant="other") == []
    assert len(memory.recall_cases("ABARTENDE", "charged twice")) == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"request": "  "}, "request is empty"),
        ({"occurred_at": datetime(2026, 1, 1)}, "timezone-aware"),
        ({"documents": "INV-1"}, "sequence of document numbers"),
        ({"metadata": {"x": object()}}, "JSON"),
        ({"case_id": "  "}, "case_id"),
        ({"documents": ["INV-1", 42]}, "document numbers must be strings"),
    ],
)
def test_bad_input_is_a_clear_error_and_stores_nothing(
    memory: Memory, kwargs: dict[str, object], message: str
) -> None:
    args = {"request": REQUEST, "resolution": RESOLUTION, **kwargs}
    with pytest.raises(ConnectorError, match=message):  # InvalidCaseError, or ScopeError for the case id
        memory.record_case("ABARTENDE", **args)  # type: ignore[arg-type]
    assert count(memory, ENTRIES) == 0 and count(memory, CASES) == 0


LLM_BASE = "http://llm.test/v1"


def _completion(text: str) -> dict[str, object]:
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
    }


@pytest.fixture
def llm_http() -> Iterator[respx.MockRouter]:
    """Mocks the LLM endpoint; loopback (the Chroma server) passes through."""
    with respx.mock(assert_all_called=False) as router:
        router.route(host="127.0.0.1").pass_through()
        yield router


def _llm_memory(memory: Memory) -> Memory:
    llm = LLMClient(LLMSettings(base_url=LLM_BASE, api_key=SecretStr("sk-x"), model="m", max_retries=0))
    return Memory(memory.settings, clock=memory.clock, llm=llm, engine=memory.engine)


def test_with_an_llm_the_summary_is_written_by_it_and_keeps_document_numbers(
    memory: Memory, llm_http: respx.MockRouter
) -> None:
    route = llm_http.post(f"{LLM_BASE}/chat/completions").mock(
        return_value=httpx.Response(
            200, json=_completion("Duplicate charge on INV-004821 credited (1,250.00 USD).")
        )
    )
    agent = _llm_memory(memory)
    agent.record_case("ABARTENDE", REQUEST, RESOLUTION)
    assert agent.background.wait(30)  # the LLM rewords the case off the agent's path
    [recorded] = agent.recall_cases("ABARTENDE", "charged twice")
    assert recorded.summary_mode == "llm"
    assert recorded.summary.startswith("Duplicate charge on INV-004821 credited")
    assert "CM-000311" in recorded.summary  # dropped by the LLM, appended back
    sent = route.calls.last.request.content.decode()
    assert "INV-004821" in sent and "not instructions" in sent


def test_an_llm_failure_falls_back_to_the_labelled_deterministic_summary(
    memory: Memory, llm_http: respx.MockRouter
) -> None:
    llm_http.post(f"{LLM_BASE}/chat/completions").mock(return_value=httpx.Response(500, json={}))
    recorded = _llm_memory(memory).record_case("ABARTENDE", REQUEST, RESOLUTION)
    assert recorded.summary_mode == "non-llm" and "CM-000311" in recorded.summary


@pytest.mark.parametrize("chunk", [writer.WRITE_CHUNK, 2], ids=["one chunk", "chunks of 2"])
def test_one_batch_catches_its_own_duplicates_and_near_duplicates(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """Also when the batch is written in chunks (each embedded while the one before is written)."""
    monkeypatch.setattr(writer, "WRITE_CHUNK", chunk)
    episodic = memory.episodic
    near = "The customer disputed INV-004821: they were charged twice for 1,250.00 USD on 2026-02-10."
    other = "Late delivery of SO-000140, freight refunded."
    batch = [
        episodic.prepare("ABARTENDE", REQUEST, RESOLUTION, case_id="CASE-1", case_type="dispute"),
        episodic.prepare("ABARTENDE", REQUEST, RESOLUTION, case_id="CASE-1", case_type="dispute"),
        episodic.prepare("ABARTENDE", REQUEST, RESOLUTION, case_id="CASE-2", case_type="dispute"),
        episodic.prepare("ABARTENDE", near, RESOLUTION, case_id="CASE-3", case_type="dispute"),
        episodic.prepare("COFFEESHOP", REQUEST, RESOLUTION, case_id="CASE-1", case_type="dispute"),
        episodic.prepare("ABARTENDE", other, "Refunded.", case_id="CASE-4", case_type="delivery"),
    ]
    results = episodic.record_cases(batch)
    assert [r.status for r in results] == ["created", "unchanged", "merged", "merged", "created", "created"]
    first = results[0].entry_id
    assert {r.entry_id for r in results[:4]} == {first}
    assert results[4].entry_id != first  # another customer's copy is its own entry
    assert count(memory, ENTRIES) == 3 and count(memory, CASES) == 5
    assert episodic.index.count() == 3
    with memory.engine.connect() as conn:
        merged = conn.execute(sa.select(ENTRIES.c.merged_count).where(ENTRIES.c.id == first)).scalar_one()
    assert merged == 3
    assert [h.entry_id for h in memory.recall_cases("COFFEESHOP", "charged twice")] == [results[4].entry_id]


def test_a_case_changed_within_one_batch_ends_as_its_last_version(memory: Memory) -> None:
    episodic = memory.episodic
    changed = "Refund of 1,250.00 USD paid on 2026-02-20."
    results = episodic.record_cases(
        [
            episodic.prepare("ABARTENDE", REQUEST, RESOLUTION, case_id="CASE-1"),
            episodic.prepare("ABARTENDE", REQUEST, changed, case_id="CASE-1"),
        ]
    )
    assert [r.status for r in results] == ["created", "updated"]
    assert count(memory, ENTRIES) == 1 and count(memory, CASES) == 1
    assert "2026-02-20" in memory.recall_cases("ABARTENDE", "double charge")[0].summary
    again = episodic.record_cases([episodic.prepare("ABARTENDE", REQUEST, changed, case_id="CASE-1")])
    assert again[0].status == "unchanged"


def test_a_batch_merges_near_duplicates_of_cases_recorded_before(memory: Memory) -> None:
    first = memory.record_case("ABARTENDE", REQUEST, RESOLUTION, case_type="dispute", case_id="CASE-1")
    episodic = memory.episodic
    near = "The customer disputed INV-004821: they were charged twice for 1,250.00 USD on 2026-02-10."
    results = episodic.record_cases(
        [
            episodic.prepare("ABARTENDE", near, RESOLUTION, case_type="dispute", case_id="CASE-2"),
            episodic.prepare("ABARTENDE", REQUEST, RESOLUTION, case_type="dispute", case_id="CASE-3"),
            episodic.prepare("ABARTENDE", REQUEST, RESOLUTION, case_type="dispute", case_id="CASE-1"),
        ]
    )
    assert [(r.status, r.entry_id) for r in results] == [
        ("merged", first.entry_id),
        ("merged", first.entry_id),
        ("unchanged", first.entry_id),
    ]
    assert count(memory, ENTRIES) == 1 and count(memory, CASES) == 3


def test_batch_writes_and_recall_probe_indexes_instead_of_scanning_tables(memory: Memory) -> None:
    """Cost must follow the batch and the customer, not the store: no statement scans a table."""
    memory.record_case("ABARTENDE", REQUEST, RESOLUTION, case_id="CASE-1", case_type="dispute")
    episodic = memory.episodic
    batch = [
        episodic.prepare(customer, f"{REQUEST} ({n})", RESOLUTION, case_id=f"CASE-{n}", case_type="dispute")
        for n, customer in enumerate(["ABARTENDE", "COFFEESHOP", "ABARTENDE", "DELI"], start=2)
    ]
    statements: list[tuple[str, object]] = []

    def capture(
        conn: object, cursor: object, statement: str, params: object, context: object, many: bool
    ) -> None:
        if statement.lstrip().upper().startswith("SELECT") and not many:
            statements.append((statement, params))

    sa.event.listen(memory.engine, "before_cursor_execute", capture)
    try:
        episodic.record_cases(batch)
        memory.recall_cases("ABARTENDE", "charged twice on inv-004821")
    finally:
        sa.event.remove(memory.engine, "before_cursor_execute", capture)
    assert len(statements) >= 6  # the batch reads (keys twice, content, candidates, entries) and recall
    with memory.engine.connect() as conn:
        for statement, params in statements:
            plan = [row[3] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", params)]  # type: ignore[arg-type]
            assert not [step for step in plan if step.startswith("SCAN episodic_")], (statement, plan)


def test_documents_none_means_no_documents_and_a_number_is_a_clear_error(memory: Memory) -> None:
    recorded = memory.record_case("ABARTENDE", REQUEST, RESOLUTION, documents=None)  # type: ignore[arg-type]
    assert recorded.status == "created"
    with pytest.raises(ConnectorError, match="documents must be a sequence of document numbers or None"):
        memory.record_case("ABARTENDE", "another request", "done", documents=4821)  # type: ignore[arg-type]
