"""Learned facts: what conversations teach that has no home in the ERP, scored and forgotten over time.

``FactStore`` (``memory.facts``) stores facts per scope (tenant, customer, optional agent and
workflow), merges repeats, consolidates sessions into facts with one LLM call per scope, and decays
importance by elapsed days. Facts about values the ERP holds are never stored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from connector.lazy import lazy_attributes

if TYPE_CHECKING:
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

# Each name's module, imported on first access: importing the package (or one light submodule of it,
# such as its models) stays cheap, so type hints can name its types at run time.
_HOMES = {
    "ConsolidationReport": "connector.facts.models",
    "DecayReport": "connector.facts.models",
    "DroppedFact": "connector.facts.models",
    "FactError": "connector.facts.models",
    "JobOutcome": "connector.facts.models",
    "LearnedFact": "connector.facts.models",
    "FactScope": "connector.facts.scope",
    "FactStore": "connector.facts.store",
}


__getattr__ = lazy_attributes(__name__, _HOMES)
