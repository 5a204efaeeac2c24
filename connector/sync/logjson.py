"""JSON log lines for non-interactive runs (cron, containers), one object per record."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Literal

from connector.redact import redact_root_handlers

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JsonLogFormatter(logging.Formatter):
    """``{"ts", "level", "logger", "message", ...extra fields}``; exceptions as one-line type+text."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                line[key] = value if isinstance(value, (str, int, float, bool, type(None))) else str(value)
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            line["error"] = f"{type(exc).__name__}: {exc}"
        return json.dumps(line, sort_keys=True)


def use_json_logs(log_format: Literal["auto", "json", "text"]) -> bool:
    """True when logs should be JSON: ``json``, or ``auto`` without a terminal on stderr."""
    return log_format == "json" or (log_format == "auto" and not sys.stderr.isatty())


def configure_json_logging(level: int = logging.INFO) -> None:
    """Replace the root handlers' format with JSON lines on stderr."""
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLogFormatter())
    root.handlers[:] = [handler]
    redact_root_handlers()
    root.setLevel(min(root.level, level) if root.level else level)
