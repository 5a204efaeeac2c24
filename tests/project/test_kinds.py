"""The unit/integration split of tests/kinds.py: every test gets exactly one, from what it needs."""

from __future__ import annotations

import pytest
from kinds import MODEL_MODULES, NEEDS, _spawns_processes
from paths import module_file


def test_every_collected_test_is_unit_or_integration_by_its_needs(request: pytest.FixtureRequest) -> None:
    for item in request.session.items:
        names = {mark.name for mark in item.iter_markers()}
        assert len(names & {"unit", "integration"}) == 1, item.nodeid
        assert ("integration" in names) == bool(names & set(NEEDS)), item.nodeid


def test_a_module_that_starts_child_processes_is_found_by_its_imports() -> None:
    assert _spawns_processes(module_file("test_sync_bench"))
    assert not _spawns_processes(module_file("test_paging"))


def test_a_module_using_a_process_helper_starts_child_processes() -> None:
    assert _spawns_processes(module_file("test_mcp_server"))  # its stdio client starts `connector mcp`


def test_every_model_module_names_a_test_module() -> None:
    """A renamed or misspelt entry would let its module slip into the fast loop and fail there."""
    for name in sorted(MODEL_MODULES):
        assert module_file(name).is_file()
