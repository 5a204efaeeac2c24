"""What a stored vector carries beside its values: the scope and the hash of the text it embeds.

Here, in the vector-store package, so the store reads and writes stamps without importing the
memories that use it (``connector.recall.vector_index`` re-exports them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from connector.embeddings.base import Vectors

HASH_KEY = "vector_hash"
STAMP_KEYS = ("tenant", "customer_id", HASH_KEY)  # the metadata a stored vector carries


@dataclass(frozen=True, slots=True)
class Stamp:
    """The scope and hash a vector was stored under (its metadata in the index)."""

    tenant: str | None
    customer_id: str | None
    vector_hash: str | None
    # The stored metadata holds keys besides the stamp's (written by an older version): correct, but
    # read by every cold recall of the vector; ``reindex`` rewrites it as the stamp alone.
    surplus: bool = field(default=False, compare=False)

    @classmethod
    def of(cls, metadata: Mapping[str, Any] | None) -> Stamp:
        meta = metadata or {}
        surplus = len(meta) > sum(1 for key in STAMP_KEYS if key in meta)
        return cls(meta.get("tenant"), meta.get("customer_id"), meta.get(HASH_KEY) or None, surplus)

    @staticmethod
    def metadata(tenant: str, customer_id: str, hash_: str | None) -> dict[str, str]:
        """What a vector of this scope and hash is stored with (an unknown hash as ``""``)."""
        return {"tenant": tenant, "customer_id": customer_id, HASH_KEY: hash_ or ""}

    @property
    def scope(self) -> tuple[str | None, str | None]:
        return (self.tenant, self.customer_id)


@dataclass(frozen=True, slots=True)
class StoredVector:
    vector: Vectors
    stamp: Stamp
