"""One role of the multi-process vector-store tests, run as its own process on a shared store:

    python tests/vector_workers.py ROLE DATA_DIR DATABASE_URL COUNT

``sync`` records closed cases (the sync's case ingest writes through the same path) for the kept and
the erased customer; ``agent`` records turns of both, reads its recalls and indexes its turns;
``forget`` erases the erased customer while the others write. Each prints one JSON line: what it
did and every unexpected error (an erased customer's refused write is expected).
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import sqlalchemy as sa

from connector.embeddings.base import Vectors
from connector.errors import ErasedCustomerError, StoreTimeout
from connector.memory import Memory
from connector.settings import ConversationSettings, DatabaseSettings, EpisodicSettings, Settings

KEPT, ERASED = "KEEP-4711", "GONE-Q7ZX9"


class HashEmbedder:
    """Deterministic vectors from a text's digest: no model in the child processes."""

    model_id = "hash-16"
    dimension = 16

    def embed(self, texts: Sequence[str]) -> Vectors:
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:16], dtype=np.uint8) for t in texts]
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), 16) + 1.0

    def close(self) -> None:
        pass


def memory_for(data_dir: Path, url: str) -> Memory:
    from pydantic import SecretStr

    settings = Settings(
        data_dir=data_dir,
        database=DatabaseSettings(url=SecretStr(url)),
        conversations=ConversationSettings(enabled=True),
        episodic=EpisodicSettings(allow_unknown_customers=True),
    )
    memory = Memory(settings, llm=None)
    memory.__dict__["embedder"] = HashEmbedder()
    return memory


def _sync(memory: Memory, count: int, done: dict[str, int], errors: list[str]) -> None:
    for i in range(count):
        for customer in (KEPT, ERASED):
            try:
                memory.record_case(
                    customer, f"Case {i} of {customer}: disputed INV-{i:06d}.", f"Credit memo CM-{i:06d}.",
                    case_id=f"CASE-{customer}-{i}",
                )  # fmt: skip
                done[customer] = done.get(customer, 0) + 1
            except ErasedCustomerError:
                done["refused"] = done.get("refused", 0) + 1


def _agent(memory: Memory, count: int, done: dict[str, int], errors: list[str]) -> None:
    for i in range(count):
        for customer in (KEPT, ERASED):
            try:
                memory.record_turn(
                    f"s-{customer}-{i // 5}", customer, "user", f"{customer} asks about INV-{i:06d}"
                )
                done[customer] = done.get(customer, 0) + 1
            except ErasedCustomerError:
                done["refused"] = done.get("refused", 0) + 1
        try:  # a recall may wait for another process's write past its 1 s deadline: degraded, not lost
            memory.recall_cases(KEPT, f"disputed INV-{i:06d}", k=2)
            memory.recall_conversations(KEPT, f"INV-{i:06d}", k=2)
            done["recalls"] = done.get("recalls", 0) + 1
        except StoreTimeout:
            done["recalls_timed_out"] = done.get("recalls_timed_out", 0) + 1
    memory.conversations.flush(60)


def _forget(memory: Memory, count: int, done: dict[str, int], errors: list[str]) -> None:
    deadline = time.monotonic() + 120
    watch = sa.create_engine(memory.settings.database_url, poolclass=sa.pool.NullPool)
    while time.monotonic() < deadline:  # the writers are under way: the customer has cases and turns
        with watch.connect() as conn:
            cases = conn.execute(
                sa.text(f"SELECT count(*) FROM episodic_entry WHERE customer_id = '{ERASED}'")
            )
            turns = conn.execute(
                sa.text(
                    "SELECT count(*) FROM work_turn t JOIN work_session s ON s.session_id = t.session_id"
                    f" WHERE s.customer_id = '{ERASED}'"
                )
            )
            if cases.scalar_one() >= 3 and turns.scalar_one() >= 3:
                break
        time.sleep(0.05)
    watch.dispose()
    print("forgetting", file=sys.stderr, flush=True)
    for _ in range(2):
        removed = Memory.forget.__wrapped__(memory, ERASED)  # type: ignore[attr-defined]
        done["erased"] = done.get("erased", 0) + sum(removed.values())
        time.sleep(0.5)


ROLES = {"sync": _sync, "agent": _agent, "forget": _forget}


def main(argv: list[str]) -> int:
    role, data_dir, url, count = argv[0], Path(argv[1]), argv[2], int(argv[3])
    done: dict[str, int] = {}
    errors: list[str] = []
    memory = memory_for(data_dir, url)
    try:
        ROLES[role](memory, count, done, errors)
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
        traceback.print_exc()
    finally:
        memory.close()
    print(json.dumps({"role": role, "done": done, "errors": errors}))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
