"""The console's Customers, Erase and Audit pages and its scopes, in process (Starlette's test client
over SQLite): what each page shows against the stores, escaping, and what a token may see."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa
from starlette.testclient import TestClient

from connector.audit import list_events, record
from connector.clock import FrozenClock
from connector.console import build_app, serve
from connector.episodic.tables import ENTRIES
from connector.erp.records import DocumentRecord, PartyRecord
from connector.errors import ConfigError
from connector.memory import Memory
from connector.semantic.upsert import upsert_records
from connector.settings import AccessSettings, Settings, TokenSettings
from connector.testing.hostile import HOSTILE_ID, HOSTILE_NAME

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
NORTH, SOUTH = "north", "south"
READER, ERASER = "r" * 20, "e" * 20


@pytest.fixture
def memory(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Memory]:
    monkeypatch.setenv("READER_SECRET", READER)
    monkeypatch.setenv("ERASER_SECRET", ERASER)
    tokens = [
        TokenSettings(
            name="c1-reader", secret_env="READER_SECRET", role="read", tenants=[NORTH], customers=["C1"]
        ),
        TokenSettings(name="ops", secret_env="ERASER_SECRET", role="erase"),
    ]
    scoped = settings.model_copy(update={"access": AccessSettings(tokens=tokens), "default_tenant": NORTH})
    with Memory(scoped, clock=FrozenClock(NOW), llm=None) as memory:
        seed(memory)
        yield memory


def seed(memory: Memory) -> None:
    parties = [
        PartyRecord(tenant=NORTH, kind="customer", external_id="C1", name="Acme Bar Supplies", currency="USD",
                    credit_limit=Decimal("50000"), terms="30D"),
        PartyRecord(tenant=NORTH, kind="customer", external_id="C2", name="Beta Kegs", currency="USD"),
        PartyRecord(tenant=SOUTH, kind="customer", external_id="C1", name="Acme South", currency="EUR"),
        PartyRecord(tenant=NORTH, kind="customer", external_id=HOSTILE_ID, name=HOSTILE_NAME),
    ]  # fmt: skip
    docs = [
        DocumentRecord(
            tenant=NORTH, doc_type="ar_invoice", external_id=f"inv/{n}", number=f"INV-{n:04d}",
            party_kind="customer", party_external_id="C1", status="Open" if n < 3 else "Closed",
            currency="USD", amount=Decimal("100.00") * (n + 1), balance=Decimal("100.00") * (n + 1),
            doc_date=date(2026, 2, 1), due_date=date(2026, 2, 1 + n), is_open=n < 3,
        )
        for n in range(5)
    ]  # fmt: skip
    with memory.engine.begin() as conn:
        upsert_records(conn, [*parties, *docs], NOW - timedelta(minutes=5))
        for i, status in enumerate(("live", "archived")):
            conn.execute(
                sa.insert(ENTRIES),
                {
                    "id": f"e{i}", "tenant": NORTH, "customer_id": "C1", "case_id": f"CASE-{i}",
                    "case_type": "dispute", "summary": f"Disputed INV-000{i}; credit memo issued.",
                    "summary_mode": "non-llm", "documents": [f"INV-000{i}"], "doc_keys": [],
                    "occurred_at": NOW - timedelta(days=10 + i), "retain_from": NOW, "recorded_at": NOW,
                    "updated_at": NOW, "archived_at": NOW if status == "archived" else None, "pii": False,
                    "status": status, "embedding_model": "test", "merged_count": 1,
                },
            )  # fmt: skip
    memory.learn("C1", "Prefers updates by e-mail.", tenant=NORTH, importance=0.8, source="test")
    memory.record_turn("s-1", "C1", "user", "Why was I charged <b>twice</b>?", tenant=NORTH)
    memory.record_turn("s-1", "C1", "assistant", "Let me check INV-0001.", tenant=NORTH)


def client(memory: Memory, token: str | None = None) -> TestClient:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return TestClient(build_app(memory), headers=headers)


def test_search_finds_customers_by_name_or_id_in_every_tenant(memory: Memory) -> None:
    page = client(memory).get("/customers", params={"q": "acme"})

    assert page.status_code == 200
    found = re.findall(r'<a href="/customer\?tenant=(\w+)&amp;id=(\w+)">', page.text)
    assert sorted(found) == [(NORTH, "C1"), (SOUTH, "C1")]
    by_id = client(memory).get("/customers", params={"q": "c2"}).text
    assert "Beta Kegs" in by_id and "Acme" not in by_id


def test_a_customer_page_shows_its_memory_against_the_stores(memory: Memory) -> None:
    page = client(memory).get("/customer", params={"tenant": NORTH, "id": "C1"})

    assert page.status_code == 200
    text = page.text
    assert '<span id="customer-name">Acme Bar Supplies</span>' in text
    assert "party:north/customer/C1" in text and "2026-03-01 11:55:00 UTC" in text  # provenance, as of
    assert "Open documents (3)" in text and 'data-number="INV-0002"' in text
    assert 'data-number="INV-0003"' not in text  # closed
    assert 'data-case="CASE-0"' in text and 'data-case="CASE-1"' in text
    assert ">archived</span>" in text and ">live</span>" in text
    assert 'data-session="s-1"' in text and "Why was I charged &lt;b&gt;twice&lt;/b&gt;?" in text
    assert "Prefers updates by e-mail." in text and ">0.80<" in text
    assert "removed in 55 days unless confirmed" in text  # 0.8 x 0.95^55 = 0.048 < 0.05
    assert 'id="not-erased"' in text


def test_hostile_names_and_ids_are_text_everywhere(memory: Memory) -> None:
    search = client(memory).get("/customers", params={"q": "traders"}).text
    page = client(memory).get("/customer", params={"tenant": NORTH, "id": HOSTILE_ID}).text

    for text in (search, page):
        assert "<script>" not in text and "<img" not in text and "<b>Bold" not in text
        assert "&lt;script&gt;" in text
    assert "id=%3CI%3EEVIL%26CO" in search  # the link carries the id percent-encoded
    assert '<span id="customer-id">&lt;I&gt;EVIL&amp;CO</span>' in page


def test_a_scoped_token_sees_only_its_customers_and_others_read_as_unknown(memory: Memory) -> None:
    reader = client(memory, READER)

    assert reader.get("/customer", params={"tenant": NORTH, "id": "C1"}).status_code == 200
    for tenant, customer in ((NORTH, "C2"), (SOUTH, "C1"), (NORTH, "NOBODY")):
        refused = reader.get("/customer", params={"tenant": tenant, "id": customer})
        assert refused.status_code == 404
        assert f"no customer &#39;{customer}&#39; in tenant &#39;{tenant}&#39;" in refused.text
    found = reader.get("/customers", params={"q": "acme"}).text
    assert "Acme Bar Supplies" in found and "Acme South" not in found
    assert reader.get("/erase", params={"tenant": NORTH, "customer": "C1"}).status_code == 403
    playground = reader.get("/context", params={"tenant": SOUTH, "customer": "C1", "query": "balance?"})
    assert playground.status_code == 404  # refused before anything is built
    assert client(memory, "x" * 20).get("/sync").status_code == 401
    events = {
        (e.action, e.tenant, e.customer_id, e.outcome) for e in list_events(memory.engine, who="c1-reader")
    }
    assert ("console.customer", NORTH, "C1", "ok") in events
    assert ("console.customer", SOUTH, "C1", "refused") in events
    assert ("console.erase", NORTH, "C1", "refused") in events


def test_the_sign_in_form_keeps_the_token_in_an_http_only_cookie(memory: Memory) -> None:
    app = TestClient(build_app(memory, loopback=False))
    assert app.get("/customers").status_code == 401

    signed = app.post("/login", data={"token": READER, "next": "/customers"}, follow_redirects=False)

    assert signed.status_code == 303 and signed.headers["location"] == "/customers"
    assert "httponly" in signed.headers["set-cookie"].lower()
    assert "samesite=strict" in signed.headers["set-cookie"].lower()
    page = app.get("/customers").text
    assert "c1-reader" in page
    csrf = re.search(r'name="csrf" value="(\w+)"', page)
    assert csrf is not None
    app.post("/logout", data={"csrf": csrf.group(1)})
    assert app.get("/customers").status_code == 401
    assert app.post("/login", data={"token": "wrong" * 4}).status_code == 401


def test_erase_needs_the_typed_id_and_reports_what_each_store_removed(memory: Memory) -> None:
    ops = client(memory, ERASER)
    form = ops.get("/erase", params={"tenant": NORTH, "customer": "C1"}).text
    csrf = re.search(r'name="csrf" value="(\w+)"', form)
    assert csrf is not None and '<label for="confirm">' in form
    target = {"tenant": NORTH, "customer": "C1"}

    wrong = ops.post("/erase", params=target, data={"csrf": csrf.group(1), "confirm": "c1"})
    assert "Not erased: type the customer id" in wrong.text
    assert memory.facts.top("C1", tenant=NORTH)
    assert ops.post("/erase", params=target, data={"confirm": "C1"}).status_code == 403  # no form token
    foreign = ops.post(
        "/erase", params=target, data={"csrf": csrf.group(1), "confirm": "C1"},
        headers={"origin": "http://evil.example"},
    )  # fmt: skip
    assert foreign.status_code == 403 and memory.facts.top("C1", tenant=NORTH)

    done = ops.post("/erase", params=target, data={"csrf": csrf.group(1), "confirm": "C1"})

    assert done.status_code == 200
    assert re.search(r'data-store="learned_facts"><td>learned_facts</td><td class="num">1<', done.text)
    assert not memory.facts.top("C1", tenant=NORTH)
    after = ops.get("/customer", params={"tenant": NORTH, "id": "C1"}).text
    assert 'class="badge erased"' in after


def test_off_loopback_the_console_refuses_to_start_without_a_usable_token(settings: Settings) -> None:
    with Memory(settings, llm=None) as memory, pytest.raises(ConfigError, match="token"):
        serve(memory, host="0.0.0.0", port=0)


def test_the_audit_page_lists_the_events_the_principal_may_see_with_its_filters(memory: Memory) -> None:

    record(memory.engine, "ops", "mcp.get_context", NORTH, "C1", at=NOW - timedelta(hours=2))
    record(memory.engine, "ops", "mcp.get_context", NORTH, "C2", at=NOW - timedelta(hours=1))
    record(memory.engine, "<b>bot</b>", "mcp.recall", SOUTH, "C1", at=NOW - timedelta(days=3))
    ops, reader = client(memory, ERASER), client(memory, READER)

    def shown(page: str) -> list[tuple[str, str, str, str]]:
        rows = re.findall(r'<tr data-id="\d+">\s*<td>[^<]*</td>\s*<td>([^<]*)</td>\s*<td>([^<]*)</td>'
                          r'\s*<td>([^<]*)</td>\s*<td>(?:<a [^>]*>)?([^<]*)', page)  # fmt: skip
        return [tuple(r) for r in rows]

    stored = [(e.who, e.action, e.tenant or "—", e.customer_id or "—") for e in list_events(memory.engine)]
    every = ops.get("/audit").text  # its own view is recorded after the page's read
    assert [(html.unescape(r[0]), *r[1:]) for r in shown(every)] == stored
    assert ("&lt;b&gt;bot&lt;/b&gt;", "mcp.recall", SOUTH, "C1") in shown(every) and "<b>bot" not in every
    for name in ("who", "action", "tenant", "customer", "since"):
        assert f'<label for="{name}">' in every and f'id="{name}" name="{name}"' in every
    assert shown(ops.get("/audit", params={"action": "mcp", "customer": "C2"}).text) == [
        ("ops", "mcp.get_context", NORTH, "C2")
    ]
    since = ops.get("/audit", params={"action": "mcp", "since": "2026-03-01"}).text
    assert {r[3] for r in shown(since)} == {"C1", "C2"}  # the recall of 3 days ago is older
    assert ops.get("/audit", params={"since": "yesterday"}).status_code == 400

    scoped = shown(reader.get("/audit", params={"action": "mcp"}).text)
    assert scoped == [("ops", "mcp.get_context", NORTH, "C1")]  # not C2 of its tenant, not south
    assert shown(reader.get("/audit", params={"tenant": SOUTH}).text) == []
