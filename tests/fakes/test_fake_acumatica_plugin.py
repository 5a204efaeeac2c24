"""Users' own test suites can load the fixtures with one line of conftest."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

USER_CONFTEST = 'pytest_plugins = ["connector.testing.pytest_plugin"]\n'

USER_TESTS = """
import httpx

from connector.erp.records import PartyRecord


def test_reads_customers_in_process(acumatica_adapter, fake_acumatica):
    pages = list(acumatica_adapter.read("Customer", None))
    records = [r for p in pages for r in p.records]
    assert len(records) == fake_acumatica.count("Customer") == 200
    assert all(isinstance(r, PartyRecord) for r in records)


def test_the_fake_runs_on_loopback(fake_acumatica_server, fake_acumatica):
    with httpx.Client(base_url=fake_acumatica_server.url) as client:
        body = {"name": fake_acumatica.username, "password": fake_acumatica.password}
        assert client.post("/entity/auth/login", json=body).status_code == 204


def test_retries_do_not_sleep(acumatica_tenant, acumatica_transport, fake_acumatica, fake_acumatica_clock):
    from connector.adapters.acumatica import AcumaticaAdapter
    from connector.settings import SyncSettings

    fake_acumatica.rate_limit(times=2, retry_after=30, target="Vendor")
    with AcumaticaAdapter(acumatica_tenant, sync=SyncSettings(), clock=fake_acumatica_clock,
                          transport=acumatica_transport) as adapter:
        assert sum(len(p.records) for p in adapter.read("Vendor", None)) == 50
    assert fake_acumatica_clock.sleeps == [30.0, 30.0]
"""


def test_a_user_suite_uses_the_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(USER_CONFTEST)
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
