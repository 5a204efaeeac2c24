"""Fit candidates into a token budget: fixed items first, then each section's share, then refill.

1. Fixed items (today, the ERP header, every pinned value) are always taken.
2. Each other section gets ``share × budget`` tokens (less its fixed items; shares are scaled
   down when fixed items leave less room). Within a section items are taken by value rank; an
   item that does not fit is truncated when at least ``MIN_TRUNCATED`` tokens remain, else
   skipped (turns and summary lines stop there, so what is kept stays contiguous).
3. Tokens a section did not use are lent, in ``REFILL_ORDER``, to sections that had to drop items.

Costs are per item plus one token for the joining newline; the builder verifies the rendered
total and re-runs with a smaller budget in the rare case that joins merged differently.

The text and cost of a whole candidate are kept between builds (keyed by its head and body, so
nothing can go stale): a session's turns, pins and summary lines and a party's documents recur
in every build of that session or party, and quoting and counting them again was most of the
budget's work.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from connector.context.candidates import Candidate, rendered
from connector.tokens import TokenCounter

MIN_TRUNCATED = 24
TRUNCATION_MARK = " …[truncated]"
REFILL_ORDER = (
    "pinned",
    "recent_turns",
    "open_documents",
    "erp_changes",
    "past_cases",
    "earlier_conversations",
    "summary",
    "learned_facts",
    "erp_facts",
)
CONTIGUOUS = frozenset({"recent_turns", "summary"})
# Whole candidates kept between builds: the turns, lines and documents of a few dozen busy
# sessions, bodies of at most 4 KB each (about 20 MB at the very most, typically a few).
_KEPT_CANDIDATES = 2_048
_KEPT_BODY_CHARS = 4_096


class KeptCosts:
    """Whole candidates' text and cost by one tokenizer, kept between builds (thread-safe); the
    :class:`~connector.context.builder.ContextBuilder` owns one per tokenizer, so it goes with it."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.get = lru_cache(maxsize=_KEPT_CANDIDATES)(self._of)

    def _of(self, head: str, body: str | None) -> tuple[str, int]:
        text = rendered(head, body)
        return text, self.counter.count(text) + 1


@dataclass(slots=True)
class Chosen:
    candidate: Candidate
    text: str
    tokens: int
    truncated: bool = False


@dataclass(slots=True)
class Allocation:
    chosen: dict[str, list[Chosen]]
    dropped: dict[str, int]
    caps: dict[str, int]
    borrowed: dict[str, int] = field(default_factory=dict)
    fixed_tokens: int = 0


class Costs:
    """Token cost of candidates, computed once per build."""

    def __init__(self, counter: TokenCounter, max_chars: int, kept: KeptCosts | None = None) -> None:
        """``kept``: whole candidates' costs kept from earlier builds by the same tokenizer (none: this
        build's own)."""
        self.counter = counter
        self.max_chars = max_chars
        self._cache: dict[str, int] = {}
        self._kept = kept if kept is not None else KeptCosts(counter)
        self._full: dict[int, tuple[Candidate, tuple[str, int, bool]]] = {}

    def count(self, text: str) -> int:
        cost = self._cache.get(text)
        if cost is None:
            cost = self.counter.count(text) + 1
            self._cache[text] = cost
        return cost

    def whole(self, c: Candidate) -> tuple[str, int]:
        """The whole candidate's text and cost (kept between builds unless its body is long)."""
        if c.body is None or len(c.body) <= _KEPT_BODY_CHARS:
            return self._kept.get(c.head, c.body)
        text = c.render()
        return text, self.count(text)

    def warm(self, candidates: Iterable[Candidate]) -> None:
        """Count what :func:`allocate` will ask for first (each whole candidate), ahead of time."""
        for c in candidates:
            self.full(c)

    def full(self, c: Candidate) -> tuple[str, int, bool]:
        """The whole candidate (a huge body is pre-cut to ``max_chars``), its cost, whether cut."""
        known = self._full.get(id(c))
        if known is not None and known[0] is c:
            return known[1]
        found = self._full_of(c)
        self._full[id(c)] = (c, found)  # the candidate is kept, so its id is not reused meanwhile
        return found

    def _full_of(self, c: Candidate) -> tuple[str, int, bool]:
        if c.body is not None and len(c.body) > self.max_chars:  # bound the tokenizer's work
            text = c.render(c.body[: self.max_chars].rstrip() + TRUNCATION_MARK)
            return text, self.count(text), True
        text, cost = self.whole(c)
        return text, cost, False

    def fit(self, c: Candidate, room: int) -> tuple[str, int] | None:
        """The candidate with its body cut to fit ``room`` tokens, or None if even the head does not."""
        if c.body is None:
            return None
        head_cost = self.count(c.render(""))
        if head_cost + MIN_TRUNCATED // 2 > room:
            return None
        body = c.body[: self.max_chars]
        target = room - head_cost - self.count(TRUNCATION_MARK)
        # Cut the body by tokens, then correct for what quoting adds (a few passes at most).
        for _ in range(4):
            if target <= 0:
                return None
            text = c.render(self.counter.prefix(body, target).rstrip() + TRUNCATION_MARK)
            cost = self.count(text)
            if cost <= room:
                return text, cost
            target -= cost - room
        return None


def allocate(
    candidates: Mapping[str, Sequence[Candidate]],
    sections: Sequence[str],
    budget: int,
    shares: Mapping[str, float],
    overhead: int,
    costs: Costs,
) -> Allocation:
    chosen: dict[str, list[Chosen]] = {s: [] for s in sections}
    pending: dict[str, list[Candidate]] = {s: [] for s in sections}
    fixed_in: dict[str, int] = dict.fromkeys(sections, 0)
    for s in sections:
        for c in sorted(candidates.get(s, ()), key=lambda c: (c.rank, c.order, c.source)):
            if c.fixed:
                text, cost = costs.whole(c)
                chosen[s].append(Chosen(c, text, cost))
                fixed_in[s] += cost
            else:
                pending[s].append(c)
    fixed_total = sum(fixed_in.values())
    room = max(0, budget - overhead - fixed_total)
    caps = {s: max(0, int(shares.get(s, 0.0) * budget) - fixed_in[s]) for s in sections}
    wanted = sum(caps.values())
    if wanted > room:
        caps = {s: cap * room // wanted for s, cap in caps.items()} if wanted else caps
    left: dict[str, list[Candidate]] = {}
    closed: set[str] = set()
    used = 0
    for s in sections:
        remaining, left[s], stop = _fill(s, pending[s], caps[s], chosen[s], costs)
        used += caps[s] - remaining
        if stop:
            closed.add(s)
    pool = room - used
    borrowed: dict[str, int] = {}
    for s in REFILL_ORDER:
        if s in left and left[s] and s not in closed and pool > 0:
            before = pool
            pool, left[s], _ = _fill(s, left[s], pool, chosen[s], costs)
            borrowed[s] = before - pool
    dropped = {s: len(left.get(s, ())) for s in sections}
    return Allocation(chosen, dropped, caps, borrowed, fixed_total)


def _fill(
    section: str, items: Sequence[Candidate], remaining: int, out: list[Chosen], costs: Costs
) -> tuple[int, list[Candidate], bool]:
    """Take items in order while they fit. Returns the tokens left, the items not taken, and
    whether the section is closed to refills (a contiguous section that had to stop)."""
    skipped: list[Candidate] = []
    for index, c in enumerate(items):
        text, cost, cut_already = costs.full(c)
        if cost <= remaining:
            out.append(Chosen(c, text, cost, truncated=cut_already))
            remaining -= cost
            continue
        cut = costs.fit(c, remaining) if remaining >= MIN_TRUNCATED else None
        if cut is not None:
            out.append(Chosen(c, cut[0], cut[1], truncated=True))
            remaining -= cut[1]
        else:
            skipped.append(c)
        if section in CONTIGUOUS:
            return remaining, skipped + list(items[index + 1 :]), cut is not None
    return remaining, skipped, False
