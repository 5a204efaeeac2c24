"""One bad record never blocks a stream: text no store can hold (a NUL, a lone surrogate) in one
ERP record is cleaned or skipped per ``sync.on_malformed_record`` and named in the run's problems,
and the other records of the stream keep arriving. Real HTTP to the fake Acumatica, on SQLite and
PostgreSQL, through the COPY path (first load) and the classify-and-upsert path (later runs)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.memory import Memory
from connector.semantic.upsert import party_t
from connector.settings import Settings, SyncSettings
from connector.sync.runlog import run_t
from connector.sync.status import sync_status
from connector.testing.acumatica import FakeAcumatica
from connector.testing.server import ServedFake, serve

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


class Rig:
    def __init__(self, engine: Engine) -> None:
        self.clock = FrozenClock(NOW)
        self.fake = FakeAcumatica(seed=7, clock=self.clock, customers=12, vendors=0, invoices=0,
                                  sales_orders=0, bills=0, cases=0)  # fmt: skip
        self.server: ServedFake = serve(self.fake)
        self.engine = engine
        self.keys = sorted(self.fake.keys("Customer"))

    def run(self, **sync: Any) -> Any:
        url = self.server.url
        tenant = self.fake.tenant_settings("acme", base_url=url, streams=["Customer"], page_size=5)
        settings = Settings(tenants=[tenant], sync=SyncSettings(**sync))
        memory = Memory(settings, clock=self.clock, engine=self.engine, llm=None)
        self.clock.advance(timedelta(minutes=5))
        [result] = memory.sync_runner().run().results
        return result

    def name(self, key: str) -> str | None:
        with self.engine.connect() as conn:
            return conn.execute(  # type: ignore[no-any-return]
                sa.select(party_t.c.name).where(party_t.c.external_id == key)
            ).scalar_one_or_none()

    def last_problems(self) -> str:
        with self.engine.connect() as conn:
            latest = sa.select(run_t.c.problems).order_by(run_t.c.id.desc()).limit(1)
            return str(conn.execute(latest).scalar())


@pytest.fixture
def rig(engine: Engine) -> Iterator[Rig]:
    made = Rig(engine)
    yield made
    made.server.stop()


@pytest.mark.parametrize("bad", ["Acme\x00 Corp", "Acme \ud800Corp"], ids=["nul", "lone-surrogate"])
def test_unstorable_text_is_cleaned_on_the_first_load_and_later_edits(rig: Rig, bad: str) -> None:
    first, second = rig.keys[1], rig.keys[7]
    rig.fake.modify("Customer", first, {"CustomerName": bad})

    result = rig.run()  # first load: COPY on PostgreSQL, executemany on SQLite

    assert result.status == "ok" and result.inserted == 12
    assert_stored(rig, first, bad)

    rig.fake.modify("Customer", second, {"CustomerName": bad})
    rig.fake.modify("Customer", rig.keys[0], {"CustomerName": "Renamed Ltd"})
    result = rig.run()  # the classify-and-upsert path

    assert result.status == "ok"
    assert rig.name(rig.keys[0]) == "Renamed Ltd"  # the other customers' changes still arrive
    assert_stored(rig, second, bad)


def assert_stored(rig: Rig, key: str, bad: str) -> None:
    """Cleaned and named in the run's problems, unless the store can hold it (SQLite holds a NUL)."""
    if rig.engine.dialect.name == "sqlite" and "\x00" in bad:
        assert rig.name(key) == bad
        return
    assert rig.name(key) in {"Acme Corp", "Acme \ufffdCorp"}
    assert f"cleaned '{key}'" in rig.last_problems()


def test_skip_leaves_the_record_out_and_names_it(rig: Rig) -> None:
    bad = rig.keys[3]
    rig.fake.modify("Customer", bad, {"CustomerName": "Bad\ud800Name"})

    result = rig.run(on_malformed_record="skip")

    assert result.status == "ok" and result.inserted == 11 and result.skipped == 1
    assert rig.name(bad) is None
    assert f"skipped '{bad}'" in rig.last_problems()
    [status] = sync_status(rig.engine, now=rig.clock.now(), expected_lag=timedelta(hours=1))
    assert f"skipped '{bad}'" in (status.last_run_problems or "")  # what `connector sync status` shows


def test_fail_stops_the_stream_naming_the_record(rig: Rig) -> None:
    bad = rig.keys[3]
    rig.fake.modify("Customer", bad, {"CustomerName": "Bad\ud800Name"})

    result = rig.run(on_malformed_record="fail")

    assert result.status == "failed"
    error = result.error or ""
    assert f"record '{bad}'" in error and "on_malformed_record = 'fail'" in error
