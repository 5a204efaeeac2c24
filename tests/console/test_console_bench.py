"""A tiny run of scripts/bench_console: it seeds, requests every page and ends with its JSON line."""

from __future__ import annotations

import json
import subprocess
import sys

from paths import ROOT

PAGES = {
    "sync",
    "sync_run",
    "customer_search",
    "customer",
    "customer_with_session",
    "context",
    "erase_form",
    "erase",
}


def test_bench_console_smoke() -> None:
    args = "--customers 40 --documents 160 --cases 80 --runs 48 --requests 3 --erasures 2 --sessions 1"
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/bench_console.py"), *args.split()],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["bench"] == "console" and figures["customers"] == 40
    assert set(figures["pages"]) == PAGES
    assert figures["pages"]["erase"]["n"] == 2
    for page in PAGES - {"erase"}:
        shown = figures["pages"][page]
        assert shown["n"] == 3 and shown["p95_ms"] > 0 and shown["cpu_p95_ms"] > 0, page
    assert all(f"{page:<24}" in done.stdout for page in PAGES)  # one printed line per page
    assert figures["worst_page_p95_ms"] == max(
        f["p95_ms"] for p, f in figures["pages"].items() if p != "erase"
    )
