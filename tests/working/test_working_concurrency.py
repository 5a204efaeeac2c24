"""Two real processes appending to one session keep every turn, in order (SQLite and PostgreSQL)."""

from __future__ import annotations

import multiprocessing
from typing import Any

from pydantic import SecretStr
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.memory import Memory
from connector.settings import DatabaseSettings, Settings, WorkingMemorySettings

TURNS_PER_PROCESS = 25


def _append(url: str, data_dir: str, name: str, start: Any) -> None:
    settings = Settings(
        data_dir=data_dir,
        database=DatabaseSettings(url=SecretStr(url)),
        working=WorkingMemorySettings(verbatim_turns=5, fold_batch=3),  # folds race with appends too
    )
    memory = Memory(settings, clock=FrozenClock(), llm=None)
    start.wait(timeout=60)
    for i in range(TURNS_PER_PROCESS):
        memory.record_turn("shared", "C1", "user", f"{name}-{i} INV-{ord(name) * 100 + i:06d}")


def test_two_processes_append_to_one_session(engine: Engine, tmp_path: Any, settings: Settings) -> None:
    url = engine.url.render_as_string(hide_password=False)
    ctx = multiprocessing.get_context("forkserver")
    start = ctx.Event()
    workers = [ctx.Process(target=_append, args=(url, str(tmp_path / "d"), n, start)) for n in ("a", "b")]
    for worker in workers:
        worker.start()
    start.set()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    memory = Memory(settings, clock=FrozenClock(), llm=None, engine=engine)
    text = memory.working.transcript("shared")
    lines = [line for line in text.splitlines() if line.startswith("[")]
    assert [int(line[1 : line.index("]")]) for line in lines] == list(range(1, 2 * TURNS_PER_PROCESS + 1))
    for name in ("a", "b"):
        mine = [line.split(": ", 1)[1] for line in lines if f": {name}-" in line]
        assert mine == [f"{name}-{i} INV-{ord(name) * 100 + i:06d}" for i in range(TURNS_PER_PROCESS)]
    state = memory.working.state("shared")
    assert state.summary is not None
    # Each turn names its own invoice: every folded turn is in the summary, at its own seq.
    folded = [line for line in state.summary.splitlines() if line.startswith("INV-")]
    seqs = sorted(int(line.split("(turn ", 1)[1].split(")")[0]) for line in folded)
    assert seqs == list(range(1, state.summary_upto_seq + 1))
