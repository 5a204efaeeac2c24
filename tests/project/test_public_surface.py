"""The public surface has no gaps (issue 28, point 4): the module functions raise only the documented
errors, every public name's type hints resolve at run time, and ``Memory`` takes an embedder."""

from __future__ import annotations

import asyncio
import inspect
import os
import typing
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import connector
import connector.embeddings
from connector.embeddings.base import Embedder, Vectors
from connector.errors import StoreError
from connector.memory import Memory
from connector.settings import ChromaSettings, EpisodicSettings, Settings

PASSWORD = "s3cr3t-pw-28"


def _dead_urls(tmp_path: Path) -> dict[str, str]:
    not_a_dir = tmp_path / "a-file"
    not_a_dir.write_text("a regular file where a directory should be")
    garbage = tmp_path / "garbage.sqlite3"
    garbage.write_bytes(os.urandom(8192))
    return {
        "postgres-closed-port": f"postgresql://app:{PASSWORD}@127.0.0.1:1/nowhere",
        "sqlite-under-a-file": f"sqlite:///{not_a_dir / 'sub' / 'connector.sqlite3'}",
        "sqlite-garbage-file": f"sqlite:///{garbage}",
    }


@pytest.fixture
def default_memory_on(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Callable[[str], None]]:
    """Points the process-wide ``Memory`` behind ``connector.build_context`` at a database URL."""

    def point(url: str) -> None:
        # The query's embedding starts before the reads: a small embedder keeps the offline model out.
        monkeypatch.setattr(connector.embeddings, "embedder_for", lambda settings: CountingEmbedder())
        monkeypatch.setenv("CONNECTOR_DATA_DIR", str(tmp_path / "data"))
        monkeypatch.setenv("CONNECTOR_DATABASE__URL", url)
        monkeypatch.setattr(connector, "_default_memory", None)

    yield point
    if connector._default_memory is not None:
        connector._default_memory.close()


CALLS: dict[str, Callable[[], Any]] = {
    "build_context": lambda: connector.build_context("C1", "why was I charged twice?"),
    "abuild_context": lambda: asyncio.run(connector.abuild_context("C1", "why was I charged twice?")),
}


@pytest.mark.parametrize("dead", ["postgres-closed-port", "sqlite-under-a-file", "sqlite-garbage-file"])
@pytest.mark.parametrize("call", sorted(CALLS))
def test_module_functions_raise_store_error_on_a_dead_database(
    call: str, dead: str, tmp_path: Path, default_memory_on: Callable[[str], None]
) -> None:
    default_memory_on(_dead_urls(tmp_path)[dead])
    with pytest.raises(StoreError) as caught:
        CALLS[call]()
    assert PASSWORD not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__  # no driver error chained


@pytest.mark.parametrize("name", sorted(connector.__all__))
def test_every_public_name_has_type_hints_that_resolve_at_run_time(name: str) -> None:
    exported = getattr(connector, name)
    typing.get_type_hints(exported)  # raises NameError on a hint imported only for type checking
    if inspect.isclass(exported) and not issubclass(exported, BaseException):
        for attribute, member in vars(exported).items():
            if inspect.isfunction(member) and (not attribute.startswith("_") or attribute == "__init__"):
                typing.get_type_hints(member)


def test_every_public_memory_method_has_type_hints_that_resolve_at_run_time() -> None:
    methods = [
        (name, member)
        for name, member in inspect.getmembers(Memory, inspect.isfunction)
        if not name.startswith("_") or name in ("__init__", "__enter__", "__exit__")
    ]
    assert {"build_context", "abuild_context", "record_case", "recall_cases", "sync_runner"} <= dict(
        methods
    ).keys()
    for name, method in methods:
        hints = typing.get_type_hints(method)
        assert "return" in hints, name
    assert typing.get_type_hints(Memory.build_context)["return"] is connector.ContextResult
    assert typing.get_type_hints(Memory.__init__)["embedder"] == Embedder | None


def test_result_types_and_errors_a_caller_catches_are_exported() -> None:
    expected = {
        "ContextResult", "CaseHit", "RecordedCase", "TurnHit", "Turn", "PinnedValue", "LearnedFact",
        "DocumentDetail", "UnknownDocumentError", "ErasureIncomplete", "ErasedCustomerError",
    }  # fmt: skip
    assert expected <= set(connector.__all__)
    hints = {
        name: typing.get_type_hints(getattr(Memory, name))["return"]
        for name in ("record_turn", "pin", "learn")
    }
    assert hints == {
        "record_turn": connector.Turn,
        "pin": connector.PinnedValue,
        "learn": connector.LearnedFact,
    }
    assert issubclass(connector.UnknownDocumentError, connector.ConnectorError)


class CountingEmbedder:
    """A caller's own embedder: deterministic 8-dimensional vectors from the text's bytes."""

    model_id = "counting-8"
    dimension = 8

    def __init__(self) -> None:
        self.texts = 0
        self.closed = False

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts += len(texts)
        rows = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for j, byte in enumerate(text.encode()):
                rows[i, j % self.dimension] += byte
        norms = np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
        return (rows / norms).astype(np.float32)

    def close(self) -> None:
        self.closed = True


def test_memory_uses_the_embedder_it_is_given_and_leaves_it_open(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    settings = Settings(
        data_dir=tmp_path / "data",
        chroma=ChromaSettings(path=tmp_path / "data" / "chroma"),
        episodic=EpisodicSettings(allow_unknown_customers=True),
    )
    with Memory(settings, llm=None, embedder=embedder) as memory:
        assert memory.embedder is embedder
        memory.record_case("C1", "Charged twice for INV-1.", "Voided the duplicate INV-2.", case_id="c1")
        hits = memory.recall_cases("C1", "charged twice", k=1)
        assert [hit.case_id for hit in hits] == ["c1"]
    assert embedder.texts >= 2  # the case and the query were embedded by it, not by the offline model
    assert not embedder.closed
