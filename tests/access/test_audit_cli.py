"""``connector audit``: the trail listed and filtered from the command line, one line per event."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import connector
from connector.audit import record
from connector.cli import main
from connector.memory import Memory
from connector.settings import load_settings

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def trail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONNECTOR_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(connector, "_default_memory", None)
    with Memory(load_settings(), llm=None) as memory:
        record(memory.engine, "agent", "turn.record", "north", "C001", at=T0)
        record(memory.engine, "dashboard", "mcp.get_context", "north", "<b>C2</b>", outcome="refused",
               at=T0 + timedelta(days=1))  # fmt: skip
        record(memory.engine, "cli", "customer.erase", "north", None, at=T0 + timedelta(days=2))


def test_the_trail_is_listed_newest_first_one_line_each(
    trail: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "2026-03-03 09:00:00 cli customer.erase north",
        "2026-03-02 09:00:00 dashboard mcp.get_context north/<b>C2</b> (refused)",
        "2026-03-01 09:00:00 agent turn.record north/C001",
    ]


def test_filters_and_json(trail: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--who", "agent", "--json"]) == 0
    [event] = json.loads(capsys.readouterr().out)
    assert (event["action"], event["tenant"], event["customer_id"]) == ("turn.record", "north", "C001")
    assert main(["audit", "--action", "mcp", "--since", "2026-03-02", "--until", "2026-03-03"]) == 0
    assert capsys.readouterr().out.count("\n") == 1
    assert main(["audit", "--customer", "C001", "--tenant", "south"]) == 0
    assert capsys.readouterr().out == "no audit events\n"


@pytest.mark.parametrize(
    "argv", [["--since", "yesterday"], ["--until", "2026-03-01T10:00"], ["--limit", "0"]]
)
def test_bad_filters_are_one_line_errors(
    trail: None, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and argv[0] in err
