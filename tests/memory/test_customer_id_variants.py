"""One customer, one memory: every entry point takes a customer id by the same rule.

Another Unicode normalisation form (NFD) of a known id is the same customer for every call; a case
or width variant (``t3café``, fullwidth) is refused by ``learn`` and ``record_turn`` as
``build_context`` and ``record_case`` refuse it, so nothing is stored under an id no context shows.
The Python API and the MCP tools (their allow-list too), on SQLite and PostgreSQL."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from mcp.server.mcpserver.exceptions import ToolError
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.erp.records import PartyRecord
from connector.errors import ScopeError, UnknownCustomerError
from connector.facts.tables import LearnedFactRow
from connector.mcp_server.guard import ServedScope
from connector.mcp_server.tools import MemoryTools
from connector.memory import Memory
from connector.semantic.upsert import upsert_records
from connector.settings import ChromaSettings, McpSettings, Settings
from connector.working.tables import WorkSession

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
KNOWN = "T3CAFÉ"
NFD = unicodedata.normalize("NFD", KNOWN)
VARIANTS = ["t3café", "T3CAFé", "Ｔ３ＣＡＦÉ", unicodedata.normalize("NFD", "t3café")]


def memory_on(engine: Engine, tmp_path: Path, **mcp: object) -> Memory:
    settings = Settings(
        data_dir=tmp_path / "data",
        chroma=ChromaSettings(path=tmp_path / "chroma"),
        mcp=McpSettings(**mcp),  # type: ignore[arg-type]
    )
    memory = Memory(settings, clock=FrozenClock(NOW), llm=None, engine=engine)
    with engine.begin() as conn:
        upsert_records(
            conn, [PartyRecord(tenant="default", kind="customer", external_id=KNOWN, name="Café")], NOW
        )
    return memory


def stored_customer_ids(engine: Engine) -> set[str]:
    with engine.connect() as conn:
        turns = conn.execute(sa.select(WorkSession.__table__.c.customer_id)).scalars()  # type: ignore[attr-defined]
        facts = conn.execute(sa.select(LearnedFactRow.__table__.c.customer_id)).scalars()  # type: ignore[attr-defined]
        return set(turns) | set(facts)


@pytest.mark.parametrize("variant", VARIANTS)
def test_case_and_width_variants_are_refused_by_every_writer_and_reader(
    engine: Engine, tmp_path: Path, variant: str
) -> None:
    memory = memory_on(engine, tmp_path)

    for call in (
        lambda: memory.learn(variant, "Prefers dispute updates by e-mail."),
        lambda: memory.record_turn("s-variant", variant, "user", "Where is my refund?"),
        lambda: memory.build_context(variant, "balance?"),
    ):
        with pytest.raises(UnknownCustomerError) as refused:
            call()
        assert KNOWN not in str(refused.value)  # the message names no other customer

    assert stored_customer_ids(engine) == set()


def test_another_normalisation_form_is_the_same_customer_everywhere(engine: Engine, tmp_path: Path) -> None:
    memory = memory_on(engine, tmp_path)

    memory.learn(NFD, "Prefers dispute updates by e-mail.")
    memory.record_turn("s-nfd", NFD, "user", "Where is my refund?")
    context = memory.build_context(NFD, "refund", session_id="s-nfd")

    assert stored_customer_ids(engine) == {KNOWN}
    assert "Prefers dispute updates by e-mail." in context.text
    assert "Where is my refund?" in context.text


def test_an_id_no_customer_resembles_is_still_accepted_by_the_writers(engine: Engine, tmp_path: Path) -> None:
    memory = memory_on(engine, tmp_path)
    memory.learn("PROSPECT1", "Asked for a quote.")
    memory.record_turn("s-prospect", "PROSPECT1", "user", "Hello")
    assert stored_customer_ids(engine) == {"PROSPECT1"}


def test_mcp_tools_apply_the_same_rule_and_normalise_the_allow_list(engine: Engine, tmp_path: Path) -> None:
    memory = memory_on(engine, tmp_path, customers=[NFD])  # the allow-list as someone typed it
    tools = MemoryTools(memory, ServedScope.from_settings(memory.settings))

    tools.learn(KNOWN, "Prefers dispute updates by e-mail.")
    tools.record_turn("s-mcp", NFD, "user", "Where is my refund?")
    with pytest.raises(ToolError, match="not served"):
        tools.record_turn("s-mcp2", "Ｔ３ＣＡＦÉ", "user", "Hi")  # not served: refused before any store
    with pytest.raises(ToolError, match="128"):
        tools.learn("C" * 129, "Too long.")
    assert stored_customer_ids(engine) == {KNOWN}


def test_a_variant_with_its_own_synced_customer_is_that_customer(engine: Engine, tmp_path: Path) -> None:
    memory = memory_on(engine, tmp_path)
    with engine.begin() as conn:
        upsert_records(
            conn, [PartyRecord(tenant="default", kind="customer", external_id="t3café", name="x")], NOW
        )
    memory.learn("t3café", "A different customer whose id differs only in case.")
    assert stored_customer_ids(engine) == {"t3café"}
    with pytest.raises(ScopeError):
        memory.learn("x" * 129, "Too long.")
