"""A Memory releases what it started: ``close()`` and ``with Memory(...)`` leave no worker thread of
ours running and no file of the data directory open (SQLite, Chroma's files), so tests and servers
can open and drop memories without leaking threads or connections."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from connector.memory import Memory
from connector.settings import ChromaSettings, EpisodicSettings, Settings
from connector.threads import LazyPool

OUR_POOLS = ("episodic-query", "context-recall", "minilm")


def our_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith(OUR_POOLS)}


def new_threads(before: set[threading.Thread]) -> set[str]:
    return {t.name for t in our_threads() - before}


def open_files_under(directory: Path) -> list[str]:
    """Paths under ``directory`` this process holds open (Linux: /proc/self/fd)."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(directory)):
            found.append(target)
    return found


@pytest.fixture
def settings(tmp_path: Path) -> Iterator[Settings]:
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc/self/fd to see open files")
    yield Settings(
        data_dir=tmp_path / "data",
        chroma=ChromaSettings(path=tmp_path / "chroma"),
        episodic=EpisodicSettings(allow_unknown_customers=True),  # a case for a customer not synced
    )


def use(memory: Memory) -> None:
    """Every part once: a case (embedder, Chroma, engine), its recall (query pool), learning, a turn."""
    memory.record_case("C1", "Disputed INV-004821 twice", "Credit memo CM-000311 issued")
    assert memory.recall_cases("C1", "charged twice for INV-004821")
    memory.record_turn("s-1", "C1", "user", "Why was I charged twice?")
    memory.learn("C1", "Prefers e-mail after 3pm")


def test_close_stops_our_threads_and_closes_every_file_of_the_data_directory(
    settings: Settings, tmp_path: Path
) -> None:
    before = our_threads()
    memory = Memory(settings, llm=None)
    use(memory)
    assert "episodic-query_0" in new_threads(before)
    assert open_files_under(tmp_path)  # the SQLite store and Chroma's files are open while in use
    memory.close()
    assert new_threads(before) == set()
    assert open_files_under(tmp_path) == []


def test_a_with_block_closes_the_memory_even_when_it_raises(settings: Settings, tmp_path: Path) -> None:
    before = our_threads()
    with pytest.raises(RuntimeError, match="agent failed"), Memory(settings, llm=None) as memory:
        use(memory)
        raise RuntimeError("agent failed")
    assert new_threads(before) == set()
    assert open_files_under(tmp_path) == []


def test_a_closed_memory_can_be_used_again_and_closed_again(settings: Settings, tmp_path: Path) -> None:
    before = our_threads()
    memory = Memory(settings, llm=None)
    use(memory)
    memory.close()
    assert [h.case_id for h in memory.recall_cases("C1", "INV-004821")]  # reopened on use: data kept
    memory.close()
    memory.close()  # idempotent
    assert new_threads(before) == set() and open_files_under(tmp_path) == []


def test_a_pool_shut_down_by_its_owner_starts_afresh_when_asked_again() -> None:
    pool = LazyPool("lifetime-test", max_workers=1)
    first = pool.get()
    assert first.submit(lambda: 1).result() == 1
    pool.shutdown()
    assert not any(t.name.startswith("lifetime-test") for t in threading.enumerate())
    assert pool.get() is not first and pool.get().submit(lambda: 2).result() == 2
    pool.shutdown()
