"""The README's agent example runs as printed, on a store a sync filled (issue 28: a newcomer follows it)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from context_fixtures import seed_erp
from paths import ROOT

from connector.memory import Memory
from connector.settings import load_settings

README = ROOT / "README.md"


def test_the_readme_agent_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = README.read_text(encoding="utf-8")
    example = re.search(r"^## An agent in 15 lines\n\n```python\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    assert example is not None
    code = example.group(1)
    assert len([line for line in code.splitlines() if line.strip() and not line.startswith("#")]) <= 15
    monkeypatch.setenv("CONNECTOR_DATA_DIR", str(tmp_path / "data"))  # what `connector sync` would fill
    monkeypatch.chdir(tmp_path)
    with Memory(load_settings(), llm=None) as synced:
        seed_erp(synced, synced_at=datetime.now(UTC))
    exec(compile(code, str(README), "exec"), {})  # the README's own code, unchanged
    out = capsys.readouterr().out
    assert "INV-004821" in out and "CM-000311" in out  # the pinned invoice and the recalled case
    assert "past_cases" in out and "pinned" in out
