"""Chroma for the episodic tests: embedded (a temp directory) and a real ``chroma run`` server.

The server starts once per session on a free loopback port, is ready when its heartbeat answers,
and is stopped at the end. In CI (``CI=true``) a server that does not start fails the tests that
need it; elsewhere they skip with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from ports import free_port
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.embeddings.base import Embedder
from connector.episodic import EpisodicMemory
from connector.episodic.chroma_index import cases_index
from connector.memory import Memory
from connector.settings import ChromaSettings, EpisodicSettings, Settings

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class ChromaServer:
    host: str
    port: int
    path: Path


def _chroma_executable() -> str | None:
    beside = Path(sys.executable).parent / "chroma"
    return str(beside) if beside.exists() else shutil.which("chroma")


def _heartbeat(host: str, port: int) -> bool:
    try:
        return httpx.get(f"http://{host}:{port}/api/v2/heartbeat", timeout=1.0).status_code == 200
    except httpx.HTTPError:
        return False


def _unavailable(message: str) -> None:
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """A real Chroma server (``chroma run``) for this test session."""
    executable = _chroma_executable()
    if executable is None:
        _unavailable("the `chroma` command (from the chromadb package) is not installed")
        raise AssertionError("unreachable")
    host, port = "127.0.0.1", free_port()
    path = tmp_path_factory.mktemp("chroma-server")
    log_path = path.parent / f"chroma-server-{port}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [executable, "run", "--path", str(path), "--host", host, "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _heartbeat(host, port):
            if process.poll() is not None or time.monotonic() > deadline:
                tail = log_path.read_text(errors="replace")[-2000:]
                _unavailable(f"Chroma server did not start on {host}:{port} (exit {process.poll()}): {tail}")
            time.sleep(0.1)
        yield ChromaServer(host=host, port=port, path=path)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture(params=["embedded", pytest.param("server", marks=pytest.mark.chroma_server)])
def chroma_settings(request: pytest.FixtureRequest, tmp_path: Path) -> ChromaSettings:
    """Chroma settings for one test: an embedded store in a temp dir, or the session's server.

    On the shared server each test gets its own collection prefix, so tests never see each other's data.
    """
    prefix = f"t{uuid.uuid4().hex[:12]}"
    if request.param == "embedded":
        return ChromaSettings(path=tmp_path / "chroma", collection_prefix=prefix)
    server: ChromaServer = request.getfixturevalue("chroma_server")
    return ChromaSettings(host=server.host, port=server.port, collection_prefix=prefix)


@pytest.fixture
def episodic_clock() -> FrozenClock:
    return FrozenClock(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))


@pytest.fixture
def episodic_settings(tmp_path: Path, chroma_settings: ChromaSettings) -> Settings:
    # The episodic tests record cases for customers they name without syncing them (the guard
    # against unknown customers has its own tests: tests/episodic/test_episodic_customers.py).
    return Settings(
        data_dir=tmp_path / "data",
        chroma=chroma_settings,
        episodic=EpisodicSettings(allow_unknown_customers=True),
    )


@pytest.fixture
def memory(episodic_settings: Settings, sqlite_engine: Engine, episodic_clock: FrozenClock) -> Memory:
    """A non-LLM Memory on SQLite with the parametrized Chroma (embedded, then server)."""
    return Memory(episodic_settings, clock=episodic_clock, llm=None, engine=sqlite_engine)


def episodic_with(memory: Memory, embedder: Embedder) -> EpisodicMemory:
    """A second EpisodicMemory over ``memory``'s stores and Chroma, reading and writing with ``embedder``."""
    return EpisodicMemory(
        memory.engine,
        clock=memory.clock,
        retention=memory.settings.retention,
        embedder=lambda: embedder,
        index=lambda e: cases_index(memory.chroma_client, memory.settings.chroma, e),
        llm=memory.llm,
        erasures=memory.erasures,
        default_tenant=memory.default_tenant,
        allow_unknown_customers=memory.settings.episodic.allow_unknown_customers,
    )
