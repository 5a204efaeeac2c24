"""Placeholder: the context area is being built."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from connector.memory import Memory


class ContextBuilder:
    def __init__(self, memory: Memory) -> None:
        self.memory = memory

    def build(self, customer_id: str, query: str, **kw: Any) -> Any:
        raise NotImplementedError

    async def abuild(self, customer_id: str, query: str, **kw: Any) -> Any:
        raise NotImplementedError
