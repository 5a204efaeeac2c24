"""``connector episodic reindex|restore|stats|ingest|recall``: operate the episodic store."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

from connector.commands._common import memory_from_settings, reads, to_json
from connector.errors import ConfigError


def register(sub: Any) -> None:
    parser = sub.add_parser("episodic", help="episodic memory: reindex, restore, stats, ERP case ingest")
    actions = parser.add_subparsers(dest="episodic_command", metavar="ACTION", required=True)
    reindex = actions.add_parser(
        "reindex",
        help="make the Chroma index hold every live entry's vector (rebuilt when the embedder changed)",
    )
    reindex.add_argument(
        "--check",
        action="store_true",
        help="compare the relational rows (cases and turns) with Chroma id by id and report; "
        "exit 1 if they differ",
    )
    reindex.add_argument(
        "--fix",
        action="store_true",
        help="with --check: repair what differs (delete orphans, embed missing, rewrite old metadata)",
    )
    reindex.add_argument(
        "--rebuild",
        action="store_true",
        help="drop the Chroma collection and embed every live entry again from the relational store "
        "(an unreadable embedded Chroma directory is replaced; erased customers stay out)",
    )
    reindex.set_defaults(handler=_reindex)
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
    recall.add_argument(
        "--include-archived", action="store_true", help="also search the archive by document number"
    )
    recall.set_defaults(handler=_recall)


def _reindex(args: argparse.Namespace) -> int:
    if args.rebuild:
        if args.check:
            raise ConfigError("--rebuild and --check are exclusive: a rebuild leaves nothing to check")
        print(to_json(memory_from_settings().rebuild_episodic_index()))
        return 0
    memory = memory_from_settings()
    turns = memory.conversations if memory.settings.conversations.enabled else None
    if not args.check:
        count = memory.episodic.reindex()
        mended = turns.check_index(fix=True) if turns is not None else None
        print(to_json({"reindexed": count, **({"turns_mended": mended.missing} if mended else {})}))
        return 0
    report = memory.episodic.check_index(fix=args.fix)
    turn_report = turns.check_index(fix=args.fix) if turns is not None else None
    consistent = report.consistent and (turn_report is None or turn_report.consistent)
    out = {**asdict(report), "consistent": consistent}
    if turn_report is not None:
        out["turns"] = {**asdict(turn_report), "consistent": turn_report.consistent}
    print(to_json(out))
    return 0 if consistent or report.fixed else 1


def _restore(args: argparse.Namespace) -> int:
    report = memory_from_settings().episodic.restore(args.customer, tenant=args.tenant, case_ids=args.cases)
    print(to_json(report))
    return 0


def _stats(args: argparse.Namespace) -> int:
    memory = memory_from_settings()
    with reads(memory):
        stats = memory.episodic.stats()
    print(to_json(stats))
    return 0


def _ingest(args: argparse.Namespace) -> int:
    by_status = memory_from_settings().episodic.ingest_erp_cases_by_status(args.tenant)
    print(to_json({"tenant": args.tenant, "recorded": sum(by_status.values()), **by_status}))
    return 0


def _recall(args: argparse.Namespace) -> int:
    memory = memory_from_settings()
    with reads(memory):
        hits = memory.episodic.recall(
            args.customer, args.query, k=args.k, tenant=args.tenant, include_archived=args.include_archived
        )
    print(to_json([hit for hit in hits]))
    return 0
