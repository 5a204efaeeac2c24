"""Case rewording by the LLM, after ``record_case`` has returned.

``record_case`` stores the deterministic summary (request + resolution with every id, amount and
date, labelled ``non-llm``) and returns without waiting on the LLM; the LLM's wording replaces it
here, on the background worker, only while the entry still holds the text written then (a later
update or merge wins, and a retried job changes nothing). The lexical terms follow the new text;
the vector stays the one of the factual text, which names the same facts. An entry archived at
write (past retention) gets the new wording too, for when it is restored, but no terms.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.episodic import terms as entry_terms
from connector.episodic.summary import summarise
from connector.episodic.tables import ENTRIES, LIVE
from connector.episodic.writer import NewCase
from connector.llm import LLMClient


def reword(engine: Engine, llm: LLMClient, entry_id: str, case: NewCase, written: str) -> bool:
    """Replace entry ``entry_id``'s summary ``written`` by the LLM's; True when it was replaced."""
    summary = summarise(
        llm, request=case.request, resolution=case.resolution, documents=case.documents,
        occurred_at=case.occurred_at, case_type=case.case_type,
    )  # fmt: skip
    if summary.mode != "llm":
        return False  # the LLM failed: the labelled deterministic summary stays
    e = ENTRIES.c
    with engine.begin() as conn:
        replaced = conn.execute(
            sa.update(ENTRIES)
            .where(e.id == entry_id, e.summary == written, e.summary_mode == "non-llm")
            .values(summary=summary.text, summary_mode="llm")
        ).rowcount
        if replaced:
            row = conn.execute(
                sa.select(e.id, e.tenant, e.customer_id, e.summary, e.occurred_at).where(
                    e.id == entry_id, e.status == LIVE
                )
            ).mappings().one_or_none()  # fmt: skip
            if row is not None:  # an archived entry has no terms (restore indexes it)
                entry_terms.index_entries(conn, [dict(row)])
    return bool(replaced)
