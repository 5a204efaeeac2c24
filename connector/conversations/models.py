"""What past-conversation recall returns: a hit turn with its neighbours and why it ranked."""

from __future__ import annotations

from dataclasses import dataclass

from connector.errors import ConnectorError
from connector.working.models import Turn


class InvalidRecallError(ConnectorError, ValueError):
    """A recall argument that cannot be used (``k`` out of range, a query that is not text)."""


@dataclass(frozen=True, slots=True)
class TurnHit:
    """One turn of an earlier session of the customer like the query, with its neighbours.

    ``before`` and ``after`` are the turns around it in its own session (oldest first, at most
    ``conversations.before`` / ``after``). As in :class:`~connector.episodic.models.CaseHit`:
    ``score`` is the dense (cosine) similarity, ``lexical_score`` the turn's BM25 score within the
    customer's indexed turns, ``matched_terms`` the query terms it contains and ``fused_score``
    what the two fused into. ``repeats``: turns among the ranked candidates that say word for word
    what this one says (another session, or later in this one), oldest first, without neighbours:
    they are not hits of their own.
    """

    turn_id: str
    turn: Turn
    score: float
    lexical_score: float
    fused_score: float
    matched_terms: tuple[str, ...]
    before: tuple[Turn, ...] = ()
    after: tuple[Turn, ...] = ()
    repeats: tuple[Turn, ...] = ()  # lower-ranked turns with the same words (oldest first), not hits
    archived: bool = False  # past the index's window, found with ``include_archived`` (lexically)

    @property
    def session_id(self) -> str:
        return self.turn.session_id

    @property
    def seq(self) -> int:
        return self.turn.seq

    @property
    def external_id(self) -> str | None:
        """The caller's id of the hit turn's message (given at import or ``record_turn``), if any."""
        return self.turn.external_id

    @property
    def window(self) -> tuple[Turn, ...]:
        """The hit with its neighbours, in session order."""
        return (*self.before, self.turn, *self.after)


@dataclass(frozen=True, slots=True)
class IndexReport:
    """One catch-up pass: turns indexed and sessions read."""

    turns: int
    sessions: int


@dataclass(frozen=True, slots=True)
class ConversationRetention:
    """One retention pass over indexed turns: how many left the index (past their window)."""

    removed: int


@dataclass(frozen=True, slots=True)
class TurnIndexCheck:
    """``reindex --check`` for turns: indexed turns without their vector, vectors without a turn."""

    indexed_turns: int
    index_vectors: int
    missing: int  # indexed turns whose vector is absent, stale or of another scope
    orphans: int  # vectors no indexed turn names
    fixed: bool

    @property
    def consistent(self) -> bool:
        return self.missing == self.orphans == 0
