"""The ERP change history the sync records: baseline, typed changes, deletions, late deliveries,
crash safety, retention and erasure, on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sync_stub import StubAdapter, customer

from connector.clock import FrozenClock
from connector.erp.records import DocumentRecord
from connector.memory import Memory
from connector.semantic.history_reads import describe
from connector.semantic.tracking import change_t
from connector.semantic.upsert import party_t
from connector.settings import ContextSettings, HistorySettings, Settings, TenantSettings

T0 = datetime(2025, 6, 1, 8, 0, tzinfo=UTC)
START = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def invoice(number: str, modified: datetime, **values: object) -> DocumentRecord:
    base = DocumentRecord(
        tenant="acme",
        doc_type="ar_invoice",
        external_id=f"INV/{number}",
        number=number,
        party_kind="customer",
        party_external_id="C001",
        status="Open",
        currency="USD",
        amount=Decimal("1250.00"),
        balance=Decimal("1250.00"),
        doc_date=date(2026, 3, 1),
        due_date=date(2026, 3, 31),
        source_modified_at=modified,
    )
    return replace(base, **values)  # type: ignore[arg-type]


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(START)


@pytest.fixture
def erp() -> StubAdapter:
    adapter = StubAdapter("acme", page_size=3)
    adapter.add_stream("Customer", "party")
    adapter.add_stream("Invoice", "document")
    adapter.put("Customer", *[customer(f"C{i:03d}", T0 + timedelta(minutes=i)) for i in range(1, 5)])
    adapter.put("Invoice", invoice("INV-004821", T0), invoice("INV-004822", T0))
    return adapter


def make_memory(engine: Engine, clock: FrozenClock, **history: object) -> Memory:
    settings = Settings(
        tenants=[TenantSettings(name="acme", kind="acumatica", base_url="http://127.0.0.1:9")],
        history=HistorySettings(**history),  # type: ignore[arg-type]
        context=ContextSettings(max_cases=0),  # no past-case recall: no embedding model in these tests
    )
    return Memory(settings, clock=clock, engine=engine, llm=None)


def sync(memory: Memory, erp: StubAdapter, clock: FrozenClock, **kw: object) -> None:
    clock.advance(timedelta(hours=1))
    result = memory.sync_runner(adapter_factory=lambda tenant: erp).run(**kw)  # type: ignore[arg-type,return-value]
    assert all(r.error is None for r in result.results), [r.error for r in result.results]


def change_count(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(change_t)).scalar_one())


def test_the_first_sync_is_the_baseline_and_an_unchanged_reread_records_nothing(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    memory = make_memory(engine, clock)
    sync(memory, erp, clock)
    sync(memory, erp, clock, full=True)
    assert change_count(engine) == 0


def test_changed_fields_are_recorded_typed_with_the_erp_stamp_and_the_run(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    memory = make_memory(engine, clock)
    sync(memory, erp, clock)
    stamp = START + timedelta(minutes=30)
    erp.put("Customer", customer("C001", stamp, credit_limit=Decimal("80000"), status="On Hold"))
    erp.put("Invoice", invoice("INV-004821", stamp, balance=Decimal("0.00"), status="Closed"))
    sync(memory, erp, clock)

    changes = memory.erp_history("C001", tenant="acme")
    by_field = {(c.entity, c.field): c for c in changes}
    assert set(by_field) == {
        ("party", "credit_limit"),
        ("party", "status"),
        ("document", "balance"),
        ("document", "status"),
    }
    limit = by_field["party", "credit_limit"]
    assert (limit.old, limit.new, limit.currency) == (Decimal("50000"), Decimal("80000"), "USD")
    assert limit.changed_at == stamp and limit.seen_at == clock.now() and limit.run_id is not None
    assert describe(limit) == "credit limit 50,000.00 → 80,000.00 USD (ERP change 2026-03-10)"
    assert describe(by_field["party", "status"]) == "status Active → On Hold (ERP change 2026-03-10)"
    assert describe(by_field["document", "balance"]) == (
        "INV-004821 paid in full: balance 1,250.00 → 0.00 USD (ERP change 2026-03-10)"
    )
    assert memory.erp_history("C002", tenant="acme") == []  # another customer's history is its own
    only = memory.erp_history("C001", tenant="acme", field="credit_limit")
    assert [c.field for c in only] == ["credit_limit"]


def test_a_value_whose_shape_changed_but_not_its_meaning_is_no_change(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    memory = make_memory(engine, clock)
    sync(memory, erp, clock)
    # The same limit written with other decimals and an unrelated untracked field changed: the
    # row is rewritten, the history records nothing.
    erp.put("Customer", customer("C001", START, credit_limit=Decimal("50000"), extra={"note": "x"}))
    sync(memory, erp, clock)
    assert change_count(engine) == 0


def test_a_deletion_the_key_scan_finds_and_a_return_are_changes(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    memory = make_memory(engine, clock)
    sync(memory, erp, clock)
    gone = erp.streams_by_name["Invoice"].records["INV/INV-004821"]
    erp.delete("Invoice", "INV/INV-004821")
    sync(memory, erp, clock, full=True)
    erp.put("Invoice", gone)
    sync(memory, erp, clock, full=True)

    changes = memory.erp_history("C001", tenant="acme", field="deleted")
    assert [(c.old, c.new) for c in reversed(changes)] == [(False, True), (True, False)]
    assert describe(changes[-1]).startswith("INV-004821 deleted in the ERP")


def test_a_late_delivery_is_placed_in_stamp_order_and_never_moves_the_current_value_back(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    memory = make_memory(engine, clock)
    sync(memory, erp, clock)
    t1, t2 = START + timedelta(minutes=10), START + timedelta(minutes=20)
    erp.put("Customer", customer("C001", t2, credit_limit=Decimal("90000")))
    sync(memory, erp, clock)
    # The change made at t1 arrives after the one made at t2 (a re-read window, an ERP that
    # delivers out of order).
    erp.put("Customer", customer("C001", t1, credit_limit=Decimal("70000")))
    sync(memory, erp, clock, full=True)

    with engine.connect() as conn:
        stored = conn.execute(
            sa.select(party_t.c.credit_limit).where(party_t.c.external_id == "C001")
        ).scalar()
    assert stored == Decimal("90000")
    changes = memory.erp_history("C001", tenant="acme", field="credit_limit")
    assert [(c.changed_at, c.old, c.new) for c in reversed(changes)] == [
        (t1, Decimal("50000"), Decimal("70000")),
        (t2, Decimal("70000"), Decimal("90000")),
    ]


def test_a_page_that_fails_after_its_upsert_leaves_no_change_and_the_rerun_records_it_once(
    engine: Engine, erp: StubAdapter, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = make_memory(engine, clock)
    sync(memory, erp, clock)
    erp.put("Customer", customer("C003", START + timedelta(minutes=5), terms="60D"))

    import connector.sync.runner as runner_module

    real = runner_module.save_counters

    def crash(*args: object, **kw: object) -> None:
        raise RuntimeError("connection lost")

    monkeypatch.setattr(runner_module, "save_counters", crash)
    clock.advance(timedelta(hours=1))
    with pytest.raises(RuntimeError):
        memory.sync_runner(adapter_factory=lambda tenant: erp).run()  # type: ignore[arg-type,return-value]
    assert change_count(engine) == 0
    monkeypatch.setattr(runner_module, "save_counters", real)
    sync(memory, erp, clock)
    sync(memory, erp, clock)
    assert [(c.old, c.new) for c in memory.erp_history("C003", tenant="acme")] == [("30D", "60D")]


def test_history_off_records_nothing(engine: Engine, erp: StubAdapter, clock: FrozenClock) -> None:
    memory = make_memory(engine, clock, enabled=False)
    sync(memory, erp, clock)
    erp.put("Customer", customer("C001", START, status="On Hold"))
    sync(memory, erp, clock)
    assert change_count(engine) == 0


def test_contact_fields_are_kept_only_when_configured_and_then_for_the_pii_window(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    plain = make_memory(engine, clock)
    sync(plain, erp, clock)
    erp.put("Customer", customer("C001", START, name="Renamed Ltd"))
    sync(plain, erp, clock)
    assert change_count(engine) == 0

    tracked = make_memory(engine, clock, fields={"party": ["status", "name"]})
    erp.put(
        "Customer", customer("C001", START + timedelta(minutes=1), name="Renamed Again Ltd", status="Hold")
    )
    sync(tracked, erp, clock)
    assert {c.field for c in tracked.erp_history("C001", tenant="acme")} == {"name", "status"}

    clock.advance(timedelta(days=tracked.settings.retention.pii_days + 1))
    report = tracked.history.apply_retention()
    assert (report.removed, report.contact_removed) == (0, 1)
    assert [c.field for c in tracked.erp_history("C001", tenant="acme")] == ["status"]
    clock.advance(timedelta(days=tracked.settings.history.retention_days))
    assert tracked.history.apply_retention().removed == 1


def test_an_unknown_tracked_field_is_a_settings_error() -> None:
    with pytest.raises(ValueError, match="cannot track credit_score"):
        HistorySettings(fields={"party": ["credit_score"]})


def test_forget_removes_the_customers_history(engine: Engine, erp: StubAdapter, clock: FrozenClock) -> None:
    memory = make_memory(engine, clock)
    sync(memory, erp, clock)
    erp.put("Customer", customer("C001", START, status="On Hold"), customer("C002", START, status="On Hold"))
    sync(memory, erp, clock)
    removed = memory.forget("C001", tenant="acme")
    assert removed["erp_changes"] == 1
    assert memory.erp_history("C001", tenant="acme") == []
    assert len(memory.erp_history("C002", tenant="acme")) == 1


# The context's "Recent ERP changes" section ---------------------------------------------------------
def changed_twice(memory: Memory, erp: StubAdapter, clock: FrozenClock) -> tuple[datetime, datetime]:
    """A credit limit raised 120 days ago and a hold put on 2 days ago (ERP stamps)."""
    sync(memory, erp, clock)
    raised = clock.now() - timedelta(days=120)
    erp.put("Customer", customer("C001", raised, credit_limit=Decimal("80000")))
    sync(memory, erp, clock)
    held = clock.now() - timedelta(days=2)
    erp.put("Customer", customer("C001", held, credit_limit=Decimal("80000"), status="On Hold"))
    sync(memory, erp, clock)
    return raised, held


def section_lines(text: str) -> list[str]:
    if "## Recent ERP changes" not in text:
        return []
    body = text.split("## Recent ERP changes\n", 1)[1].split("\n\n", 1)[0]
    return body.splitlines()


def test_the_context_shows_recent_changes_with_their_dates_and_leaves_older_ones_out(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    memory = make_memory(engine, clock)
    _, held = changed_twice(memory, erp, clock)
    result = memory.build_context("C001", "can they order more?", tenant="acme")
    assert section_lines(result.text) == [f"- status Active → On Hold (ERP change {held:%Y-%m-%d})"]
    section = next(s for s in result.sections if s.name == "erp_changes")
    assert section.items[0].source.startswith("erp-change:acme/party/customer/C001#status@")
    assert "## Recent ERP changes" not in memory.build_context("C002", "hello", tenant="acme").text


def test_a_question_about_a_field_shows_its_history_first_beyond_the_window(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    memory = make_memory(engine, clock)
    raised, held = changed_twice(memory, erp, clock)
    result = memory.build_context("C001", "when did their credit limit change?", tenant="acme")
    assert section_lines(result.text) == [
        f"- credit limit 50,000.00 → 80,000.00 USD (ERP change {raised:%Y-%m-%d})",
        f"- status Active → On Hold (ERP change {held:%Y-%m-%d})",
    ]


def test_the_context_says_what_changed_since_the_customers_last_conversation(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    memory = make_memory(engine, clock)
    sync(memory, erp, clock)
    memory.record_turn("s-old", "C001", "user", "Please raise our credit limit.", tenant="acme")
    spoke = clock.now()
    clock.advance(timedelta(days=3))
    erp.put("Customer", customer("C001", clock.now(), credit_limit=Decimal("80000")))
    sync(memory, erp, clock)

    result = memory.build_context("C001", "hi again", tenant="acme", session_id="s-new")
    assert section_lines(result.text) == [
        f"Since the customer's last conversation on {spoke:%Y-%m-%d}: 1 ERP change(s).",
        f"- credit limit 50,000.00 → 80,000.00 USD (ERP change {clock.now():%Y-%m-%d})"
        " [since last conversation]",
    ]


def test_a_context_as_of_a_date_shows_no_change_made_after_it(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    memory = make_memory(engine, clock)
    _, held = changed_twice(memory, erp, clock)
    before = memory.build_context("C001", "status?", tenant="acme", as_of=held - timedelta(days=1))
    assert not any("On Hold" in line for line in section_lines(before.text))


def test_the_section_is_budgeted_like_every_other(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    memory = make_memory(engine, clock)
    sync(memory, erp, clock)
    for day in range(1, 9):
        erp.put("Customer", customer("C001", clock.now() - timedelta(days=day), terms=f"{day}0D"))
        sync(memory, erp, clock, full=True)
    result = memory.build_context("C001", "anything new?", tenant="acme", token_budget=400)
    assert result.token_count <= 400
    section = next(s for s in result.sections if s.name == "erp_changes")
    assert section.tokens <= 400 and section.dropped + len(section.items) >= 1


# Facts as of a date -------------------------------------------------------------------------------
def test_a_context_as_of_a_past_date_shows_the_facts_and_documents_as_they_stood(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    memory = make_memory(engine, clock)
    sync(memory, erp, clock)
    week_ago = clock.now() - timedelta(days=7)
    paid = clock.now() - timedelta(days=3)
    erp.put("Customer", customer("C001", paid, credit_limit=Decimal("80000"), status="On Hold"))
    erp.put("Invoice", invoice("INV-004821", paid, balance=Decimal("0.00"), status="Closed", is_open=False))
    sync(memory, erp, clock)

    now = memory.build_context("C001", "open invoices?", tenant="acme")
    then = memory.build_context("C001", "open invoices?", tenant="acme", as_of=week_ago)

    assert "80,000.00" in now.text and "INV-004821" not in section_text(now.text, "Open documents")
    assert "50,000.00" in then.text and "On Hold" not in section_text(then.text, "ERP facts")
    assert "INV-004821" in section_text(then.text, "Open documents")
    assert any("rebuilt from the change history" in w for w in then.warnings)
    assert "## Recent ERP changes" not in then.text  # the changes came after that date


def test_a_context_as_of_a_date_before_the_first_sync_says_so(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    memory = make_memory(engine, clock)
    sync(memory, erp, clock)
    result = memory.build_context("C001", "status?", tenant="acme", as_of=clock.now() - timedelta(days=400))
    assert any("before the first sync" in w for w in result.warnings)


def section_text(text: str, title: str) -> str:
    return text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_lookup_document_as_of_a_date_gives_its_values_then(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    from connector.context import UnknownDocumentError

    memory = make_memory(engine, clock)
    sync(memory, erp, clock)
    before = clock.now() - timedelta(minutes=1)
    erp.put(
        "Invoice", invoice("INV-004821", clock.now(), balance=Decimal("0.00"), status="Closed", is_open=False)
    )
    sync(memory, erp, clock)

    now = memory.lookup_document("C001", "INV-004821", tenant="acme")
    then = memory.lookup_document("C001", "INV-004821", tenant="acme", as_of=before)
    assert (now.balance, now.status, now.is_open) == (Decimal("0.00"), "Closed", False)
    assert (then.balance, then.status, then.is_open) == (Decimal("1250"), "Open", True)
    with pytest.raises(UnknownDocumentError):  # dated after that day: it did not exist yet
        memory.lookup_document("C001", "INV-004821", tenant="acme", as_of=datetime(2026, 1, 1, tzinfo=UTC))


# MCP ------------------------------------------------------------------------------------------------
def test_the_mcp_erp_history_tool_and_get_context_as_of(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    from connector.mcp_server.guard import ServedScope
    from connector.mcp_server.tools import MemoryTools

    memory = make_memory(engine, clock)
    _, held = changed_twice(memory, erp, clock)
    tools = MemoryTools(memory, ServedScope.from_settings(memory.settings))

    result = tools.erp_history("C001", field="status", tenant="acme")
    assert result.structured_content is not None
    changes = result.structured_content["changes"]
    assert [(c["field"], c["old"], c["new"]) for c in changes] == [("status", "Active", "On Hold")]
    assert result.content[0].text == f"- status Active → On Hold (ERP change {held:%Y-%m-%d})"  # type: ignore[union-attr]
    assert tools.erp_history("C001", since=clock.now(), tenant="acme").structured_content == {"changes": []}

    then = tools.get_context("C001", "status?", tenant="acme", as_of=held - timedelta(days=1))
    assert "On Hold" not in then.content[0].text.split("## Open documents")[0]  # type: ignore[union-attr]


# CLI ------------------------------------------------------------------------------------------------
def test_the_history_command_lists_and_filters_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    import connector
    from connector.cli import main
    from connector.settings import load_settings

    monkeypatch.setenv("CONNECTOR_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(connector, "_default_memory", None)
    monkeypatch.setenv(
        "CONNECTOR_TENANTS",
        json.dumps([{"name": "acme", "kind": "acumatica", "base_url": "http://127.0.0.1:9"}]),
    )
    clock = FrozenClock(START)
    memory = Memory(load_settings(), clock=clock, llm=None)
    erp = StubAdapter("acme", page_size=3)
    erp.add_stream("Customer", "party")
    erp.put("Customer", customer("C001", T0))
    sync(memory, erp, clock)
    erp.put("Customer", customer("C001", START, status="On Hold", terms="60D"))
    sync(memory, erp, clock)
    memory.close()

    assert main(["history", "C001", "--field", "status"]) == 0
    assert capsys.readouterr().out == "- status Active → On Hold (ERP change 2026-03-10)\n"
    assert main(["history", "C001", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert sorted(c["field"] for c in listed) == ["status", "terms"]
    assert main(["history", "C002"]) == 0
    assert capsys.readouterr().out == "no ERP changes recorded\n"
    assert main(["history", "C001", "--since", "yesterday"]) == 2
