#!/usr/bin/env python3
"""Past-conversation recall on a public long-term-memory benchmark, and its cost by history size.

Quality (LongMemEval-S development split, ``../shared/data/longmemeval_dev.json.gz``): every question
gets its own customer, whose haystack sessions are imported through the public API
(``Memory.import_conversations``: dates kept, each message's external id ``<session>:<turn>``), then
the question is asked with ``as_of`` its own date as a plain ranking (no neighbours, k=10) under three
fusion profiles on the same store: the hybrid (``dialogue``, the default), BM25 alone (``lexical``)
and the dense side alone (``dense``). Reported per question type and overall: turn-level recall@1/5/10
and MRR (a hit is an evidence turn, ``has_answer``; questions without one are left out of the turn
figures) and session-level recall@5 (an evidence session among the top 5 hits' sessions). The
short-history variant imports only each question's evidence sessions (~22 turns) under another
customer and asks again.

Cost (``--histories 100,500,1000,10000``): one customer per size holding that many turns (the dev
split's distinct sessions, imported as above; texts already embedded are not embedded again: the
embedder is memoised for the build only), then the dev questions are asked of every size in turn,
interleaved, with the default options (neighbours 2+2, k=3), query embedding included, the
customer's turns and lexical postings already held (steady state; the first recall of each size,
which reads its turns and vectors, is reported apart, as is the time until every size's postings,
read in the background, are held). Prints p50/p95 per size and the load average; ends with one JSON line.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from _embedding_cache import CachedEmbedder  # noqa: E402
from _recall_figures import figures  # noqa: E402

from connector.clock import FrozenClock  # noqa: E402
from connector.conversations import RecallOptions  # noqa: E402
from connector.conversations.indexer import indexed_text  # noqa: E402
from connector.conversations.parts import part_texts  # noqa: E402
from connector.db.engine import create_db_engine  # noqa: E402
from connector.db.migrate import upgrade_to_head  # noqa: E402
from connector.memory import Memory  # noqa: E402
from connector.recall.fusion import Fusion  # noqa: E402
from connector.scope import Scope  # noqa: E402
from connector.settings import ChromaSettings, ConversationSettings, RetentionSettings, Settings  # noqa: E402

# ../shared/data beside the checkout (or beside the worktrees' folder)
DATA = (
    next(
        (p for p in (ROOT.parent / "shared", ROOT.parent.parent / "shared") if p.exists()),
        ROOT.parent / "shared",
    )
    / "data"
    / "longmemeval_dev.json.gz"
)
# name -> what RecallOptions.profile gets; "before" is the default before the lexical weight
# followed the turns' length (Fusion.long_text_weight), its small-scope pull towards 0.5
PROFILES: dict[str, Any] = {
    "dialogue": "dialogue",
    "before": Fusion(small_scope_weight=0.5),
    "lexical": "lexical",
    "dense": "dense",
}
K = 10
NOW = datetime(2024, 1, 1, tzinfo=UTC)


def parse_date(text: str) -> datetime:
    """``2023/05/20 (Sat) 02:22`` as UTC."""
    day, _, clock = text.partition(" (")
    hhmm = clock.split(") ")[-1]
    return datetime.strptime(f"{day} {hhmm}", "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def load(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt") as f:
        data: list[dict[str, Any]] = json.load(f)
    return data


def new_memory(workdir: Path, pg_url: str | None) -> Memory:
    url = pg_url or f"sqlite:///{workdir / 'bench.sqlite3'}"
    engine = create_db_engine(url)
    upgrade_to_head(engine)
    settings = Settings(
        data_dir=workdir / "data",
        chroma=ChromaSettings(path=workdir / "chroma", collection_prefix="bench"),
        conversations=ConversationSettings(enabled=True),
        retention=RetentionSettings(episodic_days=3650, pii_days=3650),
    )
    return Memory(settings, clock=FrozenClock(NOW), llm=None, engine=engine)


def session_records(
    customer: str, prefix: str, sid: str, date: str, turns: list[dict[str, Any]]
) -> Iterator[dict[str, Any]]:
    start = parse_date(date)
    for i, turn in enumerate(turns, start=1):
        if turn["role"] not in ("user", "assistant") or not turn["content"].strip():
            continue
        yield {
            "customer": customer,
            "session": f"{prefix}{sid}",
            "role": turn["role"],
            "content": turn["content"][:60_000],
            "occurred_at": (start + timedelta(seconds=i)).isoformat(),
            "external_id": f"{sid}:{i}",
        }


def question_records(q: dict[str, Any], customer: str, *, short: bool) -> Iterator[dict[str, Any]]:
    evidence = set(q["answer_session_ids"])
    for sid, date, turns in zip(
        q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"], strict=True
    ):
        if short and sid not in evidence:
            continue
        yield from session_records(customer, f"{customer}/", sid, date, turns)


def half_of(q: dict[str, Any]) -> str:
    """``A`` or ``B``: a fixed split of the questions by a hash of their id, so a change is tuned on
    one half and checked on the other (a gain on both is not one fitted to these questions)."""
    return "AB"[hashlib.sha256(q["question_id"].encode()).digest()[0] % 2]


def evidence_turns(q: dict[str, Any]) -> set[str]:
    return {
        f"{sid}:{i}"
        for sid, turns in zip(q["haystack_session_ids"], q["haystack_sessions"], strict=True)
        for i, t in enumerate(turns, start=1)
        if t.get("has_answer")
    }


class Memo:
    """The embedder's results by text (a text said in several questions' haystacks is embedded once);
    ``fake``: deterministic random unit vectors instead, for the cost customers (recall's cost does
    not depend on what the turns' vectors are; their texts and postings are real)."""

    def __init__(self, embedder: Any, *, fake: bool = False) -> None:
        self.embedder, self.fake = embedder, fake
        self.seen: dict[Any, Any] = {}

    def __enter__(self) -> None:
        import numpy as np

        original = self.embedder.embed

        def embed(texts: Any) -> Any:
            todo = [t for t in dict.fromkeys(texts) if t not in self.seen]
            if todo:
                made = (
                    [random_unit(t, self.embedder.dimension) for t in todo] if self.fake else original(todo)
                )
                for t, v in zip(todo, made, strict=True):
                    self.seen[t] = np.asarray(v, dtype=np.float32)
            return np.stack([self.seen[t] for t in texts]) if texts else original(texts)

        self.embedder.embed = embed

    def __exit__(self, *exc: object) -> None:
        del self.embedder.embed


def random_unit(text: str, dimension: int) -> Any:
    import hashlib

    import numpy as np

    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(dimension).astype(np.float32)
    return v / np.linalg.norm(v)


def ask(memory: Memory, customer: str, q: dict[str, Any], profile: Any) -> tuple[int, bool]:
    """The rank of the first evidence turn among the hits (0: none in the top K) and whether an
    evidence session is among the top 5 hits' sessions."""
    as_of = parse_date(q["question_date"]) + timedelta(days=1)
    hits = memory.recall_conversations(
        customer, q["question"], k=K, as_of=as_of, options=RecallOptions(before=0, after=0, profile=profile)
    )
    wanted = evidence_turns(q)
    rank = next((n for n, h in enumerate(hits, start=1) if h.external_id in wanted), 0)
    sessions = {f"{customer}/{s}" for s in q["answer_session_ids"]}
    return rank, any(h.session_id in sessions for h in hits[:5])


def quality(
    memory: Memory, questions: list[dict[str, Any]], *, short: bool, store: Path | None = None
) -> dict[str, Any]:
    """Import each question's history (unless ``store`` already holds it), then ask every profile."""
    tag = "S" if short else "Q"
    marker = store / f"imported-{tag}-{len(questions)}.json" if store is not None else None
    if marker is not None and marker.exists():
        out: dict[str, Any] = json.loads(marker.read_text())
    else:
        t0 = time.perf_counter()
        turns = 0
        for n, q in enumerate(questions):  # texts repeated across questions embedded once
            report = memory.import_conversations(
                list(question_records(q, f"{tag}{n}", short=short)), allow_unknown_customers=True
            )
            turns += report.turns
        ingest_s = time.perf_counter() - t0
        out = {"turns": turns, "ingest_s": round(ingest_s, 1), "turns_per_s": round(turns / ingest_s, 1)}
        if marker is not None:
            marker.write_text(json.dumps(out))
    for profile in PROFILES:
        ranks: dict[str, list[int]] = defaultdict(list)
        sessions: dict[str, list[bool]] = defaultdict(list)
        halves: dict[str, list[int]] = defaultdict(list)
        for n, q in enumerate(questions):
            rank, session_hit = ask(memory, f"{tag}{n}", q, PROFILES[profile])
            sessions[q["question_type"]].append(session_hit)
            if evidence_turns(q):
                ranks[q["question_type"]].append(rank)
                halves[half_of(q)].append(rank)
        every = [r for rs in ranks.values() for r in rs]
        every_s = [s for ss in sessions.values() for s in ss]
        out[profile] = {
            "all": {**figures(every), "session_r5": round(sum(every_s) / len(every_s), 3), "n": len(every)},
            **{
                kind: {
                    **figures(rs),
                    "session_r5": round(sum(sessions[kind]) / len(sessions[kind]), 3),
                    "n": len(rs),
                }
                for kind, rs in sorted(ranks.items())
            },
            "halves": {half: {**figures(rs), "n": len(rs)} for half, rs in sorted(halves.items())},
        }
    return out


def fill_cache(cached: CachedEmbedder, questions: list[dict[str, Any]], batch: int = 256) -> None:
    """Embed every text the quality run embeds (each turn and its further parts, each question)
    into the disk cache, in batches, so an interrupted fill keeps what it did."""
    texts: dict[str, None] = {}
    for q in questions:
        texts[q["question"]] = None
        for turns in q["haystack_sessions"]:
            for turn in turns:
                text = indexed_text(turn["role"], turn["content"][:60_000])
                if text is not None:
                    texts[text] = None
                    texts.update(dict.fromkeys(part_texts(text)))
    known = cached.disk.get(list(texts))
    todo = [t for t in texts if t not in known]
    print(f"{len(texts)} texts, {len(known)} already cached, {len(todo)} to embed", flush=True)
    t0 = time.perf_counter()
    for start in range(0, len(todo), batch):
        cached.vectors(todo[start : start + batch])
        done = start + len(todo[start : start + batch])
        print(f"{done}/{len(todo)} in {time.perf_counter() - t0:.0f} s", flush=True)


def cost(
    memory: Memory, questions: list[dict[str, Any]], histories: list[int], rounds: int
) -> dict[str, Any]:
    """p50/p95 recall per history size (see the module doc)."""
    sessions: list[tuple[str, str, list[dict[str, Any]]]] = []
    seen: set[str] = set()
    for q in questions:
        for sid, date, turns in zip(
            q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"], strict=True
        ):
            if sid not in seen:
                seen.add(sid)
                sessions.append((sid, date, turns))
    built: dict[int, float] = {}
    with Memo(memory.conversations.embedder, fake=True):
        for size in histories:
            customer = f"H{size}"
            records: list[dict[str, Any]] = []
            for sid, date, turns in sessions:
                if len(records) >= size:
                    break
                records.extend(session_records(customer, f"{customer}/", sid, date, turns))
            t0 = time.perf_counter()
            memory.import_conversations(records[:size], allow_unknown_customers=True)
            built[size] = len(records[:size])
    timings: dict[int, list[float]] = {size: [] for size in histories}
    first: dict[int, float] = {}
    for size in histories:
        t0 = time.perf_counter()
        memory.recall_conversations(f"H{size}", "warm up", k=3)
        first[size] = (time.perf_counter() - t0) * 1000
    held = wait_for_postings(memory, [f"H{size}" for size in histories])
    load = [os.getloadavg()[0]]
    for _ in range(rounds):
        for q in questions:
            for size in histories:
                t0 = time.perf_counter()
                memory.recall_conversations(f"H{size}", q["question"], k=3)
                timings[size].append((time.perf_counter() - t0) * 1000)
    load.append(os.getloadavg()[0])
    return {
        str(size): {
            "turns": built[size],
            "p50_ms": round(statistics.median(ms), 2),
            "p95_ms": round(sorted(ms)[int(0.95 * (len(ms) - 1))], 2),
            "first_ms": round(first[size], 1),
            "postings_held_s": held,
            "recalls": len(ms),
        }
        for size, ms in timings.items()
    } | {"load": [round(x, 2) for x in load]}


def wait_for_postings(memory: Memory, customers: list[str]) -> float:
    """Seconds until the customers' lexical postings are held in memory (read in the background
    after a customer's first recall; recalls read them from the store meanwhile)."""
    conv = memory.conversations
    t0 = time.perf_counter()
    for customer in customers:
        while not conv.scope_vectors.terms_held(Scope.of(conv.default_tenant, customer)):
            if time.perf_counter() - t0 > 600:
                raise SystemExit(f"the postings of {customer} were not held after 600 s")
            time.sleep(0.05)
    return round(time.perf_counter() - t0, 1)


def print_quality(name: str, result: dict[str, Any]) -> None:
    print(
        f"\n== {name}: {result['turns']} turns imported in {result['ingest_s']} s ({result['turns_per_s']}/s)"
    )
    kinds = [k for k in result["dialogue"] if k not in ("all", "halves")] + ["all"]
    print(f"{'type':28} {'n':>3} " + " ".join(f"{p + ' r1/r5/r10/mrr/sess5':>38}" for p in PROFILES))
    for kind in kinds:
        row = result["dialogue"][kind]
        cells = []
        for p in PROFILES:
            f = result[p][kind]
            cells.append(
                f"{f['r1']:.2f}/{f['r5']:.2f}/{f['r10']:.2f}/{f['mrr']:.2f}/{f['session_r5']:.2f}".rjust(38)
            )
        print(f"{kind:28} {row['n']:>3} " + " ".join(cells))
    for half in result["dialogue"]["halves"]:
        cells = []
        for p in PROFILES:
            f = result[p]["halves"][half]
            cells.append(f"{f['r1']:.2f}/{f['r5']:.2f}/{f['r10']:.2f}/{f['mrr']:.2f}/   ".rjust(38))
        n = result["dialogue"]["halves"][half]["n"]
        print(f"{'half ' + half + ' (by question id hash)':28} {n:>3} " + " ".join(cells))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--limit", type=int, default=0, help="first N questions only (0: all)")
    parser.add_argument("--per-type", type=int, default=0, help="first N questions of each type (0: all)")
    parser.add_argument(
        "--histories", default="100,500,1000,10000", help="turns per customer for the cost run ('' skips)"
    )
    parser.add_argument("--rounds", type=int, default=2, help="passes over the questions in the cost run")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument(
        "--variants", default="long,short", help="which histories the quality run asks: long, short or both"
    )
    parser.add_argument(
        "--store",
        type=Path,
        default=None,
        help="keep the imported store in DIR and reuse it on the next run (default: a fresh temporary one)",
    )
    parser.add_argument(
        "--fill-cache", action="store_true", help="only embed the split's texts into .cache/ and stop"
    )
    parser.add_argument(
        "--pg", default=None, help="a PostgreSQL URL of an empty scratch database (default SQLite)"
    )
    args = parser.parse_args()
    questions = load(args.data)
    if args.per_type:
        taken: dict[str, int] = defaultdict(int)
        chosen = []
        for q in questions:
            if taken[q["question_type"]] < args.per_type:
                taken[q["question_type"]] += 1
                chosen.append(q)
        questions = chosen
    if args.limit:
        questions = questions[: args.limit]
    results: dict[str, Any] = {
        "load_start": round(os.getloadavg()[0], 2),
        "backend": "postgresql" if args.pg else "sqlite",
    }
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.store or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        memory = new_memory(workdir, args.pg)
        try:
            if not args.skip_quality:
                with CachedEmbedder(memory.conversations.embedder) as cached:
                    if args.fill_cache:
                        fill_cache(cached, questions)
                        return 0
                    variants = args.variants.split(",")
                    if "long" in variants:
                        results["long"] = quality(memory, questions, short=False, store=args.store)
                        print_quality("long histories (all haystack sessions)", results["long"])
                    if "short" in variants:
                        results["short"] = quality(memory, questions, short=True, store=args.store)
                        print_quality("short histories (evidence sessions only)", results["short"])
                    results["texts_embedded"] = cached.embedded
            histories = [int(x) for x in args.histories.split(",") if x]
            if histories:
                results["cost"] = cost(memory, load(args.data), histories, args.rounds)
                print("\n== recall cost by history (default options, query embedding included)")
                for size in histories:
                    c = results["cost"][str(size)]
                    print(
                        f"{c['turns']:>6} turns: p50 {c['p50_ms']:.2f} ms, p95 {c['p95_ms']:.2f} ms "
                        f"({c['recalls']} recalls; first recall {c['first_ms']:.0f} ms)"
                    )
                held = results["cost"][str(histories[-1])]["postings_held_s"]
                print(f"every size's postings held {held} s after the first recalls")
                print(f"load average {results['cost']['load']}")
        finally:
            memory.close()
    print(json.dumps(results, default=lambda o: None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
