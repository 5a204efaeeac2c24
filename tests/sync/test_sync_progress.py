"""Progress output (rich bars on a terminal, JSON lines otherwise) and signal handling."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import signal
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rich.console import Console

from connector.redact import RedactingFormatter
from connector.sync.logjson import JsonLogFormatter
from connector.sync.progress import JsonReporter, RichReporter, reporter_for
from connector.sync.result import StreamResult
from connector.sync.signals import StopFlag, stop_on_signals

UNTIL = datetime(2026, 3, 10, 12, tzinfo=UTC)


def test_interactive_runs_get_bars_and_others_json_lines() -> None:
    assert isinstance(reporter_for("auto", interactive=True), RichReporter)
    assert isinstance(reporter_for("auto", interactive=False), JsonReporter)
    assert isinstance(reporter_for("json", interactive=True), JsonReporter)
    assert isinstance(reporter_for("text", interactive=False), RichReporter)


def test_json_reporter_writes_one_object_per_line() -> None:
    out = io.StringIO()
    with JsonReporter(out) as reporter:
        reporter.stream_started("acme", "Customer", None, UNTIL)
        reporter.page_done("acme", "Customer", 1, 1000, 1000)
        reporter.stream_finished(StreamResult("acme", "Customer", "ok", records_read=1000, inserted=1000))
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["event"] for line in lines] == ["stream_started", "page", "stream_finished"]
    assert lines[0]["window_end"] == "2026-03-10T12:00:00+00:00"
    assert lines[2]["inserted"] == 1000 and lines[2]["status"] == "ok"


def test_rich_reporter_shows_pages_records_and_the_outcome() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    with RichReporter(console) as reporter:
        reporter.stream_started("acme", "Customer", None, UNTIL)
        reporter.page_done("acme", "Customer", 2, 1000, 2000)
        reporter.stream_finished(
            StreamResult("acme", "Customer", "ok", pages=2, records_read=2000, inserted=1500, unchanged=500)
        )
    text = out.getvalue()
    assert "acme/Customer (full)" in text
    assert "2,000 records" in text and "ok: +1500 ~0 =500 -0" in text


def test_json_log_formatter_keeps_extra_fields_and_one_line_errors() -> None:
    import logging

    record = logging.LogRecord(
        "connector.schedule", logging.ERROR, __file__, 1, "sync of %s failed", ("acme",), None
    )
    record.tenant = "acme"
    line = json.loads(JsonLogFormatter().format(record))
    assert line["message"] == "sync of acme failed" and line["tenant"] == "acme" and line["level"] == "error"


def test_sigterm_sets_the_stop_flag_and_a_second_one_interrupts() -> None:
    flag = StopFlag()
    previous = signal.getsignal(signal.SIGTERM)
    with stop_on_signals(flag):
        os.kill(os.getpid(), signal.SIGTERM)
        assert flag.requested and flag.reason == "SIGTERM"
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is previous


def screen(raw: str) -> list[str]:
    """The lines a terminal shows for ``raw``: carriage return, newline, erase line and cursor up
    applied; colours and cursor visibility ignored."""
    lines, row, col = [""], 0, 0
    for token in re.findall(r"\x1b\[[0-9;?]*[A-Za-z]|\r|\n|[^\x1b\r\n]+", raw):
        if token == "\r":
            col = 0
        elif token == "\n":
            row, col = row + 1, 0
            lines += [""] * (row + 1 - len(lines))
        elif token == "\x1b[2K":
            lines[row] = ""
        elif token.startswith("\x1b[") and token.endswith("A"):
            row = max(0, row - int(token[2:-1] or 1))
        elif not token.startswith("\x1b"):
            line = lines[row].ljust(col)
            lines[row] = line[:col] + token + line[col + len(token) :]
            col += len(token)
    return [line.rstrip() for line in lines]


def test_log_lines_print_above_the_live_bars_redacted_and_handlers_come_back(tmp_path: Path) -> None:
    terminal = io.StringIO()
    console = Console(file=terminal, force_terminal=True, width=100)
    root, httpx_log = logging.getLogger(), logging.getLogger("httpx")
    saved = root.handlers[:], root.level, httpx_log.level
    httpx_log.setLevel(logging.DEBUG)  # as `connector -v` sets it: request lines are logged
    on_terminal = logging.StreamHandler(terminal)  # the CLI's handler: the same terminal as the bars
    on_terminal.setFormatter(RedactingFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s")))
    to_file = logging.FileHandler(tmp_path / "connector.log")
    root.handlers[:] = [on_terminal, to_file]
    root.setLevel(logging.DEBUG)
    request_line = 'HTTP Request: GET https://alice:pa55w0rd@erp.example.com/entity "HTTP/1.1 200 OK"'
    try:
        with RichReporter(console) as reporter:
            for stream in ("Customer", "Invoice"):
                reporter.stream_started("acme", stream, None, UNTIL)
            reporter.page_done("acme", "Customer", 1, 10, 10)
            reporter._progress.refresh()
            logging.getLogger("httpx").info(request_line)
            logging.getLogger("connector.adapters.http").warning(
                "Acumatica: ERPServerError; retry 1/6 in 1.0s"
            )
            reporter.page_done("acme", "Invoice", 1, 10, 10)
            reporter._progress.refresh()
        handlers = root.handlers[:]
    finally:
        root.handlers[:], root.level, _ = saved
        httpx_log.setLevel(saved[2])
        to_file.close()
    shown = screen(terminal.getvalue())
    assert 'INFO httpx: HTTP Request: GET https://alice:***@erp.example.com/entity "HTTP/1.1 200 OK"' in shown
    assert "WARNING connector.adapters.http: Acumatica: ERPServerError; retry 1/6 in 1.0s" in shown
    bars = [line for line in shown if "acme/" in line]
    assert bars and not [line for line in bars if "httpx" in line or "retry" in line]  # no line shares
    assert shown[-3:-1] == [line for line in bars[-2:]]  # the bars are redrawn below the log lines
    assert handlers == [on_terminal, to_file]  # restored when the bars stop
    assert "pa55w0rd" not in terminal.getvalue()
