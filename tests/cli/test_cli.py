"""The `connector` CLI: help everywhere, db upgrade and doctor on embedded defaults."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from connector.cli import build_parser, main


def _subcommand_paths() -> list[list[str]]:
    """Every command and nested action the parser knows, e.g. ['db', 'upgrade']."""
    import argparse

    paths: list[list[str]] = []

    def walk(parser: argparse.ArgumentParser, prefix: list[str]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    paths.append([*prefix, name])
                    walk(child, [*prefix, name])

    walk(build_parser(), [])
    return paths


def test_every_command_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    paths = _subcommand_paths()
    assert ["db", "upgrade"] in paths and ["doctor"] in paths
    for path in paths:
        with pytest.raises(SystemExit) as exit_info:
            main([*path, "--help"])
        assert exit_info.value.code == 0, path
        assert "usage: connector" in capsys.readouterr().out


def test_console_script_help_runs_in_a_subprocess() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "connector.cli", "--help"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0
    assert "doctor" in result.stdout


def test_db_upgrade_creates_the_embedded_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["db", "upgrade"]) == 0
    assert (tmp_path / ".data" / "connector.sqlite3").is_file()
    assert "is at revision" in capsys.readouterr().out


def test_doctor_gives_a_verdict_per_item(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor"])
    out = capsys.readouterr().out
    for item in ("settings", "database", "chroma", "embeddings", "llm"):
        assert f"] {item}" in out
    assert "verdict:" in out
    assert code in (0, 1)


def test_doctor_reports_a_dead_database_without_its_password(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CONNECTOR_DATABASE__URL", "postgresql+psycopg://app:s3cr3t-pw@127.0.0.1:1/nowhere")
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "[FAIL] database" in out
    assert "s3cr3t-pw" not in out
    assert "unhealthy" in out


def test_invalid_setting_exits_2_with_the_setting_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CONNECTOR_SYNC__ON_LOCKED", "maybe")
    assert main(["db", "upgrade"]) == 2
    assert "sync.on_locked" in capsys.readouterr().err
