"""``connector schedule`` as a real process: a SIGTERM mid-sync commits the page in hand, logs out of
the ERP and exits 143 (SIGINT: 130); the next scheduler run finishes the window."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa
from sync_rigs import Rig, rig_factory
from test_sync_faults import connector_process, count, customer_ids, watermark

from connector.semantic.upsert import party_t
from connector.sync.runlog import run_t

__all__ = ["rig_factory"]  # the fixture, from tests/sync_rigs.py


def schedule_process(tmp_path: Path, rig: Rig) -> subprocess.Popen[str]:
    return connector_process(tmp_path, rig, "schedule")


def log_messages(err: str) -> list[str]:
    return [json.loads(line).get("message", "") for line in err.splitlines() if line.startswith("{")]


def test_sigterm_stops_the_scheduler_after_the_page_in_hand_logs_out_and_exits_143(
    rig_factory: Callable[..., Rig], tmp_path: Path
) -> None:
    rig = rig_factory(streams=["Customer"], customers=150)
    process = schedule_process(tmp_path, rig)
    rig.hooked.on_list = lambda entity, n: os.kill(process.pid, signal.SIGTERM) if n == 3 else None
    _, err = process.communicate(timeout=120)

    assert process.returncode == 128 + signal.SIGTERM == 143, err
    messages = log_messages(err)
    assert any(m.startswith("stopping on SIGTERM") for m in messages), err
    assert messages[-1] == "scheduler stopped"
    last_line = err.strip().splitlines()[-1]
    assert last_line == "connector: scheduler stopped by SIGTERM; running jobs finished first"
    assert rig.fake.active_sessions == 0  # logged out before exiting
    stored = count(rig.engine, party_t)
    assert 0 < stored < 150 and stored % 25 == 0  # whole pages only
    with rig.engine.connect() as conn:
        run = conn.execute(sa.select(run_t)).one()
    assert (run.status, run.pages * 25) == ("interrupted", stored)
    assert watermark(rig.engine, "Customer") is None

    rig.hooked.on_list = None
    process = schedule_process(tmp_path, rig)  # its first job is a sync, at once
    wait_for_a_finished_run(rig)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGINT == 130, err
    assert customer_ids(rig.engine) == set(rig.fake.keys("Customer"))
    assert rig.fake.active_sessions == 0


def wait_for_a_finished_run(rig: Rig, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with rig.engine.connect() as conn:
            if conn.execute(sa.select(run_t.c.id).where(run_t.c.status == "ok")).first():
                return
        time.sleep(0.1)
    raise AssertionError("the scheduler's sync did not finish")
