"""Names and ids with markup and scripts in them, put into the fake ERPs to test that a UI escapes
what it shows (``connector demo --hostile-names``; the console's browser tests)."""

from __future__ import annotations

from datetime import datetime

from connector.testing.acumatica import FakeAcumatica
from connector.testing.sap import FakeSAP

#: A customer name that runs script if any page puts it into HTML unescaped.
HOSTILE_NAME = (
    '<script>window.hostile = "script"</script><b>Bold</b> & <img src="x" '
    "onerror=\"window.hostile = 'img'\"> Traders"
)
#: A customer id with markup in it (Acumatica keys allow any printable character).
HOSTILE_ID = "<I>EVIL&CO"


def add_hostile_names(acumatica: FakeAcumatica, sap: FakeSAP, at: datetime) -> dict[str, str]:
    """Rename one customer of each fake to :data:`HOSTILE_NAME` and add an Acumatica customer
    whose id is :data:`HOSTILE_ID`; returns {tenant role: customer id} of those renamed."""
    acumatica_key = sorted(acumatica.keys("Customer"))[1]
    acumatica.modify("Customer", acumatica_key, {"CustomerName": HOSTILE_NAME}, modified_at=at)
    acumatica.add(
        "Customer", {"CustomerID": HOSTILE_ID, "CustomerName": f"{HOSTILE_NAME} (id)"}, modified_at=at
    )
    sap_key = sorted(sap.data.customers)[1]
    sap.modify("A_BusinessPartner", sap_key, at=at, BusinessPartnerFullName=HOSTILE_NAME)
    return {"acumatica": acumatica_key, "sap": sap_key}
