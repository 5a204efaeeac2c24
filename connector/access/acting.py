"""Who the current call acts for, so what it writes is recorded under that name.

The MCP server and the console set it around each request; the command line and the Python API
leave it at :data:`~connector.access.principal.CLI`. A context variable crosses into the worker
threads anyio runs synchronous handlers in (they run in a copy of the caller's context).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from connector.access.principal import CLI, Principal

_current: ContextVar[Principal] = ContextVar("connector_principal", default=CLI)


def current_principal() -> Principal:
    """The caller of the running request, or ``cli`` outside one."""
    return _current.get()


@contextmanager
def acting_as(principal: Principal) -> Iterator[Principal]:
    """Run the block as ``principal`` (restored afterwards, also on error)."""
    token = _current.set(principal)
    try:
        yield principal
    finally:
        _current.reset(token)
