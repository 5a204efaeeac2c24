"""``connector audit``: the audit trail, newest first, filtered by who, action, scope and time.

Events name who (a token's name, ``cli`` or ``loopback``), what, the tenant and customer, and when;
never content. See docs/guides/access-and-audit.md.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from connector.audit import Event, list_events
from connector.audit.moments import moment
from connector.commands._common import memory_from_settings, to_json
from connector.errors import ConfigError


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "audit", help="list the audit trail: who wrote, erased or read what, where and when (no content)"
    )
    parser.add_argument("--who", help="only this caller: a token's name, cli or loopback")
    parser.add_argument("--action", help="only this action and its sub-actions (mcp, turn.record, ...)")
    parser.add_argument("--tenant", help="only this tenant")
    parser.add_argument("--customer", help="only this customer id")
    parser.add_argument("--since", help="from this moment on: 2026-03-01 (UTC) or ISO time with offset")
    parser.add_argument("--until", help="before this moment: same forms as --since")
    parser.add_argument("--limit", type=int, default=100, help="how many events at most (default 100)")
    parser.add_argument("--json", action="store_true", help="print the events as JSON")
    parser.set_defaults(handler=_audit)


def line(event: Event) -> str:
    """One event on one line: when, who, what, where."""
    where = event.tenant or "-"
    if event.customer_id is not None:
        where += f"/{event.customer_id}"
    mark = "" if event.outcome == "ok" else f" ({event.outcome})"
    if event.remote is not None:
        mark += f" from {event.remote}"
    if event.repeats > 1:
        mark += f" x{event.repeats}"
    return f"{event.at:%Y-%m-%d %H:%M:%S} {event.who} {event.action} {where}{mark}"


def _audit(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise ConfigError("--limit: give a positive number of events")
    since, until = moment("--since", args.since), moment("--until", args.until)
    with memory_from_settings() as memory:
        events = list_events(
            memory.engine, who=args.who, action=args.action, tenant=args.tenant,
            customer_id=args.customer, since=since, until=until, limit=args.limit,
        )  # fmt: skip
    if args.json:
        print(to_json([dataclasses.asdict(e) for e in events]))
    elif not events:
        print("no audit events")
    else:
        for event in events:
            print(line(event))
    return 0
