"""The fake served over real loopback HTTP, the adapter reading it, and `connector fake-erp serve`."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tomllib
from collections.abc import Callable

import httpx
import pytest

from connector.adapters.factory import open_adapter
from connector.cli import EXIT_CONFIG, main
from connector.erp.records import CaseRecord, DocumentRecord, PartyRecord
from connector.settings import SyncSettings, TenantSettings
from connector.testing import FakeAcumatica, ServedFake
from connector.testing.server import FakeERP


@pytest.fixture
def fake() -> FakeAcumatica:
    return FakeAcumatica(seed=8, customers=120, vendors=15, invoices=90, sales_orders=40, bills=30, cases=25)


def test_the_adapter_reads_every_stream_over_real_http(
    fake: FakeAcumatica, serve_fake: Callable[[FakeERP], ServedFake]
) -> None:
    server = serve_fake(fake)
    assert server.url.startswith("http://127.0.0.1:")
    tenant = fake.tenant_settings(base_url=server.url + "/AcumaticaERP", page_size=50)
    with open_adapter(tenant, sync=SyncSettings()) as adapter:
        read = {
            s.name: [r for page in adapter.read(s.name, None) for r in page.records]
            for s in adapter.streams()
        }
        keys = list(adapter.scan_keys("Bill"))
    assert {name: len(records) for name, records in read.items()} == {name: fake.count(name) for name in read}
    assert all(isinstance(r, PartyRecord) for r in read["Customer"] + read["Vendor"])
    assert all(isinstance(r, DocumentRecord) for r in read["Invoice"] + read["SalesOrder"] + read["Bill"])
    assert all(isinstance(r, CaseRecord) for r in read["Case"])
    assert keys == fake.keys("Bill")
    assert fake.active_sessions == 0


def test_oauth_and_faults_work_over_real_http(
    fake: FakeAcumatica, serve_fake: Callable[[FakeERP], ServedFake]
) -> None:
    server = serve_fake(fake)
    fake.time_out(target="Vendor")  # the server drops the connection: a transport error, retried
    fake.rate_limit(retry_after=0, target="Vendor")
    tenant = fake.tenant_settings(base_url=server.url, auth="oauth")
    with open_adapter(tenant, sync=SyncSettings()) as adapter:
        assert sum(len(p.records) for p in adapter.read("Vendor", None)) == 15
        assert adapter.retry_count == 2


def test_the_server_keeps_connections_alive_and_stops(fake: FakeAcumatica) -> None:
    server = ServedFake(fake, "127.0.0.1", 0)
    with server, httpx.Client(base_url=server.url) as client:
        answers = [client.get("/entity") for _ in range(3)]
        assert all(a.status_code == 200 and a.http_version == "HTTP/1.1" for a in answers)
        assert client.post("/entity/auth/login", json={"name": "x", "password": "y"}).status_code == 500
        logged_in = client.post("/entity/auth/login", json={"name": fake.username, "password": fake.password})
        assert logged_in.status_code == 204 and logged_in.content == b""
        assert client.cookies.get(".ASPXAUTH")
        assert client.get("/entity/Default/25.200.001/Case", params={"$top": "2"}).status_code == 200
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.url + "/entity", timeout=2)


def _run_cli(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "connector.cli", "fake-erp", "serve", *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _output_until_ready(process: subprocess.Popen[str]) -> str:
    """What the command printed up to its "Press Ctrl+C" line (it is serving from then on)."""
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line)
        if line.startswith("Press Ctrl+C"):
            break
    return "".join(lines)


def test_fake_erp_serve_prints_url_and_credentials_and_stops_on_sigterm() -> None:
    process = _run_cli("--port", "0", "--seed", "3", "--customers", "40", "--invoices", "20", "--cases", "5")
    try:
        output = _output_until_ready(process)
        url = re.search(r"Fake Acumatica serving at (http://127\.0\.0\.1:\d+)", output)
        assert url is not None, output
        for field in (
            'username = "admin"',
            "password = ",
            'company = "Company"',
            f'base_url = "{url.group(1)}"',
        ):
            assert field in output
        tenant = TenantSettings(
            name="served", kind="acumatica", base_url=url.group(1), username="admin",
            password=re.search(r'password = "([^"]+)"', output).group(1),  # type: ignore[union-attr]
            company="Company",
        )  # fmt: skip
        with open_adapter(tenant, sync=SyncSettings()) as adapter:
            assert sum(len(p.records) for p in adapter.read("Customer", None)) == 40
            assert sum(len(p.records) for p in adapter.read("Case", None)) == 5
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_fake_erp_serve_refuses_a_busy_port(
    fake: FakeAcumatica, serve_fake: Callable[[FakeERP], ServedFake], capsys: pytest.CaptureFixture[str]
) -> None:
    busy = serve_fake(fake)
    assert main(["fake-erp", "serve", "--port", str(busy.port), "--customers", "3"]) == EXIT_CONFIG
    assert f"cannot serve the fake acumatica on 127.0.0.1:{busy.port}" in capsys.readouterr().err


def test_fake_erp_serve_sap_prints_settings_an_adapter_can_read_with() -> None:
    process = _run_cli("--kind", "sap", "--sap-port", "0", "--customers", "7", "--vendors", "2")
    try:
        output = _output_until_ready(process)
        assert re.search(r"Fake SAP serving at http://127\.0\.0\.1:\d+", output), output
        block = output[output.index("[[tenants]]") : output.index("Press Ctrl+C")]
        tenant = TenantSettings(**tomllib.loads(block)["tenants"][0])
        with open_adapter(tenant, sync=SyncSettings()) as adapter:
            parties = [r for p in adapter.read("BusinessPartner", None) for r in p.records]
        assert sum(isinstance(r, PartyRecord) and r.kind == "customer" for r in parties) == 7
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
