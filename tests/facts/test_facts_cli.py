"""`connector maintenance consolidate|decay` print the facts area's reports as JSON."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from connector.cli import main
from connector.commands import maintenance
from connector.facts.models import ConsolidationReport


def test_consolidate_without_an_llm_says_it_did_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["maintenance", "consolidate"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mode"] == "non-llm"
    assert report["message"].startswith("no LLM configured")
    assert (report["facts_created"], report["jobs"]) == (0, [])


def test_decay_reports_factor_threshold_and_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["maintenance", "decay"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["factor"], report["threshold"], report["facts_decayed"], report["facts_removed"]) == (
        0.95,
        0.05,
        0,
        0,
    )


def test_consolidate_with_a_failed_job_exits_non_zero(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    failed = ConsolidationReport(mode="llm", message="1 job failed", pending_sessions=1, failed=1)
    memory = SimpleNamespace(facts=SimpleNamespace(consolidate=lambda: failed))
    monkeypatch.setattr(maintenance, "memory_from_settings", lambda: memory)
    assert main(["maintenance", "consolidate"]) == 1
    assert json.loads(capsys.readouterr().out)["failed"] == 1
