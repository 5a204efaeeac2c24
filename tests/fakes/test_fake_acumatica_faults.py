"""Injectable faults of the fake Acumatica, each as the client sees it."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from connector.clock import FrozenClock
from connector.testing import FakeAcumatica, Fault
from connector.testing.acumatica_faults import FaultPlan

V = "/entity/Default/25.200.001"


@pytest.fixture
def fake() -> FakeAcumatica:
    return FakeAcumatica(
        seed=5, clock=FrozenClock(), customers=25, vendors=3, invoices=10, sales_orders=0, cases=0
    )


@pytest.fixture
def client(fake: FakeAcumatica) -> Iterator[httpx.Client]:
    with httpx.Client(transport=httpx.MockTransport(fake.handle), base_url=fake.base_url) as client:
        response = client.post("/entity/auth/login", json={"name": fake.username, "password": fake.password})
        assert response.status_code == 204
        yield client


def test_429_with_and_without_retry_after(client: httpx.Client, fake: FakeAcumatica) -> None:
    fake.rate_limit(retry_after=7)
    fake.rate_limit(retry_after="Wed, 21 Oct 2026 07:28:00 GMT")
    fake.rate_limit()
    answers = [client.get(f"{V}/Customer") for _ in range(4)]
    assert [a.status_code for a in answers] == [429, 429, 429, 200]
    assert [a.headers.get("Retry-After") for a in answers[:3]] == ["7", "Wed, 21 Oct 2026 07:28:00 GMT", None]


def test_5xx_faults_and_business_errors(client: httpx.Client, fake: FakeAcumatica) -> None:
    fake.fail(503)
    fake.fail(500)
    fake.business_error("Invoice AR000001 is on hold.")
    unavailable, crashed, refused = (client.get(f"{V}/Invoice") for _ in range(3))
    assert unavailable.status_code == 503
    assert crashed.status_code == 500 and crashed.json()["exceptionType"].startswith("System.")
    assert refused.status_code == 500 and refused.json()["exceptionType"] == "PX.Data.PXException"
    assert refused.json()["exceptionMessage"] == "Invoice AR000001 is on hold."


def test_a_fault_can_wait_for_later_requests_and_target_one_entity(
    client: httpx.Client, fake: FakeAcumatica
) -> None:
    fake.fail(502, target="Invoice", after=2)
    statuses = [
        client.get(f"{V}/{entity}").status_code for entity in ("Invoice", "Customer", "Invoice", "Invoice")
    ]
    assert statuses == [200, 200, 200, 502]
    assert fake.faults.pending == []


def test_a_timeout_raises_in_process(client: httpx.Client, fake: FakeAcumatica) -> None:
    fake.time_out(target="Customer")
    with pytest.raises(httpx.ReadTimeout):
        client.get(f"{V}/Customer")
    assert fake.requests[-1].status == 0
    assert client.get(f"{V}/Customer").status_code == 200


def test_malformed_json_is_a_truncated_200(client: httpx.Client, fake: FakeAcumatica) -> None:
    fake.malformed_json()
    response = client.get(f"{V}/Vendor")
    assert response.status_code == 200
    with pytest.raises(ValueError):
        response.json()


def test_sessions_expire_mid_run(client: httpx.Client, fake: FakeAcumatica) -> None:
    fake.expire_sessions(after=1)
    assert [client.get(f"{V}/Vendor").status_code for _ in range(2)] == [200, 401]
    assert fake.active_sessions == 0


def test_a_repeated_page_ignores_skip(client: httpx.Client, fake: FakeAcumatica) -> None:
    fake.repeat_page(target="Customer", after=1)
    first = client.get(f"{V}/Customer", params={"$top": "10", "$skip": "0"}).content
    second = client.get(f"{V}/Customer", params={"$top": "10", "$skip": "10"}).content
    third = client.get(f"{V}/Customer", params={"$top": "10", "$skip": "20"}).json()
    assert second == first
    assert len(third) == 5


def test_the_login_limit_fault(fake: FakeAcumatica) -> None:
    fake.login_limit()
    with httpx.Client(transport=httpx.MockTransport(fake.handle), base_url=fake.base_url) as client:
        body = {"name": fake.username, "password": fake.password}
        refused = client.post("/entity/auth/login", json=body)
        assert refused.status_code == 500 and "API Login Limit" in refused.json()["exceptionMessage"]
        assert client.post("/entity/auth/login", json=body).status_code == 204


def test_service_routes_are_only_hit_when_targeted(client: httpx.Client, fake: FakeAcumatica) -> None:
    fake.fail(503)  # untargeted: entity requests only
    assert client.get("/entity").status_code == 200
    assert client.post("/entity/auth/logout").status_code == 204
    assert client.get(f"{V}/Customer").status_code == 503  # fired here, before the session check
    assert fake.faults.pending == []
    assert client.get(f"{V}/Customer").status_code == 401


def test_fault_plan_counts_every_matching_fault() -> None:
    plan = FaultPlan()
    storm = plan.add(Fault("status", "Customer", times=2, status=429))
    later = plan.add(Fault("status", "Customer", after=3, status=503))
    fired = [plan.take("Customer") for _ in range(5)]
    assert fired == [storm, storm, None, later, None]
    with pytest.raises(ValueError):
        Fault("timeout", times=0)
