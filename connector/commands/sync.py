"""``connector sync [--tenant T] [--stream S] [--full]`` and ``connector sync status``.

Exit codes a scheduler can act on: 0 every stream ok; 1 every stream run failed (the one-line
reason is printed); 4 partly failed (some tenants or streams failed, the others synced); 2
configuration error; 3 another run holds a stream's lock ("already running"); 5 the database is
unreachable (checked before any ERP login); 130/143 stopped by SIGINT/SIGTERM after committing the
current page.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from connector.commands._common import memory_from_settings, reads
from connector.errors import AlreadyRunning
from connector.sync.logjson import configure_json_logging, use_json_logs
from connector.sync.progress import reporter_for
from connector.sync.result import SyncReport
from connector.sync.signals import StopFlag, stop_on_signals
from connector.sync.status import StreamStatus, sync_status

EXIT_FAILED = 1
EXIT_PARTLY_FAILED = 4


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "sync",
        help="read ERP changes into the relational store (one-shot; exits non-zero with a reason)",
        description="Sync every configured tenant and stream (or the ones named) from the ERP.",
    )
    parser.add_argument("--tenant", help="only this tenant (default: all configured tenants)")
    parser.add_argument(
        "--stream", action="append", help="only this stream (repeatable; e.g. Customer, SalesOrder)"
    )
    parser.add_argument("--full", action="store_true", help="read everything and run the deletion key scan")
    parser.set_defaults(handler=_sync)
    commands = parser.add_subparsers(dest="sync_command", metavar="status")
    status = commands.add_parser("status", help="last run, watermark, lag and errors per tenant and stream")
    status.add_argument("--tenant", dest="status_tenant", help="only this tenant")
    status.add_argument("--json", action="store_true", help="JSON output (default when not a terminal)")
    status.set_defaults(handler=_status)


def exit_code(report: SyncReport) -> tuple[int, str | None]:
    """The process exit code and the one-line reason for a non-zero one."""
    if report.interrupted_by is not None:
        signum = getattr(signal, report.interrupted_by, signal.SIGTERM)
        return 128 + int(signum), f"stopped by {report.interrupted_by}; committed pages are kept"
    problem = report.first_problem()
    if problem is not None and problem.status == "failed":
        failed = [r for r in report.results if r.status == "failed"]
        reason = f"sync of {problem.tenant}/{problem.stream} failed: {problem.error}"
        if len(failed) == len(report.results):
            return EXIT_FAILED, reason
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        return EXIT_PARTLY_FAILED, (
            f"partly failed: {len(failed)} of {len(report.results)} stream runs failed; {reason}{more}; "
            "see `connector sync status`"
        )
    if problem is not None and problem.status == "locked":
        raise AlreadyRunning(problem.tenant, problem.stream)
    errored = next((r for r in report.results if r.error), None)
    if errored is not None:
        return 1, f"{errored.tenant}/{errored.stream}: {errored.error}"
    return 0, None


def _sync(args: argparse.Namespace) -> int:
    memory = memory_from_settings()
    log_format = memory.settings.log_format
    if use_json_logs(log_format):
        configure_json_logging()
    stop = StopFlag()
    with stop_on_signals(stop), reporter_for(log_format) as reporter:
        report = memory.sync_runner(reporter=reporter, stop=stop, pause_gc=True).run(
            args.tenant, streams=args.stream, full=args.full
        )
    code, reason = exit_code(report)
    if reason:
        print(f"connector: {reason}", file=sys.stderr)
    return code


def _status(args: argparse.Namespace) -> int:
    memory = memory_from_settings()
    settings = memory.settings
    with reads(memory):
        statuses = sync_status(
            memory.engine,
            now=memory.clock.now(),
            expected_lag=timedelta(minutes=settings.sync.expected_lag_minutes),
            tenant=args.status_tenant,
            clock_skew_tolerance=timedelta(seconds=settings.sync.clock_skew_tolerance_s),
            lookback=timedelta(seconds=settings.sync.lookback_seconds),
        )
    if args.json or not sys.stdout.isatty():
        print(json.dumps([s.as_dict() for s in statuses], default=str, indent=2))
    else:
        print_status(statuses, Console(), memory.clock.now())
    return 0


_URL = re.compile(r"\bhttps?://[^\s?#]*/(?P<last>[^\s/?#]+)(?:[?#][^\s]*)?")
_NAME_WIDTH = 24  # tenant/stream: the stream is kept whole, a long tenant name is cut


def print_status(statuses: list[StreamStatus], console: Console, now: datetime) -> None:
    """The status table, one line per stream, within the console's width (80 columns included):
    ages and lags abbreviated, a long tenant name cut with an ellipsis, each error on one line
    below the table (cut to the width; ``--json`` has it whole)."""
    table = Table(
        title="ERP sync status",
        title_justify="left",
        box=None,  # no border or divider columns: the width goes to the values
        pad_edge=False,
        header_style="bold underline",
    )
    table.add_column("tenant/stream", no_wrap=True, overflow="ellipsis")
    table.add_column("last run", no_wrap=True, overflow="ellipsis")
    table.add_column("finished", no_wrap=True, justify="right")
    table.add_column("watermark UTC", no_wrap=True)
    table.add_column("lag", no_wrap=True, justify="right")
    table.add_column("fails", no_wrap=True, justify="right")
    for s in statuses:
        finished = s.last_run_finished_at
        lag = "never" if s.lag_s is None else _age(s.lag_s)
        shown: str | Text = s.last_run_status or "-"
        if s.warnings and s.last_run_status == "ok":
            shown = Text("ok, warn", style="yellow")  # an ok run whose watermark or stamps need a look
        table.add_row(
            _name(s),
            shown,
            _age((now - finished).total_seconds()) + " ago" if finished else "-",
            s.watermark.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if s.watermark else "-",
            Text(lag, style="red") if s.lagging else lag,
            str(s.failures_since_ok),
        )
    console.print(table)
    notes = [(s, _error(s, s.last_run_error)) for s in statuses if s.last_run_error]
    notes += [(s, f"warning: {w}") for s in statuses for w in s.warnings]
    notes += [(s, _problems(s.last_run_problems)) for s in statuses if s.last_run_problems]
    for s, note in notes:
        line = Text(f"{_name(s)}: ", style="bold") + Text(" ".join(note.split()))
        console.print(line, no_wrap=True, overflow="ellipsis", highlight=False)
    if notes:
        console.print("whole errors and problems: connector sync status --json", style="dim", highlight=False)


def _name(s: StreamStatus) -> str:
    room = max(_NAME_WIDTH - len(s.stream) - 1, 4)
    tenant = s.tenant if len(s.tenant) <= room else s.tenant[: room - 1] + "…"
    return f"{tenant}/{s.stream}"


def _error(s: StreamStatus, error: str) -> str:
    """The error without the tenant/stream it repeats (the line starts with them) and the sync's
    own wrapper class, each URL cut to its last path segment, so the reason fits in the line."""
    error = error.replace(f": {s.tenant}/{s.stream}: ", ": ", 1).removeprefix("SyncError: ")
    return _URL.sub(lambda m: "…/" + m.group("last"), error)


def _age(seconds: float) -> str:
    """A duration in its two largest units: 45s, 12m, 3h05m, 2d04h."""
    total = max(0, int(seconds))
    days, rest = divmod(total, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m" if minutes else f"{secs}s"


def _problems(problems: str) -> str:
    lines = [line for line in problems.splitlines() if line.strip()]
    return f"{len(lines)} record problem(s) in the last run; first: {lines[0] if lines else ''}"
