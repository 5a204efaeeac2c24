"""The published contracts of the ``Default`` endpoint, version by version (``contracts/endpoints.json``).

Derived from Acumatica's own endpoint definitions by ``scripts/derive_acumatica_contracts.py``
(MIT licence, copied beside the data). For the entities the adapter reads or expands, each version
maps field names to value types (``StringValue``, ``StringSingleSelectValue``, ``Contact``,
``CustomerContact[]``, ...). The adapter builds ``$select``/``$expand`` from it, so what a version
lacks is computed from its definition; the fake Acumatica serves exactly these fields.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from types import MappingProxyType

CONTRACTS_FILE = Path(__file__).parent / "contracts" / "endpoints.json"

#: Value types of a field that holds one linked entity or a list of detail entities are entity names.
SCALAR_TYPES = frozenset(
    {
        "StringValue",
        "StringSingleSelectValue",
        "DecimalValue",
        "DoubleValue",
        "IntValue",
        "IntSingleSelectValue",
        "ShortValue",
        "LongValue",
        "ByteValue",
        "BooleanValue",
        "DateTimeValue",
        "DateOnlyValue",
        "GuidValue",
    }
)


@cache
def _load() -> Mapping[str, Mapping[str, Mapping[str, str]]]:
    raw = json.loads(CONTRACTS_FILE.read_text(encoding="utf-8"))
    return MappingProxyType(
        {
            version: MappingProxyType(
                {name: MappingProxyType(dict(fields)) for name, fields in entities.items()}
            )
            for version, entities in raw["versions"].items()
        }
    )


def versions() -> tuple[str, ...]:
    """The endpoint versions with a contract, oldest first."""
    return tuple(sorted(_load(), key=lambda v: tuple(int(p) for p in v.split("."))))


def entity_fields(version: str, entity: str) -> Mapping[str, str]:
    """Field name -> value type of ``entity`` at ``version``; KeyError when either is unknown."""
    return _load()[version][entity]


def field_type(version: str, entity: str, field: str) -> str | None:
    """The declared value type, or None when the version's entity does not define the field."""
    return _load()[version][entity].get(field)


def target_entity(value_type: str) -> str | None:
    """The entity a linked (``Contact``) or detail (``CustomerContact[]``) field holds; None for a value."""
    if value_type in SCALAR_TYPES:
        return None
    return value_type[:-2] if value_type.endswith("[]") else value_type


def resolve(version: str, entity: str, path: str) -> tuple[str, str] | None:
    """``MainContact/Address`` from ``Customer`` -> (owning entity, declared type of the last step),
    or None when a step is not defined at ``version`` (or passes through a plain value)."""
    owner = entity
    steps = path.split("/")
    for index, step in enumerate(steps):
        fields = _load()[version].get(owner)
        kind = fields.get(step) if fields is not None else None
        if kind is None:
            return None
        if index == len(steps) - 1:
            return owner, kind
        nested = target_entity(kind)
        if nested is None:
            return None
        owner = nested
    return None
