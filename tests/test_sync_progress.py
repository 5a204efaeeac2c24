"""Progress output (rich bars on a terminal, JSON lines otherwise) and signal handling."""

from __future__ import annotations

import io
import json
import os
import signal
from datetime import UTC, datetime

import pytest
from rich.console import Console

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
