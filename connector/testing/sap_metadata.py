"""The fake SAP's ``$metadata``: an EDMX document generated from SAP's published contract.

A client that reads ``$metadata`` (to learn a service's names and types) gets the same entity
sets, keys, properties and navigation properties the real service declares: OData v2 as EDMX 1.0
with ``sap:`` annotations and one association per navigation property, v4 as EDMX 4.0.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any
from xml.sax.saxutils import quoteattr

from connector.testing.sap_contract import CONTRACT_FILES, Version

_FACETS = {"nullable": "Nullable", "maxlength": "MaxLength", "precision": "Precision", "scale": "Scale"}
_V2_SAP = ("label", "filterable", "sortable", "creatable", "updatable", "display-format")


def _attrs(pairs: list[tuple[str, Any]]) -> str:
    return "".join(f" {name}={quoteattr(str(value))}" for name, value in pairs if value is not None)


def _property(name: str, info: dict[str, Any], version: Version) -> str:
    pairs: list[tuple[str, Any]] = [("Name", name), ("Type", info["type"])]
    pairs += [(attr, info.get(key)) for key, attr in _FACETS.items()]
    if version == "v2":
        pairs += [(f"sap:{key}", info.get(key)) for key in _V2_SAP]
    return f"<Property{_attrs(pairs)}/>"


def _entity_type(namespace: str, type_name: str, spec: dict[str, Any], version: Version) -> list[str]:
    keys = "".join(f"<PropertyRef Name={quoteattr(k)}/>" for k in spec["keys"])
    lines = [f"<EntityType Name={quoteattr(type_name)}><Key>{keys}</Key>"]
    lines += [_property(name, info, version) for name, info in spec["properties"].items()]
    for nav, info in spec.get("navigation", {}).items():
        if version == "v4":
            lines.append(f"<NavigationProperty{_attrs([('Name', nav), ('Type', info['target'])])}/>")
        else:
            assoc = f"{namespace}.assoc_{type_name}_{nav}"
            roles = [("Relationship", assoc), ("FromRole", "FromRole"), ("ToRole", "ToRole")]
            lines.append(f"<NavigationProperty{_attrs([('Name', nav), *roles])}/>")
    lines.append("</EntityType>")
    return lines


def _associations(namespace: str, raw: dict[str, Any]) -> list[str]:
    lines = []
    for type_name, spec in raw["entity_types"].items():
        for nav, info in spec.get("navigation", {}).items():
            ends = (
                f'<End Type={quoteattr(namespace + "." + type_name)} Multiplicity="1" Role="FromRole"/>'
                f'<End Type={quoteattr(info["target"])} Multiplicity="*" Role="ToRole"/>'
            )
            lines.append(f"<Association Name={quoteattr(f'assoc_{type_name}_{nav}')}>{ends}</Association>")
    return lines


@cache
def metadata_document(service: str, version: Version) -> bytes:
    """The EDMX of ``service`` in ``version`` (the service must be one SAP publishes)."""
    name = CONTRACT_FILES[(service, version)]
    raw = json.loads(resources.files("connector.testing").joinpath("sap_contracts", name).read_text("utf-8"))
    namespace = raw.get("namespace", service)
    body = [f"<Schema Namespace={quoteattr(namespace)}"]
    if version == "v2":
        body[0] += ' xmlns="http://schemas.microsoft.com/ado/2008/09/edm" xml:lang="en">'
    else:
        body[0] += ' xmlns="http://docs.oasis-open.org/odata/ns/edm">'
    for type_name, spec in raw["entity_types"].items():
        body += _entity_type(namespace, type_name, spec, version)
    if version == "v2":
        body += _associations(namespace, raw)
        container = (
            f'<EntityContainer Name={quoteattr(service + "_Entities")} m:IsDefaultEntityContainer="true">'
        )
    else:
        container = '<EntityContainer Name="Container">'
    body.append(container)
    for set_name, type_name in raw["entity_sets"].items():
        body.append(
            f"<EntitySet Name={quoteattr(set_name)} EntityType={quoteattr(namespace + '.' + type_name)}/>"
        )
    body += ["</EntityContainer>", "</Schema>"]
    if version == "v2":
        head = (
            '<edmx:Edmx Version="1.0" xmlns:edmx="http://schemas.microsoft.com/ado/2007/06/edmx"'
            ' xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"'
            ' xmlns:sap="http://www.sap.com/Protocols/SAPData">'
            '<edmx:DataServices m:DataServiceVersion="2.0">'
        )
    else:
        head = '<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx"><edmx:DataServices>'
    text = (
        '<?xml version="1.0" encoding="utf-8"?>' + head + "".join(body) + "</edmx:DataServices></edmx:Edmx>"
    )
    return text.encode("utf-8")
