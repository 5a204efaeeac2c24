"""The error contract: every exception class the package defines sits in the tree that
``connector/errors.py``'s docstring draws, under the parent it names there.

The fake ERPs (``connector.testing``) are servers: their errors become HTTP responses and never
reach a caller, so they are outside the tree. Migrations run inside Alembic and are not imported.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Iterator

import connector
from connector import errors
from connector.errors import ConnectorError

_OUTSIDE_THE_TREE = ("connector.testing", "connector.db.migrations")
_BRANCH = re.compile(r"^\s*((?:│   |    )*)[├└]── (\w+)")


def documented_parents() -> dict[str, str]:
    """``{error name: documented parent name}`` read from the tree in the errors module's docstring."""
    parents: dict[str, str] = {}
    stack = ["ConnectorError"]
    for line in (errors.__doc__ or "").splitlines():
        match = _BRANCH.match(line)
        if match is None:
            continue
        depth = len(match.group(1)) // 4
        del stack[depth + 1 :]
        parents[match.group(2)] = stack[depth]
        stack.append(match.group(2))
    return parents


def package_exceptions() -> Iterator[type[BaseException]]:
    """Every exception class defined in a module of the package (imported to find it)."""
    for info in pkgutil.walk_packages(connector.__path__, "connector."):
        if info.name.startswith(_OUTSIDE_THE_TREE):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == info.name:
                yield value


def test_the_documented_tree_is_read_from_the_docstring() -> None:
    parents = documented_parents()
    assert parents["StoreError"] == "ConnectorError"
    assert parents["EmbeddingModelMismatch"] == "StoreError"
    assert parents["AlreadyRunning"] == "SyncError"
    assert len(parents) >= 20


def test_every_exception_of_the_package_is_in_the_documented_tree_under_its_parent() -> None:
    parents = documented_parents()
    found = {cls.__name__: cls for cls in package_exceptions()}
    assert "ConnectorError" in found and "SessionExpired" in found  # the walk reaches both packages
    for name, cls in sorted(found.items()):
        if cls is ConnectorError:
            continue
        assert issubclass(cls, ConnectorError), f"{cls.__module__}.{name} is not a ConnectorError"
        assert name in parents, f"{cls.__module__}.{name} is not in the tree in connector/errors.py"
        in_tree = [base.__name__ for base in cls.__bases__ if issubclass(base, ConnectorError)]
        assert in_tree == [parents[name]], f"{name} derives from {in_tree}, the tree says {parents[name]}"


def test_every_documented_error_exists() -> None:
    found = {cls.__name__ for cls in package_exceptions()}
    assert set(documented_parents()) - found == set()
