"""Time anchored on an ERP event ("before the credit hold") is dated by the customer's own ERP
history and narrows both recalls like a date; an event the history lacks narrows nothing
(SQLite and PostgreSQL, embedded Chroma, the offline embedding model)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.conversations.recall import RecallOptions
from connector.memory import Memory
from connector.semantic.tracking import change_t
from connector.settings import ChromaSettings, ConversationSettings, EpisodicSettings, Settings

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
HELD = "AHOLD"  # went on credit hold on 2026-02-01, credit limit raised on 2026-01-10
NEVER_HELD = "ANOHOLD"  # the same conversations and cases, no ERP history of its own
PLAIN = RecallOptions(before=0, after=0)


@pytest.fixture
def memory(engine: Engine, tmp_path: Path) -> Iterator[Memory]:
    settings = Settings(
        data_dir=tmp_path / "data",
        chroma=ChromaSettings(path=tmp_path / "chroma"),
        conversations=ConversationSettings(enabled=True),
        episodic=EpisodicSettings(allow_unknown_customers=True),
    )
    m = Memory(settings, clock=FrozenClock(NOW), llm=None, engine=engine)
    seed_history(m)
    for customer in (HELD, NEVER_HELD):
        seed_turns(m, customer)
        seed_cases(m, customer)
    yield m
    m.close()


def change(
    memory: Memory, entity: str, field: str, old: str, new: str, at: datetime, *, number: str | None = None
) -> dict[str, object]:
    return {
        "tenant": memory.tenant_name(None),
        "entity": entity,
        "kind": "customer" if entity == "party" else "invoice",
        "external_id": HELD if entity == "party" else f"invoice/{number}",
        "number": number,
        "party_kind": "customer",
        "party_external_id": HELD,
        "field": field,
        "value_type": "money" if field in ("credit_limit", "balance") else "text",
        "old_value": old,
        "new_value": new,
        "currency": "USD" if field in ("credit_limit", "balance") else None,
        "erp_changed_at": at,
        "seen_at": at,
    }


def seed_history(memory: Memory) -> None:
    rows = [
        change(memory, "party", "credit_limit", "50000", "80000", datetime(2026, 1, 10, tzinfo=UTC)),
        change(
            memory, "document", "balance", "1250", "0", datetime(2026, 1, 20, tzinfo=UTC), number="AR000123"
        ),
        change(memory, "party", "status", "Active", "Credit Hold", datetime(2026, 2, 1, tzinfo=UTC)),
    ]
    with memory.engine.begin() as conn:
        conn.execute(sa.insert(change_t), rows)


SAID = [
    (
        "dec",
        datetime(2025, 12, 15, 9, tzinfo=UTC),
        "We agreed to ship the pallets by sea freight to save costs.",
    ),
    ("jan", datetime(2026, 1, 15, 9, tzinfo=UTC), "We agreed the pallets go by rail this time."),
    (
        "feb",
        datetime(2026, 2, 10, 9, tzinfo=UTC),
        "We agreed to ship the pallets by air freight after prepayment.",
    ),
]


def seed_turns(memory: Memory, customer: str) -> None:
    memory.import_conversations(
        [
            {"customer": customer, "session": f"{customer}-{name}", "role": "user", "content": text,
             "occurred_at": at.isoformat()}
            for name, at, text in SAID
        ],
        allow_unknown_customers=True,
    )  # fmt: skip


def seed_cases(memory: Memory, customer: str) -> None:
    for name, at, text in SAID:
        memory.record_case(
            customer, text, "Shipment booked as agreed.", case_id=f"{customer}-{name}", occurred_at=at
        )


def sessions(memory: Memory, customer: str, query: str, options: RecallOptions = PLAIN) -> list[str]:
    hits = memory.recall_conversations(customer, query, k=5, options=options)
    return [h.session_id.removeprefix(f"{customer}-") for h in hits]


def cases(memory: Memory, customer: str, query: str) -> list[str]:
    return [h.case_id.removeprefix(f"{customer}-") for h in memory.recall_cases(customer, query, k=5)]


@pytest.mark.parametrize(
    ("phrase", "expected"),
    [
        ("before the credit hold", {"dec", "jan"}),
        ("since they went on hold", {"feb"}),
        ("after the credit limit was raised", {"jan", "feb"}),
        ("when invoice AR000123 was still open", {"dec", "jan"}),
    ],
)
def test_an_erp_event_in_the_question_narrows_turn_recall_to_its_side(
    memory: Memory, phrase: str, expected: set[str]
) -> None:
    assert set(sessions(memory, HELD, "what did we agree about shipping the pallets")) == {
        "dec",
        "jan",
        "feb",
    }
    assert set(sessions(memory, HELD, f"what did we agree about shipping the pallets {phrase}?")) == expected


@pytest.mark.parametrize(
    ("phrase", "expected"),
    [("before the credit hold", {"dec", "jan"}), ("since they went on hold", {"feb"})],
)
def test_an_erp_event_in_the_question_narrows_case_recall_to_its_side(
    memory: Memory, phrase: str, expected: set[str]
) -> None:
    assert set(cases(memory, HELD, f"pallet shipping agreed {phrase}")) == expected


def test_the_event_is_dated_as_of_the_question(memory: Memory) -> None:
    # asked on 2026-01-25, the hold of 2026-02-01 had not happened: nothing to anchor on
    as_of = datetime(2026, 1, 25, tzinfo=UTC)
    hits = memory.recall_conversations(
        HELD, "what did we agree about the pallets before the credit hold?", k=5, as_of=as_of, options=PLAIN
    )
    assert {h.session_id for h in hits} == {f"{HELD}-dec", f"{HELD}-jan"}  # as_of alone leaves feb out


def test_an_event_missing_from_the_history_narrows_nothing(memory: Memory) -> None:
    # the same question narrows for the customer whose history holds the hold, but another
    # customer's hold never dates this customer's question: its ranking is the one without time
    query = "what did we agree about shipping the pallets before the credit hold?"
    unread = RecallOptions(before=0, after=0, dates_in_query=False)
    assert set(sessions(memory, HELD, query)) == {"dec", "jan"}
    assert sessions(memory, NEVER_HELD, query) == sessions(memory, NEVER_HELD, query, unread)
    assert set(sessions(memory, NEVER_HELD, query)) == {"dec", "jan", "feb"}
    assert set(cases(memory, NEVER_HELD, "pallet shipping agreed before the credit hold")) == {
        "dec",
        "jan",
        "feb",
    }
