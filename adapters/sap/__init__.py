"""SAP S/4HANA adapter: OData v2 and v4 services read into canonical records."""
