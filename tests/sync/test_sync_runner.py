"""The sync runner against the in-memory stub adapter, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sync_stub import StubAdapter

from connector.clock import FrozenClock
from connector.erp.records import DocumentRecord, PartyRecord
from connector.errors import ConfigError
from connector.memory import Memory
from connector.semantic.upsert import document_t, party_t
from connector.settings import Settings, SyncSettings, TenantSettings
from connector.sync.progress import NullReporter, Reporter
from connector.sync.runlog import run_t
from connector.sync.runner import CaseIngest, SyncRunner
from connector.sync.signals import StopFlag
from connector.sync.state import state_t

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
START = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def customer(ext: str, modified: datetime, name: str | None = None) -> PartyRecord:
    return PartyRecord(
        tenant="acme",
        kind="customer",
        external_id=ext,
        name=name or f"Customer {ext}",
        credit_limit=Decimal("1000.00"),
        source_modified_at=modified,
    )


def vendor(ext: str, modified: datetime) -> PartyRecord:
    return PartyRecord(tenant="acme", kind="vendor", external_id=ext, name=ext, source_modified_at=modified)


def invoice(ext: str, modified: datetime) -> DocumentRecord:
    return DocumentRecord(
        tenant="acme",
        doc_type="ar_invoice",
        external_id=f"INV/{ext}",
        number=ext,
        party_kind="customer",
        party_external_id="C001",
        amount=Decimal("10.50"),
        source_modified_at=modified,
    )


def make_memory(engine: Engine, clock: FrozenClock, **sync: object) -> Memory:
    settings = Settings(
        tenants=[TenantSettings(name="acme", kind="acumatica", base_url="http://127.0.0.1:9")],
        sync=SyncSettings(**sync),  # type: ignore[arg-type]
    )
    return Memory(settings, clock=clock, engine=engine, llm=None)


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(START)


@pytest.fixture
def erp() -> StubAdapter:
    adapter = StubAdapter("acme", page_size=3)
    adapter.add_stream("Customer", "party")
    adapter.put("Customer", *[customer(f"C{i:03d}", T0 + timedelta(minutes=i)) for i in range(1, 8)])
    return adapter


def runner_for(memory: Memory, erp: StubAdapter, **kw: object) -> SyncRunner:
    return memory.sync_runner(adapter_factory=lambda tenant: erp, **kw)  # type: ignore[arg-type]


def runner_with_cases(memory: Memory, erp: StubAdapter, cases: CaseIngest, reporter: Reporter) -> SyncRunner:
    """A runner built from its constructor, handing closed ERP cases to ``cases``."""
    return SyncRunner(
        memory.engine,
        clock=memory.clock,
        settings=memory.settings,
        cases=cases,
        adapter_factory=lambda tenant: erp,  # type: ignore[arg-type,return-value]
        reporter=reporter,
    )


def rows(engine: Engine, table: sa.Table) -> dict[str, sa.Row[object]]:
    with engine.connect() as conn:
        return {r.external_id: r for r in conn.execute(sa.select(table))}


def state(engine: Engine, stream: str = "Customer") -> sa.Row[object]:
    with engine.connect() as conn:
        return conn.execute(sa.select(state_t).where(state_t.c.stream == stream)).one()


def runs(engine: Engine) -> list[sa.Row[object]]:
    with engine.connect() as conn:
        return list(conn.execute(sa.select(run_t).order_by(run_t.c.id)))


def test_first_run_reads_everything_and_logs_the_run(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    report = runner_for(make_memory(engine, clock), erp).run()

    assert report.ok
    [result] = report.results
    assert (result.mode, result.pages, result.records_read, result.inserted) == ("full", 3, 7, 7)
    assert set(rows(engine, party_t)) == {f"C{i:03d}" for i in range(1, 8)}
    assert state(engine).watermark == T0 + timedelta(minutes=7)
    assert state(engine).last_full_at == START
    [run] = runs(engine)
    assert (run.status, run.mode, run.pages, run.records_read, run.inserted, run.error) == (
        "ok",
        "full",
        3,
        7,
        7,
        None,
    )
    assert run.window_start is None and run.window_end == START
    # Three pages and the "changed meanwhile?" probe; the store held no customer before, so the
    # key scan has nothing to compare and sends no request.
    assert run.requests == 4
    assert result.key_scan and state(engine).last_key_scan_at == START
    assert erp.logins == erp.logouts == 1


def test_a_first_run_over_rows_of_its_kind_still_scans_keys(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    """The state was lost (or another tool loaded the table): old rows may be gone from the ERP."""
    from connector.semantic.upsert import upsert_records

    with engine.begin() as conn:
        upsert_records(conn, [customer("C999", T0)], START - timedelta(days=1))
    result = runner_for(make_memory(engine, clock), erp).run().results[0]

    assert (result.key_scan, result.deleted, result.inserted, result.requests) == (True, 1, 7, 5)
    assert rows(engine, party_t)["C999"].deleted_at == START


def test_next_run_reads_from_the_watermark_minus_the_lookback_and_writes_nothing_unchanged(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    memory = make_memory(engine, clock, lookback_seconds=120)
    runner_for(memory, erp).run()
    clock.advance(timedelta(minutes=15))

    result = runner_for(memory, erp).run().results[0]

    # every read asks for the window's start and no upper bound (the watermark is clamped instead)
    assert ("Customer", T0 + timedelta(minutes=5), None) in erp.reads
    assert (result.mode, result.records_read, result.unchanged, result.inserted, result.updated) == (
        "incremental",
        3,
        3,
        0,
        0,
    )
    assert result.requests == 3  # a full page, the empty page after it and the probe; no key scan yet
    assert not result.key_scan


def test_records_sharing_the_watermark_timestamp_are_read(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    memory = make_memory(engine, clock, lookback_seconds=0)
    runner_for(memory, erp).run()
    boundary = T0 + timedelta(minutes=7)
    erp.put("Customer", customer("C100", boundary), customer("C101", boundary))

    result = runner_for(memory, erp).run().results[0]

    assert result.inserted == 2
    assert {"C100", "C101"} <= set(rows(engine, party_t))


def test_watermark_is_floored_to_the_stream_granularity(engine: Engine, clock: FrozenClock) -> None:
    erp = StubAdapter("acme")
    erp.add_stream("BusinessPartner", "party", granularity=timedelta(days=1))
    erp.put("BusinessPartner", customer("1000001", datetime(2026, 3, 9, 17, 45, tzinfo=UTC)))
    memory = make_memory(engine, clock, lookback_seconds=300)
    runner_for(memory, erp).run()
    assert state(engine, "BusinessPartner").watermark == datetime(2026, 3, 9, tzinfo=UTC)

    runner_for(memory, erp).run()
    assert erp.reads[-1][1] == datetime(2026, 3, 8, tzinfo=UTC)  # a day back: lookback, then floored


def test_window_end_is_pinned_at_run_start(engine: Engine, erp: StubAdapter, clock: FrozenClock) -> None:
    memory = make_memory(engine, clock)
    erp.put("Customer", customer("C900", START + timedelta(minutes=3)))  # stamped after the run started
    erp.before_page = lambda stream, number: clock.advance(timedelta(minutes=2))  # paging takes time
    runner_for(memory, erp).run()
    assert "C900" in rows(engine, party_t)  # stored at once
    assert state(engine).watermark == START  # but the watermark stops at the run's start

    erp.put("Customer", customer("C901", START + timedelta(minutes=1)))  # committed late, stamped earlier
    runner_for(memory, erp).run()
    assert "C901" in rows(engine, party_t)
    assert state(engine).watermark == START + timedelta(minutes=3)


def test_record_changed_mid_read_does_not_shift_another_out_of_the_window(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    def change_c001(stream: str, number: int) -> None:
        if number == 2 and erp.streams_by_name[stream].records["C001"].name != "Changed":
            # C001 (already read on page 1) leaves the window: every later record moves up one place.
            erp.put(stream, customer("C001", START + timedelta(seconds=30), name="Changed"))

    memory = make_memory(engine, clock)
    erp.before_page = change_c001
    result = runner_for(memory, erp).run().results[0]

    assert result.status == "ok"
    assert set(rows(engine, party_t)) == {f"C{i:03d}" for i in range(1, 8)}  # C005 was not skipped
    erp.before_page = None
    clock.advance(timedelta(minutes=5))
    runner_for(memory, erp).run()
    assert rows(engine, party_t)["C001"].name == "Changed"


def test_window_that_never_settles_keeps_the_watermark(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    memory = make_memory(engine, clock)
    runner_for(memory, erp).run()
    erp.put("Customer", *[customer(f"D{i}", START + timedelta(minutes=1, seconds=i)) for i in range(5)])
    clock.advance(timedelta(minutes=10))
    before = state(engine).watermark
    bump = iter(range(1000))

    def always_changing(stream: str, number: int) -> None:
        erp.put(stream, customer(f"Z{next(bump):04d}", START + timedelta(hours=1)))

    erp.before_page = always_changing
    result = runner_for(memory, erp).run().results[0]

    assert result.status == "ok"
    assert state(engine).watermark == before
    assert {f"D{i}" for i in range(5)} <= set(rows(engine, party_t))


def test_malformed_page_fails_naming_stream_and_page_and_keeps_the_watermark(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    memory = make_memory(engine, clock, lookback_seconds=0)
    runner_for(memory, erp).run()
    before = state(engine).watermark
    erp.put("Customer", *[customer(f"N{i}", T0 + timedelta(hours=1, minutes=i)) for i in range(9)])
    erp.malformed_pages.add(("Customer", 3))

    failed = runner_for(memory, erp).run()

    assert not failed.ok
    [result] = failed.results
    assert result.status == "failed"
    assert result.error is not None and "acme/Customer: page 3 failed" in result.error
    assert "ERPProtocolError" in result.error
    assert state(engine).watermark == before
    stored = set(rows(engine, party_t))
    assert {"N0", "N1", "N2", "N3", "N4"} <= stored and "N5" not in stored  # pages 1-2 committed
    assert runs(engine)[-1].status == "failed" and runs(engine)[-1].pages == 2
    assert erp.logouts == erp.logins

    erp.malformed_pages.clear()
    again = runner_for(memory, erp).run()
    assert again.ok
    assert {f"N{i}" for i in range(9)} <= set(rows(engine, party_t))
    assert state(engine).watermark == T0 + timedelta(hours=1, minutes=8)


def test_stop_request_commits_the_current_page_and_leaves_the_watermark(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    stop = StopFlag()

    # SIGTERM arrives while page 1 is written: page 2 (already in hand) is committed, then the run ends.
    report = runner_for(make_memory(engine, clock), erp, stop=stop, reporter=StopAfterPage(stop, 1)).run()

    assert report.interrupted_by == "SIGTERM"
    [result] = report.results
    assert result.status == "interrupted" and result.pages == 2
    assert len(rows(engine, party_t)) == 6
    assert state_missing(engine)
    assert erp.logouts == 1


def state_missing(engine: Engine) -> bool:
    with engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(state_t)).scalar_one() == 0


def test_record_changed_while_the_run_pages_ends_up_current(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    def change(stream: str, number: int) -> None:
        if number == 2:
            erp.put("Customer", customer("C001", START - timedelta(seconds=1), name="Renamed mid-run"))

    memory = make_memory(engine, clock)
    erp.before_page = change
    runner_for(memory, erp).run()
    erp.before_page = None
    clock.advance(timedelta(minutes=5))
    runner_for(memory, erp).run()

    assert rows(engine, party_t)["C001"].name == "Renamed mid-run"
    assert len(rows(engine, party_t)) == 7


def test_key_scan_marks_only_this_streams_kinds_deleted(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    erp.add_stream("Vendor", "party")
    erp.put("Vendor", vendor("V001", T0))
    erp.add_stream("Invoice", "document")
    erp.put("Invoice", invoice("AR0001", T0))
    memory = make_memory(engine, clock, key_scan_interval_hours=24)
    runner_for(memory, erp).run()

    erp.delete("Customer", "C002")
    clock.advance(timedelta(hours=1))
    early = runner_for(memory, erp).run(streams=["Customer"]).results[0]
    assert (early.key_scan, early.deleted) == (False, 0)

    clock.advance(timedelta(hours=24))
    late = runner_for(memory, erp).run(streams=["Customer"]).results[0]
    assert (late.key_scan, late.deleted) == (True, 1)
    parties = rows(engine, party_t)
    assert parties["C002"].deleted_at == clock.now()
    assert parties["V001"].deleted_at is None and parties["C001"].deleted_at is None
    assert rows(engine, document_t)["INV/AR0001"].deleted_at is None


def test_full_flag_always_scans_keys(engine: Engine, erp: StubAdapter, clock: FrozenClock) -> None:
    memory = make_memory(engine, clock)
    runner_for(memory, erp).run()
    erp.delete("Customer", "C007")

    result = runner_for(memory, erp).run(full=True).results[0]

    assert (result.mode, result.key_scan, result.deleted, result.unchanged) == ("full", True, 1, 6)


def test_reappearing_record_is_undeleted(engine: Engine, erp: StubAdapter, clock: FrozenClock) -> None:
    memory = make_memory(engine, clock)
    runner_for(memory, erp).run()
    gone = erp.streams_by_name["Customer"].records["C003"]
    erp.delete("Customer", "C003")
    runner_for(memory, erp).run(full=True)
    erp.put("Customer", gone)
    runner_for(memory, erp).run(full=True)
    assert rows(engine, party_t)["C003"].deleted_at is None


def test_unknown_stream_is_a_config_error_naming_the_streams(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    with pytest.raises(ConfigError, match="no stream Nope; its streams: Customer"):
        runner_for(make_memory(engine, clock), erp).run(streams=["Nope"])


def test_run_left_running_by_a_killed_process_is_marked_abandoned(
    engine: Engine, erp: StubAdapter, clock: FrozenClock
) -> None:
    with engine.begin() as conn:
        conn.execute(run_t.insert().values(tenant="acme", stream="Customer", status="running", started_at=T0))
    runner_for(make_memory(engine, clock), erp).run()
    assert [r.status for r in runs(engine)] == ["abandoned", "ok"]


def test_case_stream_triggers_episodic_ingest(engine: Engine, clock: FrozenClock) -> None:
    from connector.erp.records import CaseRecord

    erp = StubAdapter("acme")
    erp.add_stream("Case", "case")
    erp.put(
        "Case",
        CaseRecord("acme", "CS0001", "C001", subject="Late delivery", is_closed=True, source_modified_at=T0),
    )
    memory = make_memory(engine, clock)
    ingested: list[str] = []

    class Episodic:
        def ingest_erp_cases(self, tenant: str) -> int:
            ingested.append(tenant)
            return 1

    messages: list[str] = []
    reporter = _Recorder(messages)
    report = runner_with_cases(memory, erp, Episodic(), reporter).run()  # type: ignore[arg-type]
    assert report.ok and ingested == ["acme"]
    assert "ingested 1 closed case(s) into episodic memory" in messages


def test_failed_episodic_ingest_is_reported_and_the_cases_stay_stored(
    engine: Engine, clock: FrozenClock
) -> None:
    from connector.erp.records import CaseRecord
    from connector.errors import StoreError

    erp = StubAdapter("acme")
    erp.add_stream("Case", "case")
    erp.put("Case", CaseRecord("acme", "CS0001", "C001", is_closed=True, source_modified_at=T0))
    memory = make_memory(engine, clock)

    class Episodic:
        def ingest_erp_cases(self, tenant: str) -> int:
            raise StoreError("chroma is unreachable")

    report = runner_with_cases(memory, erp, Episodic(), _Recorder([])).run()  # type: ignore[arg-type]
    (result,) = report.results
    assert result.error == "episodic ingest failed: StoreError: chroma is unreachable"
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT external_id FROM crm_case")).scalars().all() == ["CS0001"]


class _Recorder:
    def __init__(self, messages: list[str]) -> None:
        self.messages = messages

    def __enter__(self) -> _Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def stream_started(self, *args: object) -> None:
        pass

    def page_done(self, *args: object) -> None:
        pass

    def stream_finished(self, result: object) -> None:
        pass

    def message(self, level: str, text: str, **fields: object) -> None:
        self.messages.append(text)


SetUp = Callable[[StubAdapter], None]


class StopAfterPage(NullReporter):
    """Requests a stop (as SIGTERM would) once page ``page`` has been committed."""

    def __init__(self, stop: StopFlag, page: int) -> None:
        self.stop = stop
        self.page = page

    def page_done(self, tenant: str, stream: str, page: int, records: int, total_records: int) -> None:
        if page == self.page:
            self.stop.request("SIGTERM")


@pytest.mark.postgres
def test_a_large_first_load_refreshes_postgres_planner_statistics(
    pg_engine: Engine, clock: FrozenClock
) -> None:
    erp = StubAdapter("acme", page_size=500)
    erp.add_stream("Customer", "party")
    erp.put("Customer", *[customer(f"C{i:05d}", T0 + timedelta(seconds=i)) for i in range(1200)])

    runner_for(make_memory(pg_engine, clock), erp).run()

    with pg_engine.connect() as conn:
        analysed = conn.execute(
            sa.text("SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'party'")
        ).scalar_one()
        key_stats = conn.execute(
            sa.text("SELECT count(*) FROM pg_stats WHERE tablename = 'party' AND attname = 'external_id'")
        ).scalar_one()
    assert analysed and key_stats == 1


def test_statistics_cover_the_indexed_columns_not_the_raw_json() -> None:
    from connector.sync.analyze import indexed_columns

    assert indexed_columns("party") == ["id", "tenant", "kind", "external_id", "name"]
    assert {"tenant", "doc_type", "external_id", "party_external_id"} <= set(indexed_columns("document"))
    assert "raw" not in indexed_columns("document") and "extra" not in indexed_columns("party")
