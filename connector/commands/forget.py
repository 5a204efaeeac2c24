"""``connector forget CUSTOMER``: erase a customer's memories from every store."""

from __future__ import annotations

import argparse
from typing import Any

from connector.commands._common import memory_from_settings, to_json


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "forget", help="erase a customer's cases, working memory and learned facts in every store"
    )
    parser.add_argument("customer", help="the customer's ERP key")
    parser.add_argument("--tenant", help="tenant name (default: the configured default)")
    parser.set_defaults(handler=_forget)


def _forget(args: argparse.Namespace) -> int:
    removed = memory_from_settings().forget(args.customer, tenant=args.tenant)
    print(to_json({"customer": args.customer, "removed": removed, "total": sum(removed.values())}))
    return 0
