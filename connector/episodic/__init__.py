"""Episodic memory: resolved-case summaries in Chroma, scoped per (tenant, customer).

Importing this package is cheap (``connector.schema`` imports its tables module); the
store itself, with Chroma and the embedder, loads on first use of :class:`EpisodicMemory`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from connector.lazy import lazy_attributes

if TYPE_CHECKING:
    from connector.episodic.memory import EpisodicMemory
    from connector.episodic.models import (
        CaseHit,
        EpisodicStats,
        IndexCheck,
        RecordedCase,
        RestoreReport,
        RetentionReport,
    )  # fmt: skip

__all__ = [
    "CaseHit", "EpisodicMemory", "EpisodicStats", "IndexCheck", "RecordedCase", "RestoreReport",
    "RetentionReport",
]  # fmt: skip

_HOMES = {
    "EpisodicMemory": "connector.episodic.memory",
    "CaseHit": "connector.episodic.models",
    "EpisodicStats": "connector.episodic.models",
    "IndexCheck": "connector.episodic.models",
    "RecordedCase": "connector.episodic.models",
    "RestoreReport": "connector.episodic.models",
    "RetentionReport": "connector.episodic.models",
}


__getattr__ = lazy_attributes(__name__, _HOMES)
