"""Rows against vectors, id by id: what ``reindex --check`` reports and ``reindex`` mends.

The relational store is the store of record for rows; the vector store holds one vector per row,
stamped with the row's scope and the hash of the text it was made from. A row is *missing* its
vector when there is none, when the row is still pending (its vector write never finished: the
store was away), when the vector carries another scope or another hash; a vector is an *orphan*
when no row names it. Mending embeds the missing rows only and deletes the orphans: nothing
already right is embedded again. Cases (``connector.episodic.lifecycle``) and turns
(``connector.conversations.memory``) use the same comparison.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from connector.vectors.stamps import Stamp


@dataclass(frozen=True, slots=True)
class RowState:
    """What a row says its vector must be."""

    tenant: str
    customer_id: str
    vector_hash: str | None
    pending: bool = False


@dataclass(frozen=True, slots=True)
class Difference:
    rows: int
    vectors: int
    missing: list[str] = field(default_factory=list)  # rows to embed (again)
    orphans: list[str] = field(default_factory=list)  # vectors to delete
    unstamped: list[str] = field(default_factory=list)  # rows from before hashes, vector present
    old_metadata: list[str] = field(default_factory=list)  # right vector, surplus metadata keys


def compare(rows: Mapping[str, RowState], stamps: Iterable[tuple[str, Stamp]]) -> Difference:
    """How ``rows`` and the stored ``stamps`` differ (see the module docstring)."""
    stored = dict(stamps)
    missing, unstamped, reshape = [], [], []
    for row_id, row in rows.items():
        stamp = stored.get(row_id)
        if stamp is None or row.pending or stamp.scope != (row.tenant, row.customer_id):
            missing.append(row_id)
        elif row.vector_hash is None:
            unstamped.append(row_id)
        elif stamp.vector_hash != row.vector_hash:
            missing.append(row_id)
        elif stamp.surplus:
            reshape.append(row_id)
    return Difference(
        rows=len(rows),
        vectors=len(stored),
        missing=sorted(missing),
        orphans=sorted(set(stored) - set(rows)),
        unstamped=sorted(unstamped),
        old_metadata=sorted(reshape),
    )
