"""Locate the shipped ``prompts/`` and ``config/`` folders.

From a wheel they live inside the package (``connector/_data/...``, see pyproject's force-include);
from a source checkout or editable install they are the top-level folders of the repository.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def _data_dir(name: str) -> Path:
    packaged = _PACKAGE_DIR / "_data" / name
    if packaged.is_dir():
        return packaged
    source = _PACKAGE_DIR.parent / name
    if source.is_dir():
        return source
    raise FileNotFoundError(f"the connector's {name}/ folder is missing from this installation")


def prompts_dir() -> Path:
    return _data_dir("prompts")


def config_dir() -> Path:
    return _data_dir("config")


def prompt_text(name: str) -> str:
    """The text of ``prompts/<name>``."""
    return (prompts_dir() / name).read_text(encoding="utf-8")
