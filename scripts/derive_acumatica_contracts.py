"""Derive adapters/acumatica/contracts/endpoints.json from Acumatica's published endpoint definitions.

Reads ``Default_<v>.xml`` (20/22/23/24.200.001) and ``Default_25_26_transcribed.json`` (25 and 26)
from the shared specs folder and writes, per endpoint version, the fields (name -> value type) of
the entities the adapter reads or expands. Run it again when a definition changes::

    python scripts/derive_acumatica_contracts.py [/path/to/specs/acumatica]

The output is data the adapter builds its ``$select``/``$expand`` from and the fake Acumatica
serves, so both follow the vendor's contract instead of a hand-written list.
"""

from __future__ import annotations

import json
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "adapters" / "acumatica" / "contracts"
DEFAULT_SPECS = Path("/work/shared/specs/acumatica")
XML_VERSIONS = ("20.200.001", "22.200.001", "23.200.001", "24.200.001")
ENTITIES = (
    "Customer",
    "Vendor",
    "Invoice",
    "SalesOrder",
    "Bill",
    "Case",
    "Contact",
    "Address",
    "CustomerContact",
    "AttributeValue",
    "CreditVerificationRules",
    "SalesOrderDetail",
)
LICENCE = "LICENSE-Acumatica-MIT.txt"


def _xml_fields(path: Path) -> dict[str, dict[str, str]]:
    tree = ET.parse(path)
    result: dict[str, dict[str, str]] = {}
    for element in tree.getroot():
        name = element.get("name")
        if name not in ENTITIES or name in result:
            continue
        fields = next((child for child in element if child.tag.endswith("}Fields")), None)
        if fields is None:
            continue
        result[name] = {
            str(field.get("name")): str(field.get("type")) for field in fields if field.tag.endswith("}Field")
        }
    return result


def _plain(entity: dict[str, Any]) -> dict[str, str]:
    return {name: str(kind) for name, kind in entity.items() if not name.startswith("_")}


def derive(specs: Path) -> dict[str, Any]:
    versions: dict[str, dict[str, dict[str, str]]] = {}
    for version in XML_VERSIONS:
        versions[version] = _xml_fields(specs / f"Default_{version}.xml")
    transcribed = json.loads((specs / "Default_25_26_transcribed.json").read_text(encoding="utf-8"))
    v25 = {name: _plain(fields) for name, fields in transcribed["versions"]["25.200.001"].items()}
    versions["25.200.001"] = {name: v25[name] for name in ENTITIES if name in v25}
    assumptions = [
        "25.200.001 and 26.200.001 come from a transcription that lists, for Contact, CustomerContact and "
        "SalesOrderDetail, only the fields relevant to this project.",
    ]
    v26: dict[str, dict[str, str]] = {}
    raw26 = transcribed["versions"]["26.200.001"]
    for name in ENTITIES:
        if name not in v25:
            continue
        fields = dict(v25[name])
        changes = raw26.get(name, {}).get("_same_as_25_except")
        if changes is None:
            assumptions.append(f"26.200.001 {name} was not transcribed: assumed as in 25.200.001.")
            changes = {}
        for field, kind in changes.items():
            if kind is None:
                fields.pop(field, None)
            else:
                fields[field] = str(kind)
        v26[name] = fields
    versions["26.200.001"] = v26
    for version, entities in versions.items():
        missing = [name for name in ENTITIES if name not in entities]
        if missing:
            raise SystemExit(f"{version}: no definition of {missing}")
    return {
        "note": (
            "Derived by scripts/derive_acumatica_contracts.py from Acumatica's published definitions of the "
            "contract-based Default endpoint (repository Acumatica/AcumaticaRESTAPIClientForCSharp, folder "
            "EndpointMetadata/: commit 801a50bee9b46f0aebe3801f0f91b68997e0ceb4 for 20-24.200.001, "
            "d1a8f665b464556b44ef07057acbcedfd4fcde6c for 25 and 26). Copyright (c) 2023 Acumatica, MIT "
            f"licence: see {LICENCE} beside this file."
        ),
        "assumptions": assumptions,
        "versions": {
            version: {name: dict(sorted(entities[name].items())) for name in ENTITIES}
            for version, entities in versions.items()
        },
    }


def main(argv: list[str]) -> int:
    specs = Path(argv[1]) if len(argv) > 1 else DEFAULT_SPECS
    OUT.mkdir(parents=True, exist_ok=True)
    data = derive(specs)
    (OUT / "endpoints.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    shutil.copyfile(specs / LICENCE, OUT / LICENCE)
    print(f"wrote {OUT / 'endpoints.json'} ({len(data['versions'])} versions)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
