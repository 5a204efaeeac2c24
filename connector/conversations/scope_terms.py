"""Each held customer's lexical postings in memory, beside its vectors, read from the store once per change.

Why: the lexical side of turn recall read each query term's document frequency and postings from
``lexical_posting`` on every recall (two statements, up to 2,000 postings mapped to turns in
Python: 4 ms of a 10,000-turn customer's recall, more than the rest of the ranking). Here the
postings of the turns a process holds (:mod:`connector.conversations.scope_vectors`) are kept as
flat arrays (term number, turn position, term frequency), grouped by term once they are many; a
recall looks its terms up in a dict and slices arrays. They are read with the turns they belong to
(the same generation read), so they follow every write, archive and erasure as the vectors do.

The postings are the store's (:mod:`connector.lexical.index` wrote them in the turns' transaction):
the same terms, frequencies and lengths, so BM25 scores are those of the store, bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

_GROUP_AT = 4_096  # ungrouped postings past which they are grouped by term again (and 1/8 of all)


class _Flat:
    """An int32/float32 array appended to in place (capacity doubles); readers keep views."""

    def __init__(self, dtype: Any) -> None:
        self.data = np.zeros(64, dtype=dtype)
        self.size = 0

    def extend(self, values: np.ndarray) -> None:
        need = self.size + len(values)
        if need > len(self.data):
            grown = np.zeros(max(need, 2 * len(self.data)), dtype=self.data.dtype)
            grown[: self.size] = self.data[: self.size]
            self.data = grown
        self.data[self.size : need] = values
        self.size = need

    def view(self) -> np.ndarray:
        return self.data[: self.size]


@dataclass(frozen=True, slots=True)
class TermsSnapshot:
    """One recall's view of a customer's postings: grouped by term up to ``grouped_upto``, the
    newer ones (``tail_*``) in the order they came."""

    numbers: dict[str, int]
    starts: np.ndarray  # per term number: where its postings start in ``positions``/``tfs``
    positions: np.ndarray  # turn positions, grouped by term
    tfs: np.ndarray
    tail_terms: np.ndarray
    tail_positions: np.ndarray
    tail_tfs: np.ndarray

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """The turn positions holding ``term`` and its frequency in each (empty when none does)."""
        number = self.numbers.get(term)
        if number is None:
            return _NO_INT, _NO_FLOAT
        if number + 1 < len(self.starts):
            lo, hi = int(self.starts[number]), int(self.starts[number + 1])
            positions, tfs = self.positions[lo:hi], self.tfs[lo:hi]
        else:
            positions, tfs = _NO_INT, _NO_FLOAT
        if len(self.tail_terms):
            newer = self.tail_terms == number
            if newer.any():
                positions = np.concatenate([positions, self.tail_positions[newer]])
                tfs = np.concatenate([tfs, self.tail_tfs[newer]])
        return positions, tfs

    def frequencies(self, terms: Sequence[str], cap: int) -> dict[str, int]:
        """:meth:`frequency` of each term, counted up to ``cap`` (as the store's read counts them),
        terms no turn holds left out."""
        counts = ((t, min(self.frequency(t), cap)) for t in terms)
        return {t: c for t, c in counts if c}

    def postings_of(self, terms: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        return [self.postings(t) for t in terms]

    def frequency(self, term: str) -> int:
        """How many of the held turns hold ``term``."""
        number = self.numbers.get(term)
        if number is None:
            return 0
        count = int(self.starts[number + 1] - self.starts[number]) if number + 1 < len(self.starts) else 0
        if len(self.tail_terms):
            count += int(np.count_nonzero(self.tail_terms == number))
        return count


_NO_INT = np.zeros(0, dtype=np.int32)
_NO_FLOAT = np.zeros(0, dtype=np.float32)
EMPTY = TermsSnapshot({}, np.zeros(1, dtype=np.int64), _NO_INT, _NO_FLOAT, _NO_INT, _NO_INT, _NO_FLOAT)


class HeldTerms:
    """One customer's postings (see the module doc): appended as its turns are held."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}
        self.terms = _Flat(np.int32)
        self.positions = _Flat(np.int32)
        self.tfs = _Flat(np.float32)
        self.waiting: dict[str, list[tuple[str, int]]] = {}  # turn id -> its postings, turn not held yet
        self._grouped: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None  # upto, starts, pos, tf

    @property
    def nbytes(self) -> int:
        arrays = self.terms.data.nbytes + self.positions.data.nbytes + self.tfs.data.nbytes
        grouped = 0 if self._grouped is None else sum(a.nbytes for a in self._grouped[1:])
        return int(arrays + grouped) + 100 * len(self.numbers)

    def take(
        self, rows: Iterable[Sequence[Any]], index_of: dict[str, int], waiting_for: Iterable[str]
    ) -> None:
        """Postings rows ``(turn id, term, tf)`` read from the store: those of held turns are added,
        those of turns in ``waiting_for`` (held once their vector is found) are kept for
        :meth:`held`, any other (a turn this process has not read yet) is left for a later read."""
        waiting = set(waiting_for)
        docs: list[str] = []
        names: list[str] = []
        counts: list[int] = []
        for doc, term, tf in rows:
            if doc in index_of:
                docs.append(doc)
                names.append(term)
                counts.append(tf)
            elif doc in waiting:
                self.waiting.setdefault(doc, []).append((term, int(tf)))
        self._add(docs, names, counts, index_of)

    def held(self, turn_ids: Iterable[str], index_of: dict[str, int]) -> None:
        """These turns are held now: add the postings kept for them."""
        docs: list[str] = []
        names: list[str] = []
        counts: list[int] = []
        for doc in turn_ids:
            for term, tf in self.waiting.pop(doc, ()):
                docs.append(doc)
                names.append(term)
                counts.append(tf)
        self._add(docs, names, counts, index_of)

    def _add(self, docs: list[str], names: list[str], counts: list[int], index_of: dict[str, int]) -> None:
        if not docs:
            return
        numbers = self.numbers
        for name in dict.fromkeys(names):
            if name not in numbers:
                numbers[name] = len(numbers)
        self.terms.extend(np.fromiter(map(numbers.__getitem__, names), dtype=np.int32, count=len(names)))
        self.positions.extend(np.fromiter(map(index_of.__getitem__, docs), dtype=np.int32, count=len(docs)))
        self.tfs.extend(np.asarray(counts, dtype=np.float32))

    def snapshot(self) -> TermsSnapshot:
        size = self.terms.size
        if size == 0:
            return EMPTY
        grouped = self._grouped
        upto = 0 if grouped is None else grouped[0]
        if grouped is None or size - upto > max(_GROUP_AT, size // 8):
            terms = self.terms.view()
            order = np.argsort(terms, kind="stable")
            starts = np.searchsorted(terms[order], np.arange(len(self.numbers) + 1)).astype(np.int64)
            grouped = self._grouped = (size, starts, self.positions.view()[order], self.tfs.view()[order])
            upto = size
        return TermsSnapshot(
            self.numbers, grouped[1], grouped[2], grouped[3],
            self.terms.view()[upto:], self.positions.view()[upto:], self.tfs.view()[upto:],
        )  # fmt: skip
