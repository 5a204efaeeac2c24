"""Every test is marked ``unit`` or ``integration`` here, from what it needs, never on the test itself.

Integration tests need something beyond the interpreter and the repository:

- ``postgres``: the PostgreSQL server (the ``engine`` fixture's second run, ``pg_engine``, ...);
- ``chroma_server``: a ``chroma run`` server (``chroma_settings``' second run, ``chroma_server``);
- ``subprocess``: a child process (the ``connector`` command, a benchmark script, a fake ERP or
  worker in its own process): found by reading the test module for ``subprocess``/``multiprocessing``
  or a helper of :data:`PROCESS_HELPERS`;
- ``model``: the offline embedding model (ONNX): the fixtures that build an episodic ``Memory`` and
  the modules listed in :data:`MODEL_MODULES`;
- ``slow``: marked so on the test (a long end-to-end run).

Everything else is ``unit``: in-process code, SQLite files, embedded Chroma with precomputed
vectors, the fake ERPs over respx or in-process loopback. ``scripts/test --fast`` runs
``-m unit``; while it does (``CONNECTOR_TEST_FAST=1``), loading the embedding model fails the
test with a message saying to list its module here, so a misfiled test cannot slow the loop unseen.

Modules are named without their folder (``test_sync_faults``, wherever under tests/ it sits): pytest's
default import mode already needs test module names to be unique across the folders.
"""

from __future__ import annotations

import ast
import os
from functools import cache
from pathlib import Path

import pytest

FAST = os.environ.get("CONNECTOR_TEST_FAST") == "1"

#: Fixtures that bring a server up (or need one).
SERVER_FIXTURES = {
    "pg_engine": "postgres",
    "_pg_engine_session": "postgres",
    "pg_database_url": "postgres",
    "chroma_server": "chroma_server",
}
#: Fixtures whose Memory embeds with the offline model.
MODEL_FIXTURES = {"memory", "episodic_settings"}
#: Test modules that embed with the offline model without those fixtures.
MODEL_MODULES = {
    "test_context_answers_bench",
    "test_context_cli",
    "test_console_bench",
    "test_console_browser",
    "test_customer_id_variants",
    "test_conversations",
    "test_conversations_import",
    "test_conversation_scale",
    "test_conversation_held_terms",
    "test_conversation_import_batches",
    "test_demo",
    "test_doctor",
    "test_embeddings_minilm",
    "test_episodic_bench",
    "test_episodic_cli",
    "test_episodic_customers",
    "test_erasure",
    "test_facts_store",
    "test_fakes_field_match",
    "test_langgraph_e2e",
    "test_sap_open_items",
    "test_memory_lifetime",
    "test_readme_example",
    "test_sync_episodic",
    "test_turn_recall_time",
    "test_turn_recall_archive",
    "test_vector_store_processes",
}
#: Helper modules in tests/ whose functions start a child process: a test module that imports from one
#: starts processes too, though it may not import ``subprocess`` itself.
PROCESS_HELPERS = {"mcp_servers"}
_CHILD_PROCESS_MODULES = {"subprocess", "multiprocessing", *PROCESS_HELPERS}
NEEDS = ("postgres", "chroma_server", "subprocess", "model", "slow")


@cache
def _spawns_processes(path: Path) -> bool:
    """Whether the module imports ``subprocess``, ``multiprocessing`` or a helper that starts processes."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
            a.name.split(".")[0] in _CHILD_PROCESS_MODULES for a in node.names
        ):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in _CHILD_PROCESS_MODULES:
            return True
    return False


def needs_of(item: pytest.Item) -> set[str]:
    needs = {mark.name for mark in item.iter_markers() if mark.name in NEEDS}
    fixtures = set(getattr(item, "fixturenames", ()))
    needs.update(need for name, need in SERVER_FIXTURES.items() if name in fixtures)
    path = Path(str(item.fspath))
    if fixtures & MODEL_FIXTURES or path.stem in MODEL_MODULES:
        needs.add("model")
    if path.suffix == ".py" and _spawns_processes(path):
        needs.add("subprocess")
    return needs


def pytest_configure(config: pytest.Config) -> None:
    for name, text in (
        ("unit", "needs no server, child process or embedding model (scripts/test --fast)"),
        ("integration", "needs PostgreSQL, a Chroma server, a child process or the embedding model"),
        ("subprocess", "starts a child process"),
        ("model", "loads the offline embedding model"),
    ):
        config.addinivalue_line("markers", f"{name}: {text}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        needs = needs_of(item)
        for need in needs - {mark.name for mark in item.iter_markers()}:
            item.add_marker(need)
        item.add_marker("integration" if needs else "unit")


@pytest.fixture(autouse=True)
def _no_model_in_the_fast_loop(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    if not FAST or "model" in needs_of(request.node):
        return
    import connector.embeddings.minilm as minilm

    def refuse(*args: object, **kwargs: object) -> None:
        raise RuntimeError(
            f"{request.node.nodeid} loads the embedding model but is marked unit: add its module to "
            "MODEL_MODULES in tests/kinds.py (it then runs in the full suite only)"
        )

    monkeypatch.setattr(minilm.MiniLMEmbedder, "__init__", refuse)
