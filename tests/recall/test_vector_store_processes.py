"""The embedded default is safe for the processes it is deployed with: a real ``connector sync``
(which ingests the ERP's closed cases of two customers), an agent (turns and recalls) and
``forget`` of one of the customers run as three processes on one embedded vector store, on SQLite
and on PostgreSQL. None fails, the other customer keeps every case and turn with its vector, and not
one byte of the erased customer is left in Chroma's files, though the writers raced the erasure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa
from paths import TESTS
from stored_bytes import files_naming
from sync_rigs import Rig, rig_factory, sync_env
from vector_workers import memory_for

WORKER = TESTS / "vector_workers.py"
TIMEOUT_S = 300
TURNS = 30

__all__ = ["rig_factory"]  # the fixture, from tests/sync_rigs.py


def _closed_cases(rig: Rig, customer: str) -> int:
    records = (rig.fake.record("Case", key) for key in rig.fake.keys("Case"))
    return sum(
        1 for r in records if r["BusinessAccount"] == customer and r["Status"] in ("Closed", "Resolved")
    )


def _run_together(tmp_path: Path, rig: Rig, kept: str, erased: str) -> dict[str, dict[str, dict[str, int]]]:
    url = rig.engine.url.render_as_string(hide_password=False)
    env = sync_env(tmp_path, rig, url)
    env["PYTHONPATH"] = os.pathsep.join([str(WORKER.parent), env["PYTHONPATH"]])
    env["CONNECTOR_RETENTION__EPISODIC_DAYS"] = "3650"  # the fake's cases are older than the default
    data_dir = tmp_path / "data"
    tenant = rig.tenant.name
    children = {
        role: subprocess.Popen(
            [sys.executable, str(WORKER), role, str(data_dir), url, str(TURNS), tenant, kept, erased],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for role in ("agent", "forget")
    }
    children["sync"] = subprocess.Popen(
        [sys.executable, "-m", "connector.cli", "sync"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    results: dict[str, dict[str, dict[str, int]]] = {}
    for role, child in children.items():
        out, err = child.communicate(timeout=TIMEOUT_S)
        assert child.returncode == 0, f"{role} failed ({child.returncode}): {out}\n{err[-3000:]}"
        if role != "sync":
            results[role] = json.loads(out.strip().splitlines()[-1])
    return results


def test_sync_agent_and_forget_share_the_embedded_store(
    rig_factory: Callable[..., Rig], tmp_path: Path
) -> None:
    rig = rig_factory(
        streams=["Customer", "Case"], customers=2, vendors=0, invoices=12, sales_orders=0, bills=0,
        cases=60,
    )  # fmt: skip
    kept, erased = rig.fake.keys("Customer")[:2]
    assert _closed_cases(rig, kept) > 3 and _closed_cases(rig, erased) > 3  # both have cases to ingest

    results = _run_together(tmp_path, rig, kept, erased)
    assert results["agent"]["done"].get(kept) == TURNS
    assert results["forget"]["done"].get("erased", 0) > 0  # it counts what it erased

    def count(sql: str, customer: str) -> int:
        with rig.engine.connect() as conn:
            return int(conn.execute(sa.text(sql), {"c": customer}).scalar_one())

    closed = "SELECT count(*) FROM crm_case WHERE customer_external_id = :c AND is_closed"
    recorded = "SELECT count(*) FROM episodic_case WHERE customer_id = :c"
    entries = "SELECT count(*) FROM episodic_entry WHERE customer_id = :c"
    assert count(closed, kept) > 3 and count(recorded, kept) == count(closed, kept)  # no case lost
    assert count(recorded, erased) == 0 and count(entries, erased) == 0
    memory = memory_for(tmp_path / "data", rig.engine.url.render_as_string(hide_password=False))
    try:
        cases, turns = memory.episodic.check_index(), memory.conversations.check_index()
        assert cases.consistent and cases.live_entries == count(entries, kept), cases  # each has its vector
        assert turns.consistent and turns.indexed_turns == TURNS, turns
    finally:
        memory.close()
    assert files_naming(tmp_path / "data" / "chroma", [erased.encode()]) == {}
