"""Placeholder: the working area is being built."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from connector.memory import Memory


class WorkingMemory:
    def __init__(self, memory: Memory) -> None:
        self.memory = memory
