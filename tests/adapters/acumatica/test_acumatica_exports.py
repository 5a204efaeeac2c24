"""The public names of the Acumatica adapter and of connector.testing are the intended ones."""

from __future__ import annotations

import connector.adapters.acumatica
import connector.testing


def test_acumatica_package_exports() -> None:
    assert sorted(connector.adapters.acumatica.__all__) == sorted(
        [
            "STREAMS",
            "SUPPORTED_VERSIONS",
            "AcumaticaAdapter",
            "AcumaticaClient",
            "AcumaticaStream",
            "choose_version",
        ]
    )
    assert all(hasattr(connector.adapters.acumatica, name) for name in connector.adapters.acumatica.__all__)


def test_testing_package_exports() -> None:
    assert sorted(connector.testing.__all__) == [
        "DataGen",
        "FakeAcumatica",
        "Fault",
        "ServedFake",
        "ServedRequest",
        "serve",
    ]
    assert all(hasattr(connector.testing, name) for name in connector.testing.__all__)
