"""Open file descriptors: the run's count at its end and the test modules that left the most open.

A full run once held more than 1,024 descriptors (select() refuses past that, and a low ``ulimit
-n`` stops the run): an engine not disposed, a client not closed, a subprocess's pipes. The summary
names the modules whose tests left descriptors open (counted before and after each module, after a
garbage collection, so objects only waiting to be collected do not count), largest first.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator

import pytest

_FDS = "/proc/self/fd"
_left: dict[str, int] = {}
_start: list[int] = []


def open_fds() -> int:
    """How many descriptors this process holds (0 where /proc is missing)."""
    try:
        return len(os.listdir(_FDS))
    except OSError:
        return 0


@pytest.fixture(scope="module", autouse=True)
def _count_module_fds(request: pytest.FixtureRequest) -> Iterator[None]:
    gc.collect()
    before = open_fds()
    if not _start:
        _start.append(before)
    yield
    gc.collect()
    grew = open_fds() - before
    if grew > 0:
        _left[request.module.__name__] = grew


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _start:
        return
    gc.collect()
    worst = sorted(_left.items(), key=lambda item: -item[1])[:8]
    named = ", ".join(f"{name} +{count}" for name, count in worst) or "none"
    terminalreporter.write_line(
        f"open file descriptors: {_start[0]} at the start, {open_fds()} at the end; left open by: {named}"
    )
