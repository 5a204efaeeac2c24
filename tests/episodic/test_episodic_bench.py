"""Smoke test of scripts/bench_episodic on a tiny index (the real run is a script, not a test)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import sqlalchemy as sa
from paths import SCRIPTS

BENCH = SCRIPTS / "bench_episodic.py"


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


def test_a_kept_store_is_built_once_then_reused_with_every_entry_recallable(tmp_path: Path) -> None:
    bench = load_bench()
    built = bench.persisted(tmp_path / "300", 300)
    assert not built.reused
    assert bench.store_counts(built.memory) == {"rows": 300, "indexed": 300, "vectors": 300}
    built.memory.close()

    again = bench.persisted(tmp_path / "300", 300)
    assert again.reused and again.load_s == round(built.load_s, 1)  # the build time it recorded
    with again.memory.engine.connect() as conn:
        summary = conn.execute(
            sa.select(bench.ENTRIES.c.summary).where(bench.ENTRIES.c.case_id == "case-42")
        ).scalar_one()
    hits = again.memory.episodic.recall("C00042", " ".join(summary.split()[:6]), k=3)
    assert [h.case_id for h in hits] == ["case-42"]  # its one entry, through rows, postings and vector
    assert bench.figures(bench_timed(bench, again))["recall_p95_ms"] > 0
    again.memory.close()


def bench_timed(bench: ModuleType, store: object) -> object:
    for i in range(3):
        bench.time_recall(store, i)
    return store


def test_calibration_suggests_the_first_percentile_of_true_matches() -> None:
    calibration = load_bench().calibration([0.5] * 99 + [0.1], [0.2] * 10)
    assert 0.1 <= calibration["suggested_threshold"] <= 0.5
    assert calibration["other_median"] == 0.2


def test_quality_reports_every_method_per_question_kind(tmp_path: Path) -> None:
    bench = load_bench()
    memory = bench.new_memory(tmp_path)
    episodic = memory.episodic
    cases = [
        episodic.prepare("ACME", "Priya: the forklift broke down on 14 March.", "", case_id="t1"),
        episodic.prepare("ACME", "Jonas: lovely weather for a walk today.", "", case_id="t2"),
        episodic.prepare("OTHER", "Priya: the forklift broke down again.", "", case_id="t3"),
    ]
    queries = [
        {"customer": "ACME", "text": "What broke on March 14th?", "expected": ["t1"], "kind": "date"},
        {"customer": "ACME", "text": "Was it sunny outside?", "expected": ["t2"], "kind": "paraphrase"},
    ]
    labelled = bench.LabelledSet("tiny", cases, queries)
    assert bench.ingest(episodic, labelled)["statuses"] == {"created": 3}
    owner = {c.case_key: c.scope.customer_id for c in cases}
    result = {name: bench.evaluate(episodic, labelled, owner, f) for name, f in bench.METHODS.items()}
    assert set(result) == {"dense", "lexical", "dense centred", "hybrid", "hybrid + hedge"}
    assert result["hybrid"]["date"]["r1"] == 1.0 and result["hybrid"]["all"]["r10"] == 1.0
    assert result["lexical"]["paraphrase"]["r10"] == 0.0  # no word in common: only the dense side finds it
    assert all(r["leaks"] == 0 for r in result.values())


def test_paired_counts_questions_one_ranking_finds_and_the_other_misses() -> None:
    paired = load_bench().paired
    first, second = [1, 3, 0, 7, 2], [2, 0, 4, 1, 9]  # ranks, 0 = not found
    assert paired(first, second, 5)[:2] == (2, 2)  # won: 3 vs missed, 2 vs 9; lost: missed vs 4, 7 vs 1
    assert paired(first, second, 10)[:2] == (1, 1)  # 9 and 7 count at 10: only 3 vs missed, missed vs 4
    assert paired(first, first, 5) == (0, 0, 1.0)  # identical rankings: no evidence either way


def test_paired_p_value_is_the_exact_two_sided_binomial_of_the_split() -> None:
    paired = load_bench().paired
    assert paired([1] * 10, [0] * 10, 5) == (10, 0, 0.002)  # 2 / 2**10
    assert paired([1] * 3 + [0] * 5, [0] * 3 + [1] * 5, 5) == (3, 5, 0.727)
    won_lost_p = paired([1] * 4 + [0] * 4, [0] * 4 + [1] * 4, 5)
    assert won_lost_p == (4, 4, 1.0)


def test_past_conversation_quality_counts_the_evidence_a_hit_window_shows(tmp_path: Path) -> None:
    bench = load_bench()
    turn_quality = sys.modules["_turn_quality"].turn_quality

    def turn(conversation: str, session: int, n: int, speaker: str, text: str) -> dict[str, object]:
        turn_id = f"{conversation}:{n}"
        return {"conversation": conversation, "session": session, "speaker": speaker, "turn_id": turn_id,
                "text": f"{speaker}: {text}"}  # fmt: skip

    turns = [
        turn("C1", 1, 1, "Ana", "my kayak flipped on the lake"),
        turn("C1", 1, 2, "Bo", "oh no, the lake was cold then"),
        turn("C1", 2, 3, "Ana", "I baked bread for the neighbours"),
        turn("C2", 1, 1, "Cy", "my kayak is brand new"),
    ]
    questions = [
        {
            "conversation": "C1",
            "question": "What happened with the kayak?",
            "evidence": ["C1:1"],
            "kind": "a",
        },
        {"conversation": "C1", "question": "Who baked bread?", "evidence": ["C1:3"], "kind": "b"},
    ]
    result = turn_quality(
        bench.new_memory(tmp_path, retention_days=800), turns, questions, bench.TURN_METHODS
    )
    assert result["cases"] == 4 and result["queries"] == 2
    assert set(result["methods"]) == set(bench.TURN_METHODS)
    hybrid = result["methods"]["hybrid"]
    assert hybrid["all"]["r5"] == 1.0  # each evidence turn is a hit or the neighbour of one
    assert all(m["leaks"] == 0 for m in result["methods"].values())  # C2's kayak is never a hit of C1


def test_ingest_run_reports_the_rate_with_and_without_vector_reuse(tmp_path: Path) -> None:
    result = load_bench().ingest_runs(tmp_path, 1)
    assert result["statuses"] == {"created": result["cases"]}
    # the set repeats texts (numbers and dates are not embedded): fewer distinct texts than cases
    assert 0 < result["distinct_embedded_texts"] < result["cases"]
    anew = result["every_text_embedded_anew"]
    assert anew["cases_per_s_median"] > 0 and result["cases_per_s_median"] > 0
    # with reuse each distinct text is embedded once; without, again in every call that has it
    assert result["embedded_texts"] == result["distinct_embedded_texts"]
    assert anew["embedded_texts"] > result["embedded_texts"]
