"""Reading a stream catalog: both ERPs declare their streams as TOML data in ``config/``.

``config/acumatica_streams.toml`` and ``config/sap_streams.toml`` say which entity each stream
reads, its key and change fields, what to select and expand; the code that maps a record is
chosen by the stream's name. Data rather than code, so a customer adds a field or an expansion
without a release, and the two adapters are read the same way. Each adapter validates its own
dialect; this module holds what they share.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from connector.errors import ConfigError
from connector.resources import config_dir


def read_catalog(what: str, path: Path | None, default_file: str) -> dict[str, Any]:
    """The parsed TOML at ``path`` (default: the shipped ``config/<default_file>``)."""
    target = path if path is not None else config_dir() / default_file
    try:
        return tomllib.loads(target.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{what} {target.name}: cannot read it ({type(exc).__name__}: {exc})") from None


def field_list(where: str, raw: Any, *, allow_text: bool = False) -> tuple[str, ...]:
    """A list of field names (or one name, when ``allow_text``); anything else is a ConfigError."""
    if allow_text and isinstance(raw, str):
        return (raw,)
    if not isinstance(raw, list) or not all(isinstance(item, str) and item for item in raw):
        raise ConfigError(f"{where}: expected a list of field names, got {raw!r}")
    return tuple(raw)
