"""Smoke test of scripts/bench_episodic on a tiny index (the real run is a script, not a test)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parent.parent / "scripts" / "bench_episodic.py"


def load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_episodic", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_scale_run_times_our_recall_beside_the_filtered_query(tmp_path: Path) -> None:
    result = load_bench().scale(tmp_path, 300, 5, 3)
    assert result["entries"] == 300
    for key in ("recall_p95_ms", "naive_p95_ms", "embed_p95_ms"):
        assert result[key] > 0


def test_calibration_suggests_the_first_percentile_of_true_matches() -> None:
    calibration = load_bench().calibration([0.5] * 99 + [0.1], [0.2] * 10)
    assert 0.1 <= calibration["suggested_threshold"] <= 0.5
    assert calibration["other_median"] == 0.2
