"""SAP S/4HANA adapter: OData v2 and v4 services read into canonical records.

``SAPAdapter(tenant, sync=..., clock=..., transport=...)`` follows :class:`connector.erp.protocol.Adapter`.
Streams, fields and expansions come from ``config/sap_streams.toml`` (:func:`load_catalog`);
how payment terms and currency are chosen is documented in :mod:`connector.adapters.sap.mapping`.
"""

from connector.adapters.sap.adapter import SAPAdapter
from connector.adapters.sap.catalog import Catalog, load_catalog
from connector.adapters.sap.client import SAPClient
from connector.adapters.sap.mapping import MappingRules
from connector.adapters.sap.odata import ODataErrorInfo

__all__ = ["Catalog", "MappingRules", "ODataErrorInfo", "SAPAdapter", "SAPClient", "load_catalog"]
