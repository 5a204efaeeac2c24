"""Erasure in embedded Chroma's own files, in the process that did the work.

Chroma starts an HNSW segment by writing its whole level-0 and lengths buffers, memory taken from
``malloc`` and never cleared, so the slots past the last element hold what the process's heap held:
in a process that handled a customer, its id and case ids. These tests forget a customer and then
rebuild the index in the same process (library and CLI), and check every file under the data
directory for the customer and every HNSW file for non-zero bytes past its last element; and
that ``forget`` needs no embedding model and searches Chroma by metadata only after an unfinished
erasure.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
import stored_bytes
from sqlalchemy.engine import Engine

from connector.cli import main
from connector.clock import FrozenClock
from connector.db.engine import create_db_engine
from connector.db.migrate import upgrade_to_head
from connector.episodic.chroma_index import ChromaEraser
from connector.erasure.tombstones import pending_t
from connector.errors import ErasureIncomplete, StoreError
from connector.memory import Memory
from connector.settings import ChromaSettings, EpisodicSettings, Settings
from connector.vectors import slack as hnsw

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CUSTOMER = "ZQXSECRETCUST"
CASES = ("ZQXCASE-0001", "ZQXCASE-0002", "ZQXCASE-0003")
PHRASE = "marmalade warehouse flooded"
NEEDLES = [CUSTOMER.encode(), *(c.encode() for c in CASES), PHRASE.encode()]
HEADER = struct.Struct("<i4Q")  # hnswlib: version, offsetLevel0, max_elements, elements, bytes per element


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    data = tmp_path / "data"
    data.mkdir()
    yield data


def settings_for(data: Path) -> Settings:
    return Settings(
        data_dir=data,
        chroma=ChromaSettings(path=data / "chroma"),
        episodic=EpisodicSettings(allow_unknown_customers=True),  # customers no sync brought
    )


@pytest.fixture
def engine(data_dir: Path) -> Iterator[Engine]:
    engine = create_db_engine(f"sqlite:///{data_dir / 'connector.sqlite3'}")
    upgrade_to_head(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def memory(data_dir: Path, engine: Engine) -> Iterator[Memory]:
    memory = Memory(settings_for(data_dir), clock=FrozenClock(NOW), llm=None, engine=engine)
    yield memory
    memory.close()


def seed(memory: Memory) -> None:
    """Thirty other customers, then the customer's cases, turns and a fact (turns indexed)."""
    for other in range(30):
        memory.record_case(f"OTHER{other:03d}", f"Asked about INV-{other:06d}.", "Explained it.")
    for i, case_id in enumerate(CASES):
        memory.record_case(
            CUSTOMER, f"The {PHRASE} and order SO-{i:06d} arrived late.",
            f"Credit memo for {PHRASE} damage issued.", case_id=case_id,
            transcript=f"Customer: our {PHRASE} ...", pii=i == 0,
        )  # fmt: skip
        memory.record_turn("s-secret", CUSTOMER, "user", f"Is the {PHRASE} claim ok?")
    memory.learn(CUSTOMER, f"Runs the {PHRASE} site")
    assert memory.conversations.flush(60.0) is not None
    assert memory.conversations.stats()["indexed_turns"] == 3
    memory.recall_cases(CUSTOMER, PHRASE)  # the customer's metadata passes through Chroma's memory


def files_naming(root: Path) -> dict[str, list[bytes]]:
    return stored_bytes.files_naming(root, NEEDLES)


def segments(chroma_dir: Path) -> list[Path]:
    return sorted(p.parent for p in chroma_dir.glob("*/header.bin"))


def bytes_past_last_element(chroma_dir: Path) -> dict[str, int]:
    """Non-zero bytes past the last element of each HNSW segment's data and lengths files."""
    found: dict[str, int] = {}
    for segment in segments(chroma_dir):
        _, _, _, elements, per_element = HEADER.unpack((segment / "header.bin").read_bytes()[: HEADER.size])
        for name, start in (("data_level0.bin", elements * per_element), ("length.bin", elements * 4)):
            tail = (segment / name).read_bytes()[start:]
            if len(tail) - tail.count(0):
                found[f"{segment.name}/{name}"] = len(tail) - tail.count(0)
    return found


def test_a_rebuild_in_the_same_process_after_forget_leaves_no_byte_of_the_customer(memory: Memory) -> None:
    data, chroma = memory.settings.data_dir, memory.settings.chroma_path
    seed(memory)
    assert files_naming(data)

    memory.forget(CUSTOMER)
    report = memory.rebuild_episodic_index()

    assert report.rebuilt == 30 and segments(chroma)
    assert bytes_past_last_element(chroma) == {}  # no uninitialised memory in Chroma's files
    assert files_naming(data) == {}
    assert memory.recall_cases("OTHER007", "INV-000007")[0].case_id is not None  # Chroma still works
    memory.record_case("OTHER999", "Asked about INV-999999.", "Explained it.")
    assert bytes_past_last_element(chroma) == {} and files_naming(data) == {}


def test_the_cli_in_process_forget_then_rebuild_leaves_no_byte_of_the_customer(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = memory.settings.data_dir
    seed(memory)
    memory.close()
    monkeypatch.setenv("CONNECTOR_DATA_DIR", str(data))
    monkeypatch.setenv("CONNECTOR_EPISODIC__ALLOW_UNKNOWN_CUSTOMERS", "true")

    assert main(["forget", CUSTOMER]) == 0
    assert main(["episodic", "reindex", "--rebuild"]) == 0

    assert '"rebuilt": 30' in capsys.readouterr().out
    assert bytes_past_last_element(data / "chroma") == {}
    assert files_naming(data) == {}


def test_forget_zeroes_what_chroma_wrote_past_the_last_element(memory: Memory) -> None:
    """A segment started while the customer's bytes were in the heap holds them past its last
    element (written here as Chroma would): ``forget`` leaves zeros there, and Chroma reads on."""
    seed(memory)
    chroma = memory.settings.chroma_path
    for segment in segments(chroma):
        _, _, _, elements, per_element = HEADER.unpack((segment / "header.bin").read_bytes()[: HEADER.size])
        with (segment / "data_level0.bin").open("r+b") as file:
            file.seek(elements * per_element + 100)
            file.write(b'{"customer_id":"%s","case_id":"%s"}' % (CUSTOMER.encode(), CASES[1].encode()))
        with (segment / "length.bin").open("r+b") as file:
            file.seek(elements * 4)
            file.write(CUSTOMER.encode())
    assert "data_level0.bin" in " ".join(files_naming(chroma))

    memory.forget(CUSTOMER)

    assert files_naming(memory.settings.data_dir) == {}
    assert bytes_past_last_element(chroma) == {}
    reopened = Memory(memory.settings, clock=FrozenClock(NOW), llm=None, engine=memory.engine)
    assert reopened.episodic.index.count() == 30
    assert reopened.recall_cases("OTHER003", "INV-000003")
    reopened.close()


def write_past_last_element(segment: Path, data: bytes) -> None:
    _, _, _, elements, per_element = HEADER.unpack((segment / "header.bin").read_bytes()[: HEADER.size])
    with (segment / "data_level0.bin").open("r+b") as file:
        file.seek(elements * per_element + 100)
        file.write(data)


class SegmentReads:
    """Counts how often the zeroing reads a segment's files."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = hnsw._scrub_segment

        def counting(segment: Path) -> int:
            self.count += 1
            return real(segment)

        monkeypatch.setattr(hnsw, "_scrub_segment", counting)


def test_a_segment_found_clean_is_not_read_again_until_its_files_change(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hnsw, "_RACY_NS", 10_000_000)  # files older than 10 ms count as settled
    memory.record_case("OTHER001", "Asked about INV-000001.", "Explained it.")
    chroma = memory.settings.chroma_path
    (segment,) = segments(chroma)
    reads = SegmentReads(monkeypatch)
    time.sleep(0.05)
    hnsw.scrub_segment_slack(chroma)
    # read again only if the write's own check came within 10 ms of the change (racily clean); on a
    # loaded machine it may not have, and then the segment is already known clean
    settled = reads.count
    assert settled in (0, 1)
    hnsw.scrub_segment_slack(chroma)
    assert reads.count == settled  # checked after its files settled: not read again

    memory.record_case(
        "OTHER002", "Asked about INV-000002.", "Explained it."
    )  # no persist: files as they were
    hnsw.scrub_segment_slack(chroma)
    assert reads.count == settled

    write_past_last_element(segment, CUSTOMER.encode())
    assert hnsw.scrub_segment_slack(chroma) == len(CUSTOMER) and reads.count == settled + 1
    assert bytes_past_last_element(chroma) == {}


def test_a_segment_changed_just_before_its_check_is_read_again(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change within a timestamp tick of the check would leave the stat as it was: such a
    segment is read at every write until its files have settled."""
    memory.record_case("OTHER001", "Asked about INV-000001.", "Explained it.")  # starts the segment
    chroma = memory.settings.chroma_path
    reads = SegmentReads(monkeypatch)

    hnsw.scrub_segment_slack(chroma)
    hnsw.scrub_segment_slack(chroma)

    assert reads.count == 2


class NoModel:
    """An embedder that fails if anything asks it for its model, dimension or vectors."""

    @property
    def model_id(self) -> str:
        raise AssertionError("forget asked for the embedding model")

    @property
    def dimension(self) -> int:
        raise AssertionError("forget asked for the embedding dimension")

    def embed(self, texts: Sequence[str]) -> None:
        raise AssertionError("forget embedded text")

    def close(self) -> None:
        pass


def without_model(memory: Memory) -> Memory:
    fresh = Memory(memory.settings, clock=FrozenClock(NOW), llm=None, engine=memory.engine)
    fresh.__dict__["embedder"] = NoModel()  # what Memory.embedder would build and load
    return fresh


def test_forget_loads_no_embedding_model_and_still_erases_everything(memory: Memory) -> None:
    seed(memory)
    memory.close()
    fresh = without_model(memory)

    removed = fresh.forget(CUSTOMER)

    assert removed["episodic_entries"] == 3 and removed["conversation_turns"] == 3
    assert removed["working_turns"] == 3 and removed["learned_facts"] == 1
    assert files_naming(memory.settings.data_dir) == {}
    fresh.close()
    assert vectors_of(memory, CUSTOMER) == 0


def test_forget_of_a_customer_without_chroma_collections_creates_none(memory: Memory) -> None:
    memory.learn(CUSTOMER, f"Runs the {PHRASE} site")
    fresh = without_model(memory)

    assert fresh.forget(CUSTOMER)["learned_facts"] == 1

    assert segments(memory.settings.chroma_path) == []
    assert fresh.chroma_client.list_collections() == []
    fresh.close()


class Sweeps:
    """Counts the metadata searches of Chroma (``ids_in_scope``) and can fail deletes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.searches = 0
        self.fail_deletes = False
        searched, deleted = ChromaEraser.ids_in_scope, ChromaEraser.delete

        def counting(eraser: ChromaEraser, tenant: str, customer_id: str) -> list[str]:
            self.searches += 1
            return searched(eraser, tenant, customer_id)

        def failing(eraser: ChromaEraser, ids: Sequence[str]) -> None:
            if self.fail_deletes:
                raise StoreError("Chroma unreachable (test)")
            deleted(eraser, ids)

        monkeypatch.setattr(ChromaEraser, "ids_in_scope", counting)
        monkeypatch.setattr(ChromaEraser, "delete", failing)


def pending(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(pending_t)).scalar_one())


def vectors_of(memory: Memory, customer: str) -> int:
    reopened = Memory(memory.settings, clock=FrozenClock(NOW), llm=None, engine=memory.engine)
    try:
        stamps = [*reopened.episodic.index.stamps(), *reopened.conversations.index.stamps()]
        return sum(1 for _, stamp in stamps if stamp.customer_id == customer)
    finally:
        reopened.close()


def test_forget_searches_chroma_by_metadata_only_after_an_unfinished_erasure(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(memory)
    memory.close()
    sweeps = Sweeps(monkeypatch)

    first = without_model(memory)
    sweeps.fail_deletes = True
    with pytest.raises(ErasureIncomplete):
        first.forget(CUSTOMER)
    first.close()
    assert sweeps.searches == 0  # a first erasure deletes by the rows' ids
    assert pending(memory.engine) == 1 and vectors_of(memory, CUSTOMER) == 6  # left in Chroma

    memory.lift_erasure(CUSTOMER)  # lifting keeps what is still to be found
    sweeps.fail_deletes = False
    again = without_model(memory)
    again.forget(CUSTOMER)
    again.close()

    assert sweeps.searches == 2  # cases and turns: the rows were gone, the vectors found by metadata
    assert vectors_of(memory, CUSTOMER) == 0 and pending(memory.engine) == 0
    assert files_naming(memory.settings.data_dir) == {}

    third = without_model(memory)
    third.forget(CUSTOMER)
    third.close()
    assert sweeps.searches == 2  # finished: no search again


def test_the_first_read_of_a_process_leaves_nothing_past_the_last_element(memory: Memory) -> None:
    """Chroma starts a collection's HNSW segment on a process's first read of it too (writing the
    uninitialised buffers to disk): that read is followed by the zeroing, as writes are."""
    seed(memory)
    memory.forget(CUSTOMER)
    memory.close()
    assert bytes_past_last_element(memory.settings.chroma_path) == {}

    reopened = Memory(memory.settings, clock=FrozenClock(NOW), llm=None, engine=memory.engine)
    assert reopened.episodic.index.count() == 30
    reopened.conversations.index.count()

    assert bytes_past_last_element(memory.settings.chroma_path) == {}
    reopened.close()
