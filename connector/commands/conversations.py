"""``connector conversations import FILE``: import a conversation history (JSON Lines, one turn a line)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from connector.commands._common import memory_from_settings, to_json
from connector.conversations.import_lines import InvalidImportError
from connector.redact import redact

EXIT_OK, EXIT_ERROR, EXIT_PARTLY_FAILED = 0, 1, 4  # as connector.cli's


def register(sub: Any) -> None:
    parser = sub.add_parser("conversations", help="past conversations: import a chat history")
    actions = parser.add_subparsers(dest="conversations_command", metavar="ACTION", required=True)
    imp = actions.add_parser(
        "import",
        help="import turns from a JSON Lines file (customer, session, role, content, occurred_at, "
        "optional external_id, tenant, tool_name, tool_args, tool_result); recallable when it returns",
    )
    imp.add_argument("file", type=Path, help="the JSON Lines file")
    imp.add_argument("--tenant", help="tenant of lines that name none (default: the configured default)")
    imp.add_argument(
        "--skip-bad",
        action="store_true",
        help="import the rest when lines are bad: each session holding a bad line is left out whole "
        "(exit 4); without it any bad line stops the import before anything is written (exit 1)",
    )
    imp.add_argument(
        "--allow-unknown-customers",
        action="store_true",
        help="import customers semantic memory does not hold (default: episodic.allow_unknown_customers)",
    )
    imp.add_argument("--no-progress", action="store_true", help="no progress bar on a terminal")
    imp.set_defaults(handler=_import)


def _import(args: argparse.Namespace) -> int:
    if not args.file.is_file():
        print(f"connector: {args.file}: no such file", file=sys.stderr)
        return EXIT_ERROR
    allow = True if args.allow_unknown_customers else None
    with memory_from_settings() as memory, _progress(not args.no_progress and sys.stderr.isatty()) as step:
        try:
            report = memory.import_conversations(
                args.file, tenant=args.tenant, skip_bad=args.skip_bad, allow_unknown_customers=allow,
                progress=step,
            )  # fmt: skip
        except InvalidImportError as exc:
            for bad in exc.bad_lines:
                print(redact(f"connector: {args.file}: {bad}"), file=sys.stderr)
            print(
                f"connector: {len(exc.bad_lines)} bad line(s), nothing imported "
                "(fix them, or --skip-bad to leave their sessions out)",
                file=sys.stderr,
            )
            return EXIT_ERROR
    for bad in report.bad_lines:
        print(redact(f"connector: {args.file}: {bad} (session skipped)"), file=sys.stderr)
    print(to_json({**_fields(report), "ok": report.ok}))
    return EXIT_OK if report.ok else EXIT_PARTLY_FAILED


def _fields(report: Any) -> dict[str, Any]:
    return {name: getattr(report, name) for name in report.__dataclass_fields__ if name != "bad_lines"} | {
        "bad_lines": [str(b) for b in report.bad_lines]
    }


@contextmanager
def _progress(shown: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar of turns on stderr (a terminal only), as the sync's."""
    if not shown:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    with Progress(
        "importing", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=Console(stderr=True)
    ) as bar:
        task = bar.add_task("turns", total=None)

        def step(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield step
