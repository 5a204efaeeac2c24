"""``forget`` wall time on a synthetic episodic store (SQLite + embedded Chroma).

Loads N entries over 10,000 customers the way ``bench_episodic`` does (rows, postings, random unit
vectors), then forgets customers one by one: "open" in the Memory that loaded the store (Chroma and
the index already open), "fresh" in a new Memory per call (what ``connector forget`` pays: opening
Chroma, and on the code before the eraser building the index with its embedder). Prints JSON.
Usage: python scripts/bench_forget.py [--sizes 10000,100000] [--forgets 10]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from connector.clock import FrozenClock  # noqa: E402
from connector.memory import Memory  # noqa: E402


def _bench_episodic() -> Any:
    spec = importlib.util.spec_from_file_location("bench_episodic", ROOT / "scripts/bench_episodic.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(size: int, forgets: int) -> dict[str, Any]:
    bench = _bench_episodic()
    with tempfile.TemporaryDirectory() as workdir:
        memory = bench.new_memory(Path(workdir))
        load_s = bench.load_synthetic(memory, size, np.random.default_rng(size))
        timings: dict[str, list[float]] = {"open": [], "fresh": []}
        for i in range(forgets):
            started = time.perf_counter()
            memory.forget(f"C{i:05d}")
            timings["open"].append((time.perf_counter() - started) * 1000)
        for i in range(forgets, 2 * forgets):
            fresh = Memory(memory.settings, clock=FrozenClock(bench.NOW), llm=None, engine=memory.engine)
            started = time.perf_counter()
            fresh.forget(f"C{i:05d}")
            timings["fresh"].append((time.perf_counter() - started) * 1000)
            fresh.close()
        chroma_mb = (memory.settings.chroma_path / "chroma.sqlite3").stat().st_size / 2**20
        memory.close()
    return {
        "size": size,
        "load_s": round(load_s, 1),
        "chroma_sqlite_mb": round(chroma_mb, 1),
        **{f"{name}_p50_ms": round(statistics.median(v), 1) for name, v in timings.items()},
        **{f"{name}_max_ms": round(max(v), 1) for name, v in timings.items()},
        "load_average": os.getloadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--forgets", type=int, default=10)
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        print(json.dumps(run(size, args.forgets)), flush=True)


if __name__ == "__main__":
    main()
