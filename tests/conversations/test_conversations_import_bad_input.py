"""An import with bad lines names each line and why, and never half-imports a session: by default
nothing is written, with ``skip_bad`` the sessions holding a bad line are left out whole (SQLite and
PostgreSQL; the past-conversation index is off here, so no model is loaded)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from context_fixtures import seed_erp
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.conversations.import_lines import InvalidImportError
from connector.errors import ScopeError
from connector.memory import Memory
from connector.settings import ChromaSettings, Settings
from connector.working.models import InvalidTurnError
from connector.working.tables import WorkTurn

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
turn_t: sa.Table = WorkTurn.__table__  # type: ignore[attr-defined]


@pytest.fixture
def memory(engine: Engine, tmp_path: Path) -> Iterator[Memory]:
    settings = Settings(data_dir=tmp_path / "data", chroma=ChromaSettings(path=tmp_path / "chroma"))
    memory = Memory(settings, clock=FrozenClock(NOW), llm=None, engine=engine)
    seed_erp(memory)
    yield memory
    memory.close()


def line(session: str = "s-1", n: int = 0, **changes: Any) -> dict[str, Any]:
    record = {
        "customer": "ABARTENDE", "session": session, "role": "user" if n % 2 == 0 else "assistant",
        "content": f"message {n} of {session}", "occurred_at": f"2026-02-0{1 + n % 9}T09:00:00Z",
        "external_id": f"{session}-m{n}",
    }  # fmt: skip
    return {k: v for k, v in (record | changes).items() if v is not None}


def stored(memory: Memory) -> list[tuple[str, int]]:
    with memory.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.select(turn_t.c.session_id, turn_t.c.seq).order_by("id"))]  # type: ignore[misc]


def write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


BAD = [
    ({"occurred_at": None}, "missing occurred_at"),
    ({"occurred_at": (NOW + timedelta(days=2)).isoformat()}, "in the future"),
    ({"occurred_at": "2026-02-01T09:00:00"}, "no timezone"),
    ({"occurred_at": "last tuesday"}, "not an ISO 8601"),
    ({"role": "system"}, "role must be one of user, assistant, tool"),
    ({"content": "x" * 1_000_000}, "1,000,000 characters"),
    ({"customer": "   "}, "customer is blank"),
    ({"content": 42}, "content must be text"),
    ({"occured_at": "2026-02-01T09:00:00Z"}, "unknown key(s) occured_at"),
]


@pytest.mark.parametrize(("change", "reason"), BAD, ids=[r for _, r in BAD])
def test_a_bad_line_is_named_and_nothing_is_imported(
    memory: Memory, change: dict[str, Any], reason: str
) -> None:
    records = [line("s-1", 0), line("s-1", 1, **change), line("s-2", 0)]

    with pytest.raises(InvalidImportError) as raised:
        memory.import_conversations(records)

    assert [b.line for b in raised.value.bad_lines] == [2]
    assert reason in raised.value.bad_lines[0].reason
    assert "line 2" in str(raised.value)
    assert stored(memory) == []


@pytest.mark.parametrize(("change", "reason"), BAD[:3], ids=[r for _, r in BAD[:3]])
def test_skip_bad_leaves_out_the_whole_session_of_a_bad_line(
    memory: Memory, change: dict[str, Any], reason: str
) -> None:
    records = [line("s-1", 0), line("s-1", 1, **change), line("s-1", 2), line("s-2", 0), line("s-2", 1)]

    report = memory.import_conversations(records, skip_bad=True)

    assert stored(memory) == [("s-2", 1), ("s-2", 2)]
    assert (report.sessions, report.turns, report.skipped_sessions) == (1, 2, 1)
    assert (
        not report.ok and [b.line for b in report.bad_lines] == [2] and reason in report.bad_lines[0].reason
    )


def test_malformed_json_lines_are_named_by_their_line_number(memory: Memory, tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "history.jsonl",
        [json.dumps(line("s-1", 0)), "", '{"customer": "ABARTENDE", "session": "s-1",', "[1, 2]",
         json.dumps(line("s-2", 0))],
    )  # fmt: skip

    with pytest.raises(InvalidImportError) as raised:
        memory.import_conversations(path)
    assert [str(b).split(":")[0] for b in raised.value.bad_lines] == ["line 3", "line 4"]
    assert "not valid JSON" in raised.value.bad_lines[0].reason
    assert "must be a JSON object" in raised.value.bad_lines[1].reason
    assert stored(memory) == []

    # A line that is not JSON names no session: only that line is left out.
    report = memory.import_conversations(path, skip_bad=True)
    assert stored(memory) == [("s-1", 1), ("s-2", 1)] and len(report.bad_lines) == 2


def test_an_unknown_customer_is_refused_unless_allowed(memory: Memory) -> None:
    records = [line("s-1", 0), line("s-x", 0, customer="abartende")]  # ids are case-sensitive

    with pytest.raises(InvalidImportError, match="unknown customer 'abartende'"):
        memory.import_conversations(records)
    assert stored(memory) == []

    report = memory.import_conversations(records, allow_unknown_customers=True)
    assert report.ok and report.turns == 2


def test_a_session_id_under_two_customers_is_refused_with_both_lines_named(memory: Memory) -> None:
    records = [line("s-1", 0), line("s-1", 1, customer="ABARTENDER2"), line("s-2", 0)]

    with pytest.raises(InvalidImportError) as raised:
        memory.import_conversations(records)
    (bad,) = raised.value.bad_lines
    assert bad.line == 2 and "'ABARTENDER2'" in bad.reason and "'ABARTENDE'" in bad.reason
    assert "at line 1" in bad.reason and "prefix them with the customer" in bad.reason

    report = memory.import_conversations(records, skip_bad=True)
    assert stored(memory) == [("s-2", 1)] and report.skipped_sessions == 1


def test_a_session_id_another_customer_holds_in_the_store_is_refused(memory: Memory) -> None:
    memory.record_turn("s-1", "ABARTENDER2", "user", "live turn")

    with pytest.raises(InvalidImportError, match="already exists under another customer"):
        memory.import_conversations([line("s-1", 0)])
    assert stored(memory) == [("s-1", 1)]


def test_an_external_id_given_twice_with_other_content_is_a_bad_line(memory: Memory) -> None:
    same = line("s-1", 0)
    records = [same, same, line("s-1", 1), line("s-1", 2, external_id="s-1-m0")]

    with pytest.raises(InvalidImportError, match="also line 1"):
        memory.import_conversations(records)
    report = memory.import_conversations(records[:3])  # the same message twice is imported once
    assert report.turns == 2 and stored(memory) == [("s-1", 1), ("s-1", 2)]


def test_an_erased_customer_is_refused(memory: Memory) -> None:
    memory.forget("ABARTENDER2")

    with pytest.raises(InvalidImportError, match="was erased"):
        memory.import_conversations([line("s-1", 0, customer="ABARTENDER2")])


def test_record_turn_refuses_a_date_without_timezone_or_in_the_future(memory: Memory) -> None:
    with pytest.raises(InvalidTurnError, match="timezone"):
        memory.record_turn("s-1", "ABARTENDE", "user", "hi", occurred_at=datetime(2026, 1, 1))
    with pytest.raises(InvalidTurnError, match="future"):
        memory.record_turn("s-1", "ABARTENDE", "user", "hi", occurred_at=NOW + timedelta(hours=1))
    with pytest.raises(ScopeError):
        memory.record_turn("s-1", " ", "user", "hi", occurred_at=NOW)
    assert stored(memory) == []


def test_record_turn_refuses_an_external_id_its_session_holds(memory: Memory) -> None:
    memory.record_turn("s-1", "ABARTENDE", "user", "hi", external_id="m-1")

    with pytest.raises(InvalidTurnError, match="external ids"):
        memory.record_turn("s-1", "ABARTENDE", "user", "hi again", external_id="m-1")
    memory.record_turn("s-2", "ABARTENDE", "user", "another session may reuse it", external_id="m-1")
    assert stored(memory) == [("s-1", 1), ("s-2", 1)]


def test_a_file_written_with_a_byte_order_mark_imports(memory: Memory, tmp_path: Path) -> None:
    path = tmp_path / "excel-export.jsonl"
    path.write_text(json.dumps(line("s-1", 0)) + "\n", encoding="utf-8-sig")

    assert memory.import_conversations(path).turns == 1
