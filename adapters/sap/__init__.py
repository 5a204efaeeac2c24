"""SAP S/4HANA adapter: OData v2 and v4 services read into canonical records.

``SAPAdapter(tenant, sync=..., clock=..., transport=...)`` follows :class:`adapters.protocol.Adapter`.
Streams, fields and expansions come from ``config/sap_streams.toml`` (:func:`load_catalog`);
how payment terms and currency are chosen is documented in :mod:`adapters.sap.mapping`.
"""

from adapters.sap.adapter import SAPAdapter
from adapters.sap.catalog import Catalog, load_catalog
from adapters.sap.client import SAPClient
from adapters.sap.mapping import MappingRules
from adapters.sap.odata import ODataErrorInfo

__all__ = ["Catalog", "MappingRules", "ODataErrorInfo", "SAPAdapter", "SAPClient", "load_catalog"]
