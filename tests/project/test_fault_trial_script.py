"""Smoke test of scripts/fault_trial (issue 25's probes, end to end): two cheap probes run as the
script runs them and print one PASS line each with their figures, and every probe the script has is
described in the reliability guide, so neither the script nor its documentation can rot unseen."""

from __future__ import annotations

import subprocess
import sys

from paths import DOCS, SCRIPTS

TRIAL = SCRIPTS / "fault_trial.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TRIAL), *args], capture_output=True, text=True, timeout=600, check=False
    )


def test_cheap_probes_pass_with_one_line_each() -> None:
    done = _run("--only", "long-id-sqlite,mcp-stdio-malformed", "--skip-postgres")

    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    lines = [line for line in done.stdout.splitlines() if not line.startswith("#")]
    assert len(lines) == 2, done.stdout
    assert lines[0].startswith("PASS  129-char id [sqlite]: 47 of 47 stored, long id named")
    assert lines[1].startswith("PASS  MCP stdio malformed JSON-RPC: codes [-32700, -32600, -32700]")
    assert done.stdout.splitlines()[-1].startswith("# 0 failed")


def test_every_probe_is_described_in_the_reliability_guide() -> None:
    probes = _run("--list").stdout.split()
    guide = (DOCS / "guides" / "reliability.md").read_text(encoding="utf-8")

    assert len(probes) >= 15
    assert [p for p in probes if f"`{p}`" not in guide] == []
