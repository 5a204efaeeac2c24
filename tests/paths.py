"""Where the repository's files are, for tests in any folder under tests/ (they are grouped by subject,
so ``Path(__file__).parent`` means a different place in each)."""

from __future__ import annotations

from pathlib import Path

#: tests/, where the shared helpers (conftest.py, kinds.py, *_fixtures.py, ...) and data live.
TESTS = Path(__file__).resolve().parent
#: The repository's root (the checkout): pyproject.toml, connector/, scripts/, docs/.
ROOT = TESTS.parent
SCRIPTS = ROOT / "scripts"
DOCS = ROOT / "docs"
#: Small input files the tests read (tests/data is git-ignored, so inputs live here).
SAMPLES = TESTS / "samples"
#: Whole rendered contexts the snapshot tests compare with (``UPDATE_GOLDEN=1`` rewrites them).
GOLDEN = TESTS / "golden"


def module_file(name: str) -> Path:
    """The test module ``name`` (``test_x`` or ``test_x.py``) in whichever folder of tests/ it is."""
    stem = name.removesuffix(".py")
    found = sorted(TESTS.rglob(f"{stem}.py"))
    if len(found) != 1:
        raise LookupError(f"{stem}.py: {len(found)} files under {TESTS} (test module names are unique)")
    return found[0]
