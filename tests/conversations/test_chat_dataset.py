"""The LoCoMo-like labelled set in benchmarks/ is what its generator writes (deterministic), and
every question's evidence is a turn of its own conversation."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from paths import ROOT


def test_the_committed_chat_set_is_what_the_generator_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = importlib.util.spec_from_file_location("make_chat_dataset", ROOT / "scripts/make_chat_dataset.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "OUT", tmp_path)
    module.main()
    for name in ("chat_turns.jsonl", "chat_questions.jsonl"):
        assert (tmp_path / name).read_text() == (ROOT / "benchmarks" / name).read_text()


def test_every_question_has_evidence_in_its_own_conversation() -> None:
    turns = [json.loads(line) for line in (ROOT / "benchmarks/chat_turns.jsonl").open()]
    questions = [json.loads(line) for line in (ROOT / "benchmarks/chat_questions.jsonl").open()]
    conversation_of = {t["turn_id"]: t["conversation"] for t in turns}
    assert {q["kind"] for q in questions} == {
        "single-hop",
        "multi-hop",
        "temporal",
        "open-domain",
        "adversarial",
    }
    assert all(q["evidence"] for q in questions)
    assert all(conversation_of[e] == q["conversation"] for q in questions for e in q["evidence"])
