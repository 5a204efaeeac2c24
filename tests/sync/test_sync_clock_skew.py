"""Clock skew cannot freeze the sync: an ERP stamp ahead of the connector's clock is read once per
run and stored at once, the watermark is clamped to the run's start and keeps moving, and a stamp
further ahead than ``sync.clock_skew_tolerance_s`` (or a watermark held back run after run) is a
warning in the run, in ``sync status`` and in ``doctor``, never ``ok``. SQLite and PostgreSQL."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
import sqlalchemy as sa
from rich.console import Console
from sqlalchemy.engine import Engine
from sync_stub import StubAdapter

from connector.clock import FrozenClock
from connector.commands.sync import print_status
from connector.erp.records import PartyRecord
from connector.memory import Memory
from connector.semantic.upsert import party_t
from connector.settings import Settings, SyncSettings, TenantSettings
from connector.sync.health import sync_verdict
from connector.sync.runlog import run_t
from connector.sync.state import state_t
from connector.sync.status import sync_status
from connector.testing.acumatica import FakeAcumatica
from connector.testing.server import serve

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
START = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def customer(ext: str, modified: datetime) -> PartyRecord:
    return PartyRecord(tenant="acme", kind="customer", external_id=ext, name=f"Customer {ext}",
                       credit_limit=Decimal("1000.00"), source_modified_at=modified)  # fmt: skip


class Rig:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.clock = FrozenClock(START)
        self.erp = StubAdapter("acme", page_size=3)
        self.erp.add_stream("Customer", "party")
        self.erp.put("Customer", *[customer(f"C{i:03d}", T0 + timedelta(minutes=i)) for i in range(1, 9)])
        self.settings = Settings(
            tenants=[TenantSettings(name="acme", kind="acumatica", base_url="http://127.0.0.1:9")],
            sync=SyncSettings(),
        )

    def run(self, **kw: Any) -> Any:
        memory = Memory(self.settings, clock=self.clock, engine=self.engine, llm=None)
        [result] = memory.sync_runner(adapter_factory=lambda tenant: self.erp).run(**kw).results
        return result

    def watermark(self) -> datetime | None:
        with self.engine.connect() as conn:
            return conn.execute(sa.select(state_t.c.watermark)).scalar()  # type: ignore[no-any-return]

    def stored(self) -> set[str]:
        with self.engine.connect() as conn:
            return set(conn.execute(sa.select(party_t.c.external_id)).scalars())

    def status(self) -> Any:
        [status] = sync_status(self.engine, now=self.clock.now(), expected_lag=timedelta(hours=1))
        return status

    def problems(self) -> str:
        with self.engine.connect() as conn:
            return str(
                conn.execute(sa.select(run_t.c.problems).order_by(run_t.c.id.desc()).limit(1)).scalar()
            )


@pytest.fixture
def rig(engine: Engine) -> Rig:
    return Rig(engine)


def test_a_stamp_two_minutes_ahead_is_read_once_and_the_watermark_moves(rig: Rig) -> None:
    rig.run()
    for _ in range(3):
        rig.clock.advance(timedelta(minutes=15))
        rig.erp.put("Customer", customer("C002", rig.clock.now() + timedelta(seconds=120)))  # ERP clock fast
        rig.erp.put(
            "Customer", *[customer(f"C00{i}", rig.clock.now() - timedelta(minutes=1)) for i in range(5, 9)]
        )
        reads = len(rig.erp.reads)

        result = rig.run()

        assert result.status == "ok"
        assert len(rig.erp.reads) - reads == 2  # one pass and one probe, not three of each
        assert rig.watermark() == rig.clock.now()  # the run's start: the watermark keeps moving
    status = rig.status()
    assert status.warnings == () and status.health == "ok"  # within the tolerance: no noise


def test_a_stamp_a_day_ahead_is_stored_at_once_and_warned_of(rig: Rig) -> None:
    rig.erp.put("Customer", customer("FUTURE", START + timedelta(days=1)))

    result = rig.run(full=True)

    assert "FUTURE" in rig.stored()
    assert result.status == "ok"
    assert rig.watermark() == START  # clamped to the run's start, not a day ahead
    assert (
        "clock skew: 1 record(s) stamped up to 1d00h ahead" in rig.problems() and "FUTURE" in rig.problems()
    )
    status = rig.status()
    assert status.health == "warn" and any(w.startswith("clock skew") for w in status.warnings)
    verdict, detail = sync_verdict(rig.engine, rig.settings, rig.clock.now())
    assert verdict == "warn" and "clock skew" in detail

    rig.clock.advance(timedelta(minutes=15))
    rig.erp.put("Customer", customer("C003", rig.clock.now() - timedelta(minutes=1)))
    assert rig.run().updated == 1  # later changes still arrive
    assert rig.watermark() == rig.clock.now()


def test_a_watermark_held_back_is_a_warning_in_status_and_doctor(rig: Rig) -> None:
    rig.run()
    rig.clock.advance(timedelta(minutes=10))
    bump: Iterator[int] = iter(range(1000))

    def always_changing(stream: str, number: int) -> None:
        rig.erp.put(stream, customer(f"Z{next(bump):04d}", rig.clock.now() + timedelta(seconds=1)))

    rig.erp.before_page = always_changing
    result = rig.run()

    assert result.status == "ok"
    status = rig.status()
    assert status.watermark_held_runs == 1
    assert status.health == "warn" and "watermark held back" in status.warnings[0]
    verdict, detail = sync_verdict(rig.engine, rig.settings, rig.clock.now())
    assert verdict == "warn" and "watermark held back" in detail

    rig.erp.before_page = None
    rig.clock.advance(timedelta(minutes=10))
    rig.run()
    assert rig.status().health == "ok"  # a run that read the window stably clears it


def test_acumatica_record_stamped_a_day_ahead_reaches_the_store(engine: Engine) -> None:
    clock = FrozenClock(START)
    fake = FakeAcumatica(seed=3, clock=clock, customers=8, vendors=0, invoices=0, sales_orders=0,
                         bills=0, cases=0)  # fmt: skip
    key = fake.keys("Customer")[2]
    fake.modify("Customer", key, {"CustomerName": "Renamed"}, modified_at=START + timedelta(days=1))
    server = serve(fake)
    try:
        tenant = fake.tenant_settings("acme", base_url=server.url, streams=["Customer"], page_size=3)
        memory = Memory(Settings(tenants=[tenant]), clock=clock, engine=engine, llm=None)
        [result] = memory.sync_runner().run(full=True).results
        assert result.status == "ok" and result.inserted == 8
        with engine.connect() as conn:
            name = conn.execute(sa.select(party_t.c.name).where(party_t.c.external_id == key)).scalar()
        assert name == "Renamed"
    finally:
        server.stop()


def test_the_status_table_shows_an_ok_run_with_a_warning_as_such(rig: Rig) -> None:
    rig.erp.put("Customer", customer("FUTURE", START + timedelta(days=1)))
    rig.run(full=True)
    out = io.StringIO()
    print_status([rig.status()], Console(file=out, width=120), rig.clock.now())
    text = out.getvalue()
    assert "ok, warn" in text and "warning: clock skew" in text
    assert json.loads(json.dumps(rig.status().as_dict(), default=str))["health"] == "warn"
