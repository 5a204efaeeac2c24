"""The ``connector`` command line.

Each feature area registers its sub-commands from a module in ``connector.commands`` (a
``register(subparsers)`` function), so this file only wires them and turns library errors into a
one-line message and a non-zero exit code a scheduler can act on.
"""

from __future__ import annotations

import argparse
import logging
import sys
import traceback
from collections.abc import Callable, Sequence

from connector import telemetry
from connector.commands import (
    audit,
    console,
    context,
    conversations,
    db,
    demo,
    doctor,
    episodic,
    fake_erp,
    forget,
    history,
    maintenance,
    mcp,
    schedule,
    sync,
)
from connector.commands._terminate import (
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    terminate_by_exception,
)
from connector.errors import AlreadyRunning, ConfigError, ConnectorError, ErasureIncomplete, StoreError
from connector.failures import DRIVER_ERRORS, store_error
from connector.redact import install_log_redaction, redact
from connector.settings import Settings, TelemetrySettings, load_settings

# Each provides register(subparsers); this order is the order of `connector --help`.
COMMAND_MODULES = (
    demo, db, doctor, fake_erp, sync, schedule, episodic, conversations, maintenance, context, history,
    forget, audit, mcp, console,
)  # fmt: skip

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_CONFIG = 2
EXIT_ALREADY_RUNNING = 3
EXIT_PARTLY_FAILED = 4  # sync: some streams failed; forget: erased, but Chroma was not reached
EXIT_STORE = 5  # the database or Chroma is unreachable, unreadable or failed


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="connector",
        description="ERP memory connector: sync ERP facts, keep episodic and working memory, "
        "build agent context.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument(
        "--otel-console", action="store_true", help="print OpenTelemetry spans and metrics to stderr"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


def _observe(args: argparse.Namespace) -> None:
    """Log redaction and OpenTelemetry output, from the flags and the settings (when they load)."""
    try:
        settings: Settings | None = load_settings()
    except ConfigError:
        settings = None  # the command itself reports what is wrong
    install_log_redaction(
        verbose=args.verbose, log_customer_text=bool(settings and settings.log_customer_text)
    )
    otel = settings.otel if settings is not None else TelemetrySettings()
    telemetry.configure(
        console=args.otel_console or otel.console,
        otlp=otel.otlp,
        service_name=otel.service_name,
        export_timeout_s=otel.export_timeout_s,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("alembic").setLevel(logging.DEBUG if args.verbose else logging.WARNING)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return EXIT_OK
    try:
        with terminate_by_exception():
            return _run(args, handler)
    finally:
        telemetry.shutdown()  # spans and metrics flushed on every way out (a second SIGTERM kills)


def _run(args: argparse.Namespace, handler: Callable[[argparse.Namespace], int | None]) -> int:
    try:
        _observe(args)
        return int(handler(args) or 0)
    except SystemExit as exc:
        if exc.code != EXIT_TERMINATED:
            raise
        print("connector: terminated", file=sys.stderr)
        return EXIT_TERMINATED
    except AlreadyRunning as exc:
        print(redact(f"connector: {exc}"), file=sys.stderr)
        return EXIT_ALREADY_RUNNING
    except ConfigError as exc:
        print(redact(f"connector: {exc}"), file=sys.stderr)
        return EXIT_CONFIG
    except ErasureIncomplete as exc:
        print(redact(f"connector: {exc}"), file=sys.stderr)
        return EXIT_PARTLY_FAILED
    except StoreError as exc:
        print(_one_line(f"connector: {type(exc).__name__}: {exc}"), file=sys.stderr)
        return EXIT_STORE
    except ConnectorError as exc:
        print(_one_line(f"connector: {type(exc).__name__}: {exc}"), file=sys.stderr)
        return EXIT_ERROR
    except DRIVER_ERRORS as exc:  # a store failing where no library edge translated it
        print(_one_line(f"connector: StoreError: {store_error(exc, _database_url())}"), file=sys.stderr)
        return EXIT_STORE
    except KeyboardInterrupt:
        print("connector: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # a bug: still one line for the operator; -v adds the traceback
        if args.verbose:
            traceback.print_exc()
        first = next(iter(str(exc).splitlines()), "")[:200]
        print(
            _one_line(f"connector: unexpected {type(exc).__name__}: {first} (run with -v for the traceback)"),
            file=sys.stderr,
        )
        return EXIT_ERROR


def _one_line(text: str) -> str:
    return redact(" ".join(text.split()))


def _database_url() -> str | None:
    try:
        return load_settings().database_url
    except ConfigError:
        return None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
