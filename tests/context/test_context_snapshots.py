"""The rendered context, byte for byte, for an Acumatica customer, an SAP customer and a vendor.

Both fake ERPs are synced through the real adapters into SQLite and PostgreSQL; the text must equal
the golden file in tests/golden/ on both. A deliberate rendering change (or a change of the fakes'
data) is accepted by re-running with ``UPDATE_GOLDEN=1`` and reviewing the diff of the golden files.
"""

from __future__ import annotations

import os

import pytest
from context_fixtures import stub_context
from paths import GOLDEN
from snapshot_stores import AS_OF, busiest, synced_memory
from sqlalchemy.engine import Engine

from connector.memory import Memory

CASES = {
    "acumatica_customer": ("acme", "customer"),
    "sap_customer": ("s4", "customer"),
    "acumatica_vendor": ("acme", "vendor"),
}


@pytest.fixture
def memory(engine: Engine) -> Memory:
    return synced_memory(engine)


def test_contexts_match_their_golden_files(memory: Memory) -> None:
    for name, (tenant, kind) in CASES.items():
        party = busiest(memory, tenant, kind)
        context = stub_context(memory)  # no past cases: the snapshot is about ERP facts and documents
        text = context.build(party, "What do I owe?", tenant=tenant, party_kind=kind, as_of=AS_OF).text
        golden = GOLDEN / f"context_{name}.txt"
        if os.environ.get("UPDATE_GOLDEN") == "1":
            golden.parent.mkdir(exist_ok=True)
            golden.write_text(text, encoding="utf-8")
        assert text == golden.read_text(encoding="utf-8"), f"{name}: see {golden.name} (UPDATE_GOLDEN=1)"
