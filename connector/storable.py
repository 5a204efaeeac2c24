"""Text every store can hold: no NUL character (PostgreSQL's text and jsonb refuse it) and no lone
UTF-16 surrogate (not encodable as UTF-8, so SQLite, PostgreSQL and Chroma all refuse it).

One bad value must not block a stream or fail an agent's write with a driver error, so writers
clean such text with these helpers and say so (the sync names the record in the run's problems).
"""

from __future__ import annotations

import re
from typing import Any

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def is_storable(value: str) -> bool:
    """Whether ``value`` has neither a NUL nor a lone surrogate."""
    if "\x00" in value:
        return False
    return value.isascii() or _LONE_SURROGATE.search(value) is None


def storable_text(value: str, *, nul: str = "") -> str:
    """``value`` with each NUL replaced by ``nul`` (removed by default) and each lone surrogate by U+FFFD."""
    if is_storable(value):
        return value
    return _LONE_SURROGATE.sub(REPLACEMENT, value.replace("\x00", nul))


def storable(value: Any, *, nul: str = "") -> Any:
    """A JSON-like value (str, dict, list, tuple; anything else as is) with every string made storable."""
    if isinstance(value, str):
        return storable_text(value, nul=nul)
    if isinstance(value, dict):
        return {storable(k, nul=nul): storable(v, nul=nul) for k, v in value.items()}
    if isinstance(value, list):
        return [storable(v, nul=nul) for v in value]
    if isinstance(value, tuple):
        return tuple(storable(v, nul=nul) for v in value)
    return value
