"""The library's writes leave audit events under the caller's name, without their content, and
``forget`` leaves the erased customer in no event (SQLite and PostgreSQL)."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.access import Principal, acting_as
from connector.audit import audit_t, list_events
from connector.memory import Memory
from connector.settings import Settings

AGENT = Principal(name="support-agent", role="write", tenants=None, customers=None)


def test_writes_are_recorded_with_who_what_and_scope_but_no_content(
    settings: Settings, engine: Engine
) -> None:
    with Memory(settings, engine=engine, llm=None) as memory:
        tenant = memory.tenant_name(None)
        memory.record_turn("s-1", "C001", "user", "my card number is 4111")
        with acting_as(AGENT):
            memory.pin("s-1", "refund", "EUR 120")
            memory.learn("C001", "Prefers e-mail for dispute updates")
        events = list_events(memory.engine)
        with memory.engine.connect() as conn:
            stored = " ".join(str(v) for row in conn.execute(sa.select(audit_t)) for v in row)
    assert [(e.who, e.action, e.tenant, e.customer_id) for e in events] == [
        ("support-agent", "fact.learn", tenant, "C001"),
        ("support-agent", "pin", tenant, "C001"),
        ("cli", "turn.record", tenant, "C001"),
    ]
    assert "4111" not in stored and "EUR" not in stored and "e-mail" not in stored


def test_forget_leaves_only_a_tombstone_without_the_customer(settings: Settings, engine: Engine) -> None:
    with Memory(settings, engine=engine, llm=None) as memory:
        memory.record_turn("s-1", "C001", "user", "hello")
        memory.record_turn("s-2", "C002", "user", "hello")
        with acting_as(AGENT):
            report = memory.forget("C001")
        events = list_events(memory.engine)
    assert report["audit_events_scrubbed"] == 1
    assert "C001" not in {e.customer_id for e in events}
    tombstone = events[0]
    assert (tombstone.who, tombstone.action) == ("support-agent", "customer.erase")
    assert tombstone.customer_id is None
    assert ("turn.record", "C002") in {(e.action, e.customer_id) for e in events}  # others untouched
