"""Which files of a data directory still hold given bytes: what the erasure tests (and the past
conversations' forget) check after a ``forget``, so "erased" means no byte left on disk."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def files_naming(root: Path, needles: Sequence[bytes]) -> dict[str, list[bytes]]:
    """Each file under ``root`` (relative path) with the needles it holds, as UTF-8 or UTF-16-LE bytes."""
    found: dict[str, list[bytes]] = {}
    for path in root.rglob("*"):
        if path.is_file():
            raw = path.read_bytes()
            hits = [n for n in needles if n in raw or n.decode().encode("utf-16-le") in raw]
            if hits:
                found[str(path.relative_to(root))] = hits
    return found
