"""The ERP change history's cost, measured in alternated rounds (``scripts/bench_sync --history``).

On a machine other work also loads, two runs one after the other see different loads; a ratio of
one pair says little. Each round therefore makes a fresh pair of stores (history on, history off)
and runs their full syncs in turn, the order swapped every round (ABBA...), then a few incremental
runs after a 1% change, the order swapped each time too. The figures are the medians of the
per-pair ratios (wall time, and this process's CPU time, which load moves less: on SQLite it holds
the database's work, on PostgreSQL only the client's), each with the 1-minute load it ran at.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine

from connector.sync.runner import SyncRunner


@dataclass(slots=True)
class Run:
    wall_s: float
    cpu_s: float
    load: float


@dataclass(slots=True)
class Pairs:
    """The runs of one phase, as (history on, history off) pairs."""

    pairs: list[tuple[Run, Run]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        if not self.pairs:
            return {}
        wall = [on.wall_s / off.wall_s for on, off in self.pairs]
        cpu = [on.cpu_s / off.cpu_s for on, off in self.pairs if off.cpu_s > 0]
        loads = [r.load for pair in self.pairs for r in pair]
        return {
            "pairs": len(self.pairs),
            "wall_ratio_median": round(statistics.median(wall), 3),
            "wall_ratios": [round(r, 3) for r in wall],
            "cpu_ratio_median": round(statistics.median(cpu), 3) if cpu else None,
            "on_wall_s_median": round(statistics.median(on.wall_s for on, _ in self.pairs), 3),
            "off_wall_s_median": round(statistics.median(off.wall_s for _, off in self.pairs), 3),
            "load_1m": [round(min(loads), 1), round(max(loads), 1)],
        }


def _timed(runner: SyncRunner) -> Run:
    load = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    report = runner.run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    problem = report.first_problem()
    if problem is not None:
        raise SystemExit(f"bench_sync: {problem.stream} {problem.status}: {problem.error}")
    return Run(wall, cpu, load)


def _pair(runners: dict[bool, SyncRunner], on_first: bool) -> tuple[Run, Run]:
    runs = {on: _timed(runners[on]) for on in ((True, False) if on_first else (False, True))}
    return runs[True], runs[False]


def history_rounds(
    *,
    rounds: int,
    incrementals: int,
    new_store: Callable[[], Engine],
    runner_for: Callable[[Engine, bool], SyncRunner],
    touch: Callable[[int], int],
    size_of: Callable[[Engine], tuple[int, int | None]],
    drop: Callable[[Engine], None],
) -> dict[str, Any]:
    """Alternated full and 1%-incremental pairs on fresh stores, and the history's size per change.

    ``touch(n)`` changes another 1% of the ERP's records (the n-th such change) and returns how many;
    ``size_of`` gives the history's rows and bytes; ``drop`` removes a store after its round.
    """
    full, incremental = Pairs(), Pairs()
    sizes: list[tuple[int, int | None]] = []
    changed = 0
    for n in range(rounds):
        engines = {True: new_store(), False: new_store()}
        try:
            runners = {on: runner_for(engine, on) for on, engine in engines.items()}
            full.pairs.append(_pair(runners, on_first=n % 2 == 0))
            for k in range(incrementals):
                changed = touch(n * incrementals + k)
                incremental.pairs.append(_pair(runners, on_first=(n + k) % 2 == 1))
            sizes.append(size_of(engines[True]))
        finally:
            for engine in engines.values():
                drop(engine)
    rows, size = sizes[-1]
    return {
        "full_sync": full.summary(),
        "one_percent_incremental": incremental.summary() | {"changed_records": changed},
        "history_rows": rows,
        "history_bytes_per_change": round(size / rows, 1) if size and rows else None,
    }
