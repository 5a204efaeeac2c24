"""A tiny run of scripts/bench_context_answers' core: its report has the agreed shape and its
present-ratio comes from real contexts (a named invoice cut by a tiny budget counts as missed)."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

from paths import ROOT


def load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_context_answers", ROOT / "scripts/bench_context_answers.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_answers_bench_measures_real_contexts(tmp_path: Path) -> None:
    bench = load_bench()
    with bench.synced_store(tmp_path, 4, 3) as memory:
        rng = random.Random(1)
        qs = bench.questions(memory, rng, 2) + bench.session_questions(memory, rng, 1, 20)
        figures = bench.report(bench.run(memory, qs, None))
        named = next(q for q in qs if q.kind == "invoice_by_number" and q.text.count(q.gold[0]))
        roomy = bench.report(bench.run(memory, [named], None))["overall"]
        tiny = bench.report(bench.run(memory, [named], 100))["overall"]
    assert set(figures) >= {"invoice_by_number", "session_reference", "pinned_value", "overall"}
    overall = figures["overall"]
    assert overall["questions"] == len(qs)
    assert set(overall) == {"questions", "present_ratio", "baseline_present_ratio", "leaks", "over_budget"}
    assert 0.0 <= overall["baseline_present_ratio"] <= 1.0
    assert roomy["present_ratio"] == 1.0  # one of 300 open invoices, named as written: shown
    assert tiny["present_ratio"] == 0.0  # 100 tokens hold the header only: the same invoice is missed
