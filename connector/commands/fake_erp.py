"""``connector fake-erp serve``: serve a fake Acumatica and/or SAP on loopback until stopped.

For demos, benchmarks and trying the connector without an ERP. Prints each URL and a
``[[tenants]]`` block with the (fake) credentials to paste into ``config/connector.toml``.
The fake SAP is imported only when asked for.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType
from typing import Any

from pydantic import SecretStr

from connector.errors import ConfigError
from connector.settings import TenantSettings

DEFAULT_PORT = 8780
DEFAULT_SAP_PORT = 8781
_LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
_SAP_ONLY = frozenset({"sap_client", "odata_version", "api_key"})


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("expected zero or more")
    return value


def _port(text: str) -> int:
    value = _count(text)
    if value > 65535:
        raise argparse.ArgumentTypeError("a port is at most 65535")
    return value


def register(sub: Any) -> None:
    parser = sub.add_parser("fake-erp", help="fake ERPs on loopback for demos, benchmarks and tests")
    actions = parser.add_subparsers(dest="fake_erp_command", metavar="ACTION", required=True)
    serve = actions.add_parser("serve", help="serve a fake Acumatica and/or SAP until Ctrl+C / SIGTERM")
    serve.add_argument("--kind", choices=("acumatica", "sap", "both"), default="acumatica")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=DEFAULT_PORT, help="Acumatica port (0: any free port)")
    serve.add_argument("--sap-port", type=_port, default=DEFAULT_SAP_PORT, help="SAP port (0: any free port)")
    serve.add_argument("--seed", type=int, default=0, help="data seed: the same seed gives the same data")
    serve.add_argument("--customers", type=_count, default=200)
    serve.add_argument("--vendors", type=_count, default=50, help="vendors (SAP: suppliers)")
    serve.add_argument("--invoices", type=_count, default=600)
    serve.add_argument("--sales-orders", type=_count, default=300)
    serve.add_argument("--bills", type=_count, default=150)
    serve.add_argument("--cases", type=_count, default=200)
    serve.set_defaults(handler=_serve)


def _fake_acumatica(args: argparse.Namespace) -> Any:
    from connector.testing.acumatica import FakeAcumatica

    return FakeAcumatica(
        seed=args.seed,
        customers=args.customers,
        vendors=args.vendors,
        invoices=args.invoices,
        sales_orders=args.sales_orders,
        bills=args.bills,
        cases=args.cases,
    )


def _fake_sap(args: argparse.Namespace) -> Any:
    from connector.testing.sap import FakeSAP

    return FakeSAP(
        seed=args.seed,
        customers=args.customers,
        suppliers=args.vendors,
        sales_orders=args.sales_orders,
        billing_documents=args.invoices,
    )


def _toml_value(value: Any) -> str:
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def tenant_block(tenant: TenantSettings) -> str:
    """A ``[[tenants]]`` TOML block for a fake's tenant (secrets included: they are fake)."""
    lines = ["[[tenants]]"]
    fields = (
        "name", "kind", "base_url", "auth", "username", "password", "company", "branch", "client_id",
        "client_secret", "token_url", "sap_client", "odata_version", "api_key",
    )  # fmt: skip
    for name in fields:
        if tenant.kind == "acumatica" and name in _SAP_ONLY:
            continue
        value = getattr(tenant, name)
        if value is not None:
            lines.append(f"{name} = {_toml_value(value)}")
    return "\n".join(lines)


def _serve(args: argparse.Namespace) -> int:
    from connector.testing.server import ServedFake, serve

    if args.host not in _LOOPBACK:
        print(
            f"warning: serving fake ERPs with known credentials on {args.host}, not loopback", file=sys.stderr
        )
    kinds = ("acumatica", "sap") if args.kind == "both" else (args.kind,)
    fakes = {kind: _fake_acumatica(args) if kind == "acumatica" else _fake_sap(args) for kind in kinds}
    servers: list[ServedFake] = []
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for kind, fake in fakes.items():
            port = args.port if kind == "acumatica" else args.sap_port
            try:
                served = serve(fake, host=args.host, port=port)
            except OSError as exc:
                raise ConfigError(
                    f"cannot serve the fake {kind} on {args.host}:{port}: {exc.strerror}"
                ) from None
            servers.append(served)
            tenant = fake.tenant_settings(name=f"{kind}-fake", base_url=served.url)
            label = "Acumatica" if kind == "acumatica" else "SAP"
            print(f"Fake {label} serving at {served.url}", flush=True)
            print("# settings for config/connector.toml (fake credentials):", flush=True)
            print(tenant_block(tenant) + "\n", flush=True)
        print("Press Ctrl+C to stop.", flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        for served in servers:
            served.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("stopped", flush=True)
    return 0
