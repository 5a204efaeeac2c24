"""Failures are one line, and recovery needs no hand work (issue 14, item 8).

A dead database (PostgreSQL on a closed port, an SQLite path under a regular file, an SQLite file
of garbage) makes every command print one redacted ``StoreError`` line and exit 5; ``Memory``
raises ``StoreError``, never a driver error. A corrupt embedded Chroma does not stop ``forget``
from erasing the relational side (exit 4, naming what it could not reach), and
``connector episodic reindex --rebuild`` recreates Chroma from the relational store, leaving
erased customers out, after which ``forget`` completes.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from paths import ROOT, SAMPLES
from sqlalchemy.engine import Engine
from stored_bytes import files_naming

from connector.cli import EXIT_PARTLY_FAILED, EXIT_STORE, build_parser, main
from connector.episodic.tables import CASES, ENTRIES
from connector.erasure.tombstones import erased_t
from connector.errors import ErasureIncomplete, StoreError
from connector.memory import Memory
from connector.scope import Scope
from connector.settings import ChromaSettings, DatabaseSettings, EpisodicSettings, Settings

PASSWORD = "s3cr3t-pw-9"
GONE, KEPT = "ZQXGONE", "KEPTCUST"

# Positional arguments each command needs; every command the parser knows is run (a new one
# without an entry here fails the test, so it is checked too).
ARGS = {
    ("context",): ["C1", "why?"],
    ("forget",): ["C1"],
    ("episodic", "restore"): ["C1"],
    ("episodic", "ingest"): ["acme"],
    ("episodic", "recall"): ["C1", "why?"],
    ("history",): ["C1"],
    ("conversations", "import"): [str(SAMPLES / "conversations_two_turns.jsonl")],
}
# Flag variants that take another path through the command.
VARIANTS = (
    ["forget", "C1", "--lift"], ["episodic", "reindex", "--check", "--fix"],
    ["episodic", "reindex", "--rebuild"], ["sync", "--full"], ["mcp", "--http"],
)  # fmt: skip
# Commands that never open the database, or report it instead of failing on it; and the demo, a
# showcase that starts its own fake ERPs and stores under its own data directory.
NO_DATABASE = {
    ("fake-erp",), ("fake-erp", "serve"), ("doctor",), ("db",), ("episodic",), ("maintenance",), ("demo",),
}  # fmt: skip
# Groups whose own action is a command (``sync`` syncs, ``forget`` forgets).
RUNNABLE_GROUPS = {("sync",)}


def dead_databases(tmp_path: Path) -> dict[str, str]:
    not_a_dir = tmp_path / "a-file"
    not_a_dir.write_text("a regular file where a directory should be")
    garbage = tmp_path / "garbage.sqlite3"
    garbage.write_bytes(os.urandom(8192))
    return {
        "postgres-closed-port": f"postgresql://app:{PASSWORD}@127.0.0.1:1/nowhere",
        "sqlite-under-a-file": f"sqlite:///{not_a_dir / 'sub' / 'connector.sqlite3'}",
        "sqlite-garbage-file": f"sqlite:///{garbage}",
    }


DEAD = ("postgres-closed-port", "sqlite-under-a-file", "sqlite-garbage-file")
TENANT = {  # an ERP that is not there either: the database is checked before any login
    "name": "acme", "kind": "acumatica", "base_url": "http://127.0.0.1:1/", "username": "u",
    "password": "erp-pw-7", "company": "C", "max_retries": 0,
}  # fmt: skip


def command_paths() -> list[tuple[str, ...]]:
    import argparse

    paths: list[tuple[str, ...]] = []

    def walk(parser: argparse.ArgumentParser, prefix: tuple[str, ...]) -> None:
        groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        for action in groups:
            for name, child in action.choices.items():
                walk(child, (*prefix, name))
        if prefix and (not groups or prefix in RUNNABLE_GROUPS):
            paths.append(prefix)

    walk(build_parser(), ())
    return paths


def cli_env(database_url: str, data_dir: Path, *, tenants: list[Any] | None = None) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("CONNECTOR_")} | {
        "CONNECTOR_DATABASE__URL": database_url,
        "CONNECTOR_DATA_DIR": str(data_dir),
        "CONNECTOR_TENANTS": json.dumps(tenants or []),
        "PYTHONPATH": str(ROOT),
    }


def run_cli(env: dict[str, str], cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "connector.cli", *argv],
        env=env, cwd=cwd, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def assert_one_store_line(stderr: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("connector: StoreError: database "), stderr
    assert "Traceback" not in stderr and PASSWORD not in stderr and "erp-pw-7" not in stderr


# A dead database -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dead", DEAD)
def test_every_command_fails_in_one_line_with_exit_5(
    dead: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CONNECTOR_DATABASE__URL", dead_databases(tmp_path)[dead])
    monkeypatch.setenv("CONNECTOR_TENANTS", json.dumps([TENANT]))
    paths = [path for path in command_paths() if path not in NO_DATABASE]
    assert {("sync",), ("sync", "status"), ("schedule",), ("mcp",), ("db", "upgrade")} <= set(paths)
    assert len(paths) >= 16
    for argv in [[*path, *ARGS.get(path, [])] for path in paths] + [list(v) for v in VARIANTS]:
        assert main(argv) == EXIT_STORE, argv
        assert_one_store_line(capsys.readouterr().err)


@pytest.mark.parametrize("dead", DEAD)
def test_the_named_commands_in_a_process_print_one_line_and_exit_5(dead: str, tmp_path: Path) -> None:
    env = cli_env(dead_databases(tmp_path)[dead], tmp_path / "data", tenants=[TENANT])
    for argv in (["context", "C1", "why?"], ["sync", "status"], ["forget", "C1"], ["episodic", "stats"],
                 ["db", "upgrade"], ["sync"]):  # fmt: skip
        done = run_cli(env, tmp_path, *argv)
        assert done.returncode == EXIT_STORE, (argv, done.stderr)
        assert_one_store_line(done.stderr)
        assert PASSWORD not in done.stdout


def test_doctor_reports_the_dead_sqlite_directory_as_a_failed_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CONNECTOR_DATABASE__URL", dead_databases(tmp_path)["sqlite-under-a-file"])
    assert main(["doctor"]) == 1
    assert "[FAIL] database" in capsys.readouterr().out


def dead_memory(tmp_path: Path, dead: str) -> Memory:
    url = dead_databases(tmp_path)[dead]
    settings = Settings(data_dir=tmp_path / "data", database=DatabaseSettings(url=url))  # type: ignore[arg-type]
    return Memory(settings, llm=None)


MEMORY_CALLS: dict[str, Callable[[Memory], Any]] = {
    "build_context": lambda m: m.build_context("C1", "why?"),
    "abuild_context": lambda m: asyncio.run(m.abuild_context("C1", "why?")),
    "recall_cases": lambda m: m.recall_cases("C1", "why?"),
    "record_case": lambda m: m.record_case("C1", "Asked about INV-1.", "Explained it."),
    "record_turn": lambda m: m.record_turn("s-1", "C1", "user", "hello"),
    "pin": lambda m: m.pin("s-1", "order", "SO-1"),
    "learn": lambda m: m.learn("C1", "Prefers calls"),
    "lookup_document": lambda m: m.lookup_document("C1", "INV-1"),
    "forget": lambda m: m.forget("C1"),
    "lift_erasure": lambda m: m.lift_erasure("C1"),
    "rebuild_episodic_index": lambda m: m.rebuild_episodic_index(),
}


@pytest.mark.parametrize("dead", DEAD)
@pytest.mark.parametrize("call", sorted(MEMORY_CALLS))
def test_memory_methods_raise_store_error_not_driver_errors(call: str, dead: str, tmp_path: Path) -> None:
    memory = dead_memory(tmp_path, dead)
    with pytest.raises(StoreError) as caught:
        MEMORY_CALLS[call](memory)
    assert PASSWORD not in str(caught.value)
    assert "\n" not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


# A corrupt Chroma --------------------------------------------------------------------------------
@pytest.fixture
def seeded(engine: Engine, tmp_path: Path) -> Memory:
    """Three cases, a turn and a fact of GONE, two cases of KEPT, on SQLite or PostgreSQL."""
    data = tmp_path / "data"
    settings = Settings(  # the cases are recorded for customers no sync brought
        data_dir=data,
        chroma=ChromaSettings(path=data / "chroma"),
        episodic=EpisodicSettings(allow_unknown_customers=True),
    )
    memory = Memory(settings, llm=None, engine=engine)
    for i in range(3):
        memory.record_case(GONE, f"Marmalade order SO-{i:06d} late.", "Freight refunded.", case_id=f"g{i}")
    memory.record_turn("s-gone", GONE, "user", "Is the marmalade claim ok?")
    memory.learn(GONE, "Runs the marmalade site")
    for i in range(2):
        memory.record_case(KEPT, f"Disputed INV-{i:06d} total.", "Credited 10.00 USD.", case_id=f"k{i}")
    memory.close()
    return memory


def url_of(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=False)


def rows_of(engine: Engine, customer: str) -> int:
    with engine.connect() as conn:
        entries = conn.execute(sa.select(sa.func.count()).where(ENTRIES.c.customer_id == customer))
        cases = conn.execute(sa.select(sa.func.count()).where(CASES.c.customer_id == customer))
        return int(entries.scalar_one()) + int(cases.scalar_one())


def tombstones(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(erased_t)).scalar_one())


def corrupt(chroma_dir: Path) -> None:
    path = chroma_dir / "chroma.sqlite3"
    with path.open("r+b") as file:
        file.write(os.urandom(min(path.stat().st_size, 64 * 1024)))


def test_forget_with_a_corrupt_chroma_erases_the_relational_side_and_rebuild_completes_it(
    seeded: Memory, engine: Engine, tmp_path: Path
) -> None:
    chroma_dir = seeded.settings.chroma_path
    corrupt(chroma_dir)
    env = cli_env(url_of(engine), seeded.settings.data_dir)

    done = run_cli(env, tmp_path, "forget", GONE)
    assert done.returncode == EXIT_PARTLY_FAILED, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Chroma" in done.stderr, done.stderr
    report = json.loads(done.stdout)
    assert report["removed"]["episodic_entries"] == 3 and report["removed"]["working_turns"] == 1
    assert report["removed"]["learned_facts"] == 1 and "Chroma" in report["incomplete"][0]
    assert rows_of(engine, GONE) == 0 and tombstones(engine) == 1
    assert rows_of(engine, KEPT) > 0

    again = run_cli(env, tmp_path, "forget", GONE)  # Chroma still unreadable: still says so
    assert again.returncode == EXIT_PARTLY_FAILED, again.stderr

    rebuilt = run_cli(env, tmp_path, "episodic", "reindex", "--rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    built = json.loads(rebuilt.stdout)
    assert (built["rebuilt"], built["skipped_erased"]) == (2, 0)
    assert "chroma.sqlite3" in built["removed_files"]
    assert files_naming(chroma_dir, [GONE.encode()]) == {}

    assert run_cli(env, tmp_path, "forget", GONE).returncode == 0  # the erasure completes
    stats = json.loads(run_cli(env, tmp_path, "episodic", "stats").stdout)
    assert (stats["live_entries"], stats["index_vectors"]) == (2, 2)
    hits = json.loads(run_cli(env, tmp_path, "episodic", "recall", KEPT, "INV-000001 total?").stdout)
    assert hits[0]["case_id"] == "k1"


def test_library_forget_raises_erasure_incomplete_after_erasing_rows(seeded: Memory, engine: Engine) -> None:
    corrupt(seeded.settings.chroma_path)
    memory = Memory(seeded.settings, llm=None, engine=engine)
    with pytest.raises(ErasureIncomplete) as caught:
        memory.forget(GONE)
    assert caught.value.removed["episodic_entries"] == 3 and "Chroma" in caught.value.unreached[0]
    assert rows_of(engine, GONE) == 0 and tombstones(engine) == 1


def test_rebuild_after_a_segment_directory_is_removed(seeded: Memory, engine: Engine, tmp_path: Path) -> None:
    chroma_dir = seeded.settings.chroma_path
    segments = [p for p in chroma_dir.iterdir() if p.is_dir() and _is_uuid(p.name)]
    assert segments
    for segment in segments:
        shutil.rmtree(segment)
    env = cli_env(url_of(engine), seeded.settings.data_dir)

    done = run_cli(env, tmp_path, "episodic", "reindex", "--rebuild")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rebuilt"] == 5
    check = run_cli(env, tmp_path, "episodic", "reindex", "--check")
    assert check.returncode == 0 and json.loads(check.stdout)["consistent"] is True
    hits = json.loads(run_cli(env, tmp_path, "episodic", "recall", GONE, "marmalade SO-000002").stdout)
    assert hits[0]["case_id"] == "g2"


def test_rebuild_leaves_a_tombstoned_customers_rows_out_of_chroma(
    seeded: Memory, engine: Engine, tmp_path: Path
) -> None:
    """Rows an interrupted forget left behind (tombstone written, rows not yet deleted) stay out."""
    seeded.erasures.erase(Scope.of(seeded.default_tenant, GONE))
    env = cli_env(url_of(engine), seeded.settings.data_dir)

    done = run_cli(env, tmp_path, "episodic", "reindex", "--rebuild")

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["rebuilt"], report["skipped_erased"]) == (2, 3)
    assert "chroma.sqlite3" not in report["removed_files"]  # Chroma was readable: dropped, not replaced
    # The dropped collection's bytes are gone too (its log rows VACUUMed, its segment directory removed).
    assert files_naming(seeded.settings.chroma_path, [GONE.encode()]) == {}
    memory = Memory(seeded.settings, llm=None, engine=engine)
    assert {stamp.customer_id for _, stamp in memory.episodic.index.stamps()} == {KEPT}
    memory.close()


def _is_uuid(name: str) -> bool:
    try:
        uuid.UUID(name)
    except ValueError:
        return False
    return True
