"""A process that opens, uses and closes memories (a scheduled job, a server, a test run) holds no
more descriptors after the fiftieth than after the first, and one Memory serving many calls holds
a bounded number: the ``ulimit -n`` and select()'s 1,024 are never reached by use alone."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from fd_report import open_fds
from stub_embedders import OneVector

from connector.memory import Memory
from connector.settings import ChromaSettings, EpisodicSettings, Settings

SLACK = 3  # a descriptor a library opens once per process (a socket pair, a cache file)


def settings_in(directory: Path) -> Settings:
    return Settings(
        data_dir=directory / "data",
        chroma=ChromaSettings(path=directory / "chroma"),
        episodic=EpisodicSettings(allow_unknown_customers=True),
    )


def open_stores(memory: Memory, n: int) -> None:
    """What opens descriptors: the engine (a turn) and Chroma (a case and its recall)."""
    memory.record_turn(f"s-{n}", "C1", "user", "Why was INV-004821 charged twice?")
    memory.record_case("C1", "Disputed INV-004821 twice", "Credit memo issued", case_id=f"K-{n}")
    assert memory.recall_cases("C1", "charged twice")


def use(memory: Memory, n: int) -> None:
    """Every store once: a turn, a case and its recall, a fact, past turns, an erasure."""
    open_stores(memory, n)
    memory.learn("C1", f"Prefers e-mail after {n % 12 + 1}pm")
    memory.recall_conversations("C1", "charged twice")
    memory.forget("C2")


@pytest.fixture(autouse=True)
def _proc() -> None:
    if not open_fds():
        pytest.skip("needs /proc/self/fd to count descriptors")


def test_fifty_memories_opened_used_and_closed_leave_no_descriptor_open(tmp_path: Path) -> None:
    with Memory(settings_in(tmp_path / "warm"), llm=None, embedder=OneVector()) as memory:
        use(memory, 0)  # imports and one-time process state (thread pools, caches) come first
    gc.collect()
    baseline = open_fds()
    for n in range(50):
        with Memory(settings_in(tmp_path / "warm"), llm=None, embedder=OneVector()) as memory:
            open_stores(memory, n)
    gc.collect()
    assert open_fds() <= baseline + SLACK


def test_one_memory_serving_many_calls_holds_a_bounded_number_of_descriptors(tmp_path: Path) -> None:
    with Memory(settings_in(tmp_path), llm=None, embedder=OneVector()) as memory:
        for n in range(3):
            use(memory, n)
        gc.collect()
        baseline = open_fds()
        for n in range(3, 30):
            use(memory, n)
        gc.collect()
        assert open_fds() <= baseline + SLACK
