"""The documentation site's structure: every page is reachable from the nav, the API reference covers
``connector.__all__``, and the README stays a five-minute read (issue 28)."""

from __future__ import annotations

import re
from typing import Any

import yaml
from paths import ROOT

import connector

DOCS = ROOT / "docs"


class _Loader(yaml.SafeLoader):
    """mkdocs.yml holds ``!!python/name:`` tags (pymdownx fences); read them as plain strings."""


_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: suffix)


def _mkdocs() -> dict[str, Any]:
    return yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)


def _nav_pages(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [page for item in node for page in _nav_pages(item)]
    if isinstance(node, dict):
        return [page for value in node.values() for page in _nav_pages(value)]
    return []


def test_every_docs_page_is_in_the_nav() -> None:
    nav = _nav_pages(_mkdocs()["nav"])
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    missing = [page for page in pages if page not in nav]
    assert not missing, f"add these pages to the nav: in mkdocs.yml: {missing}"
    dangling = [page for page in nav if not page.startswith(("http://", "https://")) and page not in pages]
    assert not dangling, f"the nav names pages that do not exist: {dangling}"


def test_the_nav_has_a_guides_section() -> None:
    sections = [next(iter(item)) for item in _mkdocs()["nav"] if isinstance(item, dict)]
    assert "Guides" in sections


def test_the_api_reference_documents_every_public_name() -> None:
    reference = (DOCS / "reference" / "api.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^::: connector\.(\w+)\s*$", reference, flags=re.MULTILINE))
    missing = sorted(set(connector.__all__) - documented)
    assert not missing, f"add `::: connector.<name>` to docs/reference/api.md for: {missing}"


README = ROOT / "README.md"


def test_the_readme_is_a_five_minute_read() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; move detail to docs/"
    first = "\n".join(lines[:60])
    assert "pip install" in first and "scripts/demo" in first and "scripts/test" in first
    assert "connector demo" in first


def test_the_readme_names_no_session_and_its_links_resolve() -> None:
    text = README.read_text(encoding="utf-8")
    assert not re.search(r"\b[Ss]ession \d", text), "README figures are current: history goes to docs/"
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert "docs/benchmarks.md" in links and "docs/benchmarks-history.md" in links
    missing = [link for link in links if not link.startswith("http") and not (ROOT / link).exists()]
    assert not missing, missing


def test_the_readme_lists_every_command() -> None:
    from connector.cli import build_parser

    text = README.read_text(encoding="utf-8")
    (commands,) = [a for a in build_parser()._actions if a.dest == "command"]
    missing = [name for name in commands.choices if f"`connector {name}" not in text]  # type: ignore[attr-defined]
    assert not missing, f"add these commands to the README's table: {missing}"
