"""``connector schedule``: run the sync and maintenance jobs on their intervals until stopped."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from connector.commands._common import memory_from_settings
from connector.errors import ConfigError
from connector.sync.logjson import configure_json_logging, use_json_logs
from connector.sync.scheduler import run_scheduler


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "schedule",
        help="long-running scheduler: each tenant's sync, retention, consolidation and decay",
        description="Runs until SIGTERM/SIGINT; a running sync commits its current page and logs out "
        "first. Exits 143 after SIGTERM, 130 after SIGINT.",
    )
    parser.set_defaults(handler=_schedule)


def _schedule(args: argparse.Namespace) -> int:
    memory = memory_from_settings()
    if not memory.settings.tenants:
        raise ConfigError("no ERP tenant is configured: add [[tenants]] to config/connector.toml")
    if use_json_logs(memory.settings.log_format):
        configure_json_logging()
    reason = run_scheduler(memory, pause_gc=True)  # returns after a graceful SIGTERM/SIGINT shutdown
    return stopped_exit_code(reason)


def stopped_exit_code(reason: str | None) -> int:
    """128 + the signal's number (SIGINT 130, SIGTERM 143), as a shell reports a signalled process;
    0 when the scheduler stopped for another reason."""
    signum = getattr(signal, reason, None) if reason else None
    if not isinstance(signum, signal.Signals):
        return 0
    print(f"connector: scheduler stopped by {reason}; running jobs finished first", file=sys.stderr)
    return 128 + int(signum)
