"""`connector maintenance consolidate|decay` print the facts area's reports as JSON."""

from __future__ import annotations

import json

import pytest

from connector.cli import main


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
