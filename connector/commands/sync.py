"""``connector sync [--tenant T] [--stream S] [--full]`` and ``connector sync status``.

Exit codes a scheduler can act on: 0 every stream ok; 1 every stream run failed (the one-line
reason is printed); 4 partly failed (some tenants or streams failed, the others synced); 2
configuration error; 3 another run holds a stream's lock ("already running");
130/143 stopped by SIGINT/SIGTERM after committing the current page.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from datetime import timedelta
from typing import Any

from rich.console import Console
from rich.table import Table

from connector.commands._common import memory_from_settings
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
    statuses = sync_status(
        memory.engine,
        now=memory.clock.now(),
        expected_lag=timedelta(minutes=settings.sync.expected_lag_minutes),
        tenant=args.status_tenant,
    )
    if args.json or not sys.stdout.isatty():
        print(json.dumps([s.as_dict() for s in statuses], default=str, indent=2))
    else:
        Console().print(_table(statuses))
    return 0


def _table(statuses: list[StreamStatus]) -> Table:
    table = Table(title="ERP sync status")
    for column in ("tenant", "stream", "last run", "finished", "watermark", "lag", "failures", "error"):
        table.add_column(column)
    for s in statuses:
        lag = "never synced" if s.lag_s is None else str(timedelta(seconds=int(s.lag_s)))
        table.add_row(
            s.tenant,
            s.stream,
            s.last_run_status or "-",
            s.last_run_finished_at.isoformat(timespec="seconds") if s.last_run_finished_at else "-",
            s.watermark.isoformat(timespec="seconds") if s.watermark else "-",
            f"[red]{lag}[/red]" if s.lagging else lag,
            str(s.failures_since_ok),
            (s.last_run_error or "")[:80],
        )
    return table
