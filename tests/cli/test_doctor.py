"""``connector doctor`` authenticates for real: each ERP tenant logs in (Acumatica), makes an
authenticated read and logs out; the LLM check makes an authenticated 1-token call. Wrong
credentials are FAIL with the reason, and no secret is ever printed."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest
import respx
from llm_stub import USAGE, completion
from pydantic import SecretStr

from connector.cli import main
from connector.doctor import check_llm, check_tenant
from connector.settings import LLMSettings, Settings, TenantSettings
from connector.testing.acumatica import FakeAcumatica
from connector.testing.acumatica_faults import Fault
from connector.testing.sap import FakeSAP
from connector.testing.server import FakeERP, ServedFake

WRONG = "wr0ng-Passw0rd"
LLM_URL = "http://llm.test/v1"
LLM_KEY = "sk-live-doctor-secret"

Serve = Callable[[FakeERP], ServedFake]


@pytest.fixture
def acumatica(serve_fake: Serve) -> tuple[FakeAcumatica, str]:
    fake = FakeAcumatica(seed=0, customers=5, vendors=2, invoices=5, sales_orders=5, bills=2, cases=2)
    return fake, serve_fake(fake).url


@pytest.fixture
def sap(serve_fake: Serve) -> tuple[FakeSAP, str]:
    fake = FakeSAP(seed=0, customers=5, suppliers=2, sales_orders=5)
    served = serve_fake(fake)
    fake.base_url = served.url
    return fake, served.url


def acumatica_tenant(fake: FakeAcumatica, url: str, password: str | None = None) -> TenantSettings:
    return fake.tenant_settings("acme", base_url=url, password=SecretStr(password or fake.password))


def sap_tenant(fake: FakeSAP, url: str, password: str | None = None) -> TenantSettings:
    return fake.tenant_settings("s4", base_url=url, password=SecretStr(password or fake.gate.password))


def test_each_erp_check_logs_in_reads_authenticated_and_logs_out(
    settings: Settings, acumatica: tuple[FakeAcumatica, str], sap: tuple[FakeSAP, str]
) -> None:
    acu, acu_url = acumatica
    result = check_tenant(settings, acumatica_tenant(acu, acu_url))
    assert result.verdict == "ok", result.detail
    assert "logged in, read Customer authenticated, logged out" in result.detail
    assert acu.sessions.logins == 1 and acu.active_sessions == 0
    assert any(path.endswith("/Customer") for path in acu.request_counts)

    fake_sap, sap_url = sap
    result = check_tenant(settings, sap_tenant(fake_sap, sap_url))
    assert result.verdict == "ok", result.detail
    assert "read BusinessPartner authenticated" in result.detail
    assert fake_sap.requests_to("A_BusinessPartner") == 1  # the request that carried the credentials


def test_a_wrong_password_fails_with_the_reason(
    settings: Settings, acumatica: tuple[FakeAcumatica, str], sap: tuple[FakeSAP, str]
) -> None:
    fake_sap, sap_url = sap
    result = check_tenant(settings, sap_tenant(fake_sap, sap_url, WRONG))
    assert result.verdict == "fail"
    assert "refused the credentials" in result.detail and "HTTP 401" in result.detail
    assert "check the username, password" in result.detail

    acu, acu_url = acumatica
    result = check_tenant(settings, acumatica_tenant(acu, acu_url, WRONG))
    assert result.verdict == "fail"
    assert "refused the credentials" in result.detail and "Invalid credentials" in result.detail
    assert acu.active_sessions == 0


def test_a_failed_logout_is_a_warning(settings: Settings, acumatica: tuple[FakeAcumatica, str]) -> None:
    acu, url = acumatica
    acu.inject(Fault("status", target="logout", status=500))
    result = check_tenant(settings, acumatica_tenant(acu, url))
    assert result.verdict == "warn"
    assert "logout for tenant acme failed" in result.detail


def llm_settings(settings: Settings) -> Settings:
    return settings.model_copy(
        update={"llm": LLMSettings(base_url=LLM_URL, api_key=SecretStr(LLM_KEY), model="m-1")}
    )


@respx.mock
def test_the_llm_check_makes_an_authenticated_one_token_call(settings: Settings) -> None:
    route = respx.post(f"{LLM_URL}/chat/completions").mock(return_value=completion("p", usage=USAGE))
    result = check_llm(llm_settings(settings))
    assert result.verdict == "ok", result.detail
    request = route.calls.last.request
    assert request.headers["authorization"] == f"Bearer {LLM_KEY}"
    assert json.loads(request.content)["max_tokens"] == 1


@respx.mock
@pytest.mark.parametrize(
    ("status", "reason"),
    [(401, "refused the API key (HTTP 401)"), (404, "does not serve model m-1"), (500, "answered HTTP 500")],
)
def test_an_llm_that_refuses_the_call_fails(settings: Settings, status: int, reason: str) -> None:
    route = respx.post(f"{LLM_URL}/chat/completions").mock(
        return_value=httpx.Response(status, json={"error": {"message": "Incorrect API key provided"}})
    )
    result = check_llm(llm_settings(settings))
    assert result.verdict == "fail"
    assert reason in result.detail and LLM_KEY not in result.detail
    assert route.call_count == 1  # no retries: doctor answers at once


@respx.mock
def test_doctor_cli_says_unhealthy_and_prints_no_secret(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    acumatica: tuple[FakeAcumatica, str],
    sap: tuple[FakeSAP, str],
) -> None:
    respx.route(host="127.0.0.1").pass_through()  # the fake ERPs answer over real loopback HTTP
    respx.post(f"{LLM_URL}/chat/completions").mock(return_value=httpx.Response(401, json={}))
    (acu, acu_url), (fake_sap, sap_url) = acumatica, sap
    tenants = [
        {"name": "acme", "kind": "acumatica", "base_url": acu_url, "username": acu.username,
         "password": acu.password, "company": acu.company},
        {"name": "s4", "kind": "sap", "base_url": sap_url, "auth": "basic",
         "username": fake_sap.gate.username, "password": WRONG, "sap_client": fake_sap.gate.sap_client},
    ]  # fmt: skip
    monkeypatch.setenv("CONNECTOR_TENANTS", json.dumps(tenants))
    monkeypatch.setenv("CONNECTOR_LLM__BASE_URL", LLM_URL)
    monkeypatch.setenv("CONNECTOR_LLM__API_KEY", LLM_KEY)
    for args in (["doctor"], ["doctor", "--json"]):
        assert main(args) == 1
        out = capsys.readouterr()
        printed = out.out + out.err
        for secret in (WRONG, acu.password, LLM_KEY):
            assert secret not in printed
    assert main(["doctor"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("[OK  ] erp:acme") for line in lines), lines
    assert any(line.startswith("[FAIL] erp:s4") and "HTTP 401" in line for line in lines), lines
    assert any(line.startswith("[FAIL] llm") and "refused the API key" in line for line in lines), lines
    assert lines[-1] == "verdict: unhealthy (llm, erp:s4)"
