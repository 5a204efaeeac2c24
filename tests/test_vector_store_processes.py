"""The embedded default is safe for the processes it is deployed with: a sync (case ingest), an
agent and ``forget`` run as three processes on one embedded vector store, on SQLite and on
PostgreSQL. None fails, every kept row has its vector, and not one byte of the erased customer is
left in Chroma's files, though the writers raced the erasure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa
from paths import TESTS
from sqlalchemy.engine import Engine
from vector_workers import ERASED, KEPT, memory_for

WORKER = TESTS / "vector_workers.py"
TIMEOUT_S = 300


def _run_together(data_dir: Path, url: str, roles: dict[str, int]) -> dict[str, dict[str, object]]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(WORKER.parent), os.environ.get("PYTHONPATH", "")]),
    }
    children = {
        role: subprocess.Popen(
            [sys.executable, str(WORKER), role, str(data_dir), url, str(count)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for role, count in roles.items()
    }
    results = {}
    for role, child in children.items():
        out, err = child.communicate(timeout=TIMEOUT_S)
        assert child.returncode == 0, f"{role} failed ({child.returncode}): {out}\n{err[-3000:]}"
        results[role] = json.loads(out.strip().splitlines()[-1])
    return results


def _files_naming(directory: Path, needle: bytes) -> list[str]:
    return sorted(
        str(path.relative_to(directory))
        for path in directory.rglob("*")
        if path.is_file() and needle in path.read_bytes()
    )


def test_sync_agent_and_forget_share_the_embedded_store(engine: Engine, tmp_path: Path) -> None:
    url = engine.url.render_as_string(hide_password=False)
    data_dir = tmp_path / "data"
    results = _run_together(data_dir, url, {"sync": 30, "agent": 30, "forget": 0})
    assert results["sync"]["done"].get(KEPT) == 30 and results["agent"]["done"].get(KEPT) == 30  # type: ignore[union-attr]
    assert results["forget"]["done"].get("erased", 0) > 0  # type: ignore[union-attr]  # it counts what it erased

    memory = memory_for(data_dir, url)
    try:
        cases, turns = memory.episodic.check_index(), memory.conversations.check_index()
        assert cases.consistent and cases.live_entries == 30, cases
        assert turns.consistent and turns.indexed_turns == 30, turns
    finally:
        memory.close()
    assert _files_naming(data_dir / "chroma", ERASED.encode()) == []
    with engine.connect() as conn:
        left = conn.execute(
            sa.text("SELECT count(*) FROM episodic_entry WHERE customer_id = :c"), {"c": ERASED}
        ).scalar_one()
    assert left == 0
