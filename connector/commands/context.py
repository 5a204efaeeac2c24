"""``connector context CUSTOMER "query"``: print the agent context (text, or JSON with --json)."""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import Any

from connector.commands._common import memory_from_settings, reads, to_json
from connector.errors import ConfigError, UnknownCustomerError


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "context", help="print the token-budgeted context an agent gets for a customer and a query"
    )
    parser.add_argument("customer", help="the customer's (or with --vendor the vendor's) ERP key")
    parser.add_argument("query", help="what the agent was asked")
    parser.add_argument("--session", help="working-memory session id")
    parser.add_argument("--tenant", help="tenant name (default: the configured default)")
    parser.add_argument("--budget", type=int, help="token budget (default: context.token_budget)")
    parser.add_argument("--as-of", dest="as_of", help="build as of this ISO time with offset (default: now)")
    parser.add_argument(
        "--vendor", action="store_true", help="CUSTOMER names a vendor: build a vendor's context"
    )
    parser.add_argument("--json", action="store_true", help="print the structured result as JSON")
    parser.set_defaults(handler=_context)


def _as_of(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ConfigError(
            f"--as-of: expected an ISO date-time like 2026-01-15T12:00:00+00:00, got {value!r}"
        ) from None
    if parsed.tzinfo is None:
        raise ConfigError("--as-of: give a UTC offset (e.g. +00:00) so the date is unambiguous")
    return parsed


def _context(args: argparse.Namespace) -> int:
    memory = memory_from_settings()
    party_kind = "vendor" if args.vendor else "customer"
    try:
        result = memory.build_context(
            args.customer,
            args.query,
            session_id=args.session,
            tenant=args.tenant,
            token_budget=args.budget,
            as_of=_as_of(args.as_of),
            party_kind=party_kind,
        )
    except UnknownCustomerError as exc:  # the operator (not an agent) gets "did you mean"
        with reads(memory):
            close = memory.context.suggestions(exc.customer_id, tenant=args.tenant, party_kind=party_kind)
        raise UnknownCustomerError(exc.customer_id, close) from None
    if args.json:
        print(to_json(result.to_dict()))
    else:
        print(result.text, end="")
    return 0
