"""Graceful stop: SIGTERM/SIGINT set a flag that the runner checks between pages.

The page being written is finished and committed, the ERP session is logged out by the adapter's
context manager, and the process exits. A second signal interrupts at once (KeyboardInterrupt),
for an operator who really means it.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any


class StopFlag:
    """Thread-safe "please stop" with the name of the signal that asked."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason: str | None = None
        self.on_request: Callable[[str], None] | None = None  # e.g. stop a scheduler

    def request(self, reason: str) -> None:
        first = self.reason is None
        if first:
            self.reason = reason
        self._event.set()
        if first and self.on_request is not None:
            self.on_request(reason)

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)


@contextmanager
def stop_on_signals(
    flag: StopFlag, signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGINT)
) -> Iterator[StopFlag]:
    """Install handlers that set ``flag`` for the duration of the block (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: FrameType | None) -> None:
        if flag.requested:
            raise KeyboardInterrupt
        flag.request(signal.Signals(signum).name)

    for signum in signals:
        previous[signum] = signal.signal(signum, handler)
    try:
        yield flag
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
