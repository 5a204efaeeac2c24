#!/usr/bin/env python3
"""Episodic memory benchmark (run through ``scripts/bench_episodic``).

Quality: records the labelled set (``benchmarks/episodic_*.jsonl``) with the default embedder,
times the ingest, asks every query with k=3 and counts recall@1, recall@3 and leaks (hits that
belong to another customer). It also prints the score distributions of true matches and
non-matches within each query's customer (semantic queries only: document-number queries are
matched lexically), from which the model's score threshold is calibrated: the 1st percentile
of the true-match scores, so 99% of the right cases clear it.

Scale: for each size, 10,000 customers share N synthetic entries (random unit vectors, stored as
the writer stores them: the row with its vector hash, the vector in Chroma; the query is embedded
for real). It times our recall (the scope's ids from the relational rows -> their vectors from
Chroma by id -> numpy top-k, query embedding included, embedded while the rows and vectors are
read) beside the single-collection metadata-filtered Chroma query on the same collection, wall time
and (for our recall) the CPU time of the process, which stays meaningful when other work shares the
machine. ``--server`` runs the same against a Chroma server (``chroma run`` on a free local port,
or ``--server HOST:PORT``) instead of embedded Chroma. Every size is
built first and the timed recalls are interleaved (one per size per round), so load that comes and
goes during the run affects all sizes alike and their ratio compares like with like. Ends with one
JSON line of the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from connector.clock import FrozenClock  # noqa: E402
from connector.db.engine import create_db_engine  # noqa: E402
from connector.db.migrate import upgrade_to_head  # noqa: E402
from connector.episodic.tables import ENTRIES  # noqa: E402
from connector.episodic.vector_index import vector_hash  # noqa: E402
from connector.episodic.writer import chroma_metadata  # noqa: E402
from connector.memory import Memory  # noqa: E402
from connector.settings import ChromaSettings, Settings  # noqa: E402

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CUSTOMERS = 10_000
QUERY_TEXTS = [
    "Has this customer been billed twice before?",
    "late delivery of the pallets, what did we do last time?",
    "wrong unit price on the invoice",
    "sales tax charged although they are exempt",
    "payment applied to the wrong invoice",
]


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


SERVER: tuple[str, int] | None = None  # set by --server: every store then lives on that Chroma server


def chroma_settings(workdir: Path) -> ChromaSettings:
    if SERVER is None:
        return ChromaSettings(path=workdir / "chroma")
    return ChromaSettings(host=SERVER[0], port=SERVER[1], collection_prefix=f"b{uuid.uuid4().hex[:10]}")


@contextmanager
def chroma_server(where: str, workdir: Path) -> Iterator[tuple[str, int]]:
    """``HOST:PORT`` of a running server, or ``auto``: ``chroma run`` on a free local port until done."""
    if where != "auto":
        host, _, port = where.rpartition(":")
        yield host, int(port)
        return
    executable = shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")
    if executable is None:
        raise SystemExit("--server needs the `chroma` command (from the chromadb package)")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    log_file = (workdir / "chroma-server.log").open("wb")
    process = subprocess.Popen(
        [executable, "run", "--path", str(workdir / "server"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log_file,
        stderr=subprocess.STDOUT,
    )
    try:
        import httpx

        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"chroma run did not start (see {workdir / 'chroma-server.log'})")
            time.sleep(0.2)
        yield "127.0.0.1", port
    finally:
        process.terminate()
        process.wait(timeout=20)
        log_file.close()


def new_memory(workdir: Path) -> Memory:
    settings = Settings(data_dir=workdir / "data", chroma=chroma_settings(workdir))
    engine = create_db_engine(f"sqlite:///{workdir / 'bench.sqlite3'}")
    upgrade_to_head(engine)
    return Memory(settings, clock=FrozenClock(NOW), llm=None, engine=engine)


class TimedEmbed:
    """Wall time spent inside the embedder while active (the rest of ingest is the writer's)."""

    def __init__(self, embedder: Any) -> None:
        self.embedder, self.seconds = embedder, 0.0

    def __enter__(self) -> None:
        original = self.embedder.embed

        def timed(texts: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return original(texts)
            finally:
                self.seconds += time.perf_counter() - t0

        self.embedder.embed = timed

    def __exit__(self, *exc: object) -> None:
        del self.embedder.embed  # the class's method again


# Quality --------------------------------------------------------------------------------------------
def quality(workdir: Path) -> dict[str, Any]:
    cases = [json.loads(line) for line in (ROOT / "benchmarks/episodic_cases.jsonl").open()]
    queries = [json.loads(line) for line in (ROOT / "benchmarks/episodic_queries.jsonl").open()]
    memory = new_memory(workdir)
    episodic = memory.episodic
    episodic.embedder.embed(["warm up"])
    episodic.index.count()
    prepared = [
        episodic.prepare(
            c["customer_id"], c["request"], c["resolution"], case_id=c["case_id"], case_type=c["case_type"],
            occurred_at=datetime.fromisoformat(c["occurred_at"]), documents=c["documents"],
        )
        for c in cases
    ]  # fmt: skip
    embedding = TimedEmbed(episodic.embedder)
    started, cpu_started = time.perf_counter(), time.process_time()
    with embedding:
        for i in range(0, len(prepared), 64):
            episodic.record_cases(prepared[i : i + 64])
    ingest_s = time.perf_counter() - started
    ingest_cpu_s = time.process_time() - cpu_started
    owner = {c["case_id"]: c["customer_id"] for c in cases}
    at1 = at3 = leaks = 0
    by_kind: dict[str, list[int]] = {}
    true_scores: list[float] = []
    other_scores: list[float] = []
    for q in queries:
        hits = episodic.recall(q["customer_id"], q["query"], k=3)
        ids = [h.case_id for h in hits]
        leaks += sum(owner.get(i) != q["customer_id"] for i in ids)
        hit1, hit3 = bool(ids[:1] and ids[0] in q["expected"]), any(i in q["expected"] for i in ids)
        at1 += hit1
        at3 += hit3
        by_kind.setdefault(q["kind"], []).append(int(hit3))
        if q["kind"] == "document":
            continue  # found lexically; its embedding scores say nothing about the threshold
        # calibration: every entry of this customer, scored without threshold
        with memory.engine.connect() as conn:
            rows = conn.execute(
                sa.select(ENTRIES.c.id, ENTRIES.c.case_id).where(ENTRIES.c.customer_id == q["customer_id"])
            ).all()
        vectors = episodic.index.vectors([r.id for r in rows])
        qv = episodic.embedder.embed([q["query"]])[0]
        for r in rows:
            (true_scores if r.case_id in q["expected"] else other_scores).append(float(vectors[r.id] @ qv))
    n = len(queries)
    return {
        "cases": len(cases),
        "customers": len({c["customer_id"] for c in cases}),
        "queries": n,
        "ingest_cases_per_s": round(len(cases) / ingest_s, 1),
        "ingest_cases_per_cpu_s": round(len(cases) / ingest_cpu_s, 1),
        "ingest_s": round(ingest_s, 2),
        "ingest_embed_s": round(embedding.seconds, 2),
        "recall_at_1": round(at1 / n, 4),
        "recall_at_3": round(at3 / n, 4),
        "recall_at_3_by_kind": {k: round(sum(v) / len(v), 4) for k, v in by_kind.items()},
        "leaks": leaks,
        "true_scores": true_scores,
        "other_scores": other_scores,
    }


# Scale ----------------------------------------------------------------------------------------------
def load_synthetic(memory: Memory, size: int, rng: np.random.Generator) -> float:
    """N entries over 10,000 customers: relational rows with their vector hash + the vectors in Chroma."""
    index = memory.episodic.index
    dim = memory.episodic.embedder.dimension
    model = memory.episodic.embedder.model_id
    started = time.perf_counter()
    batch = 5000
    for start in range(0, size, batch):
        rows: list[dict[str, Any]] = []
        for i in range(start, min(size, start + batch)):
            occurred = NOW - timedelta(days=int(i % 170))
            rows.append({
                "id": f"e{i:08d}", "tenant": "default", "customer_id": f"C{i % CUSTOMERS:05d}",
                "case_id": f"case-{i}", "case_type": ("dispute", "delivery", "pricing", "tax")[i % 4],
                "summary": f"Synthetic case {i}", "summary_mode": "non-llm", "documents": [],
                "doc_keys": [], "occurred_at": occurred, "retain_from": occurred, "recorded_at": NOW,
                "updated_at": NOW, "archived_at": None, "pii": False, "status": "live",
                "embedding_model": model, "merged_count": 1,
                "vector_hash": vector_hash(model, f"Synthetic case {i}"), "vector_pending": False,
            })  # fmt: skip
        vectors = rng.standard_normal((len(rows), dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        with memory.engine.begin() as conn:
            conn.execute(sa.insert(ENTRIES), rows)
        index.upsert([r["id"] for r in rows], vectors, [chroma_metadata(r) for r in rows])
    return time.perf_counter() - started


class SizedStore:
    """One synthetic store of the scale test and the timings taken on it.

    (A plain class: the smoke test loads this script by path, where dataclasses cannot resolve
    their module.)
    """

    def __init__(self, size: int, memory: Memory, load_s: float, pick: random.Random) -> None:
        self.size, self.memory, self.load_s, self.pick = size, memory, load_s, pick
        self.timings: dict[str, list[float]] = {}

    def add(self, name: str, ms: float) -> None:
        self.timings.setdefault(name, []).append(ms)


def build(workdir: Path, size: int) -> SizedStore:
    memory = new_memory(workdir)
    load_s = load_synthetic(memory, size, np.random.default_rng(size))
    return SizedStore(size=size, memory=memory, load_s=load_s, pick=random.Random(size))


def time_recall(store: SizedStore, i: int) -> None:
    """One query: the embedding alone, then the whole recall (embedding included), on a random customer."""
    episodic = store.memory.episodic
    customer, text = f"C{store.pick.randrange(CUSTOMERS):05d}", QUERY_TEXTS[i % len(QUERY_TEXTS)]
    t0 = time.perf_counter()
    episodic.embedder.embed([text])
    store.add("embed", (time.perf_counter() - t0) * 1000)
    t0, c0 = time.perf_counter(), time.process_time()
    episodic.recall(customer, text, k=3)
    store.add("recall", (time.perf_counter() - t0) * 1000)
    store.add("recall_cpu", (time.process_time() - c0) * 1000)


def time_naive(store: SizedStore, n: int) -> None:
    """The single-collection, metadata-filtered Chroma query on the same collection."""
    episodic = store.memory.episodic
    collection = episodic.index.collection
    for i in range(n):
        customer, text = f"C{store.pick.randrange(CUSTOMERS):05d}", QUERY_TEXTS[i % len(QUERY_TEXTS)]
        t0 = time.perf_counter()
        qv = episodic.embedder.embed([text])
        t1 = time.perf_counter()
        collection.query(
            query_embeddings=qv,
            n_results=3,
            where={"$and": [{"tenant": "default"}, {"customer_id": customer}]},
        )
        t2 = time.perf_counter()
        store.add("naive_query", (t2 - t1) * 1000)
        store.add("naive", (t2 - t0) * 1000)


def measure(stores: list[SizedStore], n_queries: int, naive_queries: int) -> list[dict[str, Any]]:
    """Recalls interleaved across the sizes (one per size per round), so a change in machine load
    during the run hits every size alike and the ratios between sizes stay meaningful."""
    for store in stores:
        for _ in range(20):  # warm-up
            store.memory.episodic.recall(f"C{store.pick.randrange(CUSTOMERS):05d}", QUERY_TEXTS[0])
    for i in range(n_queries):
        for store in stores:
            time_recall(store, i)
    for store in stores:
        time_naive(store, naive_queries)
    return [figures(store) for store in stores]


def figures(store: SizedStore) -> dict[str, Any]:
    t = store.timings
    return {
        "entries": store.size,
        "entries_per_customer": store.size / CUSTOMERS,
        "load_s": round(store.load_s, 1),
        "embed_p50_ms": round(pct(t.get("embed", []), 50), 2),
        "embed_p95_ms": round(pct(t.get("embed", []), 95), 2),
        "recall_p50_ms": round(pct(t.get("recall", []), 50), 2),
        "recall_p95_ms": round(pct(t.get("recall", []), 95), 2),
        "recall_cpu_p50_ms": round(pct(t.get("recall_cpu", []), 50), 2),
        "recall_cpu_p95_ms": round(pct(t.get("recall_cpu", []), 95), 2),
        "naive_p50_ms": round(pct(t.get("naive", []), 50), 2),
        "naive_p95_ms": round(pct(t.get("naive", []), 95), 2),
        "naive_query_only_p95_ms": round(pct(t.get("naive_query", []), 95), 2),
    }


def scale(workdir: Path, size: int, n_queries: int, naive_queries: int) -> dict[str, Any]:
    """One size on its own (the smoke test); ``main`` builds every size first and interleaves them."""
    return measure([build(workdir, size)], n_queries, naive_queries)[0]


def calibration(true_scores: list[float], other_scores: list[float]) -> dict[str, float]:
    return {
        "true_p1": round(pct(true_scores, 1), 3),
        "true_p5": round(pct(true_scores, 5), 3),
        "true_median": round(pct(true_scores, 50), 3),
        "other_median": round(pct(other_scores, 50), 3),
        "other_p95": round(pct(other_scores, 95), 3),
        "suggested_threshold": round(pct(true_scores, 1), 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated index sizes")
    parser.add_argument("--queries", type=int, default=300, help="timed recalls per size")
    parser.add_argument(
        "--naive-queries", type=int, default=60, help="timed filtered Chroma queries per size"
    )
    parser.add_argument("--skip-scale", action="store_true", help="quality only")
    parser.add_argument(
        "--server",
        nargs="?",
        const="auto",
        metavar="HOST:PORT",
        help="use a Chroma server (default: start `chroma run` on a free local port) instead of embedded",
    )
    parser.add_argument("--max-minutes", type=float, default=30.0, help="skip sizes that would not fit")
    args = parser.parse_args()
    deadline = time.monotonic() + args.max_minutes * 60
    load_start = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} cores, load average {load_start:.1f} at start")
    with tempfile.TemporaryDirectory(prefix="bench-episodic-") as tmp:
        if args.server is None:
            return run(args, Path(tmp), deadline, load_start)
        global SERVER
        with chroma_server(args.server, Path(tmp)) as SERVER:
            print(f"Chroma server at {SERVER[0]}:{SERVER[1]}")
            return run(args, Path(tmp), deadline, load_start)


def run(args: argparse.Namespace, tmp: Path, deadline: float, load_start: float) -> int:
    q = quality(tmp / "quality")
    cal = calibration(q.pop("true_scores"), q.pop("other_scores"))
    print(f"Quality: {q['cases']} cases, {q['customers']} customers, {q['queries']} queries")
    print(f"  recall@1 {q['recall_at_1']:.3f}  recall@3 {q['recall_at_3']:.3f}  leaks {q['leaks']}")
    print(f"  recall@3 by query kind: {q['recall_at_3_by_kind']}")
    print(
        f"  ingest {q['ingest_cases_per_s']} cases/s wall, {q['ingest_cases_per_cpu_s']} per CPU-second "
        f"(default embedder, batches of 64): {q['ingest_s']} s, embedding {q['ingest_embed_s']} s of it"
    )
    print(f"  calibration (scores within the customer): {cal}")
    stores: list[SizedStore] = []
    skipped: list[int] = []
    if not args.skip_scale:
        for size in sorted(int(s) for s in args.sizes.split(",")):
            if stores:
                last = stores[-1]
                estimate = last.load_s * size / last.size * 1.3 + 120
                if time.monotonic() + estimate > deadline:
                    print(f"  size {size:,} skipped: estimated {estimate / 60:.0f} min does not fit")
                    skipped.append(size)
                    continue
            stores.append(build(tmp / f"scale-{size}", size))
            print(f"  size {size:,}: loaded in {stores[-1].load_s:.1f} s", flush=True)
    results = measure(stores, args.queries, args.naive_queries)
    for done in results:
        print(
            f"  size {done['entries']:,}: recall p95 {done['recall_p95_ms']} ms, "
            f"filtered query p95 {done['naive_p95_ms']} ms"
        )
    header = f"{'entries':>9} {'per cust':>8} {'load s':>7} {'embed p50/p95':>14} {'recall p50/p95':>15} "
    print("\n" + header + f"{'naive filter p50/p95':>21} {'speedup p95':>11} {'recall cpu p50/p95':>19}")
    for r in results:
        speedup = r["naive_p95_ms"] / r["recall_p95_ms"]
        print(
            f"{r['entries']:>9,} {r['entries_per_customer']:>8.0f} {r['load_s']:>7} "
            f"{r['embed_p50_ms']:>6}/{r['embed_p95_ms']:<7} "
            f"{r['recall_p50_ms']:>7}/{r['recall_p95_ms']:<7} "
            f"{r['naive_p50_ms']:>10}/{r['naive_p95_ms']:<10} {speedup:>10.1f}x "
            f"{r['recall_cpu_p50_ms']:>9}/{r['recall_cpu_p95_ms']:<9}"
        )
    by_size = {r["entries"]: r for r in results}
    largest = results[-1] if results else None
    summary = {
        "p95_ms_10k": by_size.get(10_000, {}).get("recall_p95_ms"),
        "p95_ms_100k": by_size.get(100_000, {}).get("recall_p95_ms"),
        "p95_ms_largest": largest["recall_p95_ms"] if largest else None,
        "p95_ratio_largest_vs_10k": (
            round(largest["recall_p95_ms"] / by_size[10_000]["recall_p95_ms"], 2)
            if largest and 10_000 in by_size
            else None
        ),
        "largest_entries": largest["entries"] if largest else None,
        "skipped_sizes": skipped,
        "naive_filter_p95_ms_100k": by_size.get(100_000, {}).get("naive_p95_ms"),
        "speedup_vs_naive_100k": (
            round(by_size[100_000]["naive_p95_ms"] / by_size[100_000]["recall_p95_ms"], 1)
            if 100_000 in by_size
            else None
        ),
        "query_embed_p95_ms": largest["embed_p95_ms"] if largest else None,
        "ingest_cases_per_s": q["ingest_cases_per_s"],
        "ingest_cases_per_cpu_s": q["ingest_cases_per_cpu_s"],
        "ingest_s": q["ingest_s"],
        "ingest_embed_s": q["ingest_embed_s"],
        "recall_at_1": q["recall_at_1"],
        "recall_at_3": q["recall_at_3"],
        "leaks": q["leaks"],
        "threshold_calibration": cal,
        "chroma": "server" if SERVER is not None else "embedded",
        "cpu_count": os.cpu_count(),
        "loadavg_start_end": [round(load_start, 1), round(os.getloadavg()[0], 1)],
        "scale": results,
    }
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
