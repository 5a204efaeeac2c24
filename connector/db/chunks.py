"""Long lists cut into bounded pieces, one statement per piece.

A delete or lookup over a customer's whole history must not depend on how long that history is:
SQLite binds at most 32,766 parameters per statement (999 in older builds), PostgreSQL 65,535, and
an embedded Chroma call holds its lock for the whole list. Every IN list and batched write goes
through :func:`chunks` with the size its caller chose.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")


def chunks(items: Sequence[T], size: int) -> Iterator[list[T]]:
    """``items`` in order, as lists of at most ``size``."""
    if size < 1:
        raise ValueError(f"chunk size must be at least 1, got {size}")
    for start in range(0, len(items), size):
        yield list(items[start : start + size])
