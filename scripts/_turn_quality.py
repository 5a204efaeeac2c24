"""The chats set recalled as past conversations (``bench_episodic``'s fourth quality set).

The three other sets record each dialogue turn as a *case* and ask ``recall_cases``, as the held-out
benchmark does. An agent reaches earlier conversations another way: the turns of its sessions are
recorded in working memory (``record_turn``), indexed in the background, and found by
``recall_conversations`` (the same hybrid recall over the customer's indexed turns, each hit with
its neighbouring turns). This records the chats that way, one session per chat session (speakers
as the user and the assistant), and asks every question of the set. A question's rank is the
first hit whose window (the hit and its neighbouring turns) holds an evidence turn: what the agent
reads, and the only fair count here, since a hit inside a better hit's window is not repeated
(the window shows it), so the evidence turn itself is often shown as a neighbour of the reply that
repeats its words. ``turn_r5`` counts the evidence turn itself among the top 5 hits. Unlike the
case path, nothing is merged: the small talk repeated across sessions stays as many turns.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _recall_figures import per_kind_figures

from connector.memory import Memory
from connector.recall.fusion import Fusion

K = 10


def chat_set(root: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The chats' turns and questions (``benchmarks/chat_*.jsonl``)."""
    turns = [json.loads(line) for line in (root / "benchmarks/chat_turns.jsonl").open()]
    questions = [json.loads(line) for line in (root / "benchmarks/chat_questions.jsonl").open()]
    return turns, questions


def record_chats(memory: Memory, turns: list[dict[str, Any]]) -> tuple[dict[tuple[str, int], str], float]:
    """Every chat turn as a turn of its session: the map (session, seq) -> the set's turn id, and
    the seconds recording and indexing took."""
    first_speaker: dict[str, str] = {}
    turn_of: dict[tuple[str, int], str] = {}
    started = time.perf_counter()
    for t in turns:
        session = f"{t['conversation']}:S{t['session']}"
        first = first_speaker.setdefault(t["conversation"], t["speaker"])
        role = "user" if t["speaker"] == first else "assistant"
        recorded = memory.record_turn(session, t["conversation"], role, t["text"])
        turn_of[(session, recorded.seq)] = t["turn_id"]
    memory.conversations.flush(timeout=600.0)
    return turn_of, time.perf_counter() - started


@contextmanager
def fusion_of(memory: Memory, fusion: Fusion) -> Iterator[None]:
    previous = memory.conversations.fusion
    memory.conversations.fusion = fusion
    try:
        yield
    finally:
        memory.conversations.fusion = previous


def evaluate_turns(
    memory: Memory, turn_of: dict[tuple[str, int], str], questions: list[dict[str, Any]], fusion: Fusion
) -> dict[str, Any]:
    """recall@1/5/10 and MRR of the first hit whose window shows an evidence turn, per kind, plus
    ``turn_r5``: the evidence turn itself among the top 5 hits."""
    ranks: dict[str, list[int]] = {}
    itself: dict[str, list[bool]] = {}
    leaks = 0
    with fusion_of(memory, fusion):
        for q in questions:
            hits = memory.recall_conversations(q["conversation"], q["question"], k=K)
            leaks += sum(1 for h in hits if not h.session_id.startswith(q["conversation"] + ":"))
            windows = [
                {turn_of.get((t.session_id, t.seq)) for t in (*h.before, h.turn, *h.after)} for h in hits
            ]
            rank = next((n for n, w in enumerate(windows, start=1) if not w.isdisjoint(q["evidence"])), 0)
            ranks.setdefault(q["kind"], []).append(rank)
            found = any(turn_of.get((h.session_id, h.seq)) in q["evidence"] for h in hits[:5])
            itself.setdefault(q["kind"], []).append(found)
    result = {**per_kind_figures(ranks), "leaks": leaks}
    itself["all"] = [found for kind in ranks for found in itself[kind]]
    for kind, flags in itself.items():
        result[kind]["turn_r5"] = round(sum(flags) / len(flags), 3)
    return result


def turn_quality(
    memory: Memory, turns: list[dict[str, Any]], questions: list[dict[str, Any]], methods: dict[str, Fusion]
) -> dict[str, Any]:
    """The turns recorded as sessions and the questions asked through ``recall_conversations``, by
    every method (``memory`` is closed afterwards)."""
    try:
        turn_of, seconds = record_chats(memory, turns)
        methods_out = {name: evaluate_turns(memory, turn_of, questions, f) for name, f in methods.items()}
    finally:
        memory.close()
    return {
        "name": "chats as past conversations (recall_conversations)",
        "cases": len(turn_of),
        "customers": len({q["conversation"] for q in questions}),
        "queries": len(questions),
        "ingest": {"seconds": round(seconds, 1), "turns_per_s": round(len(turn_of) / seconds, 1)},
        "methods": methods_out,
    }
