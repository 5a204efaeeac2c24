"""Helpers shared by CLI commands: build the Memory and print reports."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from connector.db.deadline import within
from connector.db.engine import check_connection
from connector.memory import Memory
from connector.settings import load_settings


def memory_from_settings(*, check_database: bool = True) -> Memory:
    """The Memory of the settings; first proves the database answers, so a dead one is one
    ``StoreError`` line before any work (an ERP login, a model load) starts."""
    memory = Memory(load_settings())
    if check_database:
        with reads(memory):
            check_connection(memory.engine)
    return memory


def reads(memory: Memory) -> contextlib.AbstractContextManager[None]:
    """A CLI read's database work ends within ``database.read_timeout_s`` (a hung server is one
    ``StoreError`` line, not a wait without end)."""
    return within(memory.settings.database.read_timeout_s)


def _default(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return str(value)


def to_json(value: Any) -> str:
    """JSON of a report (dataclass, pydantic model, dict) with dates and decimals as strings."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    return json.dumps(value, default=_default, indent=2, sort_keys=True)
