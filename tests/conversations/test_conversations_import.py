"""Importing a chat history: dates kept, recallable as soon as the import returns (no flush), hits
carrying the caller's message id, retention counted from each turn's own date, a re-import adding
nothing; and the same through ``connector conversations import`` (SQLite + PostgreSQL, embedded
Chroma, the offline embedding model)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from connector.cli import main
from connector.clock import FrozenClock
from connector.memory import Memory
from connector.settings import ChromaSettings, ConversationSettings, Settings, load_settings

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CUSTOMER = "ABARTENDE"


@pytest.fixture
def memory(engine: Engine, tmp_path: Path) -> Iterator[Memory]:
    settings = Settings(
        data_dir=tmp_path / "data", chroma=ChromaSettings(path=tmp_path / "chroma"),
        conversations=ConversationSettings(enabled=True),
    )  # fmt: skip
    memory = Memory(settings, clock=FrozenClock(NOW), llm=None, engine=engine)
    yield memory
    memory.close()


def history(days_ago: int, session: str, lines: list[str], now: datetime = NOW) -> list[dict[str, Any]]:
    start = now - timedelta(days=days_ago)
    return [
        {
            "customer": CUSTOMER,
            "session": session,
            "role": "user" if i % 2 == 0 else "assistant",
            "content": text,
            "occurred_at": (start + timedelta(minutes=i)).isoformat(),
            "external_id": f"{session}/msg-{i}",
        }
        for i, text in enumerate(lines)
    ]


DOCK = [
    "Hello, Anna from purchasing here.",
    "Hi Anna, how can I help?",
    "We moved our receiving dock; deliveries should go to the Tacoma warehouse now.",
    "Noted: the Tacoma warehouse is your new delivery address.",
]
REFUND = [
    "Carlos here about the double charge.",
    "I see both charges of 312.40; I will reverse one.",
]
OLD = [
    "Years ago: please ship everything to the Spokane depot.",
    "Understood, the Spokane depot.",
]


def test_imported_turns_are_recallable_when_the_import_returns_with_their_ids_and_dates(
    memory: Memory,
) -> None:
    records = history(40, "crm-881", DOCK) + history(10, "crm-902", REFUND)

    report = memory.import_conversations(records, allow_unknown_customers=True)

    assert (report.sessions, report.turns, report.indexed, report.archived) == (2, 6, 6, 0)
    hits = memory.recall_conversations(CUSTOMER, "Where do deliveries go now?", k=1)  # no flush
    (hit,) = hits
    assert hit.session_id == "crm-881" and hit.turn.content == DOCK[2]
    assert hit.external_id == "crm-881/msg-2"
    assert hit.turn.created_at == NOW - timedelta(days=40) + timedelta(minutes=2)
    assert [t.external_id for t in hit.window] == [f"crm-881/msg-{i}" for i in range(4)]


def test_a_reimport_adds_nothing_and_new_messages_of_a_session_are_appended(memory: Memory) -> None:
    records = history(40, "crm-881", DOCK)
    memory.import_conversations(records[:3], allow_unknown_customers=True)

    again = memory.import_conversations(records, allow_unknown_customers=True)

    assert (again.turns, again.already_present, again.indexed) == (1, 3, 1)
    assert memory.conversations.stats()["indexed_turns"] == 4
    state = memory.working.state("crm-881")
    assert [t.external_id for t in state.turns] == [f"crm-881/msg-{i}" for i in range(4)]
    third = memory.import_conversations(records, allow_unknown_customers=True)
    assert (third.turns, third.already_present, third.indexed) == (0, 4, 0)
    assert memory.conversations.stats()["indexed_turns"] == 4


def test_retention_counts_from_each_turns_own_date(memory: Memory) -> None:
    records = history(900, "crm-100", OLD) + history(40, "crm-881", DOCK)

    report = memory.import_conversations(records, allow_unknown_customers=True)

    assert (report.turns, report.archived, report.indexed) == (6, 2, 4)
    assert memory.working.state("crm-100").turns[0].created_at == NOW - timedelta(days=900)  # kept, dated
    hits = memory.recall_conversations(CUSTOMER, "Spokane depot shipping", k=3)
    assert {h.session_id for h in hits} == {"crm-881"}


def test_record_turn_takes_a_date_and_an_id_that_recall_returns(memory: Memory) -> None:
    when = NOW - timedelta(days=3)
    memory.record_turn("live-1", CUSTOMER, "user", DOCK[2], occurred_at=when, external_id="chat-77")
    memory.conversations.flush(60)

    (hit,) = memory.recall_conversations(CUSTOMER, "new delivery address warehouse", k=1)
    assert (hit.external_id, hit.turn.created_at) == ("chat-77", when)


def test_the_command_imports_a_file_and_exits_by_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CONNECTOR_CONVERSATIONS__ENABLED", "true")
    now = datetime.now(UTC)  # the command runs on the system clock
    good = history(5, "crm-1", DOCK, now)
    path = tmp_path / "history.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in good) + "\n", encoding="utf-8")

    assert main(["conversations", "import", str(path), "--no-progress"]) == 1  # unknown customer
    assert "unknown customer 'ABARTENDE'" in capsys.readouterr().err
    assert main(["conversations", "import", str(path), "--allow-unknown-customers", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["turns"], report["indexed"], report["ok"]) == (4, 4, True)

    bad = [*history(5, "crm-2", REFUND, now), {**history(5, "crm-3", OLD, now)[0], "role": "system"}]
    path.write_text("\n".join(json.dumps(r) for r in [*good, *bad]) + "\nnot json\n", encoding="utf-8")
    argv = ["conversations", "import", str(path), "--allow-unknown-customers", "--no-progress"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert (
        "line 7: role must be one of" in err and "line 8: not valid JSON" in err and "nothing imported" in err
    )
    assert main([*argv, "--skip-bad"]) == 4
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert (report["turns"], report["already_present"], report["skipped_sessions"]) == (2, 4, 1)
    assert "line 7" in captured.err
    with Memory(load_settings(), llm=None) as memory:
        assert [
            h.session_id for h in memory.recall_conversations(CUSTOMER, "double charge reversed", k=1)
        ] == ["crm-2"]


@pytest.mark.parametrize("query", ["2026-01-20", "last week", "March", "yesterday?"])
def test_a_query_that_is_only_a_date_or_a_relative_time_is_answered(memory: Memory, query: str) -> None:
    memory.import_conversations(history(40, "crm-881", DOCK), allow_unknown_customers=True)

    hits = memory.recall_conversations(CUSTOMER, query, k=2)

    assert all(h.session_id == "crm-881" for h in hits)
