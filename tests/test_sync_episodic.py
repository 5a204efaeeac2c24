"""After the Case stream, closed ERP cases reach the real episodic memory (once)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import httpx
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from test_sync_runner import _Recorder

from connector.clock import FrozenClock
from connector.memory import Memory
from connector.semantic.upsert import case_t
from connector.settings import Settings
from connector.testing.acumatica import FakeAcumatica


def test_closed_cases_are_ingested_into_episodic_memory_once(tmp_path: Path, sqlite_engine: Engine) -> None:
    clock = FrozenClock(datetime(2026, 3, 10, 12, tzinfo=UTC))
    fake = FakeAcumatica(
        seed=4, customers=10, vendors=0, invoices=10, sales_orders=0, bills=0, cases=12, clock=clock
    )
    tenant = fake.tenant_settings("acme", streams=["Case"])
    memory = Memory(
        Settings(data_dir=tmp_path / "data", tenants=[tenant]), clock=clock, engine=sqlite_engine, llm=None
    )

    def adapter_factory(t: object) -> object:
        from connector.adapters.factory import open_adapter

        return open_adapter(
            tenant, sync=memory.settings.sync, clock=clock, transport=httpx.MockTransport(fake.handle)
        )

    messages: list[str] = []
    first = memory.sync_runner(adapter_factory=adapter_factory, reporter=_Recorder(messages)).run()  # type: ignore[arg-type]

    assert first.ok
    with sqlite_engine.connect() as conn:
        closed = conn.execute(sa.select(sa.func.count()).where(case_t.c.is_closed)).scalar_one()
        recorded = conn.execute(
            sa.select(sa.func.count()).where(case_t.c.episodic_hash == case_t.c.content_hash)
        ).scalar_one()
    assert closed > 0 and recorded == closed
    assert f"ingested {closed} closed case(s) into episodic memory" in messages

    memory.sync_runner(adapter_factory=adapter_factory, reporter=_Recorder(messages)).run()  # type: ignore[arg-type]
    assert messages[-1] == "ingested 0 closed case(s) into episodic memory"
