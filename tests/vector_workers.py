"""One role of the multi-process vector-store tests, run as its own process on a shared store:

    python tests/vector_workers.py ROLE DATA_DIR DATABASE_URL COUNT TENANT KEPT ERASED

(the third process is a real ``connector sync`` that ingests the ERP's closed cases of both
customers). ``agent`` records turns of both customers, reads its recalls and indexes its turns;
``forget`` erases the erased customer while the others write. Each prints one JSON line: what it
did and every unexpected error (an erased customer's refused write is expected). All embed with the
offline model, as the sync does (one index, one model).
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path

import sqlalchemy as sa

from connector.errors import ErasedCustomerError, StoreTimeout
from connector.memory import Memory
from connector.settings import ConversationSettings, DatabaseSettings, EpisodicSettings, Settings


def memory_for(data_dir: Path, url: str) -> Memory:
    from pydantic import SecretStr

    settings = Settings(
        data_dir=data_dir,
        database=DatabaseSettings(url=SecretStr(url)),
        conversations=ConversationSettings(enabled=True),
        episodic=EpisodicSettings(allow_unknown_customers=True),
    )
    return Memory(settings, llm=None)


def _agent(memory: Memory, count: int, scope: tuple[str, str, str], done: dict[str, int]) -> None:
    tenant, kept, erased = scope
    for i in range(count):
        for customer in (kept, erased):
            try:
                memory.record_turn(
                    f"s-{customer}-{i // 5}",
                    customer,
                    "user",
                    f"{customer} asks about INV-{i:06d}",
                    tenant=tenant,
                )
                done[customer] = done.get(customer, 0) + 1
            except ErasedCustomerError:
                done["refused"] = done.get("refused", 0) + 1
        try:  # a recall may wait for another process's write past its 1 s deadline: degraded, not lost
            memory.recall_cases(kept, f"disputed INV-{i:06d}", k=2, tenant=tenant)
            memory.recall_conversations(kept, f"INV-{i:06d}", k=2, tenant=tenant)
            done["recalls"] = done.get("recalls", 0) + 1
        except StoreTimeout:
            done["recalls_timed_out"] = done.get("recalls_timed_out", 0) + 1
    memory.conversations.flush(60)


def _forget(memory: Memory, count: int, scope: tuple[str, str, str], done: dict[str, int]) -> None:
    tenant, _, erased = scope
    deadline = time.monotonic() + 120
    watch = sa.create_engine(memory.settings.database_url, poolclass=sa.pool.NullPool)
    while time.monotonic() < deadline:  # the writers are under way: the customer has cases and turns
        with watch.connect() as conn:
            cases = conn.execute(
                sa.text(f"SELECT count(*) FROM episodic_entry WHERE customer_id = '{erased}'")
            )
            turns = conn.execute(
                sa.text(
                    "SELECT count(*) FROM work_turn t JOIN work_session s ON s.session_id = t.session_id"
                    f" WHERE s.customer_id = '{erased}'"
                )
            )
            if cases.scalar_one() >= 3 and turns.scalar_one() >= 3:
                break
        time.sleep(0.05)
    watch.dispose()
    print("forgetting", file=sys.stderr, flush=True)
    for _ in range(2):
        removed = Memory.forget.__wrapped__(memory, erased, tenant=tenant)  # type: ignore[attr-defined]
        done["erased"] = done.get("erased", 0) + sum(removed.values())
        time.sleep(0.5)


ROLES = {"agent": _agent, "forget": _forget}


def main(argv: list[str]) -> int:
    role, data_dir, url, count, tenant, kept, erased = argv
    done: dict[str, int] = {}
    errors: list[str] = []
    memory = memory_for(Path(data_dir), url)
    try:
        ROLES[role](memory, int(count), (tenant, kept, erased), done)
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
        traceback.print_exc()
    finally:
        memory.close()
    print(json.dumps({"role": role, "done": done, "errors": errors}))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
