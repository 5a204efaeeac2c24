"""`connector episodic ...`, `maintenance retention` and `forget` on the embedded defaults."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from connector.cli import main
from connector.clock import FrozenClock
from connector.memory import Memory
from connector.settings import load_settings


@pytest.fixture(autouse=True)
def _unsynced_customers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests record cases for a customer they name, without syncing it first."""
    monkeypatch.setenv("CONNECTOR_EPISODIC__ALLOW_UNKNOWN_CUSTOMERS", "true")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_retention_restore_stats_and_forget_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    memory = Memory(load_settings(), llm=None)
    old = datetime.now(UTC) - timedelta(days=400)
    written = memory.record_case(
        "ACME", "Disputed INV-000901 total.", "Credited 10.00 USD.", case_id="c1", occurred_at=old
    )
    memory.record_case("ACME", "Late delivery of SO-000902.", "Freight refunded.", case_id="c2")
    memory.record_case(
        "ACME", "Short shipment on SO-000903.", "Shipped the rest.", case_id="c3",
        occurred_at=datetime.now(UTC) - timedelta(days=170),
    )  # fmt: skip

    assert written.status == "archived"  # already past retention when written
    stats = run(capsys, "episodic", "stats")
    assert (stats["live_entries"], stats["archived_entries"]) == (2, 1)  # type: ignore[index]
    later = Memory(load_settings(), llm=None, clock=FrozenClock(datetime.now(UTC) + timedelta(days=20)))
    assert later.episodic.apply_retention().archived == 1  # c3 is past retention by then
    archived = run(capsys, "episodic", "recall", "ACME", "INV-000901?", "--include-archived")
    assert archived[0]["case_id"] == "c1" and archived[0]["archived"] is True  # type: ignore[index]
    assert run(capsys, "episodic", "restore", "ACME", "--case", "c1")["restored"] == 1  # type: ignore[index]
    hits = run(capsys, "episodic", "recall", "ACME", "what about INV-000901?")
    assert hits[0]["case_id"] == "c1"  # type: ignore[index]
    assert run(capsys, "episodic", "reindex") == {"reindexed": 2}

    removed = run(capsys, "forget", "ACME")
    assert removed["removed"]["episodic_entries"] == 2  # type: ignore[index]
    assert removed["removed"]["episodic_archive"] == 1  # type: ignore[index]
    assert run(capsys, "episodic", "stats")["live_entries"] == 0  # type: ignore[index]


def test_a_blank_customer_is_refused_with_a_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["episodic", "restore", " "]) == 1
    assert "customer_id is blank" in capsys.readouterr().err


def test_reindex_check_reports_differences_and_fix_repairs_them(capsys: pytest.CaptureFixture[str]) -> None:
    memory = Memory(load_settings(), llm=None)
    lost = memory.record_case("ACME", "Late delivery of SO-000902.", "Freight refunded.", case_id="c2")
    memory.record_case("ACME", "Disputed INV-000901 total.", "Credited 10.00 USD.", case_id="c1")
    memory.episodic.index.delete([lost.entry_id])

    assert main(["episodic", "reindex", "--check"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["missing"], report["orphans"], report["consistent"]) == (1, 0, False)
    assert run(capsys, "episodic", "reindex", "--check", "--fix")["fixed"] is True  # type: ignore[index]
    assert run(capsys, "episodic", "reindex", "--check")["consistent"] is True  # type: ignore[index]
