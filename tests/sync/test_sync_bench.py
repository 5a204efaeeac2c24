"""Smoke test of scripts/bench_sync at a tiny size: it runs end to end and prints the agreed JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from paths import SCRIPTS

BENCH = SCRIPTS / "bench_sync.py"


def test_bench_prints_a_table_and_the_summary_json(tmp_path: Path) -> None:
    sizes = ["--customers", "40", "--documents", "80", "--page-size", "25", "--baseline-records", "30"]
    done = subprocess.run(
        [sys.executable, str(BENCH), *sizes, "--skip-postgres", "--workdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert lines[0].split()[:3] == ["store", "run", "records"]
    summary = json.loads(lines[-1])
    for key in (
        "full_pg_records_per_s",
        "full_sqlite_records_per_s",
        "row_by_row_pg_records_per_s",
        "speedup_vs_row_by_row",
        "noop_incremental_s",
        "noop_list_requests_per_stream",
        "one_percent_changed",
        "one_percent_rows_written",
    ):
        assert key in summary
    assert summary["noop_list_requests_per_stream"] == {"Customer": 1, "Invoice": 1, "SalesOrder": 1}
    assert summary["one_percent_rows_written"] == summary["one_percent_changed"] == 3


def test_bench_reports_the_history_cost_in_alternated_rounds_beside_stores_without_it(tmp_path: Path) -> None:
    sizes = ["--customers", "200", "--documents", "400", "--page-size", "50"]
    done = subprocess.run(
        [sys.executable, str(BENCH), *sizes, "--skip-postgres", "--workdir", str(tmp_path),
         "--history-only", "--rounds", "2", "--incrementals", "2"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr[-2000:]
    cost = json.loads(done.stdout.strip().splitlines()[-1])["history"]["sqlite"]
    # 1% of each entity changed a tracked field: at least one change row per changed record.
    assert cost["history_rows"] >= 6
    # Every round is a fresh pair of stores; every 1% change is measured on both, in turn.
    assert cost["full_sync"]["pairs"] == 2 and cost["one_percent_incremental"]["pairs"] == 4
    assert (
        cost["full_sync"]["wall_ratio_median"] > 0 and cost["one_percent_incremental"]["cpu_ratio_median"] > 0
    )
    assert cost["history_bytes_per_change"] > 0
    assert list(tmp_path.glob("history-*.sqlite3")) == []  # each round's stores are removed after it
