#!/usr/bin/env python3
"""How fast does a conversation history import? Turns/s of ``Memory.import_conversations`` (a JSON
Lines file in, every turn recallable when it returns) beside the embedder alone on the same texts.

Two sets, each imported into a fresh SQLite store and embedded Chroma per run:

- ``chat``: distinct chat-length turns (about 15-45 words, up to ~60 tokens), ``--customers`` x
  ``--sessions`` x ``--turns``, dated within the last 90 days;
- ``longmemeval``: the haystack sessions of the first ``--lme-questions`` questions of the dev split
  (``../shared/data/longmemeval_dev.json.gz``), each haystack session once, under its question's
  customer, with its own date (long assistant turns).

Each run times the import (file parsing, checks, writes, folds, indexing) and then, in the same
process with the same warmed model, the embedder alone on exactly the texts the indexer embedded
(each turn's text and the further parts of a long turn).
Both are reported in turns per second (the embedder alone: the import's turns over the time it
takes to embed their texts, parts included), so their ratio is the embedder's share of the import.
Runs alternate the two; medians are reported with the load average. Issue 26's bars: the chat set
at >= 300 turns/s, the long set at >= 0.8x the embedder alone.

On a shared machine the wall-clock speeds swing with the neighbours' load, so two more figures are
printed: the median of each run's own ratio (import and embedder alone seconds apart), and the
ratio of process CPU seconds (every thread: embedder, Chroma, SQLite), which load barely moves.
The import overlaps its writes with the embedding, so its wall ratio can exceed its CPU ratio.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from connector.clock import FrozenClock  # noqa: E402
from connector.conversations.indexer import indexed_text  # noqa: E402
from connector.conversations.parts import part_texts  # noqa: E402
from connector.db.engine import create_db_engine  # noqa: E402
from connector.db.migrate import upgrade_to_head  # noqa: E402
from connector.memory import Memory  # noqa: E402
from connector.settings import ChromaSettings, ConversationSettings, RetentionSettings, Settings  # noqa: E402

# ../shared/data beside the main checkout (a worktree sits one level deeper).
LME = (
    next(
        (p for p in (ROOT.parent / "shared", ROOT.parent.parent / "shared") if (p / "data").is_dir()),
        ROOT.parent / "shared",
    )
    / "data"
    / "longmemeval_dev.json.gz"
)
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
WORDS = " ".join(
    (
        "invoice order delivery pallet warehouse credit payment terms discount shipment carrier dock",
        "freight refund balance statement overdue reminder contract price quote lead time backorder",
        "return damaged label account contact address schedule Monday Friday morning afternoon urgent",
        "please thanks could would check confirm update change cancel split partial complete approve",
    )
).split()


def chat_records(rng: random.Random, customers: int, sessions: int, turns: int) -> list[dict[str, Any]]:
    """Distinct chat-length turns: random words with a running number, so no two texts are equal."""
    out: list[dict[str, Any]] = []
    n = 0
    for c in range(customers):
        for s in range(sessions):
            start = NOW - timedelta(days=rng.randint(1, 90), minutes=rng.randint(0, 600))
            for t in range(turns):
                n += 1
                words = rng.choices(WORDS, k=rng.randint(15, 45))
                words.insert(rng.randint(0, len(words)), f"#{n}")
                text = " ".join(words).capitalize() + "."
                out.append({
                    "customer": f"CUST{c:04d}", "session": f"CUST{c:04d}/chat-{s}",
                    "role": "user" if t % 2 == 0 else "assistant", "content": text,
                    "occurred_at": (start + timedelta(minutes=t)).isoformat(), "external_id": f"m{n}",
                })  # fmt: skip
    return out


def lme_records(questions: int) -> tuple[list[dict[str, Any]], datetime]:
    """The dev split's haystack sessions (each once), dated as the benchmark dates them."""
    with gzip.open(LME) as packed:
        data = json.loads(packed.read())
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    latest = datetime(2000, 1, 1, tzinfo=UTC)
    for q in data[:questions]:
        customer = f"lme-{q['question_id']}"
        sessions = zip(q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"], strict=True)
        for sid, date, session in sessions:
            if sid in seen:
                continue
            seen.add(sid)
            start = datetime.strptime(date.split(" (")[0] + " " + date.split(") ")[1], "%Y/%m/%d %H:%M")
            start = start.replace(tzinfo=UTC)
            latest = max(latest, start)
            for i, turn in enumerate(session):
                out.append({
                    "customer": customer, "session": f"{customer}/{sid}", "role": turn["role"],
                    "content": turn["content"], "occurred_at": (start + timedelta(seconds=i)).isoformat(),
                    "external_id": f"{sid}:{i}",
                })  # fmt: skip
    return out, latest + timedelta(days=1)


def one_run(
    workdir: Path, path: Path, now: datetime, texts: list[str]
) -> tuple[float, float, float, float, Any]:
    """(import seconds, embedder-alone seconds on the same texts, the same two in process CPU
    seconds, import report) in one fresh store."""
    workdir.mkdir()
    settings = Settings(
        data_dir=workdir / "data", chroma=ChromaSettings(path=workdir / "chroma"),
        conversations=ConversationSettings(enabled=True), retention=RetentionSettings(episodic_days=36500),
    )  # fmt: skip
    engine = create_db_engine(f"sqlite:///{workdir / 'import.sqlite3'}")
    upgrade_to_head(engine)
    with Memory(settings, clock=FrozenClock(now), llm=None, engine=engine) as memory:
        memory.embedder.embed(["warm up the model"])
        memory.conversations.index  # noqa: B018 - open the collection before timing
        started, cpu = time.perf_counter(), time.process_time()
        report = memory.import_conversations(path, allow_unknown_customers=True)
        import_s, import_cpu = time.perf_counter() - started, time.process_time() - cpu
        started, cpu = time.perf_counter(), time.process_time()
        memory.embedder.embed(texts)
        alone_s, alone_cpu = time.perf_counter() - started, time.process_time() - cpu
    engine.dispose()
    return import_s, alone_s, import_cpu, alone_cpu, report


def bench(name: str, records: list[dict[str, Any]], now: datetime, runs: int, tmp: Path) -> dict[str, Any]:
    path = tmp / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    # Exactly what the indexer embeds: each indexed turn's text, then its further parts' (long turns).
    texts = [
        x
        for r in records
        if (t := indexed_text(r["role"], r["content"])) is not None
        for x in (t, *part_texts(t))
    ]
    imports, alone, cpu_ratios = [], [], []
    report = None
    for run in range(runs):
        import_s, alone_s, import_cpu, alone_cpu, report = one_run(tmp / f"{name}-{run}", path, now, texts)
        imports.append(report.turns / import_s)
        alone.append(report.turns / alone_s)  # the same turns' texts, embedded and nothing else
        cpu_ratios.append(alone_cpu / import_cpu)
        print(
            f"{name} run {run + 1}: import {imports[-1]:.1f} turns/s, embedder alone {alone[-1]:.1f} turns/s "
            f"({len(texts) / alone_s:.1f} texts/s), ratio {imports[-1] / alone[-1]:.2f}, "
            f"CPU s {import_cpu:.1f} vs {alone_cpu:.1f} (ratio {cpu_ratios[-1]:.2f})",
            flush=True,
        )
    assert report is not None
    chars = sorted(len(t) for t in texts)
    return {
        "turns": len(records), "embedded_texts": len(texts), "median_chars": chars[len(chars) // 2],
        "indexed": report.indexed, "archived": report.archived,
        "import_turns_per_s": round(statistics.median(imports), 1),
        "embedder_alone_turns_per_s": round(statistics.median(alone), 1),
        "import_vs_embedder": round(statistics.median(imports) / statistics.median(alone), 3),
        "median_run_ratio": round(statistics.median(i / a for i, a in zip(imports, alone, strict=True)), 3),
        "cpu_ratio": round(statistics.median(cpu_ratios), 3),
        "runs": [round(r, 1) for r in imports], "alone_runs": [round(r, 1) for r in alone],
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--customers", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--lme-questions", type=int, default=3, help="0: skip the long-turn set")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-import-") as tmp:
        chat = chat_records(random.Random(args.seed), args.customers, args.sessions, args.turns)
        results["chat"] = bench("chat", chat, NOW, args.runs, Path(tmp))
        if args.lme_questions and LME.exists():
            records, now = lme_records(args.lme_questions)
            results["longmemeval"] = bench("longmemeval", records, now, args.runs, Path(tmp))
    for name, r in results.items():
        print(
            f"{name:<12} {r['turns']:>6} turns (median {r['median_chars']} chars): import "
            f"{r['import_turns_per_s']:.1f} turns/s, embedder alone {r['embedder_alone_turns_per_s']:.1f} "
            f"turns/s, ratio {r['import_vs_embedder']:.2f} (per run {r['median_run_ratio']:.2f}, CPU "
            f"{r['cpu_ratio']:.2f})"
        )
    load_after = os.getloadavg()[0]
    print(json.dumps({"bench": "import", "load": [round(load, 2), round(load_after, 2)], **results}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
