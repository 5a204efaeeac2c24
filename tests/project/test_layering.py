"""The package boundary holds: the ERP contract sits below both adapters and storage, one way only.

Read from ``scripts/import_graph`` (the command the README gives for the graph), so the rule a
reviewer sees printed is the rule the suite enforces.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from paths import ROOT

FOUNDATION = {"connector.errors", "connector.settings", "connector.clock", "connector.resources"}


@pytest.fixture(scope="module")
def graph() -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "import_graph"), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _targets(graph: dict[str, Any], source: str) -> set[str]:
    return {a["to"] for a in graph["arrows"] if a["from"] == source}


def test_nothing_imports_the_bare_adapters_name(graph: dict[str, Any]) -> None:
    assert graph["bare_adapters_imports"] == []


def test_the_erp_contract_stands_only_on_the_foundation_modules(graph: dict[str, Any]) -> None:
    assert _targets(graph, "connector.erp") <= FOUNDATION


def test_adapters_import_only_the_contract_and_the_foundation(graph: dict[str, Any]) -> None:
    assert _targets(graph, "connector.adapters") <= FOUNDATION | {"connector.erp"}


def test_the_relational_store_imports_no_feature_package_and_no_adapter(graph: dict[str, Any]) -> None:
    assert _targets(graph, "connector.db") <= FOUNDATION | {"connector.erp"}


def test_semantic_memory_stands_only_on_the_store_and_the_contract(graph: dict[str, Any]) -> None:
    """The ERP's facts (tables, writes, reads, history) are one package the context, the sync and
    episodic memory use; it uses none of them back."""
    below = {"connector.db", "connector.erp", "connector.scope"}
    assert _targets(graph, "connector.semantic") <= FOUNDATION | below


def test_the_sync_job_never_imports_an_adapter(graph: dict[str, Any]) -> None:
    """It is handed an AdapterFactory by the composition root (connector.memory)."""
    assert "connector.adapters" not in _targets(graph, "connector.sync")


def test_no_runtime_import_cycle_between_packages(graph: dict[str, Any]) -> None:
    assert graph["cycles"] == []


def test_the_schema_module_imports_every_areas_tables() -> None:
    """A new area's ``tables.py`` forgotten in connector.schema would be missing from test cleanup
    and from the models-vs-migrations comparison."""
    import connector.schema

    declared = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for path in (ROOT / "connector").rglob("tables.py")
        if path.relative_to(ROOT).parts[1] != "adapters"
    }
    assert declared  # the walk found the areas
    assert declared <= set(sys.modules), declared - set(sys.modules)
    assert connector.schema.metadata.tables.keys() >= {"party", "sync_run", "episodic_entry"}


def test_telemetry_imports_nothing_from_the_sync(graph: dict[str, Any]) -> None:
    """The sync's reporter (connector.sync.tracing) uses telemetry, never the other way round,
    typing-only imports included: telemetry is a leaf every feature may stand on."""
    telemetry = [a for a in graph["arrows"] if a["from"] == "connector.telemetry"]
    assert telemetry  # the graph sees the module's arrows: the check below is not vacuous
    assert "connector.sync" not in {a["to"] for a in telemetry}
    assert "connector.telemetry" in _targets(graph, "connector.sync")
