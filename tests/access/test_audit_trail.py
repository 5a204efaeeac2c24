"""The audit trail: who wrote, erased or read what, in which scope and when; never the content.

On SQLite and PostgreSQL. The library's writes record events under the current caller's name;
an erasure scrubs the customer's id from earlier events and leaves a tombstone without it.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.access import Principal, acting_as
from connector.audit import ERASE, audit_t, forget_customer, list_events, record, record_quietly
from connector.audit.deferred import DeferredRecorder
from connector.audit.part import AuditTrail
from connector.clock import FrozenClock
from connector.settings import AuditSettings

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
AGENT = Principal(name="support-agent", role="write", tenants=None, customers=None)


def seed(engine: Engine) -> None:
    record(engine, "support-agent", "turn.record", "north", "C001", at=T0)
    record(engine, "support-agent", "mcp.get_context", "north", "C002", at=T0 + timedelta(hours=1))
    record(engine, "cli", "case.record", "south", "C001", at=T0 + timedelta(hours=2))
    later = T0 + timedelta(hours=3)
    record(engine, "dashboard", "mcp.get_context", "south", "C003", outcome="refused", at=later)


def test_events_are_listed_newest_first_and_filtered(engine: Engine) -> None:
    seed(engine)
    everything = list_events(engine)
    actions = [e.action for e in everything]
    assert actions == ["mcp.get_context", "case.record", "mcp.get_context", "turn.record"]
    assert everything[0].outcome == "refused" and everything[0].at == T0 + timedelta(hours=3)
    assert [e.customer_id for e in list_events(engine, who="support-agent")] == ["C002", "C001"]
    assert [e.who for e in list_events(engine, action="mcp")] == ["dashboard", "support-agent"]
    assert list_events(engine, action="mcp.get") == []  # a prefix of a word is not a sub-action
    assert [e.tenant for e in list_events(engine, customer_id=" C001 ")] == ["south", "north"]
    window = list_events(engine, since=T0 + timedelta(hours=1), until=T0 + timedelta(hours=3))
    assert [e.action for e in window] == ["case.record", "mcp.get_context"]
    assert {e.tenant for e in list_events(engine, tenants=frozenset({"north"}))} == {"north"}
    assert len(list_events(engine, limit=2)) == 2


def test_an_event_in_the_callers_transaction_rolls_back_with_it(engine: Engine) -> None:
    with pytest.raises(RuntimeError), engine.begin() as conn:
        record(conn, "cli", "fact.learn", "north", "C001")
        raise RuntimeError("the write failed")
    assert list_events(engine) == []


def test_an_id_that_breaks_the_id_rule_is_not_stored_but_the_event_is(engine: Engine) -> None:
    record(engine, "cli", "mcp.get_context", "north", "x" * 500)
    record(engine, "cli", "mcp.get_context", "north", "<script>alert(1)</script>")
    events = list_events(engine)
    assert [e.customer_id for e in events] == ["<script>alert(1)</script>", None]  # data, stored as given


def test_erasure_scrubs_the_customer_from_earlier_events_and_leaves_a_tombstone(engine: Engine) -> None:
    seed(engine)
    scrubbed = forget_customer(engine, "cli", "north", "C001", at=T0 + timedelta(days=1))
    assert scrubbed == 1
    with engine.connect() as conn:
        remaining = conn.execute(sa.select(audit_t.c.tenant, audit_t.c.customer_id)).all()
    assert ("north", "C001") not in remaining and ("south", "C001") in remaining  # other tenant's C001
    tombstone = list_events(engine, action=ERASE)
    assert [(e.who, e.tenant, e.customer_id, e.at) for e in tombstone] == [
        ("cli", "north", None, T0 + timedelta(days=1))
    ]


def test_the_trail_part_records_as_the_current_caller_and_applies_retention(engine: Engine) -> None:
    clock = FrozenClock(T0)
    part = AuditTrail(engine, clock=clock, settings=AuditSettings(retention_days=30))
    with part.writing("fact.learn", "north", "C001"):
        pass  # a write without a transaction of its own: the event is recorded after it
    with acting_as(AGENT):
        clock.advance(timedelta(days=40))
        with part.writing("turn.record", "north", "C001"):
            pass
    assert [(e.who, e.at) for e in list_events(engine)] == [
        ("support-agent", T0 + timedelta(days=40)),
        ("cli", T0),
    ]
    assert part.apply_retention().removed == 1
    assert [e.who for e in list_events(engine)] == ["support-agent"]


def test_a_disabled_trail_records_no_writes(engine: Engine) -> None:
    with AuditTrail(engine, clock=FrozenClock(T0), settings=AuditSettings(enabled=False)).writing(
        "pin", "n", "C"
    ):
        pass
    assert list_events(engine) == []


def test_an_event_that_cannot_be_stored_is_a_warning_not_a_failed_write(
    sqlite_engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    with sqlite_engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE audit_event"))
    with caplog.at_level(logging.WARNING, logger="connector.audit"):
        assert record_quietly(sqlite_engine, "cli", "fact.learn", "north", "SECRETCUST") is False
    assert "fact.learn" in caplog.text and "north" in caplog.text and "SECRETCUST" not in caplog.text


def test_deferred_events_are_written_by_the_worker_and_flushed_on_close(engine: Engine) -> None:
    recorder = DeferredRecorder()
    for n in range(25):
        recorder.submit(engine, "dashboard", "mcp.get_context", "north", f"C{n:03d}", outcome="ok", at=T0)
    recorder.close()
    assert len(list_events(engine, limit=100)) == 25


def test_deferred_events_beyond_the_limit_are_dropped_with_a_warning(
    sqlite_engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = DeferredRecorder(limit=1)
    recorder._start = lambda: None  # type: ignore[method-assign]  # no worker: the queue stays full
    with caplog.at_level(logging.WARNING, logger="connector.audit"):
        for _ in range(3):
            recorder.submit(
                sqlite_engine, "cli", "mcp.get_context", "north", "SECRETCUST", outcome="ok", at=T0
            )
    assert recorder.dropped == 2 and "dropped" in caplog.text and "SECRETCUST" not in caplog.text
