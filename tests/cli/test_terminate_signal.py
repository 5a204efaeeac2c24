"""SIGTERM ends a ``connector`` command the way Ctrl-C does: by unwinding (stores closed,
telemetry flushed) to exit 143, instead of Python's default of dying on the spot."""

from __future__ import annotations

import argparse
import signal

import pytest

import connector.cli
from connector.cli import main
from connector.commands._terminate import terminate_by_exception


def test_sigterm_in_the_block_raises_system_exit_143_and_the_handler_is_restored_after() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as stopped, terminate_by_exception():
        signal.raise_signal(signal.SIGTERM)
    assert stopped.value.code == 143
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_command_ended_by_sigterm_flushes_telemetry_and_exits_143(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    flushed: list[bool] = []

    def terminated_meanwhile(args: argparse.Namespace) -> None:
        signal.raise_signal(signal.SIGTERM)  # arrives while the command runs

    monkeypatch.setattr(connector.cli, "_observe", terminated_meanwhile)
    monkeypatch.setattr(connector.cli.telemetry, "shutdown", lambda: flushed.append(True))
    assert main(["context", "ABARTENDE", "balance"]) == 143
    assert capsys.readouterr().err.strip() == "connector: terminated"
    assert flushed == [True]
