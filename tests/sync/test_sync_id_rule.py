"""One id rule at the sync: a record whose id breaks it (over 128 characters, a control character)
is skipped and named while the stream goes on, an id in another Unicode form is stored in NFC (the
form every API call uses), and a value wider than its column is cut, not a failed page. Real HTTP to
the fake Acumatica, on SQLite and PostgreSQL (whose columns refuse what is too long)."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.errors import ScopeError
from connector.memory import Memory
from connector.scope import require_id
from connector.semantic.upsert import party_t
from connector.settings import Settings, SyncSettings
from connector.sync.runlog import run_t
from connector.testing.acumatica import FakeAcumatica
from connector.testing.server import ServedFake, serve

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
LONG_ID = "C" * 129
NFD_ID = unicodedata.normalize("NFD", "T3CAFÉ")


class Rig:
    def __init__(self, engine: Engine) -> None:
        self.clock = FrozenClock(NOW)
        self.fake = FakeAcumatica(seed=7, clock=self.clock, customers=12, vendors=0, invoices=6,
                                  sales_orders=0, bills=0, cases=0)  # fmt: skip
        self.server: ServedFake = serve(self.fake)
        self.engine = engine
        self.template = self.fake.record("Customer", self.fake.keys("Customer")[0])

    def add_customer(self, customer_id: str, **values: Any) -> None:
        self.fake.add("Customer", {**self.template, "CustomerID": customer_id, **values})

    def memory(self, **sync: Any) -> Memory:
        tenant = self.fake.tenant_settings(
            "acme", base_url=self.server.url, streams=["Customer", "Invoice"], page_size=5
        )
        return Memory(Settings(tenants=[tenant], sync=SyncSettings(**sync)), clock=self.clock,
                      engine=self.engine, llm=None)  # fmt: skip

    def run(self, **sync: Any) -> dict[str, Any]:
        self.clock.advance(timedelta(minutes=5))
        return {r.stream: r for r in self.memory(**sync).sync_runner().run().results}

    def ids(self, table: sa.Table) -> set[str]:
        with self.engine.connect() as conn:
            return set(conn.execute(sa.select(table.c.external_id)).scalars())

    def problems(self, stream: str) -> str:
        with self.engine.connect() as conn:
            latest = (
                sa.select(run_t.c.problems)
                .where(run_t.c.stream == stream)
                .order_by(run_t.c.id.desc())
                .limit(1)
            )
            return str(conn.execute(latest).scalar())


@pytest.fixture
def rig(engine: Engine) -> Iterator[Rig]:
    made = Rig(engine)
    yield made
    made.server.stop()


def test_a_record_outside_the_id_rule_is_skipped_and_named_and_the_streams_go_on(rig: Rig) -> None:
    rig.add_customer(LONG_ID)
    rig.add_customer("BAD\x07BELL")
    invoice = rig.fake.record("Invoice", rig.fake.keys("Invoice")[0])
    rig.fake.add("Invoice", {**invoice, "ReferenceNbr": "AR999001", "Customer": LONG_ID})

    results = rig.run()

    customers, invoices = results["Customer"], results["Invoice"]
    assert customers.status == "ok" and invoices.status == "ok"
    assert customers.inserted == 12 and customers.skipped == 2
    assert rig.ids(party_t) == set(rig.fake.keys("Customer")) - {LONG_ID, "BAD\x07BELL"}
    assert invoices.inserted == 6 and invoices.skipped == 1
    assert "129 characters long (at most 128)" in rig.problems("Customer")
    assert "control character" in rig.problems("Customer")
    assert LONG_ID[:40] in rig.problems("Customer") and LONG_ID not in rig.problems("Customer")
    assert "party_external_id is 129 characters long" in rig.problems("Invoice")


def test_fail_policy_stops_the_stream_at_a_record_outside_the_id_rule(rig: Rig) -> None:
    rig.add_customer(LONG_ID)

    results = rig.run(on_malformed_record="fail")

    assert results["Customer"].status == "failed"
    assert "129 characters long" in (results["Customer"].error or "")
    assert results["Invoice"].status == "ok"  # the other stream still runs


def test_an_id_in_another_unicode_form_is_stored_as_every_api_call_spells_it(rig: Rig) -> None:
    rig.add_customer(NFD_ID)

    assert rig.run()["Customer"].status == "ok"

    assert require_id(NFD_ID) in rig.ids(party_t)  # the NFC form, which the API reaches
    assert NFD_ID not in rig.ids(party_t)
    rig.clock.advance(timedelta(days=2))
    result = rig.run()["Customer"]  # a full key scan: the stored NFC form is the ERP's record
    assert result.deleted == 0 and require_id(NFD_ID) in rig.ids(party_t)


def test_a_value_wider_than_its_column_is_cut_and_named(rig: Rig) -> None:
    rig.add_customer("WIDENAME", CustomerName="N" * 300)

    result = rig.run()["Customer"]

    assert result.status == "ok" and result.inserted == 13
    with rig.engine.connect() as conn:
        name = conn.execute(sa.select(party_t.c.name).where(party_t.c.external_id == "WIDENAME")).scalar()
    assert name is not None and name.startswith("NNN")
    if rig.engine.dialect.name == "postgresql":  # SQLite stores it whole; PostgreSQL's column refuses it
        assert len(name) == 255
        assert "cut name to the column width" in rig.problems("Customer")


@pytest.mark.parametrize("bad", ["X" * 129, "A\x1bB", "A\x85B", "  ", "A\x00B"])
def test_the_api_refuses_what_the_sync_skips(bad: str) -> None:
    with pytest.raises(ScopeError):
        require_id(bad)


def test_the_api_takes_any_unicode_form_as_the_same_id() -> None:
    assert require_id(f"  {NFD_ID} ") == "T3CAFÉ"
    assert require_id("C" * 128) == "C" * 128
    assert require_id("ACME\u202eX") == "ACME\u202eX"  # a bidi mark is not a control character
