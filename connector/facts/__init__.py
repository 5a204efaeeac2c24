"""Placeholder: the facts area is being built."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from connector.memory import Memory


class FactStore:
    def __init__(self, memory: Memory) -> None:
        self.memory = memory

    def learn(self, customer_id: str, content: str, **kw: Any) -> Any:
        raise NotImplementedError

    def consolidate(self) -> Any:
        raise NotImplementedError

    def decay(self) -> Any:
        raise NotImplementedError

    def forget(self, customer_id: str, *, tenant: str) -> dict[str, int]:
        raise NotImplementedError
