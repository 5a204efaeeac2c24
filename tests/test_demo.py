"""`scripts/demo` (connector.demo) end to end on small data: fakes over HTTP, sync, memories, context."""

from __future__ import annotations

from pathlib import Path

import pytest

from connector.demo import main


@pytest.mark.slow
def test_demo_runs_twice_and_prints_contexts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--customers", "20", "--data-dir", str(tmp_path / "demo")]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert "Invoice dispute" in first and "Order status" in first
    for header in (
        "## Today",
        "## ERP facts",
        "## Open documents",
        "## Pinned values",
        "## Similar past cases",
    ):
        assert header in first
    assert "Prefers dispute updates by e-mail" in first
    # A re-run syncs incrementally and records nothing twice.
    assert main(args) == 0
    second = capsys.readouterr().out
    assert second.count("demo-dispute-") == first.count("demo-dispute-")
