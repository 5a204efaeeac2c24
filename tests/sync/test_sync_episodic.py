"""After the Case stream, closed ERP cases reach the real episodic memory (once)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from test_sync_runner import _Recorder

from connector.adapters.factory import open_adapter
from connector.clock import FrozenClock
from connector.episodic.tables import CASES
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


def test_a_customer_erased_while_the_ingest_runs_stays_out_and_the_others_go_on(
    tmp_path: Path, sqlite_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FrozenClock(datetime(2026, 3, 10, 12, tzinfo=UTC))
    fake = FakeAcumatica(
        seed=4, customers=3, vendors=0, invoices=10, sales_orders=0, bills=0, cases=20, clock=clock
    )
    tenant = fake.tenant_settings("acme", streams=["Case"])
    memory = Memory(
        Settings(data_dir=tmp_path / "data", tenants=[tenant]), clock=clock, engine=sqlite_engine, llm=None
    )
    memory.sync_runner(
        adapter_factory=lambda t: open_adapter(
            tenant, sync=memory.settings.sync, clock=clock, transport=httpx.MockTransport(fake.handle)
        )
    ).run()
    with sqlite_engine.connect() as conn:
        owners = [
            r[0] for r in conn.execute(sa.select(case_t.c.customer_external_id).where(case_t.c.is_closed))
        ]
    erased = owners[0]
    memory.forget(erased, tenant="acme")  # forget ran after the ingest read its list of erased customers
    with sqlite_engine.begin() as conn:  # every closed case pending again, as in a first ingest
        conn.execute(sa.update(case_t).values(episodic_hash=None))
    erasures = memory.episodic.erasures
    first = [True]

    def stale(name: str) -> set[str]:
        if first.pop() if first else False:
            return set()
        return type(erasures).erased_digests(erasures, name)

    monkeypatch.setattr(erasures, "erased_digests", stale)
    memory.episodic.ingest_erp_cases("acme")  # before: ErasedCustomerError, the stream failed

    with sqlite_engine.connect() as conn:
        by_customer: dict[str, int] = dict(
            conn.execute(sa.select(CASES.c.customer_id, sa.func.count()).group_by(CASES.c.customer_id)).all()
        )
        done = conn.execute(
            sa.select(sa.func.count()).where(case_t.c.is_closed, case_t.c.episodic_hash.is_not(None))
        ).scalar_one()
    assert erased not in by_customer
    assert sum(by_customer.values()) == done == sum(1 for o in owners if o != erased) > 0
