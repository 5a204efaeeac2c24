"""The fault trial of issue 25, re-run end to end as a user would: fake ERPs served over loopback
HTTP, SQLite and PostgreSQL (127.0.0.1:5432), embedded Chroma and a ``chroma run`` server, the
``connector`` CLI as child processes where the trial used the CLI. Prints one line per probe:
PASS or FAIL, the measured figure (seconds blocked against the deadline, records lost, bytes
found) and, for a failure, its cause; exits 1 if any probe failed. Takes several minutes.

Usage: python scripts/fault_trial.py [--only NAME[,NAME...]] [--skip-postgres] [--pg-admin-url URL] [--list]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _fault_agent as agent
import _fault_stores as stores
import _fault_sync as sync
from _fault_rigs import DEFAULT_PG_ADMIN, Outcome, Trial, new_trial

Probe = Callable[[Trial], Outcome | list[Outcome]]

#: name -> (uses PostgreSQL, probe); in the order of the issue's findings.
PROBES: dict[str, tuple[bool, Probe]] = {
    "paging-acumatica-sqlite": (False, lambda t: sync.paging(t, "acumatica", "sqlite")),
    "paging-acumatica-postgres": (True, lambda t: sync.paging(t, "acumatica", "postgres")),
    "paging-sap-sqlite": (False, lambda t: sync.paging(t, "sap", "sqlite")),
    "paging-sap-postgres": (True, lambda t: sync.paging(t, "sap", "postgres")),
    "clock-skew-120s": (False, lambda t: sync.clock_skew(t, timedelta(seconds=120))),
    "clock-skew-1day": (False, lambda t: sync.clock_skew(t, timedelta(days=1), runs=2)),
    "hung-chroma": (False, stores.hung_chroma),
    "hung-postgres": (True, stores.hung_postgres),
    "long-id-postgres": (True, lambda t: sync.long_id(t, "postgres")),
    "long-id-sqlite": (False, lambda t: sync.long_id(t, "sqlite")),
    "reindex-mends-turns": (False, stores.reindex_mends),
    "id-rule": (False, agent.id_rule),
    "erasure-race-postgres": (True, lambda t: stores.erasure_race(t, "postgres")),
    "erasure-race-sqlite": (False, lambda t: stores.erasure_race(t, "sqlite")),
    "disk-full": (False, stores.disk_full),
    "mcp-stdio-malformed": (False, agent.mcp_malformed),
    "mcp-http-sigterm-otlp": (False, agent.mcp_sigterm),
    "postgres-unmigrated": (True, agent.unmigrated_postgres),
}


def run_probe(name: str, probe: Probe, trial: Trial) -> list[Outcome]:
    """One probe's outcomes; a probe that raises is one FAIL line naming the exception."""
    try:
        result = probe(trial)
    except Exception as exc:  # a broken probe is reported, and the others still run
        where = traceback.extract_tb(exc.__traceback__)[-1]
        cause = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        return [
            Outcome(name, False, "the probe raised", f"{cause} ({Path(where.filename).name}:{where.lineno})")
        ]
    return result if isinstance(result, list) else [result]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated probe names (default: all; see --list)")
    parser.add_argument("--skip-postgres", action="store_true", help="leave out the PostgreSQL probes")
    parser.add_argument("--pg-admin-url", default=os.environ.get("CONNECTOR_PG_ADMIN_URL", DEFAULT_PG_ADMIN))
    parser.add_argument("--list", action="store_true", help="list the probes and exit")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(PROBES))
        return 0
    chosen = args.only.split(",") if args.only else list(PROBES)
    unknown = [n for n in chosen if n not in PROBES]
    if unknown:
        parser.error(f"unknown probe(s): {', '.join(unknown)}; see --list")
    if args.skip_postgres:
        chosen = [n for n in chosen if not PROBES[n][0]]
    trial = new_trial(None if args.skip_postgres else args.pg_admin_url)
    load = os.getloadavg()[0]
    print(f"# fault trial {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, load {load:.1f}, "
          f"work directory {trial.root}", flush=True)  # fmt: skip
    failed = 0
    started = time.monotonic()
    try:
        for name in chosen:
            began = time.monotonic()
            for outcome in run_probe(name, PROBES[name][1], trial):
                failed += not outcome.ok
                print(f"{outcome.line()}  [{time.monotonic() - began:.0f} s]", flush=True)
    finally:
        trial.close()
    print(f"# {failed} failed; {time.monotonic() - started:.0f} s; load at the end {os.getloadavg()[0]:.1f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
