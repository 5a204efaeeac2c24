"""``connector episodic reindex|restore|stats|ingest|recall``: operate the episodic store."""

from __future__ import annotations

import argparse
from typing import Any

from connector.commands._common import memory_from_settings, to_json


def register(sub: Any) -> None:
    parser = sub.add_parser("episodic", help="episodic memory: reindex, restore, stats, ERP case ingest")
    actions = parser.add_subparsers(dest="episodic_command", metavar="ACTION", required=True)
    actions.add_parser(
        "reindex", help="rebuild the Chroma index from the relational copy with the configured embedder"
    ).set_defaults(handler=_reindex)
    restore = actions.add_parser("restore", help="bring a customer's archived cases back into the live index")
    restore.add_argument("customer", help="the customer's ERP key")
    restore.add_argument("--tenant", help="tenant name (default: the configured default)")
    restore.add_argument(
        "--case", action="append", dest="cases", metavar="CASE_ID", help="only this case (repeatable)"
    )
    restore.set_defaults(handler=_restore)
    actions.add_parser("stats", help="entry counts and the embedding model").set_defaults(handler=_stats)
    ingest = actions.add_parser("ingest", help="record closed CRM cases of a tenant as episodic entries")
    ingest.add_argument("tenant", help="tenant name")
    ingest.set_defaults(handler=_ingest)
    recall = actions.add_parser("recall", help="show the past cases recall would return")
    recall.add_argument("customer", help="the customer's ERP key")
    recall.add_argument("query", help="the question")
    recall.add_argument("-k", type=int, default=3, help="how many cases (default 3)")
    recall.add_argument("--tenant", help="tenant name (default: the configured default)")
    recall.set_defaults(handler=_recall)


def _reindex(args: argparse.Namespace) -> int:
    count = memory_from_settings().episodic.reindex()
    print(to_json({"reindexed": count}))
    return 0


def _restore(args: argparse.Namespace) -> int:
    report = memory_from_settings().episodic.restore(args.customer, tenant=args.tenant, case_ids=args.cases)
    print(to_json(report))
    return 0


def _stats(args: argparse.Namespace) -> int:
    print(to_json(memory_from_settings().episodic.stats()))
    return 0


def _ingest(args: argparse.Namespace) -> int:
    print(
        to_json(
            {"tenant": args.tenant, "recorded": memory_from_settings().episodic.ingest_erp_cases(args.tenant)}
        )
    )
    return 0


def _recall(args: argparse.Namespace) -> int:
    hits = memory_from_settings().episodic.recall(args.customer, args.query, k=args.k, tenant=args.tenant)
    print(to_json([hit for hit in hits]))
    return 0
