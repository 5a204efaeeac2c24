"""Reading a conversation history to import: one turn per JSON Lines line, each checked on its own.

A line is an object with ``customer``, ``session``, ``role`` (user, assistant or tool), ``content``
and ``occurred_at`` (ISO 8601 with a timezone; ``Z`` is UTC), and optionally ``external_id`` (the
source's message id: a re-import skips a message it already holds), ``tenant``, ``tool_name``,
``tool_args`` and ``tool_result``. Any other key is refused, so a misspelt ``external_id`` cannot
silently make a re-import add everything again. A line that cannot be used becomes a
:class:`BadLine` naming its line number and why; nothing here touches a store.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from connector.errors import ConnectorError
from connector.scope import require_id
from connector.working.models import ROLES

MAX_CONTENT_CHARS = 100_000  # about 25,000 tokens: a pasted file or a megabyte of log is refused
MAX_EXTERNAL_ID_CHARS = 255
FUTURE_SLACK = timedelta(minutes=5)
REQUIRED = ("customer", "session", "role", "content", "occurred_at")
OPTIONAL = ("external_id", "tenant", "tool_name", "tool_args", "tool_result")


class InvalidImportError(ConnectorError, ValueError):
    """Lines of an import that cannot be used; nothing was imported. ``bad_lines`` names each."""

    def __init__(self, bad_lines: Iterable[BadLine]) -> None:
        self.bad_lines = tuple(bad_lines)
        shown = "; ".join(str(b) for b in self.bad_lines[:5])
        more = f" (and {len(self.bad_lines) - 5} more)" if len(self.bad_lines) > 5 else ""
        super().__init__(
            f"{len(self.bad_lines)} line(s) cannot be imported, nothing was imported: {shown}{more}. "
            "Fix them, or skip the sessions they belong to (skip_bad / --skip-bad)"
        )


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line that cannot be imported (``line`` counts from 1) and why; ``session`` when known."""

    line: int
    reason: str
    session: str | None = None

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


@dataclass(frozen=True, slots=True)
class ImportTurn:
    """One checked turn of a history to import; ``tenant`` None means the import's tenant."""

    line: int
    customer_id: str
    session_id: str
    role: str
    content: str
    occurred_at: datetime
    external_id: str | None = None
    tenant: str | None = None
    tool_name: str | None = None
    tool_args: Any = None
    tool_result: Any = None


def read_jsonl(path: Path) -> Iterator[tuple[int, object]]:
    """(line number, decoded JSON or a :class:`BadLine`) for each non-blank line of ``path``."""
    with path.open("r", encoding="utf-8-sig", errors="replace") as lines:  # a BOM is not JSON
        for number, text in enumerate(lines, start=1):
            if not text.strip():
                continue
            try:
                yield number, json.loads(text)
            except json.JSONDecodeError as exc:
                yield number, BadLine(number, f"not valid JSON ({exc.msg} at column {exc.colno})")


def numbered(records: Iterable[object]) -> Iterator[tuple[int, object]]:
    """Records handed in as objects, numbered from 1 as lines of a file would be."""
    return enumerate(records, start=1)


def parse_time(value: object) -> datetime:
    """An ISO 8601 date-time with its timezone (``Z`` accepted), as UTC; ValueError otherwise."""
    if isinstance(value, datetime):
        when = value
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        try:
            when = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
        except ValueError:
            raise ValueError(f"occurred_at {value!r} is not an ISO 8601 date-time") from None
    else:
        raise ValueError("occurred_at is required: an ISO 8601 date-time with a timezone")
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(f"occurred_at {value!s} has no timezone (write e.g. 2025-03-01T09:30:00Z)")
    return when.astimezone(UTC)


def _text(record: Mapping[str, Any], key: str) -> str | None:
    value = record.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{key} must be text, got {type(value).__name__}")
    return value


def check(number: int, record: object, now: datetime) -> ImportTurn | BadLine:
    """The record of line ``number`` as a turn, or why it cannot be imported."""
    if isinstance(record, BadLine):
        return record
    if isinstance(record, ImportTurn):
        return record
    if not isinstance(record, Mapping):
        return BadLine(number, f"a line must be a JSON object, got {type(record).__name__}")
    session = record.get("session") if isinstance(record.get("session"), str) else None
    try:
        return _checked(number, record, now)
    except (ValueError, ConnectorError) as exc:
        return BadLine(number, str(exc), session.strip() if session else None)


def _checked(number: int, record: Mapping[str, Any], now: datetime) -> ImportTurn:
    unknown = sorted(str(k) for k in record if k not in REQUIRED and k not in OPTIONAL)
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(unknown)}; a line has {', '.join(REQUIRED + OPTIONAL)}")
    missing = [k for k in REQUIRED if record.get(k) is None]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    customer = require_id(record["customer"], "customer")
    session = require_id(record["session"], "session")
    tenant = record.get("tenant")
    tenant = require_id(tenant, "tenant") if tenant is not None else None
    role = record["role"]
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    content = _text(record, "content") or ""
    if len(content) > MAX_CONTENT_CHARS:
        raise ValueError(f"content has {len(content):,} characters (at most {MAX_CONTENT_CHARS:,})")
    when = parse_time(record["occurred_at"])
    if when > now + FUTURE_SLACK:
        raise ValueError(f"occurred_at {when.isoformat()} is in the future")
    external = record.get("external_id")
    if isinstance(external, int) and not isinstance(external, bool):
        external = str(external)
    if external is not None and (
        not isinstance(external, str) or not external.strip() or len(external) > MAX_EXTERNAL_ID_CHARS
    ):
        raise ValueError(f"external_id must be non-blank text of at most {MAX_EXTERNAL_ID_CHARS} characters")
    tool_name = _text(record, "tool_name")
    if tool_name is not None and len(tool_name) > 128:
        raise ValueError("tool_name must be at most 128 characters")
    return ImportTurn(
        line=number, customer_id=customer, session_id=session, role=role, content=content,
        occurred_at=when, external_id=external, tenant=tenant, tool_name=tool_name,
        tool_args=record.get("tool_args"), tool_result=record.get("tool_result"),
    )  # fmt: skip
