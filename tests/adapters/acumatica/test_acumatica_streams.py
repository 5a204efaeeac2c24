"""The Acumatica stream catalog is data (config/acumatica_streams.toml), validated when it is read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from connector.adapters.acumatica.streams import STREAMS, load_streams, parse_streams
from connector.errors import ConfigError


def _invoice(**changes: object) -> dict[str, Any]:
    spec: dict[str, object] = {
        "entity": "Invoice",
        "record_type": "document",
        "key": ["Type", "ReferenceNbr"],
        "changed": "LastModifiedDateTime",
        "select": ["Type", "ReferenceNbr", "Amount", "LastModifiedDateTime"],
    }
    return {"streams": {"Invoice": {**spec, **changes}}}


def test_the_shipped_catalog_declares_every_stream_with_its_mapper() -> None:
    assert list(STREAMS) == ["Customer", "Vendor", "Invoice", "SalesOrder", "Bill", "Case"]
    assert STREAMS["SalesOrder"].change_field == "LastModified"
    assert STREAMS["Invoice"].key_fields == ("Type", "ReferenceNbr")
    assert STREAMS["Customer"].mapper.__name__ == "map_customer"


def test_a_copied_catalog_with_an_extra_field_is_read(tmp_path: Path) -> None:
    path = tmp_path / "acumatica_streams.toml"
    path.write_text(
        '[streams.Invoice]\nentity = "Invoice"\nrecord_type = "document"\nkey = ["Type", "ReferenceNbr"]\n'
        'changed = "LastModifiedDateTime"\nselect = ["Type", "ReferenceNbr", "PostPeriod", '
        '"LastModifiedDateTime"]\n',
        encoding="utf-8",
    )
    assert load_streams(path)["Invoice"].select[2] == "PostPeriod"


def test_a_stream_that_does_not_select_its_change_field_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"streams\.Invoice: select must name the key and change fields"):
        parse_streams(_invoice(select=["Type", "ReferenceNbr"]))


def test_a_stream_without_a_mapper_is_refused() -> None:
    raw = {"streams": {"Payment": _invoice()["streams"]["Invoice"]}}
    with pytest.raises(ConfigError, match=r"streams\.Payment: no mapper for this stream"):
        parse_streams(raw)


def test_a_missing_entry_is_named() -> None:
    spec = _invoice()
    del spec["streams"]["Invoice"]["changed"]
    with pytest.raises(ConfigError, match=r"streams\.Invoice: missing 'changed'"):
        parse_streams(spec)


def test_an_unreadable_catalog_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text("[streams.Invoice\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"acumatica catalog broken\.toml: cannot read it"):
        load_streams(path)
