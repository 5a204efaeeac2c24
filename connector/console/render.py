"""HTML out of templates: Jinja2 with autoescape on for every template, so a value from the ERP, an
agent or a query string is text, never markup. Only :mod:`connector.console.svg` builds markup
itself (escaping every text it places), and hands it over as ``Markup``."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from decimal import Decimal
from functools import cache
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape


def link(path: str, **params: Any) -> str:
    """``path`` with its query string; None values are left out (ids with ``/``, ``<`` or ``&``
    travel safely: everything is percent-encoded)."""
    kept = {k: str(v) for k, v in params.items() if v is not None and v != ""}
    return f"{path}?{urlencode(kept)}" if kept else path


def when(value: datetime | date | None) -> str:
    if value is None:
        return "—"
    if isinstance(value, datetime):
        return (
            f"{value:%Y-%m-%d %H:%M:%S} UTC"
            if value.utcoffset() is not None
            else f"{value:%Y-%m-%d %H:%M:%S}"
        )
    return value.isoformat()


def number(value: float | int | Decimal | None, digits: int = 0) -> str:
    if value is None:
        return "—"
    return f"{value:,.{digits}f}"


def duration(seconds: float | None) -> str:
    """A lag or age: 42 s, 7 min, 3 h 5 min, 4 days."""
    if seconds is None:
        return "—"
    if seconds < 120:
        return f"{seconds:.0f} s"
    minutes = int(seconds // 60)
    if minutes < 120:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours < 48 else f"{hours // 24} days"


@cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("connector.console", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["link"] = link
    env.filters["when"] = when
    env.filters["number"] = number
    env.filters["duration"] = duration
    return env


def page(template: str, values: Mapping[str, Any]) -> str:
    return environment().get_template(template).render(**values)
