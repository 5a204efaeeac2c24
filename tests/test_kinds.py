"""The unit/integration split of tests/kinds.py: every test gets exactly one, from what it needs."""

from __future__ import annotations

from pathlib import Path

import pytest
from kinds import NEEDS, _spawns_processes

HERE = Path(__file__).resolve().parent


def test_every_collected_test_is_unit_or_integration_by_its_needs(request: pytest.FixtureRequest) -> None:
    for item in request.session.items:
        names = {mark.name for mark in item.iter_markers()}
        assert len(names & {"unit", "integration"}) == 1, item.nodeid
        assert ("integration" in names) == bool(names & set(NEEDS)), item.nodeid


def test_a_module_that_starts_child_processes_is_found_by_its_imports() -> None:
    assert _spawns_processes(HERE / "test_sync_bench.py")
    assert not _spawns_processes(HERE / "test_paging.py")
