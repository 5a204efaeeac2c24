"""``connector forget CUSTOMER [--lift]``: erase a customer's memories for good, or lift the erasure."""

from __future__ import annotations

import argparse
from typing import Any

from connector.commands._common import memory_from_settings, to_json
from connector.errors import ErasureIncomplete


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "forget", help="erase a customer's cases, working memory and learned facts in every store"
    )
    parser.add_argument("customer", help="the customer's ERP key")
    parser.add_argument("--tenant", help="tenant name (default: the configured default)")
    parser.add_argument(
        "--lift",
        action="store_true",
        help="lift an earlier erasure: the customer's cases, turns and facts may be stored again (logged)",
    )
    parser.set_defaults(handler=_forget)


def _forget(args: argparse.Namespace) -> int:
    memory = memory_from_settings()
    if args.lift:
        lifted = memory.lift_erasure(args.customer, tenant=args.tenant)
        print(to_json({"customer": args.customer, "erasure_lifted": lifted}))
        return 0
    try:
        removed = memory.forget(args.customer, tenant=args.tenant)
    except ErasureIncomplete as exc:  # what was erased on stdout; the one-line reason and exit 4 follow
        report = {"customer": args.customer, "removed": exc.removed, "total": sum(exc.removed.values())}
        print(to_json({**report, "incomplete": exc.unreached}))
        raise
    print(to_json({"customer": args.customer, "removed": removed, "total": sum(removed.values())}))
    return 0
