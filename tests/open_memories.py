"""Every ``Memory`` a test builds is closed when the test ends.

A Memory left open keeps its Chroma client (a dozen descriptors of files under the test's temporary
directory: Chroma keeps each client in a process-wide cache), its engine's pooled connections and
its worker threads. Fixtures and helpers that return a Memory cannot close it themselves, and a
full run once ended with about 2,400 descriptors open. Closing is idempotent, so a test that
closes its Memory itself loses nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import pytest

from connector.memory import Memory


@pytest.fixture(autouse=True)
def _close_memories(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    built: list[Memory] = []
    init = Memory.__init__

    @functools.wraps(init)  # the signature and type hints stay Memory's own
    def tracked(self: Memory, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        built.append(self)

    monkeypatch.setattr(Memory, "__init__", tracked)
    yield
    for memory in reversed(built):
        memory.close()
