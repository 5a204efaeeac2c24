"""``connector doctor``: check settings, database, Chroma, embeddings, LLM and every ERP tenant."""

from __future__ import annotations

import argparse
import json
from typing import Any

from connector.doctor import CheckResult, run_checks
from connector.errors import ConfigError
from connector.redact import redact
from connector.settings import load_settings

_MARK = {"ok": "OK  ", "warn": "WARN", "fail": "FAIL"}


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "doctor", help="check settings, database, Chroma, embeddings and ERP reachability"
    )
    parser.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    parser.set_defaults(handler=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    try:
        settings = load_settings()
        results = [
            CheckResult("settings", "ok", f"{len(settings.tenants)} tenant(s) configured"),
            *run_checks(settings),
        ]
    except ConfigError as exc:
        results = [CheckResult("settings", "fail", str(exc))]
    if args.json:
        print(json.dumps([_asdict(r) for r in results], indent=2))
    else:
        for result in results:
            print(f"[{_MARK[result.verdict]}] {result.item:<20} {redact(result.detail)}")
    failed = [r.item for r in results if r.verdict == "fail"]
    print(f"verdict: {'healthy' if not failed else 'unhealthy (' + ', '.join(failed) + ')'}")
    return 1 if failed else 0


def _asdict(result: CheckResult) -> dict[str, str]:
    return {"item": result.item, "verdict": result.verdict, "detail": redact(result.detail)}
