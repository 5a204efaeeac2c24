"""Chroma is reached from one package only: connector.vectors owns the client, the deadlines,
the write order and the erasure on disk, so nothing else may import chromadb."""

from __future__ import annotations

import ast
from pathlib import Path

import connector

ROOT = Path(connector.__file__).parent


def _imports_chromadb(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "chromadb" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "chromadb":
            return True
    return False


def test_only_the_vectors_package_imports_chromadb() -> None:
    outside = [
        str(path.relative_to(ROOT))
        for path in sorted(ROOT.rglob("*.py"))
        if path.relative_to(ROOT).parts[0] != "vectors" and _imports_chromadb(path)
    ]
    assert outside == []


def test_the_vectors_package_does_import_it() -> None:
    assert _imports_chromadb(ROOT / "vectors" / "store.py")
