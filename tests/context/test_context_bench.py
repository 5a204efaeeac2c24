"""A tiny run of scripts/bench_context: it loads, measures and ends with the agreed JSON line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa
from conftest import scratch_pg_database
from paths import ROOT


def test_bench_context_smoke(tmp_path: Path) -> None:
    args = "--customers 30 --documents 120 --cases 60 --session-lengths 10,40 --sessions-per-length 1"
    args += f" --builds 6 --no-spin-compare --erp-changes 4 --erp-changes-rounds 2 --workdir {tmp_path}"
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/bench_context.py"), *args.split()],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    for key in ("p50_ms", "p95_ms", "over_budget_contexts", "pinned_present_ratio", "context_tokens_p50",
                "full_history_tokens_p50", "named_document_found_ratio"):  # fmt: skip
        assert key in figures
    assert figures["over_budget_contexts"] == 0
    assert figures["pinned_present_ratio"] == 1.0
    assert figures["named_document_builds"] >= 1
    assert figures["named_document_found_ratio"] == 1.0  # among the 1,000 open documents of one customer
    assert figures["conversations"] == "both" and figures["earlier_conversations_ratio"] == 1.0
    assert figures["conversations_off"]["p95_ms"] > 0
    changes = figures["erp_changes_alternated"]
    assert figures["erp_changes_per_customer"] == 4 and changes["rounds"] == len(changes["p95_delta_ms"]) == 2
    assert changes["on_p95_ms_median"] > 0 and changes["off_p95_ms_median"] > 0


def test_bench_context_runs_on_a_postgresql_scratch_database_and_drops_it() -> None:
    with scratch_pg_database("bench_ctx_admin") as admin:
        args = "--customers 20 --documents 80 --cases 40 --session-lengths 10 --sessions-per-length 1"
        args += " --builds 6 --no-spin-compare --conversations on"
        done = subprocess.run(
            [sys.executable, str(ROOT / "scripts/bench_context.py"), *args.split(), "--database", admin],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        assert figures["database"] == "postgresql" and figures["over_budget_contexts"] == 0
        assert figures["named_document_found_ratio"] == 1.0
        made = figures["scratch_databases"]
        assert len(made) == 1 and made[0].startswith("bench_context_")
        engine = sa.create_engine(admin)
        with engine.connect() as conn:
            # its own scratch store only: another bench run may hold one of its own meanwhile
            query = sa.text("SELECT datname FROM pg_database WHERE datname = :n")
            assert conn.execute(query, {"n": made[0]}).all() == []  # dropped, as after a failed run
        engine.dispose()
