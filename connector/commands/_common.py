"""Helpers shared by CLI commands: build the Memory and print reports."""

from __future__ import annotations

import dataclasses
import json
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from connector.memory import Memory
from connector.settings import load_settings


def memory_from_settings() -> Memory:
    return Memory(load_settings())


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
