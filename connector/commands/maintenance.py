"""``connector maintenance retention|consolidate|decay``: the periodic memory upkeep jobs.

The scheduler runs the same functions on their intervals; these commands run one pass now and
print its report as JSON.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from connector.commands._common import memory_from_settings, to_json


def register(sub: Any) -> None:
    parser = sub.add_parser("maintenance", help="retention, consolidation and decay of memories")
    jobs = parser.add_subparsers(dest="job", metavar="JOB", required=True)
    jobs.add_parser(
        "retention",
        help="archive episodic entries past the retention window; delete expired PII entries; "
        "take conversation turns past their window out of the index; delete audit events past "
        "audit.retention_days",
    ).set_defaults(handler=_retention)
    jobs.add_parser(
        "index-turns", help="index conversation turns still waiting (normally indexed in the background)"
    ).set_defaults(handler=_index_turns)
    jobs.add_parser(
        "consolidate", help="learn facts from unconsolidated sessions (needs an LLM; otherwise does nothing)"
    ).set_defaults(handler=_consolidate)
    jobs.add_parser(
        "decay", help="decay learned-fact importance by elapsed days; remove facts below the threshold"
    ).set_defaults(handler=_decay)


def _retention(args: argparse.Namespace) -> int:
    with memory_from_settings() as memory:
        report = dataclasses.asdict(memory.episodic.apply_retention())
        report["conversation_turns_removed"] = memory.conversations.apply_retention().removed
        history = memory.history.apply_retention()
        report["erp_changes_removed"] = history.removed + history.contact_removed
        report["audit_events_removed"] = memory.audit.apply_retention().removed
    print(to_json(report))
    return 0


def _index_turns(args: argparse.Namespace) -> int:
    with memory_from_settings() as memory:
        print(to_json(memory.conversations.index_pending()))
    return 0


def _consolidate(args: argparse.Namespace) -> int:
    """Exit 1 when a consolidation job failed (the report says which), so a scheduler notices."""
    report = memory_from_settings().facts.consolidate()
    print(to_json(report))
    return 1 if report.failed else 0


def _decay(args: argparse.Namespace) -> int:
    print(to_json(memory_from_settings().facts.decay()))
    return 0
