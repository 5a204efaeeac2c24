"""``connector schedule``: run the sync and maintenance jobs on their intervals until stopped."""

from __future__ import annotations

import argparse
from typing import Any

from connector.commands._common import memory_from_settings
from connector.errors import ConfigError
from connector.sync.logjson import configure_json_logging, use_json_logs
from connector.sync.scheduler import run_scheduler


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "schedule",
        help="long-running scheduler: each tenant's sync, retention, consolidation and decay",
        description="Runs until SIGTERM/SIGINT; a running sync commits its current page and logs out first.",
    )
    parser.set_defaults(handler=_schedule)


def _schedule(args: argparse.Namespace) -> int:
    memory = memory_from_settings()
    if not memory.settings.tenants:
        raise ConfigError("no ERP tenant is configured: add [[tenants]] to config/connector.toml")
    if use_json_logs(memory.settings.log_format):
        configure_json_logging()
    run_scheduler(memory, pause_gc=True)  # returns after a graceful SIGTERM/SIGINT shutdown
    return 0
