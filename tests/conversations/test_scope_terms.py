"""The postings a process holds per customer (connector.conversations.scope_terms): what a recall
looks up must be exactly the store's postings of the held turns, however they arrived (grouped by
term, or newer and not grouped yet), and a turn whose vector is late gets its postings once held."""

from __future__ import annotations

import random

import numpy as np

from connector.conversations import scope_terms
from connector.conversations.scope_terms import HeldTerms


def _lookup(held: HeldTerms, term: str) -> list[tuple[int, float]]:
    positions, tfs = held.snapshot().postings(term)
    return sorted(zip(positions.tolist(), tfs.tolist(), strict=True))


def test_postings_match_the_rows_taken_grouped_or_not() -> None:
    rng = random.Random(5)
    vocabulary = [f"t{i}" for i in range(40)]
    held = HeldTerms()
    index_of: dict[str, int] = {}
    expected: dict[str, list[tuple[int, float]]] = {}
    for batch in range(30):  # many small reads: grouping happens between some of them, not all
        rows = []
        for d in range(50):
            doc = f"doc-{batch}-{d}"
            index_of[doc] = len(index_of)
            for term in rng.sample(vocabulary, 5):
                tf = rng.randint(1, 4)
                rows.append((doc, term, tf))
                expected.setdefault(term, []).append((index_of[doc], float(tf)))
        held.take(rows, index_of, [])
        if batch % 7 == 0:
            held.snapshot()  # groups what is there; later rows stay in the tail until many
    snap = held.snapshot()
    assert 0 < len(snap.tail_terms) < len(snap.positions) + len(snap.tail_terms)  # both paths used
    for term in vocabulary:
        assert _lookup(held, term) == sorted(expected.get(term, []))
        assert snap.frequency(term) == len(expected.get(term, []))
    assert snap.frequency("absent") == 0 and len(snap.postings("absent")[0]) == 0


def test_a_snapshot_does_not_see_postings_added_after_it() -> None:
    held = HeldTerms()
    held.take([("a", "pallet", 1)], {"a": 0}, [])
    before = held.snapshot()
    held.take([("b", "pallet", 2)], {"a": 0, "b": 1}, [])
    assert before.postings("pallet")[0].tolist() == [0]
    assert held.snapshot().postings("pallet")[0].tolist() == [0, 1]


def test_postings_of_a_turn_not_held_wait_for_it_and_others_are_left_out() -> None:
    held = HeldTerms()
    index_of = {"held": 0}
    held.take([("held", "invoice", 1), ("late", "invoice", 3), ("unknown", "invoice", 9)], index_of, ["late"])
    assert _lookup(held, "invoice") == [(0, 1.0)]
    index_of["late"] = 1
    held.held(["late"], index_of)
    assert _lookup(held, "invoice") == [(0, 1.0), (1, 3.0)]
    assert held.waiting == {}


def test_grouping_keeps_term_numbers_added_after_it() -> None:
    held = HeldTerms()
    held.take([("a", "one", 1)], {"a": 0}, [])
    held.snapshot()
    held.take([("b", "two", 1)], {"a": 0, "b": 1}, [])  # a term number the grouped starts lack
    snap = held.snapshot()
    assert snap.postings("two")[0].tolist() == [1] and snap.frequency("two") == 1
    assert isinstance(scope_terms.EMPTY.postings("x")[0], np.ndarray)
