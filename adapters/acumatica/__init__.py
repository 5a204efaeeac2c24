"""Acumatica contract-based REST API adapter (``/entity/Default/<version>/...``).

``AcumaticaAdapter`` is what the sync job uses (through :func:`connector.adapters.factory.open_adapter`);
``AcumaticaClient`` is the lower-level authenticated client; ``STREAMS`` is the stream catalog.
"""

from connector.adapters.acumatica.adapter import AcumaticaAdapter
from connector.adapters.acumatica.client import SUPPORTED_VERSIONS, AcumaticaClient, choose_version
from connector.adapters.acumatica.streams import STREAMS, AcumaticaStream

__all__ = [
    "STREAMS",
    "SUPPORTED_VERSIONS",
    "AcumaticaAdapter",
    "AcumaticaClient",
    "AcumaticaStream",
    "choose_version",
]
