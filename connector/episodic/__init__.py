"""Placeholder: the episodic area is being built."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from connector.memory import Memory


class EpisodicMemory:
    def __init__(self, memory: Memory) -> None:
        self.memory = memory

    def record_case(self, customer_id: str, request: str, resolution: str, **kw: Any) -> Any:
        raise NotImplementedError

    def recall(self, customer_id: str, query: str, *, k: int = 3, **kw: Any) -> Any:
        raise NotImplementedError

    def apply_retention(self) -> Any:
        raise NotImplementedError

    def forget(self, customer_id: str, *, tenant: str) -> dict[str, int]:
        raise NotImplementedError
