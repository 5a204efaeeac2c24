"""Learned facts: what conversations teach that has no home in the ERP, scored and forgotten over time.

``FactStore`` (``memory.facts``) stores facts per scope (tenant, customer, optional agent and
workflow), merges repeats, consolidates sessions into facts with one LLM call per scope, and decays
importance by elapsed days. Facts about values the ERP holds are never stored.
"""

from connector.facts.models import (
    ConsolidationReport,
    DecayReport,
    DroppedFact,
    FactError,
    JobOutcome,
    LearnedFact,
)
from connector.facts.scope import FactScope
from connector.facts.store import FactStore

__all__ = [
    "ConsolidationReport",
    "DecayReport",
    "DroppedFact",
    "FactError",
    "FactScope",
    "FactStore",
    "JobOutcome",
    "LearnedFact",
]
