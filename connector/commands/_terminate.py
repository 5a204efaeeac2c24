"""SIGTERM ends a command the way Ctrl-C does: by an exception that unwinds the stack.

Python's default for SIGTERM kills the process at once: no ``finally`` block, no context
manager's exit, no exit hook, so spans and metrics not yet exported are lost. Raising
``SystemExit(143)`` instead closes the stores and lets the CLI flush telemetry and exit 143, as a
shell reports a process ended by SIGTERM. Commands that stop gracefully install handlers of their
own for their duration (the sync's stop flag); uvicorn restores this one after its shutdown and
raises the signal again, which lands here.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

EXIT_TERMINATED = 128 + signal.SIGTERM  # 143
EXIT_INTERRUPTED = 128 + signal.SIGINT  # 130


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(EXIT_TERMINATED)  # a BaseException: no ``except Exception`` on the way eats it


@contextmanager
def terminate_by_exception() -> Iterator[None]:
    """Turn SIGTERM into ``SystemExit(143)`` for the block (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
