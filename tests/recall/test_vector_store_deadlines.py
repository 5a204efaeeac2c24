"""Every vector-store call has a deadline: a hung Chroma (a black-holed port here: connections are
accepted, nothing ever answers) costs the caller its deadline, then fails at once; the agent's
context degrades to the ERP facts with a warning; ``doctor`` reports the store as failed."""

from __future__ import annotations

import fcntl
import socket
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from context_fixtures import NOW, StubEpisodic, seed_erp, stub_context
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.doctor import run_checks
from connector.episodic.models import CaseHit
from connector.errors import StoreBusy, StoreTimeout
from connector.memory import Memory
from connector.settings import ChromaSettings, ConversationSettings, EpisodicSettings, Settings
from connector.vectors import ChromaIndex, ChromaStore
from connector.vectors import store as vector_store
from connector.vectors.lock import LOCK_NAME
from connector.vectors.store import open_embedded


@pytest.fixture
def black_hole() -> Iterator[int]:
    """A port whose connections the kernel accepts and no one ever serves."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield int(sock.getsockname()[1])


def hung(port: int) -> ChromaSettings:
    return ChromaSettings(host="127.0.0.1", port=port, read_timeout_s=0.3, timeout_s=0.5)


def test_a_hung_server_times_out_then_fails_at_once(black_hole: int) -> None:
    store = ChromaStore(hung(black_hole), None)
    expected = r"did not answer opening within 0\.3 s \(chroma\.read_timeout_s\)"
    with pytest.raises(StoreTimeout, match=expected):
        store.client()
    with pytest.raises(StoreTimeout, match="is not answering"):  # no second wait
        store.run("read", "a get", lambda client: None)


@dataclass
class _ChromaRecall(StubEpisodic):
    """A case recall that reads its vectors from a real index (on the hung server)."""

    index: ChromaIndex | None = None

    def recall(self, customer_id: str, query: str, **kwargs: object) -> list[CaseHit]:
        assert self.index is not None
        self.index.vectors(["case-1"])
        return []


def test_a_hung_server_leaves_the_erp_facts_and_a_warning(
    engine: Engine, settings: Settings, black_hole: int
) -> None:
    memory = Memory(settings, clock=FrozenClock(NOW), llm=None, engine=engine)
    seed_erp(memory)
    index = ChromaIndex(ChromaStore(hung(black_hole), None), "hung_cases", model_id="m", dimension=3)
    result = stub_context(memory, _ChromaRecall(index=index)).build("ABARTENDE", "Why was I charged twice?")
    assert "similar past cases unavailable: StoreTimeout" in result.warnings
    assert "Bartender Supplies" in result.text and "AR004820" in result.text


def test_a_write_to_a_hung_server_is_a_store_timeout(black_hole: int) -> None:
    index = ChromaIndex(ChromaStore(hung(black_hole), None), "hung_cases", model_id="m", dimension=3)
    with pytest.raises(StoreTimeout):
        index.upsert(["a"], np.ones((1, 3), dtype=np.float32), [{"tenant": "t", "customer_id": "c"}])


def test_doctor_reports_a_hung_store_as_failed(settings: Settings, black_hole: int) -> None:
    checked = {r.item: r for r in run_checks(settings.model_copy(update={"chroma": hung(black_hole)}))}
    assert checked["chroma"].verdict == "fail"
    assert "did not answer" in checked["chroma"].detail


def test_an_embedded_store_held_by_another_process_refuses_in_one_line_naming_the_server_mode(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "chroma"
    directory.mkdir()
    conf = ChromaSettings(path=directory, read_timeout_s=0.2, timeout_s=0.3)
    store = ChromaStore(conf, directory)
    index = ChromaIndex(store, "held_cases", model_id="m", dimension=3)
    with (directory / LOCK_NAME).open("a+b") as other:  # another open file: another process to flock
        fcntl.flock(other.fileno(), fcntl.LOCK_EX)
        with pytest.raises(StoreBusy) as refused:
            index.upsert(["a"], np.ones((1, 3), dtype=np.float32), [{"tenant": "t", "customer_id": "c"}])
    assert "set chroma.host" in str(refused.value) and "\n" not in str(refused.value)
    index.upsert(["a"], np.ones((1, 3), dtype=np.float32), [{"tenant": "t", "customer_id": "c"}])
    assert index.count() == 1
    store.release()


class _DigestEmbedder:
    model_id, dimension = "digest-4", 4

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray([[len(t), 1.0, 2.0, 3.0] for t in texts], dtype=np.float32)

    def close(self) -> None:
        pass


def test_the_turn_indexer_opens_a_slow_server_within_the_write_deadline(
    sqlite_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server slower to open than a recall may wait (a loaded machine) still gets the turns'
    vectors: the indexer writes, so it waits ``chroma.timeout_s``, not ``chroma.read_timeout_s``."""

    def slow_open(conf: ChromaSettings) -> object:
        time.sleep(0.6)
        return open_embedded(tmp_path / "server-side")

    monkeypatch.setattr(vector_store, "open_server", slow_open)
    settings = Settings(
        data_dir=tmp_path / "data",
        chroma=ChromaSettings(host="127.0.0.1", port=9, read_timeout_s=0.2, timeout_s=5),
        conversations=ConversationSettings(enabled=True),
        episodic=EpisodicSettings(allow_unknown_customers=True),
    )
    memory = Memory(settings, clock=FrozenClock(NOW), llm=None, engine=sqlite_engine)
    memory.__dict__["embedder"] = _DigestEmbedder()
    try:
        for i in range(3):
            memory.record_turn("s-1", "ACME", "user", f"Where is invoice {i}?")
        memory.conversations.flush(30)
        check = memory.conversations.check_index()
    finally:
        memory.close()
    assert (check.indexed_turns, check.missing) == (3, 0)
