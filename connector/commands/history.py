"""``connector history CUSTOMER``: what changed in the ERP for a customer, as the sync saw it."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from connector.commands._common import memory_from_settings, to_json
from connector.commands.context import _as_of
from connector.semantic.history_reads import describe


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "history", help="list the ERP changes the sync recorded for a customer and its documents"
    )
    parser.add_argument("customer", help="the customer's (or with --vendor the vendor's) ERP key")
    parser.add_argument("--field", help="only this field (credit_limit, status, balance, ...)")
    parser.add_argument("--since", help="only changes after this ISO time with offset")
    parser.add_argument("--tenant", help="tenant name (default: the configured default)")
    parser.add_argument("--limit", type=int, default=100, help="how many changes at most (default 100)")
    parser.add_argument("--vendor", action="store_true", help="CUSTOMER names a vendor")
    parser.add_argument("--json", action="store_true", help="print the changes as JSON")
    parser.set_defaults(handler=_history)


def _history(args: argparse.Namespace) -> int:
    with memory_from_settings() as memory:
        changes = memory.erp_history(
            args.customer,
            tenant=args.tenant,
            field=args.field,
            since=_as_of(args.since),
            party_kind="vendor" if args.vendor else "customer",
            limit=args.limit,
        )
    if args.json:
        print(to_json([dataclasses.asdict(c) for c in changes]))
    elif not changes:
        print("no ERP changes recorded")
    else:
        for change in changes:
            print(f"- {describe(change)}")
    return 0
