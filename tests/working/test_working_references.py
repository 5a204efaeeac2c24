"""The running summary keeps every reference a turn states exactly as written: a customer's own
purchase-order numbers, ticket and case ids, tracking numbers, e-mail addresses, beside the ERP's
document numbers, through hundreds of non-LLM folds and after an LLM summary that dropped them."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.memory import Memory
from connector.settings import Settings, WorkingMemorySettings
from connector.working.models import Turn
from connector.working.references import references_of
from connector.working.summary import extractive_fold, restore_facts

# One of each shape, as a customer writes it in a sentence.
SHAPES = {
    "letter-prefixed PO with dashes": "PO-ZX-99124",
    "digits first": "4500-ZW-118",
    "slashes": "ACME/PO/7781",
    "dots": "PO.2025.118",
    "underscore and dash": "CS_0042-A",
    "ticket with year": "TCK-2025-00431",
    "ServiceNow incident": "INC0012345",
    "hash ticket": "#48213",
    "UPS tracking": "1Z999AA10123456784",
    "FedEx tracking": "781234567890",
    "e-mail": "ap.desk@bartender-supplies.example",
    "order with slash year": "ORD-77/2025",
    "Acumatica document": "AR000029",
    "SAP document": "1800000123",
    "lower case": "po-zx-7734",
    "hash inside": "SO#123456",
}
NOT_REFERENCES = [
    "2025-03-01", "03/01/2025", "312.40", "1,250.00", "10:30", "3rd", "B2B", "4pm", "24/7", "Phone1",
    "250000",
]  # fmt: skip


@pytest.mark.parametrize("shape", SHAPES, ids=list(SHAPES))
def test_a_reference_of_any_shape_is_found_whole(shape: str) -> None:
    ref = SHAPES[shape]
    assert references_of(f"My reference is {ref}.") == [ref]
    assert references_of(f"({ref}), thanks") == [ref]


def test_a_short_number_is_a_reference_when_a_label_says_so() -> None:
    text = "PO 4471, ticket no. 48213 and order #: 5521; we ordered 250 units in 2025."
    assert references_of(text) == ["4471", "48213", "5521"]


def test_dates_times_amounts_and_ordinals_are_not_references() -> None:
    assert references_of(" ".join(NOT_REFERENCES) + ".") == []


def turns(texts: list[str]) -> list[Turn]:
    return [Turn("s", i + 1, "user" if i % 2 == 0 else "assistant", t, None) for i, t in enumerate(texts)]  # type: ignore[arg-type]


FILLER = ["Let me check that for you.", "Invoice AR000412 shows 1,250.00 USD open.", "Noted, thanks."]


@pytest.mark.parametrize("shape", SHAPES, ids=list(SHAPES))
def test_a_reference_said_once_survives_every_fold_of_a_long_session_verbatim(shape: str) -> None:
    ref = SHAPES[shape]
    said = turns(["Hi, a question about a delivery.", f"My reference for it is {ref}.", *(FILLER * 100)])
    summary = None
    for start in range(0, len(said), 10):  # a fold every ten turns, as the store runs them
        summary = extractive_fold(summary, said[start : start + 10])

    assert summary is not None
    line = next(line for line in summary.splitlines() if line.startswith(f"{ref} (turn 2)"))
    assert line == f"{ref} (turn 2): mentioned"
    assert "AR000412" in summary  # the ERP's own numbers are kept as before


def test_the_check_after_an_llm_summary_restores_a_reference_it_dropped() -> None:
    folded = turns(["Please use PO-ZX-99124 and copy ap.desk@bartender-supplies.example.", "Will do."])

    restored = restore_facts("The customer gave a PO and an address.", None, folded)

    assert "PO-ZX-99124" in restored and "ap.desk@bartender-supplies.example" in restored
    assert "ZX-99124" not in restored.replace("PO-ZX-99124", "")


def test_the_context_shows_the_reference_of_turn_two_of_a_300_turn_session(
    tmp_path: object, sqlite_engine: Engine
) -> None:
    settings = Settings(data_dir=f"{tmp_path}/data", working=WorkingMemorySettings(fold_in_background=False))
    memory = Memory(settings, clock=FrozenClock(), llm=None, engine=sqlite_engine)
    memory.record_turn("s-1", "C1", "user", "Hi, a question about a delivery.")
    memory.record_turn("s-1", "C1", "user", "My purchase order reference is PO-ZX-99124.")
    for i in range(298):
        memory.record_turn("s-1", "C1", "assistant" if i % 2 else "user", FILLER[i % 3])

    state = memory.working.state("s-1")
    assert state.summary is not None and "PO-ZX-99124 (turn 2): mentioned" in state.summary.splitlines()
    memory.close()


def test_an_imported_long_session_is_folded_so_its_early_reference_is_kept(
    tmp_path: object, sqlite_engine: Engine
) -> None:
    settings = Settings(data_dir=f"{tmp_path}/data", working=WorkingMemorySettings(fold_in_background=False))
    memory = Memory(settings, clock=FrozenClock(), llm=None, engine=sqlite_engine)
    texts = ["Hi, a question about a delivery.", "Our order is 4500-ZW-118.", *(FILLER * 100)]
    records = [
        {"customer": "C1", "session": "imp-1", "role": "user" if i % 2 == 0 else "assistant", "content": text,
         "occurred_at": "2026-01-05T10:00:00Z"}
        for i, text in enumerate(texts)
    ]  # fmt: skip

    memory.import_conversations(records, allow_unknown_customers=True)

    state = memory.working.state("imp-1")
    assert state.summary_upto_seq == len(texts) - settings.working.verbatim_turns
    assert state.summary is not None and "4500-ZW-118 (turn 2): mentioned" in state.summary.splitlines()
    memory.close()
