#!/usr/bin/env python3
"""Episodic memory benchmark (run through ``scripts/bench_episodic``).

Quality: records the three labelled sets with the default embedder, each in its own store — the
ERP cases (``benchmarks/episodic_*.jsonl``), the business dialogues (``benchmarks/conversation_*.jsonl``)
and the LoCoMo-like chats from another generator (``benchmarks/chat_*.jsonl``), each dialogue turn
one case of its conversation's customer — times the ingest, and asks every question with k=10 under
three rankings on the same entries:
dense only, lexical (BM25) only and the hybrid. It prints recall@1/5/10 (an expected case in the
top k) and MRR per question kind, and leaks (hits that belong to another customer); then, per kind,
the hybrid against each single signal on the same questions: how many it finds in the top 5 / 10
that the other misses and the reverse, with the exact McNemar p-value of that split (a difference
of a few questions out of 75 is not evidence that either ranking is better). It also prints
the dense score distributions of true matches and non-matches within each ERP query's customer,
from which the model's score threshold is calibrated (the 1st percentile of the true-match scores).
``--calibrate`` compares the fusion settings on every set instead.

Scale: for each size, 10,000 customers share N synthetic entries (above 100k, 10 entries per
customer as at 100k; random unit vectors and 25-40 words of real case text, stored as the writer
stores them: the row with its vector hash and its lexical postings, the vector in Chroma; the query
is embedded for real). ``--store-dir DIR`` keeps each size's store in ``DIR/<size>`` and reuses it
on the next run, so a 1M store is built once (``--build-only``) and timed later, e.g. on a quiet
machine. It times our recall (the
scope's ids from the relational rows -> their vectors from Chroma by id, the postings of the
query's terms -> fused top-k, query embedding included, embedded while the rows and vectors are
read) beside the single-collection metadata-filtered Chroma query on the same collection, wall time
and (for our recall) the CPU time of the process, which stays meaningful when other work shares the
machine. Each round recalls a customer twice: cold (its vectors dropped from the in-process vector
cache first, so they are read from Chroma) and warm (another query, the vectors from the cache).
``--server`` runs the same against a Chroma server (``chroma run`` on a free local port, or
``--server HOST:PORT``) instead of embedded Chroma. Every size is
built first and the timed recalls are interleaved (one per size per round), so load that comes and
goes during the run affects all sizes alike and their ratio compares like with like. Ends with one
JSON line of the figures.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
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
from connector.episodic import terms as entry_terms  # noqa: E402
from connector.episodic.summary import compose, embedding_text  # noqa: E402
from connector.episodic.tables import ENTRIES  # noqa: E402
from connector.episodic.writer import chroma_metadata  # noqa: E402
from connector.lexical.tables import CASE_SOURCE, DOCS  # noqa: E402
from connector.memory import Memory  # noqa: E402
from connector.recall.fusion import Fusion  # noqa: E402
from connector.recall.profiles import (  # noqa: E402
    CASE_PROFILES,
    DEFAULT_CASE_PROFILE,
    DEFAULT_TURN_PROFILE,
    TURN_PROFILES,
)
from connector.recall.vector_index import vector_hash  # noqa: E402
from connector.scope import Scope  # noqa: E402
from connector.settings import ChromaSettings, RetentionSettings, Settings  # noqa: E402
from connector.testing.scratch_db import DEFAULT_PG_ADMIN, ScratchDatabases, admin_url  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))  # its helper module, also when loaded by path
from _recall_figures import per_kind_figures  # noqa: E402
from _turn_quality import chat_set as chat_turns  # noqa: E402
from _turn_quality import turn_quality  # noqa: E402

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CUSTOMERS = 10_000  # of the synthetic stores up to 100k entries (see customers_for)
HISTORY_AT_100K = 10  # entries per customer at 100k, kept above it
LOAD_BATCH = 5000
BUILD_CACHE_KIB = 2_097_152  # SQLite page cache of the build's connection (2 GiB)
STORE_FILE = "store.json"
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
        host, _, port_text = where.rpartition(":")
        yield host, int(port_text)
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


SCRATCH: ScratchDatabases | None = None  # set by --database postgres: each store a scratch database


def new_engine(workdir: Path) -> sa.Engine:
    """A fresh store: SQLite in ``workdir``, or a new scratch database on the PostgreSQL server."""
    if SCRATCH is None:
        engine = create_db_engine(f"sqlite:///{workdir / 'bench.sqlite3'}")
    else:
        engine = create_db_engine(SCRATCH.create())
    upgrade_to_head(engine)
    return engine


def new_memory(workdir: Path, *, retention_days: int = 180) -> Memory:
    settings = Settings(
        data_dir=workdir / "data",
        chroma=chroma_settings(workdir),
        retention=RetentionSettings(episodic_days=retention_days),
    )
    return Memory(settings, clock=FrozenClock(NOW), llm=None, engine=new_engine(workdir))


class TimedEmbed:
    """Wall time spent inside the embedder while active (the rest of ingest is the writer's), and
    how many texts it embedded."""

    def __init__(self, embedder: Any) -> None:
        self.embedder, self.seconds, self.texts = embedder, 0.0, 0

    def __enter__(self) -> None:
        original = self.embedder.embed

        def timed(texts: Any) -> Any:
            t0 = time.perf_counter()
            self.texts += len(texts)
            try:
                return original(texts)
            finally:
                self.seconds += time.perf_counter() - t0

        self.embedder.embed = timed

    def __exit__(self, *exc: object) -> None:
        del self.embedder.embed  # the class's method again


# Quality --------------------------------------------------------------------------------------------
# The baselines are the plain signals: the cosine alone (no centring) and BM25 alone. "dense centred"
# is an ablation: the hybrid's dense side alone (the cosine less the scope's common component), to
# show how much of the hybrid's lead comes from the centring and how much from the fusion.
# "hybrid" is each recall's default profile (connector.recall.profiles): ``case`` for the sets
# recorded as cases, ``dialogue`` for the chats recalled as past conversations; "hybrid + hedge" is
# case recall with the dialogue rules (speaker hedge, yes/no form), its default before the profiles.
METHODS = {
    "dense": Fusion(method="dense", centring=0.0),
    "lexical": Fusion(method="lexical"),
    "dense centred": Fusion(method="dense"),
    "hybrid": CASE_PROFILES[DEFAULT_CASE_PROFILE],
    "hybrid + hedge": Fusion(),
}
TURN_METHODS = {
    "dense": Fusion(method="dense", centring=0.0),
    "lexical": Fusion(method="lexical"),
    "dense centred": Fusion(method="dense"),
    "hybrid": TURN_PROFILES[DEFAULT_TURN_PROFILE],
}
SINGLE_SIGNALS = ("dense", "lexical", "dense centred")


class LabelledSet:
    """Cases to record and questions with the case ids that answer them (any one of them counts)."""

    def __init__(self, name: str, cases: list[Any], queries: list[dict[str, Any]]) -> None:
        self.name, self.cases, self.queries = name, cases, queries


def erp_set(episodic: Any) -> LabelledSet:
    cases = [json.loads(line) for line in (ROOT / "benchmarks/episodic_cases.jsonl").open()]
    queries = [json.loads(line) for line in (ROOT / "benchmarks/episodic_queries.jsonl").open()]
    prepared = [
        episodic.prepare(
            c["customer_id"], c["request"], c["resolution"], case_id=c["case_id"], case_type=c["case_type"],
            occurred_at=datetime.fromisoformat(c["occurred_at"]), documents=c["documents"],
        )
        for c in cases
    ]  # fmt: skip
    asked = [{"customer": q["customer_id"], "text": q["query"], "expected": q["expected"], "kind": q["kind"]}
             for q in queries]  # fmt: skip
    return LabelledSet("erp cases", prepared, asked)


def dialogue_set(episodic: Any, stem: str, name: str) -> LabelledSet:
    """Each dialogue turn recorded as one case of its conversation's customer."""
    turns = [json.loads(line) for line in (ROOT / f"benchmarks/{stem}_turns.jsonl").open()]
    questions = [json.loads(line) for line in (ROOT / f"benchmarks/{stem}_questions.jsonl").open()]
    prepared = [
        episodic.prepare(t["conversation"], t["text"], "", case_id=t["turn_id"],
                         occurred_at=datetime.fromisoformat(t["occurred_at"]))
        for t in turns
    ]  # fmt: skip
    asked = [
        {"customer": q["conversation"], "text": q["question"], "expected": q["evidence"], "kind": q["kind"]}
        for q in questions
    ]
    return LabelledSet(name, prepared, asked)


def conversation_set(episodic: Any) -> LabelledSet:
    """The business dialogues of ``make_conversation_dataset.py``."""
    return dialogue_set(episodic, "conversation", "conversations")


def chat_set(episodic: Any) -> LabelledSet:
    """The LoCoMo-like chats of ``make_chat_dataset.py`` (another generator, another style)."""
    return dialogue_set(episodic, "chat", "chats (LoCoMo-like)")


class CachedQueryEmbeddings:
    """Each question embedded once across the methods compared (the ranking is what differs)."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.cache: dict[Any, Any] = {}

    def __enter__(self) -> None:
        original = self.embedder.embed

        def embed(texts: Any) -> Any:
            if len(texts) != 1:
                return original(texts)
            if texts[0] not in self.cache:
                self.cache[texts[0]] = original(texts)
            return self.cache[texts[0]]

        self.embedder.embed = embed

    def __exit__(self, *exc: object) -> None:
        del self.embedder.embed


INGEST_BATCH = 64  # cases per record_cases call, as a bulk load or the ERP ingest sends them


def ingest(episodic: Any, labelled: LabelledSet) -> dict[str, Any]:
    embedding = TimedEmbed(episodic.embedder)
    statuses: dict[str, int] = {}
    started, cpu_started = time.perf_counter(), time.process_time()
    with embedding:
        for i in range(0, len(labelled.cases), INGEST_BATCH):
            for recorded in episodic.record_cases(labelled.cases[i : i + INGEST_BATCH]):
                statuses[recorded.status] = statuses.get(recorded.status, 0) + 1
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    return {
        "cases_per_s": round(len(labelled.cases) / seconds, 1),
        "cases_per_cpu_s": round(len(labelled.cases) / cpu, 1),
        "s": round(seconds, 2),
        "embed_s": round(embedding.seconds, 2),
        "embedded_texts": embedding.texts,
        "statuses": statuses,
    }


def embedded_texts(labelled: LabelledSet) -> list[str]:
    """The text the writer embeds for each case of the set, in order (equal texts repeated)."""
    return [embedding_text(compose(c.request, c.resolution, c.documents).text) for c in labelled.cases]


def embedding_ceiling(episodic: Any, labelled: LabelledSet) -> dict[str, float]:
    """The embedder alone on the texts the ingest embeds, in the same groups: what ingest cannot beat."""
    texts = embedded_texts(labelled)
    started, cpu_started = time.perf_counter(), time.process_time()
    for i in range(0, len(texts), INGEST_BATCH):
        episodic.embedder.embed(list(dict.fromkeys(texts[i : i + INGEST_BATCH])))
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    return {"texts_per_s": round(len(texts) / seconds, 1), "texts_per_cpu_s": round(len(texts) / cpu, 1)}


def ingest_runs(workdir: Path, runs: int) -> dict[str, Any]:
    """The ERP set ingested ``runs`` times, each into a fresh store, alternating with the embedder
    alone on the same texts and with an ingest that embeds every case's text anew (no vector
    reuse across calls: what an ingest of texts all distinct costs), so load that comes and goes
    hits all three alike; medians of each."""
    rates: list[dict[str, Any]] = []
    without_reuse: list[dict[str, Any]] = []
    ceilings: list[dict[str, float]] = []
    loads: list[float] = []
    for run_no in range(runs):
        for reuse in (True, False):
            memory = new_memory(workdir / f"ingest-{run_no}-{'reuse' if reuse else 'anew'}")
            episodic = memory.episodic
            if not reuse:
                episodic.text_vectors.max_entries = 0
            episodic.embedder.embed(["warm up"])
            episodic.index.count()
            labelled = erp_set(episodic)
            if reuse:
                ceilings.append(embedding_ceiling(episodic, labelled))
            (rates if reuse else without_reuse).append(ingest(episodic, labelled))
            memory.close()
            memory.engine.dispose()
        loads.append(os.getloadavg()[0])
        print(
            f"  ingest run {run_no + 1}/{runs}: {rates[-1]['cases_per_s']} cases/s "
            f"({rates[-1]['cases_per_cpu_s']} per CPU-s), every text embedded anew "
            f"{without_reuse[-1]['cases_per_s']} cases/s, embedder alone {ceilings[-1]['texts_per_s']} "
            f"texts/s; load {loads[-1]:.1f}",
            flush=True,
        )

    def median(values: list[float]) -> float:
        return round(statistics.median(values), 1)

    texts = embedded_texts(labelled)
    return {
        "runs": runs,
        "cases": len(labelled.cases),
        "distinct_embedded_texts": len(set(texts)),
        "database": "postgres" if SCRATCH is not None else "sqlite",
        "cases_per_s_median": median([r["cases_per_s"] for r in rates]),
        "cases_per_s_min_max": [min(r["cases_per_s"] for r in rates), max(r["cases_per_s"] for r in rates)],
        "cases_per_cpu_s_median": median([r["cases_per_cpu_s"] for r in rates]),
        "embed_s_median": round(statistics.median(r["embed_s"] for r in rates), 2),
        "s_median": round(statistics.median(r["s"] for r in rates), 2),
        "every_text_embedded_anew": {
            "cases_per_s_median": median([r["cases_per_s"] for r in without_reuse]),
            "cases_per_cpu_s_median": median([r["cases_per_cpu_s"] for r in without_reuse]),
            "embed_s_median": round(statistics.median(r["embed_s"] for r in without_reuse), 2),
            "embedded_texts": without_reuse[-1]["embedded_texts"],
        },
        "embedded_texts": rates[-1]["embedded_texts"],
        "embedder_alone_texts_per_s_median": median([c["texts_per_s"] for c in ceilings]),
        "embedder_alone_texts_per_cpu_s_median": median([c["texts_per_cpu_s"] for c in ceilings]),
        "load_average_1m": [round(min(loads), 1), round(max(loads), 1)],
        "statuses": rates[-1]["statuses"],
    }


def evaluate(episodic: Any, labelled: LabelledSet, owner: dict[str, str], fusion: Fusion) -> dict[str, Any]:
    """recall@1/5/10 (an expected case in the top k) and MRR@10, overall and per question kind."""
    previous, episodic.fusion = episodic.fusion, fusion
    per_kind: dict[str, list[int]] = {}
    leaks = 0
    for q in labelled.queries:
        ids = [h.case_id for h in episodic.recall(q["customer"], q["text"], k=10)]
        leaks += sum(owner.get(i) != q["customer"] for i in ids)
        rank = next((n for n, i in enumerate(ids, start=1) if i in q["expected"]), 0)
        per_kind.setdefault(q["kind"], []).append(rank)
    episodic.fusion = previous
    return {**per_kind_figures(per_kind), "leaks": leaks}


PAIRED_KS = (5, 10)


def paired(first: list[int], second: list[int], k: int) -> tuple[int, int, float]:
    """Questions ``first`` finds in its top ``k`` and ``second`` does not (won), the reverse (lost),
    and the exact two-sided McNemar p-value of that split: how likely a split at least this uneven
    is when neither ranking is better (1.0: no evidence either way). Ranks are 1-based, 0 = missed."""
    hit = [(0 < a <= k, 0 < b <= k) for a, b in zip(first, second, strict=True)]
    won = sum(a and not b for a, b in hit)
    lost = sum(b and not a for a, b in hit)
    n = won + lost
    tail = sum(math.comb(n, i) for i in range(min(won, lost) + 1)) / 2**n if n else 0.5
    return won, lost, round(min(1.0, 2 * tail), 3)


def against_single_signals(methods: dict[str, Any]) -> dict[str, dict[str, dict[str, list[float]]]]:
    """Per question kind, the hybrid against each single signal of ``SINGLE_SIGNALS`` measured on
    the same questions: [won, lost, p] at each k of ``PAIRED_KS`` (see :func:`paired`)."""
    hybrid = methods["hybrid"]["ranks"]
    singles = [single for single in SINGLE_SIGNALS if single in methods]
    return {
        kind: {
            single: {
                f"r{k}": list(paired(hybrid[kind], methods[single]["ranks"][kind], k)) for k in PAIRED_KS
            }
            for single in singles
        }
        for kind in hybrid
    }


def threshold_scores(memory: Memory, labelled: LabelledSet) -> tuple[list[float], list[float]]:
    """Cosine of every semantic query to every entry of its customer: true matches and the others."""
    episodic = memory.episodic
    true_scores: list[float] = []
    other_scores: list[float] = []
    for q in labelled.queries:
        if q["kind"] == "document":
            continue  # found lexically; its embedding scores say nothing about the threshold
        with memory.engine.connect() as conn:
            rows = conn.execute(
                sa.select(ENTRIES.c.id, ENTRIES.c.case_id).where(ENTRIES.c.customer_id == q["customer"])
            ).all()
        vectors = episodic.index.vectors([r.id for r in rows])
        qv = episodic.embedder.embed([q["text"]])[0]
        for r in rows:
            (true_scores if r.case_id in q["expected"] else other_scores).append(float(vectors[r.id] @ qv))
    return true_scores, other_scores


def quality(workdir: Path, fusions: dict[str, Fusion] | None = None) -> dict[str, Any]:
    """Both labelled sets, each in its own store, every method on the same recorded entries."""
    results: dict[str, Any] = {}
    for key, make in (("erp", erp_set), ("conversations", conversation_set), ("chats", chat_set)):
        # the dialogues span up to a year before the benchmark's "now": none may be past retention
        memory = new_memory(workdir / key, retention_days=180 if key == "erp" else 800)
        episodic = memory.episodic
        episodic.embedder.embed(["warm up"])
        episodic.index.count()
        labelled = make(episodic)
        done = ingest(episodic, labelled)
        owner = {c.case_key: c.scope.customer_id for c in labelled.cases}
        with CachedQueryEmbeddings(episodic.embedder):
            methods = {
                name: evaluate(episodic, labelled, owner, f) for name, f in (fusions or METHODS).items()
            }
        results[key] = {
            "name": labelled.name,
            "cases": len(labelled.cases),
            "customers": len(set(owner.values())),
            "queries": len(labelled.queries),
            "ingest": done,
            "methods": methods,
        }
        if key == "erp" and fusions is None:
            results[key]["scores"] = threshold_scores(memory, labelled)
    results["turns"] = turn_quality(
        new_memory(workdir / "turns", retention_days=800), *chat_turns(ROOT), fusions or TURN_METHODS
    )
    return results


def print_quality(results: dict[str, Any]) -> None:
    for r in results.values():
        print(
            f"Quality, {r['name']}: {r['cases']} cases, {r['customers']} customers, {r['queries']} questions"
        )
        ing = r["ingest"]
        if "turns_per_s" in ing:
            print(f"  recorded and indexed in {ing['seconds']} s ({ing['turns_per_s']} turns/s)")
        else:
            print(
                f"  ingest {ing['cases_per_s']} cases/s wall, {ing['cases_per_cpu_s']} per CPU-second "
                f"(default embedder, batches of 64): {ing['s']} s, embedding {ing['embed_s']} s of it; "
                f"{ing['statuses']}"
            )
        kinds = [k for k in next(iter(r["methods"].values())) if k not in ("leaks", "ranks")]
        print(f"  {'kind':<12} " + " ".join(f"{m:>25}" for m in r["methods"]))
        print(f"  {'':<12} " + " ".join(f"{'r@1  r@5  r@10  MRR':>25}" for _ in r["methods"]))
        for kind in kinds:
            cells = []
            for m in r["methods"].values():
                f = m[kind]
                cells.append(f"{f['r1']:.3f} {f['r5']:.3f} {f['r10']:.3f} {f['mrr']:.3f}")
            print(f"  {kind:<12} " + " ".join(f"{c:>25}" for c in cells))
        if "turn_r5" in next(iter(r["methods"].values()))["all"]:
            print(
                "  (a rank is the first hit whose window of neighbouring turns shows the evidence; the "
                "evidence turn itself among the top 5 hits: "
                + ", ".join(f"{n} {m['all']['turn_r5']:.3f}" for n, m in r["methods"].items())
                + ")"
            )
        print(
            "  leaks (hits of another customer): "
            + ", ".join(f"{n} {m['leaks']}" for n, m in r["methods"].items())
        )
        if {"hybrid", "dense", "lexical"} <= set(r["methods"]):
            print_paired(against_single_signals(r["methods"]))


def print_paired(comparison: dict[str, dict[str, dict[str, list[float]]]]) -> None:
    print("  hybrid against each single signal on the same questions: won/lost (exact McNemar p)")
    singles = next(iter(comparison.values()))
    columns = [f"vs {single} r@{k}" for single in singles for k in PAIRED_KS]
    print(f"  {'kind':<12} " + " ".join(f"{c:>22}" for c in columns))
    for kind, sides in comparison.items():
        cells = [f"+{w}/-{lost} (p {p:.2f})" for side in sides.values() for w, lost, p in side.values()]
        print(f"  {kind:<12} " + " ".join(f"{c:>22}" for c in cells))


def calibrate(workdir: Path) -> None:
    """The fusion candidates on every set (what the defaults in connector.recall.fusion were chosen on)."""
    fusions = {"dense only": Fusion(method="dense", centring=0.0), "lexical only": Fusion(method="lexical")}
    for share in (0.0, 0.3, 0.7):
        fusions[f"centring {share:g}"] = Fusion(centring=share)
    for scope in (20.0, 100.0):
        fusions[f"centring scope {scope:g}"] = Fusion(centring_scope=scope)
    for k in (10, 60):
        fusions[f"rrf k={k:g}"] = Fusion(method="rrf", rrf_k=k)
    fusions["max-norm w=0.3"] = Fusion(normalise="max", lexical_weight=0.3, value_weight=0.3)
    for w in (0.2, 0.3, 0.4):
        for floor in (0.0, 0.05, 0.1, 0.2):
            fusions[f"z w={w:g} floor={floor:g}"] = Fusion(lexical_weight=w, lexical_floor=floor)
    fusions["z w=0.3 value=0.3"] = Fusion(value_weight=0.3)
    fusions["z w=0.3 value=0.85"] = Fusion(value_weight=0.85)
    for w in (0.2, 0.3):
        fusions[f"z w={w:g} no hedge"] = Fusion(lexical_weight=w, hedge=False)
    for share in (0.2, 0.3, 0.4, 0.5):
        fusions[f"hedge w=0.2 shared={share:g}"] = Fusion(shared_term=share)
    fusions["hedge w=0.3 shared=0.3"] = Fusion(lexical_weight=0.3)
    fusions["no value bonus"] = Fusion(value_bonus=0.0)
    for cover in (0.0, 0.2, 0.5):
        fusions[f"coverage={cover:g}"] = Fusion(coverage=cover)
    fusions["session 5 (no bonus, coverage)"] = Fusion(value_bonus=0.0, coverage=0.0)
    results = quality(workdir, fusions)
    names = [f"{r['name'][:14]} r@1/r@5/r@10/MRR" for r in results.values()]
    print(f"{'fusion':<22} " + " ".join(f"{n:>38}" for n in names))
    for name in fusions:
        cells = []
        for r in results.values():
            f = r["methods"][name]["all"]
            cells.append(f"{f['r1']:.3f} {f['r5']:.3f} {f['r10']:.3f} {f['mrr']:.3f}")
        print(f"{name:<22} " + " ".join(f"{c:>38}" for c in cells))


# Scale ----------------------------------------------------------------------------------------------
def synthetic_vocabulary() -> list[str]:
    """The words of the labelled ERP cases, most frequent first (synthetic summaries draw on them)."""
    counts: dict[str, int] = {}
    for line in (ROOT / "benchmarks/episodic_cases.jsonl").open():
        case = json.loads(line)
        for word in f"{case['request']} {case['resolution']}".split():
            counts[word] = counts.get(word, 0) + 1
    return sorted(counts, key=lambda w: (-counts[w], w))


def synthetic_summary(vocabulary: list[str], rng: np.random.Generator) -> str:
    """25-40 words drawn Zipf-like from the vocabulary: postings as dense as real case text's."""
    picks = np.minimum(rng.zipf(1.3, size=int(rng.integers(25, 41))) - 1, len(vocabulary) - 1)
    return " ".join(vocabulary[int(i)] for i in picks)


def customers_for(size: int) -> int:
    """10,000 customers up to 100k entries; above that 10 entries each, as at 100k, so a customer's
    history (what recall's cost follows) is the same and the ratio to 100k shows what the size of the
    whole index costs."""
    return max(CUSTOMERS, size // HISTORY_AT_100K)


def synthetic_rows(
    start: int, stop: int, customers: int, vocabulary: list[str], model: str, rng: np.random.Generator
) -> list[dict[str, Any]]:
    """Entries ``start``..``stop`` as the writer stores them; customers take turns (``i % customers``),
    so one customer's rows are spread over the table as interleaved ingest leaves them."""
    rows: list[dict[str, Any]] = []
    for i in range(start, stop):
        occurred = NOW - timedelta(days=int(i % 170))
        summary = synthetic_summary(vocabulary, rng)
        rows.append({
            "id": f"e{i:08d}", "tenant": "default", "customer_id": f"C{i % customers:05d}",
            "case_id": f"case-{i}", "case_type": ("dispute", "delivery", "pricing", "tax")[i % 4],
            "summary": summary, "summary_mode": "non-llm", "documents": [],
            "doc_keys": [], "occurred_at": occurred, "retain_from": occurred, "recorded_at": NOW,
            "updated_at": NOW, "archived_at": None, "pii": False, "status": "live",
            "embedding_model": model, "merged_count": 1,
            "vector_hash": vector_hash(model, summary), "vector_pending": False,
        })  # fmt: skip
    return rows


def load_synthetic(memory: Memory, size: int, rng: np.random.Generator) -> float:
    """N entries: relational rows with their vector hash and lexical postings (the summaries are
    words of real cases), and the vectors (random unit vectors) in Chroma with the writer's metadata.

    Built for 1M entries on 2 cores: each batch's rows and postings go in one transaction on one
    connection with a large page cache (the postings' primary key starts with the customer, so a
    batch inserts all over the tree), while the previous batch's vectors are written to Chroma on a
    second thread, straight to the collection (the product's bulk ``upsert``; the in-process vector
    cache is left out, as in a process that opens the store later). Same entries, in the same order
    and from the same random draws, as a batch-by-batch build.
    """
    inner = getattr(memory.episodic.index, "inner", memory.episodic.index)  # Chroma, behind the cache
    vocabulary = synthetic_vocabulary()
    dim = memory.episodic.embedder.dimension
    model = memory.episodic.embedder.model_id
    customers = customers_for(size)
    started = time.perf_counter()
    with (
        memory.engine.connect() as conn,
        ThreadPoolExecutor(max_workers=1) as chroma,
        rare_hnsw_saves(inner, size),
    ):
        sqlite = conn.dialect.name == "sqlite"
        if sqlite:
            conn.exec_driver_sql(f"PRAGMA cache_size=-{BUILD_CACHE_KIB}")
            conn.commit()
        writing: Future[None] | None = None
        for start in range(0, size, LOAD_BATCH):
            rows = synthetic_rows(start, min(size, start + LOAD_BATCH), customers, vocabulary, model, rng)
            vectors = rng.standard_normal((len(rows), dim)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            metadatas = [chroma_metadata(r) for r in rows]
            with conn.begin():
                conn.execute(sa.insert(ENTRIES), rows)
                entry_terms.index_entries(conn, rows, replace=False)
            if writing is not None:
                writing.result()
            writing = chroma.submit(inner.upsert, [r["id"] for r in rows], vectors, metadatas)
            if start // LOAD_BATCH % 20 == 19:
                done = start + len(rows)
                print(f"    {done:,} of {size:,} entries, {time.perf_counter() - started:.0f} s", flush=True)
        if writing is not None:
            writing.result()
        if sqlite:
            conn.exec_driver_sql("PRAGMA cache_size=-2000")  # the pool's default again
            conn.commit()
    return time.perf_counter() - started


@contextmanager
def rare_hnsw_saves(index: Any, size: int) -> Iterator[None]:
    """Chroma saves a collection's whole HNSW graph to disk every ``sync_threshold`` (1,000) added
    vectors, ~1.6 GB a time at 1M entries: while the build adds, it saves every 250,000 (or once, at
    the end, for smaller sizes), then the collection's own threshold is set back. The graph and the
    stored collection are the same; only the number of intermediate saves differs."""
    collection = getattr(index, "collection", None)
    saved = (getattr(collection, "configuration", None) or {}).get("hnsw") or {}
    if collection is None or "sync_threshold" not in saved:  # another index, or no such setting
        yield
        return
    collection.modify(configuration={"hnsw": {"sync_threshold": max(LOAD_BATCH, min(size, 250_000))}})
    try:
        yield
    finally:
        collection.modify(configuration={"hnsw": {"sync_threshold": saved["sync_threshold"]}})


class SizedStore:
    """One synthetic store of the scale test and the timings taken on it.

    (A plain class: the smoke test loads this script by path, where dataclasses cannot resolve
    their module.)
    """

    def __init__(
        self, size: int, memory: Memory, load_s: float, pick: random.Random, *, customers: int = CUSTOMERS
    ) -> None:
        self.size, self.memory, self.load_s, self.pick = size, memory, load_s, pick
        self.customers = customers
        self.reused = False
        self.timings: dict[str, list[float]] = {}

    def add(self, name: str, ms: float) -> None:
        self.timings.setdefault(name, []).append(ms)

    def customer(self) -> str:
        return f"C{self.pick.randrange(self.customers):05d}"


def build(workdir: Path, size: int) -> SizedStore:
    memory = new_memory(workdir)
    load_s = load_synthetic(memory, size, np.random.default_rng(size))
    return SizedStore(size, memory, load_s, random.Random(size), customers=customers_for(size))


def store_counts(memory: Memory) -> dict[str, int]:
    """Rows, lexically indexed entries and Chroma vectors: a finished store has all three for each entry."""
    with memory.engine.connect() as conn:
        rows = conn.execute(sa.select(sa.func.count()).select_from(ENTRIES)).scalar_one()
        indexed = conn.execute(
            sa.select(sa.func.count()).select_from(DOCS).where(DOCS.c.source == CASE_SOURCE)
        ).scalar_one()
    return {"rows": int(rows), "indexed": int(indexed), "vectors": memory.episodic.index.count()}


def persisted(directory: Path, size: int) -> SizedStore:
    """The store of ``size`` entries kept in ``directory`` (``--store-dir``): opened when a finished
    build is there (its ``store.json`` is written last), else built there and described.

    A reopened store is read once from disk first, so the OS holds its files in memory as it did
    right after the build, and the figures compare with a store built in the same run."""
    manifest = directory / STORE_FILE
    if manifest.exists():
        info = json.loads(manifest.read_text())
        customers = customers_for(size)
        if info["entries"] != size or info["customers"] != customers:
            raise SystemExit(
                f"{directory} holds {info['entries']:,} entries over {info['customers']:,} customers, "
                f"not {size:,} over {customers:,}: remove it to rebuild"
            )
        warm_s = read_through(directory)
        memory = new_memory(directory)
        store = SizedStore(size, memory, info["load_s"], random.Random(size), customers=customers)
        store.reused = True
        print(
            f"  size {size:,}: reused {directory} (built in {info['load_s']:.0f} s at load "
            f"{info['load_average']}, {info['bytes'] / 2**30:.2f} GiB, read in {warm_s:.0f} s)",
            flush=True,
        )
        return store
    if directory.exists():
        shutil.rmtree(directory)  # an interrupted build
    directory.mkdir(parents=True)
    load_start = os.getloadavg()[0]
    store = build(directory, size)
    counts = store_counts(store.memory)
    if set(counts.values()) != {size}:
        raise SystemExit(f"the build of {size:,} entries in {directory} is incomplete: {counts}")
    info = {
        "entries": size, "customers": store.customers, "load_s": round(store.load_s, 1),
        "load_average": [round(load_start, 1), round(os.getloadavg()[0], 1)], "counts": counts,
        "bytes": sum(f.stat().st_size for f in directory.rglob("*") if f.is_file()),
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }  # fmt: skip
    manifest.write_text(json.dumps(info, indent=1) + "\n")
    return store


def read_through(directory: Path) -> float:
    """Read every file of the store once (into the OS page cache); returns the seconds it took."""
    started = time.perf_counter()
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            with path.open("rb") as f:
                while f.read(1 << 24):
                    pass
    return time.perf_counter() - started


def time_recall(store: SizedStore, i: int) -> None:
    """One query: the embedding alone, then the whole recall (embedding included) on a random customer
    whose vectors are not in the vector cache (cold: read from Chroma), then a second recall of that
    customer with another query (warm: the vectors come from the cache, the rest is done again)."""
    episodic = store.memory.episodic
    customer, text = store.customer(), QUERY_TEXTS[i % len(QUERY_TEXTS)]
    drop = getattr(episodic.index, "drop_scope", None)  # None: code from before the vector cache
    if drop is not None:
        drop(Scope.of("default", customer))
    t0 = time.perf_counter()
    episodic.embedder.embed([text])
    store.add("embed", (time.perf_counter() - t0) * 1000)
    for name, query in (("recall", text), ("warm", QUERY_TEXTS[(i + 1) % len(QUERY_TEXTS)])):
        t0, c0 = time.perf_counter(), time.process_time()
        episodic.recall(customer, query, k=3)
        store.add(name, (time.perf_counter() - t0) * 1000)
        store.add(f"{name}_cpu", (time.process_time() - c0) * 1000)


def time_naive(store: SizedStore, n: int) -> None:
    """The single-collection, metadata-filtered Chroma query on the same collection."""
    episodic = store.memory.episodic
    chroma: Any = getattr(episodic.index, "inner", episodic.index)  # Chroma, behind the cache
    collection = chroma.collection
    for i in range(n):
        customer, text = store.customer(), QUERY_TEXTS[i % len(QUERY_TEXTS)]
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
            store.memory.episodic.recall(store.customer(), QUERY_TEXTS[0])
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
        "customers": store.customers,
        "entries_per_customer": store.size / store.customers,
        "load_s": round(store.load_s, 1),
        "reused": store.reused,
        "embed_p50_ms": round(pct(t.get("embed", []), 50), 2),
        "embed_p95_ms": round(pct(t.get("embed", []), 95), 2),
        "recall_p50_ms": round(pct(t.get("recall", []), 50), 2),
        "recall_p95_ms": round(pct(t.get("recall", []), 95), 2),
        "recall_cpu_p50_ms": round(pct(t.get("recall_cpu", []), 50), 2),
        "recall_cpu_p95_ms": round(pct(t.get("recall_cpu", []), 95), 2),
        "warm_p50_ms": round(pct(t.get("warm", []), 50), 2),
        "warm_p95_ms": round(pct(t.get("warm", []), 95), 2),
        "warm_cpu_p50_ms": round(pct(t.get("warm_cpu", []), 50), 2),
        "warm_cpu_p95_ms": round(pct(t.get("warm_cpu", []), 95), 2),
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
    parser.add_argument("--skip-scale", action="store_true", help="quality only (both labelled sets)")
    parser.add_argument("--skip-quality", action="store_true", help="scale only (no labelled sets)")
    parser.add_argument(
        "--calibrate", action="store_true", help="compare fusion settings on both sets, then exit"
    )
    parser.add_argument(
        "--server",
        nargs="?",
        const="auto",
        metavar="HOST:PORT",
        help="use a Chroma server (default: start `chroma run` on a free local port) instead of embedded",
    )
    parser.add_argument("--max-minutes", type=float, default=30.0, help="skip sizes that would not fit")
    parser.add_argument(
        "--ingest-only",
        type=int,
        nargs="?",
        const=7,
        metavar="RUNS",
        help="only time the ERP set's ingest, RUNS times (default 7), beside the embedder alone; medians",
    )
    parser.add_argument(
        "--database",
        default="sqlite",
        help=f"sqlite (default), or a PostgreSQL admin URL (`postgres`: {DEFAULT_PG_ADMIN}); "
        "every store is then a scratch database there",
    )
    parser.add_argument(
        "--store-dir",
        type=Path,
        metavar="DIR",
        help="keep each size's store in DIR/<size> and reuse a finished one instead of building it "
        "(SQLite and embedded Chroma only), so the timing can be re-run without a rebuild",
    )
    parser.add_argument(
        "--build-only", action="store_true", help="build (or check) the sizes' stores, then exit: no timing"
    )
    args = parser.parse_args()
    if args.store_dir is not None and (args.database != "sqlite" or args.server is not None):
        parser.error("--store-dir keeps SQLite stores with embedded Chroma only")
    admin = admin_url(args.database)
    if admin is not None:
        global SCRATCH
        SCRATCH = ScratchDatabases(admin, "bench_episodic")
    deadline = time.monotonic() + args.max_minutes * 60
    load_start = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} cores, load average {load_start:.1f} at start")
    with tempfile.TemporaryDirectory(prefix="bench-episodic-") as tmp:
        try:
            if args.server is None:
                return run(args, Path(tmp), deadline, load_start)
            global SERVER
            with chroma_server(args.server, Path(tmp)) as SERVER:
                print(f"Chroma server at {SERVER[0]}:{SERVER[1]}")
                return run(args, Path(tmp), deadline, load_start)
        finally:
            if SCRATCH is not None:
                SCRATCH.drop_all()


def run(args: argparse.Namespace, tmp: Path, deadline: float, load_start: float) -> int:
    if args.calibrate:
        calibrate(tmp / "calibrate")
        return 0
    if args.ingest_only:
        done = ingest_runs(tmp / "ingest", args.ingest_only)
        done["chroma"] = "server" if SERVER is not None else "embedded"
        done["cpu_count"] = os.cpu_count()
        print(json.dumps(done, sort_keys=True))
        return 0
    q: dict[str, Any] = {}
    cal: dict[str, float] = {}
    if not args.skip_quality:
        q = quality(tmp / "quality")
        cal = calibration(*q["erp"].pop("scores"))
        print_quality(q)
        print(f"  dense score threshold calibration (ERP set, scores within the customer): {cal}")
    stores: list[SizedStore] = []
    skipped: list[int] = []
    if not args.skip_scale:
        for size in sorted(int(s) for s in args.sizes.split(",")):
            kept = args.store_dir / str(size) if args.store_dir is not None else None
            if stores and not (kept is not None and (kept / STORE_FILE).exists()):
                last = stores[-1]
                estimate = last.load_s * size / last.size * 1.3 + 120
                if time.monotonic() + estimate > deadline:
                    print(f"  size {size:,} skipped: estimated {estimate / 60:.0f} min does not fit")
                    skipped.append(size)
                    continue
            stores.append(persisted(kept, size) if kept is not None else build(tmp / f"scale-{size}", size))
            if not stores[-1].reused:
                print(f"  size {size:,}: loaded in {stores[-1].load_s:.1f} s, load {os.getloadavg()[0]:.1f}"
                      + (f", kept in {kept}" if kept is not None else ""), flush=True)  # fmt: skip
    if args.build_only:
        return 0
    results = measure(stores, args.queries, args.naive_queries)
    for done in results:
        print(
            f"  size {done['entries']:,}: recall p95 {done['recall_p95_ms']} ms, "
            f"filtered query p95 {done['naive_p95_ms']} ms"
        )
    header = f"{'entries':>9} {'per cust':>8} {'load s':>7} {'embed p50/p95':>14} {'recall p50/p95':>15} "
    header += f"{'naive filter p50/p95':>21} {'speedup p95':>11} {'recall cpu p50/p95':>19} "
    print("\n" + header + f"{'warm p50/p95':>15} {'warm cpu p50/p95':>17}  (recall: cold vector cache)")
    for r in results:
        speedup = r["naive_p95_ms"] / r["recall_p95_ms"]
        print(
            f"{r['entries']:>9,} {r['entries_per_customer']:>8.0f} {r['load_s']:>7} "
            f"{r['embed_p50_ms']:>6}/{r['embed_p95_ms']:<7} "
            f"{r['recall_p50_ms']:>7}/{r['recall_p95_ms']:<7} "
            f"{r['naive_p50_ms']:>10}/{r['naive_p95_ms']:<10} {speedup:>10.1f}x "
            f"{r['recall_cpu_p50_ms']:>9}/{r['recall_cpu_p95_ms']:<9} "
            f"{r['warm_p50_ms']:>7}/{r['warm_p95_ms']:<7} {r['warm_cpu_p50_ms']:>8}/{r['warm_cpu_p95_ms']:<8}"
        )
    by_size = {r["entries"]: r for r in results}
    largest = results[-1] if results else None
    summary = {
        "p95_ms_10k": by_size.get(10_000, {}).get("recall_p95_ms"),
        "p95_ms_100k": by_size.get(100_000, {}).get("recall_p95_ms"),
        "p95_ms_largest": largest["recall_p95_ms"] if largest else None,
        "warm_p95_ms_10k": by_size.get(10_000, {}).get("warm_p95_ms"),
        "warm_p95_ms_100k": by_size.get(100_000, {}).get("warm_p95_ms"),
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
        "ingest_cases_per_s": q["erp"]["ingest"]["cases_per_s"] if q else None,
        "ingest_cases_per_cpu_s": q["erp"]["ingest"]["cases_per_cpu_s"] if q else None,
        "ingest_s": q["erp"]["ingest"]["s"] if q else None,
        "ingest_embed_s": q["erp"]["ingest"]["embed_s"] if q else None,
        "conversation_ingest_cases_per_s": q["conversations"]["ingest"]["cases_per_s"] if q else None,
        "quality": {key: {m: r["all"] for m, r in v["methods"].items()} for key, v in q.items()},
        "hybrid_against_single_signals": {key: against_single_signals(v["methods"]) for key, v in q.items()},
        "leaks": sum(r["leaks"] for v in q.values() for r in v["methods"].values()),
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
