"""Hybrid recall on SQLite and PostgreSQL: the lexical side finds names, dates and amounts, stays
inside the customer's scope (property test on the rows the scorer reads and scores), treats
operator-looking queries as text, and loses its entries with erasure, retention and PII deletion."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.episodic.writer import WRITE_CHUNK
from connector.lexical import bm25
from connector.lexical import index as lexical
from connector.lexical.tables import CASE_SOURCE, DOCS, POSTINGS
from connector.lexical.tokens import query_terms
from connector.memory import Memory
from connector.scope import Scope
from connector.settings import ChromaSettings, EpisodicSettings, RetentionSettings, Settings

NOW = datetime(2026, 3, 20, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)


@pytest.fixture
def memory(engine: Engine, tmp_path: Path) -> Memory:
    settings = Settings(
        data_dir=tmp_path / "data",
        chroma=ChromaSettings(path=tmp_path / "chroma"),
        retention=RetentionSettings(episodic_days=180, pii_days=30),
        episodic=EpisodicSettings(allow_unknown_customers=True),  # cases for customers not synced
    )
    return Memory(settings, clock=FrozenClock(NOW), llm=None, engine=engine)


def seed(memory: Memory, customer: str = "ACME") -> dict[str, str]:
    cases = {
        "call": ("Call with Priya Raman about the delivery schedule.", "Agreed weekly deliveries.", 6),
        "credit": ("Asked for a credit of 312.40 USD on a damaged pallet.", "Credit approved.", 30),
        "tax": ("Sales tax charged although exempt.", "Tax line removed, invoice corrected.", 40),
        "price": ("Unit price on the quote was wrong (1,250.00 instead of 1,150.00).", "Re-quoted.", 50),
    }
    ids = {}
    for key, (request, resolution, days_ago) in cases.items():
        recorded = memory.record_case(
            customer, request, resolution, case_id=f"{customer}-{key}", occurred_at=NOW - days_ago * DAY
        )
        ids[key] = recorded.entry_id
    return ids


def indexed(memory: Memory, customer: str) -> tuple[int, int]:
    with memory.engine.connect() as conn:
        postings = conn.execute(
            sa.select(sa.func.count()).select_from(POSTINGS).where(POSTINGS.c.customer_id == customer)
        ).scalar_one()
        docs = conn.execute(
            sa.select(sa.func.count()).select_from(DOCS).where(DOCS.c.customer_id == customer)
        ).scalar_one()
    return int(postings), int(docs)


def test_a_person_named_in_the_question_finds_the_case_lexically(memory: Memory) -> None:
    ids = seed(memory)
    hit = memory.recall_cases("ACME", "What did Priya say?", k=1)[0]
    assert hit.entry_id == ids["call"]
    assert hit.matched_terms == ("priya",) and hit.lexical_score > 0 and hit.fused_score > 0


def test_an_amount_in_another_spelling_finds_its_case(memory: Memory) -> None:
    ids = seed(memory)
    assert memory.recall_cases("ACME", "the 312.4 credit", k=1)[0].entry_id == ids["credit"]
    hit = memory.recall_cases("ACME", "quote of 1250 dollars", k=1)[0]
    assert hit.entry_id == ids["price"] and "1250" in hit.matched_terms


def test_the_amount_a_question_names_picks_its_turn_among_look_alikes(memory: Memory) -> None:
    turns = {
        "t900": "Arjun: The direct debit of $900.00 for INV-079959 went out on 23 October.",
        "t380": "Hana: Emil agreed an early-payment discount of $380.40 on invoice INV-054413.",
        "t457": "Arjun: Emil agreed a volume discount of 457.75 on invoice INV-049769.",
        "t990": "Hana: The wire transfer of 990.00 for INV-011873 went out on 2 November.",
        "chat": "Arjun: Thanks for getting back to me so quickly.",
    }
    for case_id, text in turns.items():
        memory.record_case("CONV", text, "", case_id=case_id, occurred_at=NOW - 10 * DAY)
    hits = memory.recall_cases("CONV", "Which invoice was the 900 payment for?", k=3)
    assert hits[0].case_id == "t900" and "900" in hits[0].matched_terms


def test_the_case_date_is_searchable_in_words(memory: Memory) -> None:
    ids = seed(memory)  # the call was on 14 March 2026
    hit = memory.recall_cases("ACME", "the 14 March call", k=1)[0]
    assert hit.entry_id == ids["call"] and "d0314" in hit.matched_terms


@pytest.mark.parametrize(
    "query",
    ['"credit', "credit*", "credit NEAR tax", "credit OR tax", "-credit", "tax:exempt", "!!!", "the of and",
     "'; DROP TABLE lexical_posting; --", "x" * 1_000_000],
)  # fmt: skip
def test_operator_looking_queries_are_plain_text(memory: Memory, query: str) -> None:
    seed(memory)
    hits = memory.recall_cases("ACME", query, k=4)
    assert all(h.entry_id for h in hits)
    assert indexed(memory, "ACME")[1] == 4


def test_forget_removes_the_customers_lexical_entries_only(memory: Memory) -> None:
    seed(memory, "ACME")
    seed(memory, "OTHER")
    memory.forget("ACME")
    assert indexed(memory, "ACME") == (0, 0)
    assert indexed(memory, "OTHER")[1] == 4


def test_archived_entries_leave_the_index_and_come_back_on_restore(memory: Memory) -> None:
    seed(memory)
    assert isinstance(memory.clock, FrozenClock)
    memory.clock.advance(timedelta(days=160))  # the 30-, 40- and 50-day-old cases pass 180 days
    assert memory.episodic.apply_retention().archived == 3
    assert indexed(memory, "ACME")[1] == 1
    memory.episodic.restore("ACME", case_ids=["ACME-credit"])
    assert indexed(memory, "ACME")[1] == 2
    assert memory.recall_cases("ACME", "credit 312.40", k=1)[0].case_id == "ACME-credit"


def test_pii_deletion_removes_the_lexical_entries(memory: Memory) -> None:
    memory.record_case("ACME", "Priya's home address changed.", "Updated.", pii=True, occurred_at=NOW)
    assert indexed(memory, "ACME")[1] == 1
    assert isinstance(memory.clock, FrozenClock)
    memory.clock.advance(timedelta(days=31))
    assert memory.episodic.apply_retention().pii_deleted == 1
    assert indexed(memory, "ACME") == (0, 0)


def test_an_updated_case_is_searched_by_its_new_words_only(memory: Memory) -> None:
    memory.record_case("ACME", "Pallet from Rotterdam arrived late.", "Refund.", case_id="K-1")
    memory.record_case("ACME", "Pallet from Hamburg arrived late.", "Refund.", case_id="K-1")
    with memory.engine.connect() as conn:
        terms = set(conn.execute(sa.select(POSTINGS.c.term)).scalars())
    assert "hamburg" in terms and "rotterdam" not in terms


def test_ids_and_terms_that_look_like_copy_escapes_are_stored_as_they_are(memory: Memory) -> None:
    """The postings go to PostgreSQL as COPY data: backslashes and ``\\N`` stay text, never NULL."""
    customer = r"ACME\N\\01"
    memory.record_case(customer, r"Pallet C:\TEMP\N arrived late.", "Refund.", case_id=r"K\N-1")
    with memory.engine.connect() as conn:
        owners = set(conn.execute(sa.select(POSTINGS.c.customer_id)).scalars())
        lengths = list(conn.execute(sa.select(DOCS.c.length).where(DOCS.c.customer_id == customer)).scalars())
    assert owners == {customer} and lengths[0] > 0
    assert memory.recall_cases(customer, "pallet late", k=1)[0].lexical_score > 0


def test_indexing_a_document_twice_fails_as_a_duplicate_key_of_the_store(memory: Memory) -> None:
    document = lexical.LexicalDocument(Scope.of("default", "ACME"), "doc-1", "Pallet arrived late.")
    with memory.engine.begin() as conn:
        lexical.write(conn, CASE_SOURCE, [document])
    with pytest.raises(sa.exc.IntegrityError), memory.engine.begin() as conn:
        lexical.write(conn, CASE_SOURCE, [document])


def postings_of(memory: Memory) -> list[tuple[str, ...]]:
    with memory.engine.connect() as conn:
        columns = (POSTINGS.c.customer_id, POSTINGS.c.doc_id, POSTINGS.c.term, POSTINGS.c.tf)
        return sorted(tuple(map(str, r)) for r in conn.execute(sa.select(*columns)))


def test_a_long_batch_indexes_what_reindexing_each_entry_would(memory: Memory) -> None:
    """The batch writer tokenises summaries ahead of the rows (while the model embeds the next
    chunk); the postings are exactly those of tokenising every stored summary again."""
    episodic = memory.episodic
    batch = [
        episodic.prepare(
            f"C{n % 7}", f"Call {n} with Priya about 31{n}.40 USD on INV-{n:06d}, due {n % 27 + 1} March.",
            "Credit approved." if n % 2 else "", case_id=f"K-{n}", occurred_at=NOW - n * DAY,
        )
        for n in range(3 * WRITE_CHUNK + 5)
    ]  # fmt: skip
    batch.append(batch[3])  # the same case again: unchanged, written once
    episodic.record_cases(batch)
    written = postings_of(memory)

    episodic.reindex()

    assert written and postings_of(memory) == written


RUNS = itertools.count()
NAMES = ["Priya", "Jonas", "Mei", "Carlos", "Anna"]
WORDS = ["invoice", "credit", "pallet", "delivery", "tax", "refund", "312.40", "14 March", "INV-000123"]
TEXT = st.lists(st.sampled_from(NAMES + WORDS), min_size=1, max_size=6).map(" ".join)
CUSTOMERS = st.sampled_from(["ACME", "acme", "ACME2", "C-1"])


@pytest.fixture
def read_log(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, Mapping[str, int]]]]:
    """What the scorer was given: the documents it read and the ones it scored, per recall."""
    log: list[tuple[str, Mapping[str, int]]] = []
    original_read, original_score = lexical.read_postings, bm25.score

    def read(conn: sa.Connection, scope: object, source: str, terms: object) -> object:
        postings = original_read(conn, scope, source, terms)  # type: ignore[arg-type]
        log.append(("read", {p.doc_id: 0 for p in postings}))
        return postings

    def score(postings: object, lengths: Mapping[str, int], **kw: float) -> object:
        # the lengths the candidates' read joined to them: every document the scorer may score
        log.append(("scored", lengths))
        return original_score(postings, lengths, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(lexical, "read_postings", read)
    monkeypatch.setattr(bm25, "score", score)
    yield log


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    cases=st.lists(st.tuples(CUSTOMERS, TEXT), min_size=1, max_size=8),
    queries=st.lists(st.tuples(CUSTOMERS, TEXT), min_size=1, max_size=4),
)
def test_the_lexical_side_never_reads_or_scores_another_customer(
    memory: Memory,
    read_log: list[tuple[str, Mapping[str, int]]],
    cases: list[tuple[str, str]],
    queries: list[tuple[str, str]],
) -> None:
    run = f"run{next(RUNS)}"  # each example gets a tenant of its own in the shared store
    owner: dict[str, str] = {}
    for n, (customer, text) in enumerate(cases):
        recorded = memory.record_case(customer, text, "", case_id=f"k{n}", tenant=run)
        owner[recorded.entry_id] = customer
    for customer, text in queries:
        read_log.clear()
        hits = memory.recall_cases(customer, text, k=10, tenant=run)
        assert all(owner[h.entry_id] == customer for h in hits)
        assert bool(read_log) == bool(query_terms(text) and customer in owner.values())
        seen = {doc for _, docs in read_log for doc in docs}
        assert all(owner[doc] == customer for doc in seen), "another customer's postings were read"


def test_a_lexical_document_of_another_scope_is_never_scored_under_an_id_of_ours(memory: Memory) -> None:
    """The candidates read their documents' lengths joined by id *and* scope, the postings by scope:
    a document or postings row left with another customer's scope (whatever wrote it) does not
    score for this one."""
    ids = seed(memory)
    assert "priya" in memory.recall_cases("ACME", "What did Priya say?", k=1)[0].matched_terms

    def moved(table: sa.Table, customer: str) -> None:
        with memory.engine.begin() as conn:
            conn.execute(sa.update(table).where(table.c.doc_id == ids["call"]).values(customer_id=customer))

    moved(DOCS, "OTHER")  # its postings are still ACME's: without its length it is not scored
    assert all(not h.matched_terms for h in memory.recall_cases("ACME", "What did Priya say?", k=4))
    moved(DOCS, "ACME")
    moved(POSTINGS, "OTHER")
    assert all(not h.matched_terms for h in memory.recall_cases("ACME", "What did Priya say?", k=4))
    moved(POSTINGS, "ACME")
    assert "priya" in memory.recall_cases("ACME", "What did Priya say?", k=1)[0].matched_terms


def test_reindex_indexes_entries_stored_before_the_lexical_index(memory: Memory) -> None:
    ids = seed(memory)
    with memory.engine.begin() as conn:  # as a store upgraded past migration 0008 has them
        conn.execute(sa.delete(POSTINGS))
        conn.execute(sa.delete(DOCS))
    assert memory.recall_cases("ACME", "Priya", k=1)[0].lexical_score == 0
    memory.episodic.reindex()
    assert indexed(memory, "ACME")[1] == 4
    assert memory.recall_cases("ACME", "Priya", k=1)[0].entry_id == ids["call"]
