"""Placeholder: the working area is being built."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from connector.memory import Memory


class WorkingMemory:
    def __init__(self, memory: Memory) -> None:
        self.memory = memory

    def record_turn(self, session_id: str, customer_id: str, role: str, content: str, **kw: Any) -> Any:
        raise NotImplementedError

    def pin(self, session_id: str, name: str, value: Any, **kw: Any) -> Any:
        raise NotImplementedError

    def forget(self, customer_id: str, *, tenant: str) -> dict[str, int]:
        raise NotImplementedError
